//! The checkpoint the store holds, as its owner keeps it.

use converge_backend::{Backend, Bytes, StackRef};

use super::recovery;
use super::StackStateError;

/// The stored checkpoint's text, as far as the stack's owner keeps it: the
/// base of its next journal.
#[derive(Debug)]
pub(super) enum StoredText {
    /// The stack has no checkpoint.
    Absent,
    /// The text, as read or written.
    Held(Bytes),
    /// Not kept (80 MB at 100,000 resources): written by a compaction
    /// straight to the store, as it was produced, or read into the base
    /// and let go before the operation, its digest taken first, so that
    /// the operation's memory can take its place. Read back only when it
    /// is wanted (the base of another journal, the base read again with a
    /// secrets provider), and then it must be the same text: as long, and
    /// with the same digest when that was taken; the owner holds the
    /// stack's lock, so anything else is another writer's.
    NotHeld { len: u64, digest: Option<String> },
}

impl StoredText {
    /// The text as loaded from the store.
    pub fn loaded(bytes: Option<Bytes>) -> StoredText {
        bytes.map_or(StoredText::Absent, StoredText::Held)
    }

    /// Its length in bytes, if there is one.
    pub fn len(&self) -> Option<u64> {
        match self {
            StoredText::Absent => None,
            StoredText::Held(bytes) => Some(bytes.len() as u64),
            StoredText::NotHeld { len, .. } => Some(*len),
        }
    }

    /// Lets the held text go, keeping its length and digest.
    pub fn release(&mut self) {
        if let StoredText::Held(bytes) = self {
            *self = StoredText::NotHeld {
                len: bytes.len() as u64,
                digest: Some(recovery::digest_of(Some(&bytes[..]))),
            };
        }
    }

    /// The text (`None`: no checkpoint), read back from `backend` if it
    /// was not kept.
    pub async fn text(
        &mut self,
        backend: &dyn Backend,
        stack: &StackRef,
    ) -> Result<Option<&Bytes>, StackStateError> {
        if let StoredText::NotHeld { len, digest } = &*self {
            let read = backend.load_checkpoint(stack).await?;
            let same = read.as_ref().is_some_and(|b| {
                b.len() as u64 == *len
                    && digest
                        .as_ref()
                        .is_none_or(|d| *d == recovery::digest_of(Some(&b[..])))
            });
            if !same {
                return Err(StackStateError::CheckpointChanged {
                    stack: stack.to_string(),
                });
            }
            *self = StoredText::loaded(read.map(Bytes::from));
        }
        Ok(match self {
            StoredText::Held(bytes) => Some(bytes),
            _ => None,
        })
    }

    /// The digest a journal on this checkpoint names as its base.
    pub async fn digest(
        &mut self,
        backend: &dyn Backend,
        stack: &StackRef,
    ) -> Result<String, StackStateError> {
        if let StoredText::NotHeld {
            digest: Some(digest),
            ..
        } = self
        {
            return Ok(digest.clone());
        }
        let text = self.text(backend, stack).await?;
        Ok(recovery::digest_of(text.map(|b| &b[..])))
    }
}

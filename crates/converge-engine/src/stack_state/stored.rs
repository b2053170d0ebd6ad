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
    /// Written by a compaction straight to the store, as it was produced,
    /// and not kept (80 MB at 100,000 resources): read back only when it
    /// is wanted (the base of another journal, the base read again with a
    /// secrets provider).
    Written { len: u64 },
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
            StoredText::Written { len } => Some(*len),
        }
    }

    /// The text (`None`: no checkpoint), read back from `backend` if it
    /// was not kept. Read back, it must be as long as what was written:
    /// the owner holds the stack's lock, so anything else is another
    /// writer's.
    pub async fn text(
        &mut self,
        backend: &dyn Backend,
        stack: &StackRef,
    ) -> Result<Option<&Bytes>, StackStateError> {
        if let StoredText::Written { len } = *self {
            let read = backend.load_checkpoint(stack).await?;
            if read.as_ref().map(|b| b.len() as u64) != Some(len) {
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
        let text = self.text(backend, stack).await?;
        Ok(recovery::digest_of(text.map(|b| &b[..])))
    }
}

//! Reading a stored checkpoint, replaying a stored journal onto it, and
//! compacting: the rules every reader and writer of a stack share.

use std::sync::Arc;

use converge_backend::{
    checkpoint_text, Backend, Bytes, CheckpointWriter, SaveOptions, StackRef, StoredJournal,
};
use converge_state::checkpoint::{self, CheckpointError, StackCheckpoint};
use converge_state::journal::{base_digest, journal_from_json, replay};
use converge_state::secrets::SecretsMode;
use converge_state::{Manifest, Snapshot};

use super::{Secrets, StackStateError};
use converge_backend::now_rfc3339;

/// What opening a stack found of an earlier update's journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// No journal: the checkpoint was current.
    Clean,
    /// The journal of an interrupted update was replayed onto its base and
    /// compacted into the checkpoint; `pending` operations were in flight
    /// when it stopped.
    Replayed { entries: usize, pending: usize },
    /// The journal's update had already been compacted into the checkpoint
    /// (its process stopped between the two); the journal was dropped.
    AlreadyCompacted,
}

/// Reads stored checkpoint bytes; a stack without any reads as empty.
pub(super) fn parse(
    stack: &StackRef,
    bytes: Option<&[u8]>,
    mode: SecretsMode<'_>,
) -> Result<StackCheckpoint, StackStateError> {
    match bytes {
        None => Ok(StackCheckpoint {
            stack: stack.to_string(),
            config: None,
            latest: None,
        }),
        Some(b) => {
            checkpoint::read_checkpoint(b, mode).map_err(|source| StackStateError::Checkpoint {
                stack: stack.to_string(),
                source: Box::new(source),
            })
        }
    }
}

/// The digest a journal started on these stored bytes names as its base.
pub(super) fn digest_of(bytes: Option<&[u8]>) -> String {
    base_digest(bytes.unwrap_or_default())
}

/// The checkpoint `bytes` with `journal` replayed onto it; `None` when the
/// checkpoint is not the journal's base (it already holds the journal's
/// compaction).
pub(super) fn replay_stored(
    stack: &StackRef,
    bytes: Option<&[u8]>,
    journal: &StoredJournal,
    mode: SecretsMode<'_>,
) -> Result<Option<(StackCheckpoint, usize)>, StackStateError> {
    if digest_of(bytes) != journal.base_digest {
        return Ok(None);
    }
    let mut cp = parse(stack, bytes, mode)?;
    let base = cp
        .latest
        .take()
        .unwrap_or_else(|| Snapshot::empty(now_rfc3339()));
    let entries = journal_from_json(&journal.entries, mode).map_err(|source| {
        StackStateError::JournalEntry {
            stack: stack.to_string(),
            source: Box::new(source),
        }
    })?;
    let snapshot = replay(&base, &entries).map_err(|source| StackStateError::Replay {
        stack: stack.to_string(),
        source: Box::new(source),
    })?;
    cp.latest = Some(snapshot);
    Ok(Some((cp, entries.len())))
}

/// Whose manifest a saved checkpoint carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ManifestStamp {
    /// A new one: Converge wrote the checkpoint, now.
    New,
    /// The snapshot's own (an imported deployment is stored as given).
    Keep,
}

/// How a checkpoint is encoded: its manifest, and the checkpoint it
/// replaces, whose size per resource sizes the buffer of the new text, so
/// that it need not grow by doubling: at 100,000 resources that touched
/// 200 MB of fresh memory for 80 MB of text.
#[derive(Debug, Clone, Copy)]
pub(super) struct Encoding {
    pub stamp: ManifestStamp,
    pub replaced: Option<Replaced>,
}

/// The size of a stored checkpoint and how many resources it holds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Replaced {
    pub bytes: usize,
    pub resources: usize,
}

impl Encoding {
    /// The buffer to begin with for a checkpoint of `resources`: the
    /// replaced one's bytes per resource, with an eighth more room.
    fn size_hint(&self, resources: usize) -> usize {
        match self.replaced {
            Some(r) if r.resources > 0 => {
                let estimate = r.bytes / r.resources * resources.max(1);
                estimate + estimate / 8
            }
            Some(r) => r.bytes,
            None => 0,
        }
    }
}

/// Writes `snapshot` as the stack's checkpoint; returns the bytes written
/// (the same bytes the backend was given, not a copy).
pub(super) async fn save_snapshot(
    backend: &dyn Backend,
    stack: &StackRef,
    config: Option<&str>,
    snapshot: &Snapshot,
    secrets: &Secrets,
    encoding: Encoding,
) -> Result<Bytes, StackStateError> {
    let bytes = Bytes::from(encode_snapshot(stack, config, snapshot, secrets, encoding)?);
    backend
        .save_checkpoint(stack, bytes.clone(), &SaveOptions::default())
        .await?;
    Ok(bytes)
}

/// Writes `snapshot` as the stack's checkpoint while the store stores it:
/// the text is serialized on a blocking thread and handed to the store in
/// pieces as it is produced, so the two overlap and the whole text is
/// never held (at 100,000 resources: 80 MB of fresh memory, and the store
/// waiting for the last byte). Returns the text's length. If the text
/// cannot be written, the store stores nothing and the serializer's error
/// is returned.
pub(super) async fn stream_snapshot(
    backend: &dyn Backend,
    stack: &StackRef,
    config: Option<String>,
    snapshot: Arc<Snapshot>,
    secrets: Secrets,
    stamp: ManifestStamp,
) -> Result<u64, StackStateError> {
    let (mut writer, text) = checkpoint_text();
    let name = stack.to_string();
    let serializer = tokio::task::spawn_blocking(move || {
        let manifest = stamped(&snapshot, stamp);
        let view = checkpoint::CheckpointView {
            stack: &name,
            config: config.as_deref(),
            latest: Some(&snapshot),
            manifest: manifest.as_ref(),
        };
        checkpoint::write_checkpoint_to(view, secrets.mode(), &mut writer)?;
        writer.finish().map_err(CheckpointError::Write)
    });
    let stored = backend
        .save_checkpoint_text(stack, text, &SaveOptions::default())
        .await;
    let written = match serializer.await {
        Ok(written) => written,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => return Err(converge_backend::BackendError::Cancelled(e).into()),
    };
    match (written, stored) {
        (Ok(_), Ok(len)) => Ok(len),
        // The store failed and stopped reading: its error is the cause.
        (Err(CheckpointError::Write(e)), Err(stored)) if CheckpointWriter::is_store_stopped(&e) => {
            Err(stored.into())
        }
        (Err(source), _) => Err(StackStateError::Checkpoint {
            stack: stack.to_string(),
            source: Box::new(source),
        }),
        (Ok(_), Err(stored)) => Err(stored.into()),
    }
}

/// The manifest a checkpoint of `snapshot` is written with in place of its
/// own, if any: a new one says who wrote the checkpoint, and when.
fn stamped(snapshot: &Snapshot, stamp: ManifestStamp) -> Option<Manifest> {
    (stamp == ManifestStamp::New).then(|| Manifest {
        plugins: snapshot.manifest.plugins.clone(),
        ..Manifest::converge(now_rfc3339())
    })
}

/// The checkpoint bytes of `snapshot` for `stack`, as
/// [`save_snapshot`] stores them. The snapshot is written as it is held,
/// not copied; a new manifest is written in place of its own.
pub(super) fn encode_snapshot(
    stack: &StackRef,
    config: Option<&str>,
    snapshot: &Snapshot,
    secrets: &Secrets,
    encoding: Encoding,
) -> Result<Vec<u8>, StackStateError> {
    let manifest = stamped(snapshot, encoding.stamp);
    let stack_name = stack.to_string();
    let view = checkpoint::CheckpointView {
        stack: &stack_name,
        config,
        latest: Some(snapshot),
        manifest: manifest.as_ref(),
    };
    let buffer = Vec::with_capacity(encoding.size_hint(snapshot.resources.len()));
    checkpoint::write_checkpoint_into(view, secrets.mode(), buffer).map_err(|source| {
        StackStateError::Checkpoint {
            stack: stack_name.clone(),
            source: Box::new(source),
        }
    })
}

/// Compacts the journal an interrupted update left, whose writer is gone
/// (the caller holds the stack's lock): replays it onto its base and saves
/// the result, secrets kept as ciphertext, or drops it when the checkpoint
/// already holds it. Returns what it did and the checkpoint bytes now
/// stored.
pub(super) async fn recover(
    backend: &dyn Backend,
    stack: &StackRef,
    bytes: Option<Bytes>,
    journal: StoredJournal,
) -> Result<(Recovery, Option<Bytes>), StackStateError> {
    let Some((cp, entries)) =
        replay_stored(stack, bytes.as_deref(), &journal, SecretsMode::Opaque)?
    else {
        backend.close_journal(stack).await?;
        return Ok((Recovery::AlreadyCompacted, bytes));
    };
    let pending = cp.latest.as_ref().map_or(0, |s| s.pending_operations.len());
    let recovery = Recovery::Replayed { entries, pending };
    // A store that compacts journals itself does it without an upload.
    if backend.compacts_journals() && backend.commit_journal(stack).await.is_ok() {
        let stored = backend.load_checkpoint(stack).await?;
        return Ok((recovery, stored.map(Bytes::from)));
    }
    let snapshot = cp.latest.unwrap_or_else(|| Snapshot::empty(now_rfc3339()));
    // About as many resources as the base held.
    let replayed = snapshot.resources.len();
    let written = save_snapshot(
        backend,
        stack,
        cp.config.as_deref(),
        &snapshot,
        &Secrets::Opaque,
        Encoding {
            stamp: ManifestStamp::New,
            replaced: bytes.as_ref().map(|b| Replaced {
                bytes: b.len(),
                resources: replayed,
            }),
        },
    )
    .await?;
    backend.close_journal(stack).await?;
    Ok((recovery, Some(written)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buffer_is_sized_by_the_replaced_checkpoints_bytes_per_resource() {
        let replacing = |bytes, resources| Encoding {
            stamp: ManifestStamp::New,
            replaced: Some(Replaced { bytes, resources }),
        };
        // The same stack again: its size and an eighth more.
        assert_eq!(replacing(80_000, 100).size_hint(100), 90_000);
        // A destroy writes next to nothing, so asks for next to nothing.
        assert_eq!(replacing(80_000, 100).size_hint(0), 900);
        // A checkpoint without resources says nothing per resource.
        assert_eq!(replacing(300, 0).size_hint(10_000), 300);
        let fresh = Encoding {
            stamp: ManifestStamp::New,
            replaced: None,
        };
        assert_eq!(fresh.size_hint(10_000), 0);
    }
}

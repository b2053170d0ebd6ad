//! The journal of one update on a backend: the [`JournalSink`] the engine
//! persists through, and its compaction at the end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use converge_backend::{Backend, LockFence, StackRef};
use converge_state::journal::{entries_to_json, JournalEntry};

use super::Secrets;
use crate::journaler::{JournalError, JournalSink};

/// A journal sink on a backend's journal store, opened by
/// [`super::LockedStack::start`]. The journal already holds the base
/// changes made before the operation (secrets provider, cleared pending
/// operations) as its first entries, so the engine's entries are numbered
/// after them ([`JournalSink::first_sequence_id`]).
#[derive(Debug)]
pub struct UpdateJournal {
    pub(super) backend: Arc<dyn Backend>,
    pub(super) stack: StackRef,
    pub(super) secrets: Secrets,
    /// The sequence ID of the first entry the engine persists.
    pub(super) first_sequence_id: u64,
    /// What was handed to the store so far: the lines and their newlines.
    pub(super) bytes_persisted: AtomicU64,
    /// Checked before each write: a lock broken meanwhile stops the
    /// writer (see [`converge_backend::LockFence`]).
    pub(super) fence: Option<Arc<dyn LockFence>>,
}

/// How [`super::LockedStack::finish`] compacted an update's journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The snapshot was uploaded: `bytes` long.
    Uploaded { bytes: usize },
    /// The store replayed the journal itself; nothing was uploaded.
    CompactedByStore,
}

impl UpdateJournal {
    /// The bytes of journal lines persisted so far (each line counted with
    /// its newline, as a journal file stores it).
    pub fn bytes_persisted(&self) -> u64 {
        self.bytes_persisted.load(Ordering::Relaxed)
    }

    pub(super) async fn persist_entries(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        let lines = self.lines(batch)?;
        self.append_lines(lines).await
    }

    /// The entries as journal lines: a run of unchanged resources is one.
    fn lines(&self, entries: &[JournalEntry]) -> Result<Vec<Vec<u8>>, JournalError> {
        entries_to_json(entries, self.secrets.mode()).map_err(|e| JournalError::Encode(Arc::new(e)))
    }

    async fn append_lines(&self, lines: Vec<Vec<u8>>) -> Result<(), JournalError> {
        if let Some(fence) = &self.fence {
            fence
                .check()
                .await
                .map_err(|e| JournalError::Backend(Arc::new(e)))?;
        }
        self.backend
            .append_journal(&self.stack, &lines)
            .await
            .map_err(|e| JournalError::Backend(Arc::new(e)))?;
        let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
        self.bytes_persisted
            .fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(())
    }
}

#[async_trait]
impl JournalSink for UpdateJournal {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        self.persist_entries(batch).await
    }

    /// Encoded ahead: a batch's lines are ready when the previous batch's
    /// write ends (at 100,000 resources, encoding was a third of
    /// the journaler's time, spent while the store waited).
    fn encode(&self, entries: &[JournalEntry]) -> Result<Option<Vec<Vec<u8>>>, JournalError> {
        self.lines(entries).map(Some)
    }

    async fn write_encoded(
        &self,
        batch: &[JournalEntry],
        lines: Option<Vec<Vec<u8>>>,
    ) -> Result<(), JournalError> {
        match lines {
            Some(lines) => self.append_lines(lines).await,
            None => self.persist_entries(batch).await,
        }
    }

    fn first_sequence_id(&self) -> u64 {
        self.first_sequence_id
    }
}

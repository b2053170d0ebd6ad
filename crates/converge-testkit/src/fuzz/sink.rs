//! A journal sink that fails at a chosen batch, for crash tests: what it
//! holds is exactly what a backend would have made durable.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use converge_engine::{JournalError, JournalSink};
use converge_state::journal::{JournalEntry, JournalEntryKind};

/// Keeps batches in memory until batch number `fail_at` (counting from 0),
/// which fails with a [`JournalError`], as does every batch after it. With
/// `keep_failed_batch`, the failed batch is kept anyway: the write reached
/// the disk but its acknowledgement was lost.
#[derive(Debug, Default)]
pub struct FaultySink {
    entries: Mutex<Vec<JournalEntry>>,
    batches: AtomicUsize,
    fail_at: Option<usize>,
    /// Fail the first batch holding an entry of this kind instead.
    fail_on: Option<JournalEntryKind>,
    keep_failed_batch: bool,
    failed: AtomicBool,
}

impl FaultySink {
    pub fn new(fail_at: Option<usize>, keep_failed_batch: bool) -> Self {
        FaultySink {
            fail_at,
            keep_failed_batch,
            ..FaultySink::default()
        }
    }

    /// Fails the first batch that holds an entry of `kind` (and every
    /// batch after it), wherever group commit put that entry.
    pub fn failing_on(kind: JournalEntryKind) -> Self {
        FaultySink {
            fail_on: Some(kind),
            ..FaultySink::default()
        }
    }

    /// Every entry durable so far, in the order persisted.
    pub fn entries(&self) -> Vec<JournalEntry> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Whether a batch has failed.
    pub fn failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// How many batches were offered.
    pub fn batches(&self) -> usize {
        self.batches.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl JournalSink for FaultySink {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        let k = self.batches.fetch_add(1, Ordering::SeqCst);
        let failing = self.fail_at == Some(k)
            || (!self.failed()
                && self
                    .fail_on
                    .is_some_and(|f| batch.iter().any(|e| e.kind == f)));
        if self.failed() && !failing {
            return Err(JournalError::sink(InjectedFault::Broken));
        }
        if !failing || self.keep_failed_batch {
            self.entries
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend_from_slice(batch);
        }
        if failing {
            self.failed.store(true, Ordering::SeqCst);
            return Err(JournalError::sink(InjectedFault::Batch(k)));
        }
        Ok(())
    }
}

/// The failures [`FaultySink`] injects.
#[derive(Debug, thiserror::Error)]
pub enum InjectedFault {
    #[error("injected: the journal is broken")]
    Broken,
    #[error("injected: batch {0} failed")]
    Batch(usize),
}

//! The journaler: the one task that orders journal entries and makes them
//! durable (seed 002).
//!
//! Steps hand it owned entries; it assigns sequence IDs in arrival order,
//! persists whatever has queued up as one batch (group commit: one fsync
//! for many concurrent steps), and only then answers each sender. So a
//! step's Begin is durable before its provider call, and its end entry
//! before it is reported done.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_state::journal::JournalEntry;
use tokio::sync::{mpsc, oneshot};

/// Why entries could not be persisted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot persist the journal: {0}")]
pub struct JournalError(pub String);

/// Where the journaler persists batches of entries. Returning `Ok` means
/// every entry of the batch is durable.
#[async_trait]
pub trait JournalSink: Send + Sync + std::fmt::Debug {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError>;
}

/// A sink that keeps nothing (previews).
#[derive(Debug, Default)]
pub struct DiscardSink;

#[async_trait]
impl JournalSink for DiscardSink {
    async fn persist(&self, _batch: &[JournalEntry]) -> Result<(), JournalError> {
        Ok(())
    }
}

struct Request {
    entry: JournalEntry,
    done: oneshot::Sender<Result<u64, JournalError>>,
}

/// A handle to the journaler task.
#[derive(Debug, Clone)]
pub struct Journaler {
    tx: mpsc::UnboundedSender<Request>,
    /// Every entry persisted so far, in sequence order.
    persisted: Arc<Mutex<Vec<JournalEntry>>>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("entry", &self.entry)
            .finish()
    }
}

impl Journaler {
    /// Starts the journaler task on the current tokio runtime.
    pub fn start(sink: Arc<dyn JournalSink>) -> Journaler {
        let (tx, mut rx) = mpsc::unbounded_channel::<Request>();
        let persisted = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&persisted);
        tokio::spawn(async move {
            let mut next_sequence = 1u64;
            let mut broken: Option<JournalError> = None;
            while let Some(first) = rx.recv().await {
                let mut batch = vec![first];
                while let Ok(more) = rx.try_recv() {
                    batch.push(more);
                }
                if let Some(err) = &broken {
                    for r in batch {
                        let _ = r.done.send(Err(err.clone()));
                    }
                    continue;
                }
                let mut entries = Vec::with_capacity(batch.len());
                for r in &mut batch {
                    r.entry.sequence_id = next_sequence;
                    next_sequence += 1;
                    entries.push(r.entry.clone());
                }
                match sink.persist(&entries).await {
                    Ok(()) => {
                        record
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend(entries);
                        for r in batch {
                            let id = r.entry.sequence_id;
                            let _ = r.done.send(Ok(id));
                        }
                    }
                    Err(err) => {
                        // Nothing after a failed write may be persisted:
                        // later entries could depend on the lost ones.
                        broken = Some(err.clone());
                        for r in batch {
                            let _ = r.done.send(Err(err.clone()));
                        }
                    }
                }
            }
        });
        Journaler { tx, persisted }
    }

    /// Persists one entry; returns its sequence ID once it is durable.
    pub async fn append(&self, entry: JournalEntry) -> Result<u64, JournalError> {
        let (done, wait) = oneshot::channel();
        self.tx
            .send(Request { entry, done })
            .map_err(|_| JournalError("the journaler has stopped".to_owned()))?;
        wait.await
            .map_err(|_| JournalError("the journaler has stopped".to_owned()))?
    }

    /// Every entry persisted so far, in sequence order.
    pub fn entries(&self) -> Vec<JournalEntry> {
        self.persisted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

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
use converge_backend::BackendError;
use converge_state::checkpoint::CheckpointError;
use converge_state::journal::JournalEntry;
use tokio::sync::{mpsc, oneshot};

/// Why entries could not be persisted. Each kind keeps its cause, so a
/// caller can tell a lost lease or a full disk ([`JournalError::Backend`])
/// from an entry that cannot be encoded.
#[derive(Debug, Clone, thiserror::Error)]
pub enum JournalError {
    /// The journaler task is gone (the runtime is shutting down).
    #[error("cannot persist the journal: the journaler has stopped")]
    Stopped,
    /// An entry cannot be serialized.
    #[error("cannot persist the journal: an entry cannot be encoded: {0}")]
    Encode(#[source] Arc<CheckpointError>),
    /// The backend refused or failed the append.
    #[error("cannot persist the journal: {0}")]
    Backend(#[source] Arc<BackendError>),
    /// Any other sink's failure.
    #[error("cannot persist the journal: {0}")]
    Sink(#[source] Arc<dyn std::error::Error + Send + Sync>),
}

impl JournalError {
    /// Wraps another sink's error.
    pub fn sink(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        JournalError::Sink(Arc::new(e))
    }
}

/// Errors compare by kind and message (their causes are not comparable).
impl PartialEq for JournalError {
    fn eq(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            && self.to_string() == other.to_string()
    }
}

/// Where the journaler persists batches of entries. Returning `Ok` means
/// every entry of the batch is durable.
#[async_trait]
pub trait JournalSink: Send + Sync + std::fmt::Debug {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError>;

    /// The sequence ID the journaler gives its first entry: 1, unless the
    /// journal already holds entries (the base changes a stack's owner
    /// journals before the operation).
    fn first_sequence_id(&self) -> u64 {
        1
    }
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
            let mut next_sequence = sink.first_sequence_id();
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
            .map_err(|_| JournalError::Stopped)?;
        wait.await.map_err(|_| JournalError::Stopped)?
    }

    /// Every entry persisted so far, in sequence order.
    pub fn entries(&self) -> Vec<JournalEntry> {
        self.persisted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

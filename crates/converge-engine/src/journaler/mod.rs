//! The journaler: the one task that orders journal entries and makes them
//! durable (seed 002).
//!
//! Steps hand it owned entries; it assigns sequence IDs in arrival order,
//! persists whatever has queued up as one batch (group commit: one fsync
//! for many concurrent steps), and only then answers each sender. So a
//! step's Begin is durable before its provider call, and its end entry
//! before it is reported done.
//!
//! A step that touches nothing outside Converge (a Same step, a
//! component's) may hand over an entry without waiting for it
//! ([`Journaler::append_unsynced`]): the journal is persisted in order, so
//! any later durable entry, or [`Journaler::flush`] at the operation's end,
//! makes it durable too, and a crash before that loses only bookkeeping a
//! re-run redoes. Such entries are held until a request that waits (or
//! `UNSYNCED_HELD` of them) and written with it, not written and synced
//! each on its own — but no longer than `UNSYNCED_LINGER`, so that a
//! reader of the journal (a second command, the service's live view)
//! sees a program's components as it registers them. A failed write fails
//! every later append and the flush.
//!
//! Each persisted entry is then replayed onto the operation's base (moved
//! into the replay, not copied), so the operation's result snapshot is
//! ready when its last entry is durable: no second copy of the journal and
//! no replay at the end.
//!
//! `writer`: the task, a pipeline of ordered writes (the next batch is
//! collected and encoded while one is written, and replayed while the next
//! is written).

mod writer;

use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_backend::BackendError;
use converge_state::checkpoint::CheckpointError;
use converge_state::journal::{JournalEntry, ReplayError, Replayer};
use converge_state::Snapshot;
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

    /// Encodes entries ahead of their write, as lines for
    /// [`JournalSink::write_encoded`]. The journaler calls it with the
    /// entries that arrive while the previous batch is being written, so
    /// a sink that encodes, then writes, does the first while the store
    /// does the second. `None` (the default): the sink does not encode
    /// ahead, and is handed its batches' entries alone.
    fn encode(&self, _entries: &[JournalEntry]) -> Result<Option<Vec<Vec<u8>>>, JournalError> {
        Ok(None)
    }

    /// Persists `batch`; `lines` are its entries as [`JournalSink::encode`]
    /// encoded them, in order (`None` if it does not encode ahead).
    async fn write_encoded(
        &self,
        batch: &[JournalEntry],
        lines: Option<Vec<Vec<u8>>>,
    ) -> Result<(), JournalError> {
        let _ = lines;
        self.persist(batch).await
    }

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

/// Where a request's answer arrives: the entry's sequence ID once durable.
type Answer = oneshot::Receiver<Result<u64, JournalError>>;

/// Waits for the answer to a request handed over (or for its error).
async fn answer(request: Result<Answer, JournalError>) -> Result<u64, JournalError> {
    request?.await.map_err(|_| JournalError::Stopped)?
}

struct Request {
    /// `None`: a flush, answered once everything before it is durable.
    entry: Option<JournalEntry>,
    /// `None`: nobody waits (an unsynced append).
    done: Option<oneshot::Sender<Result<u64, JournalError>>>,
}

impl Request {
    fn answer(self, result: Result<u64, JournalError>) {
        if let Some(done) = self.done {
            let _ = done.send(result);
        }
    }
}

/// What the journaler starts from.
#[derive(Debug, Clone)]
pub struct JournalerOptions {
    /// The snapshot the operation's entries apply to.
    pub base: Arc<Snapshot>,
    /// Also keep every persisted entry in memory, for
    /// [`JournalerOutcome::entries`] (tests and the bench compare them with
    /// what the sink holds); the CLI needs only the snapshot.
    pub keep_entries: bool,
}

/// What [`Journaler::finish`] hands over.
#[derive(Debug)]
pub struct JournalerOutcome {
    /// The base with every persisted entry replayed, or why an entry
    /// could not be.
    pub snapshot: Result<Snapshot, ReplayError>,
    /// Every persisted entry in sequence order, if kept (else empty).
    pub entries: Vec<JournalEntry>,
}

/// The running replay of the persisted entries.
#[derive(Debug)]
struct Replay {
    replayer: Replayer,
    /// Kept entries, when asked for.
    entries: Option<Vec<JournalEntry>>,
    /// The first entry that did not replay; later ones are not applied.
    error: Option<ReplayError>,
}

impl Replay {
    fn record(&mut self, entry: JournalEntry) {
        if let Some(kept) = &mut self.entries {
            kept.push(entry.clone());
        }
        if self.error.is_none() {
            if let Err(e) = self.replayer.apply_owned(entry) {
                self.error = Some(e);
            }
        }
    }
}

/// Moves the entries just persisted into the replay (if `finish` has not
/// taken it), leaving `entries` empty.
fn replay_persisted(record: &Mutex<Option<Replay>>, entries: &mut Vec<JournalEntry>) {
    let mut guard = record.lock().unwrap_or_else(|p| p.into_inner());
    match guard.as_mut() {
        Some(replay) => entries.drain(..).for_each(|entry| replay.record(entry)),
        None => entries.clear(),
    }
}

/// A handle to the journaler task.
#[derive(Debug, Clone)]
pub struct Journaler {
    tx: mpsc::UnboundedSender<Request>,
    /// The replay of every entry persisted so far; taken by `finish`.
    replay: Arc<Mutex<Option<Replay>>>,
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
    pub fn start(sink: Arc<dyn JournalSink>, options: JournalerOptions) -> Journaler {
        let (tx, rx) = mpsc::unbounded_channel::<Request>();
        let replay = Arc::new(Mutex::new(Some(Replay {
            replayer: Replayer::shared(options.base),
            entries: options.keep_entries.then(Vec::new),
            error: None,
        })));
        let record = Arc::clone(&replay);
        tokio::spawn(writer::Writer::new(sink, record, rx).run());
        Journaler { tx, replay }
    }

    /// Persists one entry; the future returns its sequence ID once it is
    /// durable. The entry is handed over when this is called, so the
    /// future holds only the answer's receiver: thousands of steps may
    /// wait for their entries at once.
    pub fn append(
        &self,
        entry: JournalEntry,
    ) -> impl Future<Output = Result<u64, JournalError>> + Send + 'static {
        answer(self.request(Some(entry)))
    }

    /// Queues one entry for the next batch without waiting for it: for
    /// steps with no effect outside Converge only. It is durable once any
    /// later [`Journaler::append`] or [`Journaler::flush`] returns `Ok`; if
    /// its write fails, those fail.
    pub fn append_unsynced(&self, entry: JournalEntry) -> Result<(), JournalError> {
        self.tx
            .send(Request {
                entry: Some(entry),
                done: None,
            })
            .map_err(|_| JournalError::Stopped)
    }

    /// Waits until every entry handed over so far is durable (or fails
    /// with the write error that broke the journal). Call before
    /// [`Journaler::finish`].
    pub async fn flush(&self) -> Result<(), JournalError> {
        answer(self.request(None)).await.map(|_| ())
    }

    /// Hands `entry` (or, with none, just the request for an answer) to
    /// the writer; the receiver gets the answer once it is durable.
    fn request(&self, entry: Option<JournalEntry>) -> Result<Answer, JournalError> {
        let (done, wait) = oneshot::channel();
        self.tx
            .send(Request {
                entry,
                done: Some(done),
            })
            .map_err(|_| JournalError::Stopped)?;
        Ok(wait)
    }

    /// The snapshot every entry persisted so far describes, and the
    /// entries if kept. Called once, when the operation's steps are done
    /// and [`Journaler::flush`] returned: entries persisted afterwards are
    /// in the sink only.
    ///
    /// # Panics
    /// When called twice.
    pub fn finish(&self) -> JournalerOutcome {
        let replay = self
            .replay
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("Journaler::finish is called once");
        let snapshot = match replay.error {
            Some(e) => Err(e),
            None => Ok(replay.replayer.into_snapshot()),
        };
        JournalerOutcome {
            snapshot,
            entries: replay.entries.unwrap_or_default(),
        }
    }
}

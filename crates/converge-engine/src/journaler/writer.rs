//! The journaler's task: collects requests into batches and writes them in
//! order, one write at a time, as a pipeline (group commit):
//!
//! - While a batch is being written, the requests that arrive meanwhile
//!   collect into the next one, and the sink encodes them as they come
//!   ([`JournalSink::encode`]), so the next write starts as soon as the
//!   one under way ends, its bytes ready.
//! - Once a write ends, the steps waiting for its entries get their
//!   answers and the next write starts; the written entries are replayed
//!   on a thread of their own (`replay_thread`), in write order, while the
//!   task collects and encodes the next batch.
//! - A flush is answered by the replay thread once every batch before it
//!   is replayed (an error too, once the journal broke), so that
//!   [`super::Journaler::finish`] sees every entry written before it: a
//!   snapshot missing a written entry could lose track of an object.
//!
//! Writes never overlap: a batch is written only after the previous one is
//! durable, so the journal holds the entries in sequence order and a durable
//! entry's predecessors are durable too.

use std::sync::{mpsc as std_mpsc, Arc, Mutex, PoisonError};

use converge_state::journal::JournalEntry;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::{replay_persisted, JournalError, JournalSink, Replay, Request};

/// How many unsynced entries the journaler holds, waiting for a request
/// that waits, before it writes them anyway: a bound on the memory they
/// take and on what a crash loses of a long run of components.
const UNSYNCED_HELD: usize = 1024;

/// The most entries one batch holds. Requests that arrive faster than they
/// are written wait in the channel rather than in a batch that grows with
/// them: a program of 100,000 unchanged resources hands all their entries
/// over before the first write ends, and one batch of them all was copied
/// twice more into fresh memory (from the channel into a vector of
/// requests, then of entries). Four times the steps in flight
/// (`crate::STEPS_IN_FLIGHT`): the Begin and end entries of a whole window
/// of steps still share one write and its sync.
const BATCH_MOST: usize = 16_384;

/// How long an unsynced entry waits for a request that waits before the
/// entries held are written on their own.
const UNSYNCED_LINGER: std::time::Duration = std::time::Duration::from_millis(200);

/// The fewest new entries encoded ahead at once. Encoding is per call: a
/// run of unchanged resources is one line within a call, and a call per
/// handful of entries split a 1 % update's runs into many lines (5 % more
/// bytes written) for no gain. What is left is encoded when the write
/// starts.
const ENCODE_AHEAD_LEAST: usize = 1024;

type Reply = oneshot::Sender<Result<u64, JournalError>>;

/// The entries of one write and the requests it answers.
#[derive(Default)]
struct Batch {
    entries: Vec<JournalEntry>,
    /// The sink's lines for `entries[..encoded]`, encoded while the
    /// previous batch was being written.
    lines: Vec<Vec<u8>>,
    encoded: usize,
    /// The sink does not encode ahead ([`JournalSink::encode`] said
    /// `None`): it is handed the entries alone.
    unencoded: bool,
    /// Pending: an entry could not be encoded, so the batch is not
    /// written and the journal breaks when its turn comes. Handed to the
    /// replay thread: the journal broke, and the batch's flushes get this
    /// error (once what was written before is replayed).
    failed: Option<JournalError>,
    /// Requests waiting for an entry of the batch: answered once written.
    waiting: Vec<(u64, Reply)>,
    /// Flushes: answered once the batch is written and replayed.
    flushes: Vec<(u64, Reply)>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.waiting.is_empty() && self.flushes.is_empty()
    }

    /// Whether to write the batch as soon as it may be: someone waits, or
    /// the unsynced entries held reach their bound.
    fn wants_writing(&self) -> bool {
        !self.waiting.is_empty() || !self.flushes.is_empty() || self.entries.len() >= UNSYNCED_HELD
    }

    fn is_full(&self) -> bool {
        self.entries.len() >= BATCH_MOST
    }

    /// Answers the requests waiting for the batch's entries with `err`.
    fn fail_waiting(&mut self, err: &JournalError) {
        for (_, reply) in self.waiting.drain(..) {
            let _ = reply.send(Err(err.clone()));
        }
    }

    /// Empties the batch, keeping its vectors' memory for the next one.
    fn clear(&mut self) {
        self.entries.clear();
        self.lines.clear();
        self.encoded = 0;
        self.unencoded = false;
        self.failed = None;
        self.waiting.clear();
        self.flushes.clear();
    }
}

/// A write under way: the batch comes back with its result.
type InFlight = JoinHandle<(Result<(), JournalError>, Batch)>;

/// What woke the task.
enum Event {
    Request(Option<Request>),
    Written(Result<(Result<(), JournalError>, Batch), tokio::task::JoinError>),
    Lingered,
}

/// The journaler task's state.
pub(super) struct Writer {
    sink: Arc<dyn JournalSink>,
    rx: mpsc::UnboundedReceiver<Request>,
    /// Written batches (and flushes) to the replay thread, in order.
    replays: std_mpsc::Sender<Batch>,
    next_sequence: u64,
    /// The error that broke the journal: every later request gets it.
    broken: Option<JournalError>,
    /// The requests collected for the next write.
    pending: Batch,
    in_flight: Option<InFlight>,
    /// Replayed batches' vectors, kept for the next ones: new vectors each
    /// time would be fresh memory each time.
    spares: Arc<Mutex<Vec<Batch>>>,
    /// When the oldest unsynced entry still held arrived.
    held_since: Option<tokio::time::Instant>,
}

impl Writer {
    pub(super) fn new(
        sink: Arc<dyn JournalSink>,
        record: Arc<Mutex<Option<Replay>>>,
        rx: mpsc::UnboundedReceiver<Request>,
    ) -> Writer {
        let (replays, jobs) = std_mpsc::channel();
        let spares = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spares);
        tokio::task::spawn_blocking(move || replay_thread(&record, &jobs, &kept));
        Writer {
            next_sequence: sink.first_sequence_id(),
            sink,
            rx,
            replays,
            broken: None,
            pending: Batch::default(),
            in_flight: None,
            spares,
            held_since: None,
        }
    }

    pub(super) async fn run(mut self) {
        loop {
            match self.next_event().await {
                Event::Request(None) => break,
                Event::Request(Some(first)) => self.collect(first),
                Event::Written(joined) => {
                    self.in_flight = None;
                    self.written(joined);
                }
                Event::Lingered => self.start_write(),
            }
        }
        // Every handle is gone without a final flush: what is held is
        // still written, as it was before it was held.
        loop {
            if let Some(handle) = self.in_flight.take() {
                let joined = handle.await;
                self.written(joined);
            } else if self.broken.is_none() && !self.pending.is_empty() {
                self.start_write();
            } else {
                break;
            }
        }
    }

    async fn next_event(&mut self) -> Event {
        let room = !self.pending.is_full();
        match (&mut self.in_flight, self.held_since) {
            (Some(handle), _) => tokio::select! {
                biased;
                joined = handle => Event::Written(joined),
                r = self.rx.recv(), if room => Event::Request(r),
            },
            (None, Some(since)) => tokio::select! {
                r = self.rx.recv() => Event::Request(r),
                () = tokio::time::sleep_until(since + UNSYNCED_LINGER) => Event::Lingered,
            },
            (None, None) => Event::Request(self.rx.recv().await),
        }
    }

    /// Takes `first` and the requests waiting behind it into the pending
    /// batch (up to `BATCH_MOST` entries); encodes them if a write is under
    /// way, else writes them if they want it.
    fn collect(&mut self, first: Request) {
        let mut request = Some(first);
        while let Some(r) = request.take() {
            self.take(r);
            if !self.pending.is_full() {
                request = self.rx.try_recv().ok();
            }
        }
        if self.pending.is_empty() {
            return;
        }
        if self.in_flight.is_some() {
            if self.pending.entries.len() - self.pending.encoded >= ENCODE_AHEAD_LEAST {
                self.encode_pending();
            }
        } else if self.pending.wants_writing() {
            self.start_write();
            return;
        }
        // Unsynced entries wait for the next request that waits (a Begin,
        // an end entry, the final flush), which persists them with its
        // own: a program that registers components one after another no
        // longer costs a write and an fsync each. Their loss in a crash was
        // already allowed.
        if self.held_since.is_none() {
            self.held_since = Some(tokio::time::Instant::now());
        }
    }

    /// Numbers one request's entry into the pending batch, or answers it
    /// at once if the journal is broken.
    fn take(&mut self, mut r: Request) {
        if let Some(err) = &self.broken {
            if r.entry.is_some() {
                r.answer(Err(err.clone()));
            } else if let Some(done) = r.done {
                // A flush: answered after the replay of what was written.
                let mut flush = Batch {
                    failed: Some(err.clone()),
                    ..Batch::default()
                };
                flush
                    .flushes
                    .push((self.next_sequence.saturating_sub(1), done));
                self.replay(flush);
            }
            return;
        }
        if let Some(mut entry) = r.entry.take() {
            entry.sequence_id = self.next_sequence;
            self.next_sequence += 1;
            self.pending.entries.push(entry);
            if let Some(done) = r.done {
                self.pending
                    .waiting
                    .push((self.next_sequence.saturating_sub(1), done));
            }
        } else if let Some(done) = r.done {
            // A flush's answer is the last sequence ID given out.
            self.pending
                .flushes
                .push((self.next_sequence.saturating_sub(1), done));
        }
    }

    /// Encodes the pending entries not encoded yet.
    fn encode_pending(&mut self) {
        let b = &mut self.pending;
        if b.unencoded || b.failed.is_some() || b.encoded == b.entries.len() {
            return;
        }
        match self.sink.encode(&b.entries[b.encoded..]) {
            Ok(Some(lines)) => {
                b.lines.extend(lines);
                b.encoded = b.entries.len();
            }
            Ok(None) => b.unencoded = true,
            Err(e) => b.failed = Some(e),
        }
    }

    /// Starts writing the pending batch (nothing may be in flight). A
    /// batch of flushes alone goes to the replay thread at once: everything
    /// before it is written.
    fn start_write(&mut self) {
        debug_assert!(self.in_flight.is_none());
        self.held_since = None;
        let next = self
            .spares
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
            .unwrap_or_default();
        if self.pending.entries.is_empty() {
            let flushes = std::mem::replace(&mut self.pending, next);
            self.replay(flushes);
            return;
        }
        self.encode_pending();
        let mut batch = std::mem::replace(&mut self.pending, next);
        if let Some(err) = batch.failed.take() {
            self.break_with(err, &mut batch);
            return;
        }
        let sink = Arc::clone(&self.sink);
        self.in_flight = Some(tokio::spawn(async move {
            let lines = match batch.unencoded {
                true => None,
                false => Some(std::mem::take(&mut batch.lines)),
            };
            let result = sink.write_encoded(&batch.entries, lines).await;
            (result, batch)
        }));
    }

    /// A write ended: its waiting steps are answered, the next write
    /// starts, and the written entries go to the replay thread (which
    /// answers the batch's flushes).
    fn written(
        &mut self,
        joined: Result<(Result<(), JournalError>, Batch), tokio::task::JoinError>,
    ) {
        let (result, mut batch) = match joined {
            Ok(done) => done,
            // The write panicked or was cancelled: its batch is lost with
            // its answer channels (each waiter sees the journaler gone).
            Err(_) => (Err(JournalError::Stopped), Batch::default()),
        };
        if let Err(err) = result {
            self.break_with(err, &mut batch);
            return;
        }
        for (id, reply) in batch.waiting.drain(..) {
            let _ = reply.send(Ok(id));
        }
        let next_has_entries = !self.pending.entries.is_empty();
        if next_has_entries && self.pending.wants_writing() {
            self.start_write();
        }
        self.replay(batch);
        // Flushes that came with no entry of their own wait for the replay
        // of what was written before them only.
        if !next_has_entries && !self.pending.flushes.is_empty() {
            self.start_write();
        }
    }

    /// A failed write breaks the journal: nothing after it may be
    /// persisted, since later entries could depend on the lost ones. Every
    /// request of `batch` and of the pending batch gets `err`; the flushes
    /// once what was written before is replayed.
    fn break_with(&mut self, err: JournalError, batch: &mut Batch) {
        let mut flushes = Batch {
            failed: Some(err.clone()),
            ..Batch::default()
        };
        for b in [&mut *batch, &mut self.pending] {
            b.fail_waiting(&err);
            flushes.flushes.append(&mut b.flushes);
            b.entries.clear();
        }
        self.pending.clear();
        self.replay(flushes);
        self.held_since = None;
        self.broken = Some(err);
    }

    /// Hands a written batch (or flushes) to the replay thread. If it is
    /// gone, the answers are dropped: their waiters see the journaler
    /// stopped.
    fn replay(&self, batch: Batch) {
        if batch.is_empty() {
            return;
        }
        let _ = self.replays.send(batch);
    }
}

/// Replays written batches in write order, then answers their flushes
/// (with the error that broke the journal, for a batch marked failed).
fn replay_thread(
    record: &Mutex<Option<Replay>>,
    jobs: &std_mpsc::Receiver<Batch>,
    spares: &Mutex<Vec<Batch>>,
) {
    while let Ok(mut batch) = jobs.recv() {
        let result = match batch.failed.take() {
            None => {
                replay_persisted(record, &mut batch.entries);
                Ok(())
            }
            Some(err) => Err(err),
        };
        for (id, reply) in batch.waiting.drain(..).chain(batch.flushes.drain(..)) {
            let _ = reply.send(result.clone().map(|()| id));
        }
        batch.clear();
        let mut kept = spares.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() < 2 {
            kept.push(batch);
        }
    }
}

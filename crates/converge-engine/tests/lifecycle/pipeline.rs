//! The journaler's pipeline: the entries that arrive while a
//! batch is being written are encoded meanwhile, and the next write gets
//! their lines when the one under way ends; writes never overlap, so the
//! journal holds the entries in sequence order; an entry that cannot be
//! encoded breaks the journal as a failed write does; the result holds
//! every entry written (the written batches are replayed on a thread of
//! their own, and the final flush waits for it).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use converge_engine::{EventSink, JournalError, JournalSink, OperationContext};
use converge_state::journal::JournalEntry;
use converge_testkit::{component, custom, program, register_stack};
use tokio::sync::Notify;

use super::*;

/// A deadlock guard, not a timing assertion: the first write waits this
/// long at most for the journaler to encode entries while it is under way.
const GUARD: Duration = Duration::from_secs(60);

/// Components registered while the first write is held: more than the
/// journaler encodes ahead at once (1,024).
const COMPONENTS: usize = 1_500;

/// One write's entries, and the lines it was handed with them.
type Written = (Vec<JournalEntry>, Option<Vec<Vec<u8>>>);

/// A sink that encodes each entry as its sequence ID, holds its first
/// write until it has been asked to encode entries while that write was
/// under way, and keeps each batch with the lines it was handed.
#[derive(Debug, Default)]
struct PipelineSink {
    /// Writes under way now, and the most there ever were at once.
    writing: AtomicUsize,
    most_at_once: AtomicUsize,
    /// Whether `encode` was called while a write was under way.
    encoded_during_write: AtomicBool,
    encoded: Notify,
    writes: AtomicUsize,
    /// Notified when the first write begins.
    first_write: Notify,
    /// Each write's entries and lines, in the order the writes began.
    batches: Mutex<Vec<Written>>,
    /// The sequence ID whose entry cannot be encoded, if any.
    unencodable: Option<u64>,
    persist_calls: AtomicUsize,
}

#[async_trait]
impl JournalSink for PipelineSink {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        self.persist_calls.fetch_add(1, Ordering::SeqCst);
        self.batches.lock().unwrap().push((batch.to_vec(), None));
        Ok(())
    }

    fn encode(&self, entries: &[JournalEntry]) -> Result<Option<Vec<Vec<u8>>>, JournalError> {
        if self.writing.load(Ordering::SeqCst) > 0 {
            self.encoded_during_write.store(true, Ordering::SeqCst);
            self.encoded.notify_one();
        }
        if let Some(bad) = self.unencodable {
            if entries.iter().any(|e| e.sequence_id == bad) {
                return Err(JournalError::sink(std::io::Error::other(format!(
                    "entry {bad} cannot be encoded"
                ))));
            }
        }
        Ok(Some(
            entries
                .iter()
                .map(|e| e.sequence_id.to_string().into_bytes())
                .collect(),
        ))
    }

    async fn write_encoded(
        &self,
        batch: &[JournalEntry],
        lines: Option<Vec<Vec<u8>>>,
    ) -> Result<(), JournalError> {
        let now = self.writing.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        if self.writes.fetch_add(1, Ordering::SeqCst) == 0 {
            self.first_write.notify_one();
            // Held until the journaler encodes what arrives meanwhile.
            let _ = tokio::time::timeout(GUARD, async {
                while !self.encoded_during_write.load(Ordering::SeqCst) {
                    self.encoded.notified().await;
                }
            })
            .await;
        }
        self.batches.lock().unwrap().push((batch.to_vec(), lines));
        self.writing.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

/// A program whose components arrive while the first write is under way
/// (they wait for no write): the stack and `a` (whose provider's Begin
/// makes the first write), then, once that write has begun, `COMPONENTS`
/// components registered one after another.
fn custom_beside_components(sink: Arc<PipelineSink>) -> impl converge_engine::Program {
    program(move |m| {
        let sink = Arc::clone(&sink);
        async move {
            let stack = register_stack(&m).await?;
            let mut a = custom(T, "a", Default::default());
            a.parent = Some(stack.clone());
            let began = sink.first_write.notified();
            let created = {
                let m = m.clone();
                tokio::spawn(async move { m.register_resource(a).await.map(|_| ()) })
            };
            tokio::time::timeout(GUARD, began)
                .await
                .map_err(|_| "the first write never began".to_owned())?;
            for i in 0..COMPONENTS {
                let mut c = component("my:index:Group", &format!("c{i}"));
                c.parent = Some(stack.clone());
                m.register_resource(c).await.map_err(|e| e.to_string())?;
                tokio::task::yield_now().await;
            }
            created
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())
        }
    })
}

fn context(sink: Arc<dyn JournalSink>) -> (converge_state::Snapshot, OperationContext) {
    let base = converge_state::Snapshot::empty("2026-01-01T00:00:00Z");
    let ctx = OperationContext {
        base: Arc::new(base.clone()),
        loader: Arc::new(MockLoader::single(provider())),
        sink,
        events: EventSink::discard(),
        options: converge_engine::DeploymentOptions::new("test", "proj"),
    };
    (base, ctx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_batch_is_encoded_while_one_is_written_and_writes_never_overlap() {
    let sink = Arc::new(PipelineSink::default());
    let (base, ctx) = context(sink.clone());
    let r = converge_engine::update(ctx, &custom_beside_components(sink.clone())).await;
    expect_ok(&r);
    assert!(
        sink.encoded_during_write.load(Ordering::SeqCst),
        "no entry was encoded while a write was under way"
    );
    assert_eq!(
        sink.most_at_once.load(Ordering::SeqCst),
        1,
        "writes overlapped"
    );
    assert_eq!(sink.persist_calls.load(Ordering::SeqCst), 0);
    let batches = sink.batches.lock().unwrap().clone();
    assert!(batches.len() >= 2, "{} write(s)", batches.len());
    // Each write was handed the lines of exactly its own entries, in order.
    for (entries, lines) in &batches {
        let ids: Vec<Vec<u8>> = entries
            .iter()
            .map(|e| e.sequence_id.to_string().into_bytes())
            .collect();
        assert_eq!(lines.as_ref(), Some(&ids));
    }
    // The writes hold the entries in sequence order, with none missing,
    // and they replay to the result.
    let entries: Vec<JournalEntry> = batches.into_iter().flat_map(|(e, _)| e).collect();
    let ids: Vec<u64> = entries.iter().map(|e| e.sequence_id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    assert_eq!(
        converge_state::journal::replay(&base, &entries).unwrap(),
        *r.snapshot
    );
    assert_eq!(r.snapshot.resources.len(), 1 + 1 + 1 + COMPONENTS);
}

/// An entry that cannot be encoded while another batch is written fails
/// the operation as a failed write does: it and every entry after it stay
/// out of the journal, and what was written still replays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_that_cannot_be_encoded_breaks_the_journal() {
    // The stack, the provider's Begin, then the components and `a`: the
    // tenth entry arrives while the first write is held.
    let sink = Arc::new(PipelineSink {
        unencodable: Some(10),
        ..PipelineSink::default()
    });
    let (base, ctx) = context(sink.clone());
    let r = converge_engine::update(ctx, &custom_beside_components(sink.clone())).await;
    let err = r.error.as_ref().expect("the operation fails");
    assert!(
        err.to_string().contains("entry 10 cannot be encoded"),
        "{err}"
    );
    let entries: Vec<JournalEntry> = sink
        .batches
        .lock()
        .unwrap()
        .iter()
        .flat_map(|(e, _)| e.clone())
        .collect();
    assert!(entries.iter().all(|e| e.sequence_id < 10), "{entries:#?}");
    // The result holds every entry written before the break (the flush
    // is answered once they are replayed): compacting it loses nothing.
    assert_eq!(
        converge_state::journal::replay(&base, &entries).expect("what was written replays"),
        *r.snapshot
    );
}

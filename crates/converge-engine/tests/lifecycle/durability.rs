//! Which steps wait for their journal entries:
//! steps with effects outside Converge wait (Begin durable before the
//! provider call, end entry before the step is reported); components,
//! outputs and Same steps hand their entries over unsynced and get their
//! answers at once, and are written with the next entry that waits or
//! after a short while; an unchanged resource is journaled as a compact
//! entry.

use std::time::Duration;

use async_trait::async_trait;
use converge_engine::{EventSink, JournalError, JournalSink, OperationContext};
use converge_state::journal::{JournalEntry, JournalEntryKind};
use converge_testkit::{check_journal, component, custom, program, register_stack};
use tokio::sync::Semaphore;

use super::*;

/// A sink that persists nothing until the gate opens: a step that waits
/// for its entry waits for the gate.
#[derive(Debug)]
struct GatedSink {
    gate: Arc<Semaphore>,
    entries: Mutex<Vec<JournalEntry>>,
}

#[async_trait]
impl JournalSink for GatedSink {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        // Each batch takes a permit and gives it back: once open, open.
        let permit = self.gate.acquire().await.expect("gate never closes");
        drop(permit);
        self.entries.lock().unwrap().extend_from_slice(batch);
        Ok(())
    }
}

/// An update of an empty stack with the mock provider, journaled to
/// `sink`: the base, the operation's context and the provider's objects.
fn on_an_empty_stack(
    sink: Arc<dyn JournalSink>,
) -> (converge_state::Snapshot, OperationContext, Arc<MockCloud>) {
    let base = converge_state::Snapshot::empty("2026-01-01T00:00:00Z");
    let (_w, cloud) = world(provider());
    let ctx = OperationContext {
        base: Arc::new(base.clone()),
        loader: Arc::new(MockLoader::single(provider().with_cloud(cloud.clone()))),
        sink,
        events: EventSink::discard(),
        options: converge_engine::DeploymentOptions::new("test", "proj"),
    };
    (base, ctx, cloud)
}

/// A deadlock guard, not a timing assertion: a registration that waited
/// for the closed gate would never return.
const GUARD: Duration = Duration::from_secs(60);

#[tokio::test]
async fn components_and_outputs_get_their_answers_before_their_entries_are_durable() {
    let gate = Arc::new(Semaphore::new(0));
    let sink = Arc::new(GatedSink {
        gate: Arc::clone(&gate),
        entries: Mutex::new(Vec::new()),
    });
    let persisted_when_answered: Arc<Mutex<Option<usize>>> = Arc::default();
    let p = {
        let gate = Arc::clone(&gate);
        let sink = Arc::clone(&sink);
        let seen = Arc::clone(&persisted_when_answered);
        program(move |m| {
            let (gate, sink, seen) = (Arc::clone(&gate), Arc::clone(&sink), Arc::clone(&seen));
            async move {
                let registered = tokio::time::timeout(GUARD, async {
                    let stack = register_stack(&m).await?;
                    let mut c = component("my:index:Group", "c");
                    c.parent = Some(stack);
                    let c = m.register_resource(c).await.map_err(|e| e.to_string())?;
                    // Its outputs are answered before they are durable too.
                    m.register_resource_outputs(&c.urn, inputs(&[("out", "o")]))
                        .await
                        .map_err(|e| e.to_string())?;
                    Ok::<_, String>(c)
                })
                .await
                .map_err(|_| {
                    // Open the gate, so that the operation's final flush
                    // ends and the test fails instead of hanging.
                    gate.add_permits(1 << 20);
                    "a component or its outputs waited for the journal".to_owned()
                })??;
                *seen.lock().unwrap() = Some(sink.entries.lock().unwrap().len());
                gate.add_permits(1);
                // A custom resource's create waits for its entries as
                // before (the gate is open now).
                let mut a = custom(T, "a", inputs(&[("v", "1")]));
                a.parent = Some(registered.urn);
                m.register_resource(a).await.map_err(|e| e.to_string())?;
                Ok(())
            }
        })
    };
    let (base, ctx, cloud) = on_an_empty_stack(sink.clone());
    let r = converge_engine::update(ctx, &p).await;
    expect_ok(&r);
    assert_eq!(*persisted_when_answered.lock().unwrap(), Some(0));

    // Everything reached the sink by the end (the final flush), and the
    // journal replays to the result.
    let entries = sink.entries.lock().unwrap().clone();
    check_journal(&base, &entries);
    assert_eq!(
        converge_state::journal::replay(&base, &entries).unwrap(),
        *r.snapshot
    );
    // Begins only for what has effects outside Converge: the provider and
    // the custom resource; none for the stack and the component.
    let begins: Vec<String> = entries
        .iter()
        .filter(|e| e.kind == JournalEntryKind::Begin)
        .filter_map(|e| e.operation.as_ref())
        .map(|op| op.resource.urn.name().to_owned())
        .collect();
    assert_eq!(begins, ["default", "a"], "{entries:#?}");
    assert_eq!(cloud.len(), 1);
}

/// A sink that keeps each batch as it came.
#[derive(Debug, Default)]
struct BatchSink {
    batches: Mutex<Vec<Vec<JournalEntry>>>,
}

#[async_trait]
impl JournalSink for BatchSink {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        self.batches.lock().unwrap().push(batch.to_vec());
        Ok(())
    }
}

/// Unsynced entries are held until a request that waits for its entry and
/// written with it: components registered one after another (each after
/// the previous one's answer) cost no write of their own.
#[tokio::test]
async fn unsynced_entries_are_written_with_the_next_entry_that_waits() {
    let sink = Arc::new(BatchSink::default());
    let p = program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut parent = stack;
        for name in ["c1", "c2", "c3"] {
            let mut c = component("my:index:Group", name);
            c.parent = Some(parent);
            parent = m.register_resource(c).await.map_err(|e| e.to_string())?.urn;
            // As a program across a network: the journaler has time to
            // write between two registrations, if it would (well within
            // the 200 ms it holds entries for at most).
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut a = custom(T, "a", inputs(&[("v", "1")]));
        a.parent = Some(parent);
        m.register_resource(a).await.map_err(|e| e.to_string())?;
        Ok(())
    });
    let (base, ctx, _cloud) = on_an_empty_stack(sink.clone());
    let r = converge_engine::update(ctx, &p).await;
    expect_ok(&r);
    let batches = sink.batches.lock().unwrap().clone();
    let names = |batch: &[JournalEntry]| -> Vec<String> {
        batch
            .iter()
            .map(|e| {
                let urn = e.operation.as_ref().map(|op| &op.resource.urn);
                let urn = urn.or(e.state.as_ref().map(|s| &s.urn));
                urn.map_or_else(String::new, |u| u.name().to_owned())
            })
            .collect()
    };
    // The first write holds the stack and the three components, and the
    // default provider's Begin that made it.
    let first = names(&batches[0]);
    for name in ["proj-test", "c1", "c2", "c3"] {
        assert!(first.iter().any(|n| n == name), "{name} in {batches:#?}");
    }
    assert_eq!(
        batches[0].last().map(|e| e.kind),
        Some(JournalEntryKind::Begin),
        "{batches:#?}"
    );
    // The journal is the same as ever: it replays to the result.
    let entries: Vec<JournalEntry> = batches.concat();
    check_journal(&base, &entries);
    assert_eq!(
        converge_state::journal::replay(&base, &entries).unwrap(),
        *r.snapshot
    );
}

/// Held entries do not wait for ever: a program that goes on registering
/// components, and nothing that waits for its entry, has the first of them
/// in the journal while it runs, where another command reads it (it would
/// be written with the 1,024th otherwise, or at the end).
#[tokio::test]
async fn held_entries_are_written_when_no_entry_that_waits_comes() {
    let sink = Arc::new(BatchSink::default());
    let sunk = Arc::clone(&sink);
    let p = program(move |m| {
        let seen = Arc::clone(&sunk);
        async move {
            let stack = register_stack(&m).await?;
            let written = || {
                let batches = seen.batches.lock().unwrap();
                batches
                    .iter()
                    .flatten()
                    .any(|e| e.state.as_ref().is_some_and(|s| s.urn.name() == "c0"))
            };
            for i in 0..500 {
                let mut c = component("my:index:Group", &format!("c{i}"));
                c.parent = Some(stack.clone());
                m.register_resource(c).await.map_err(|e| e.to_string())?;
                if written() {
                    return Ok(());
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err("c0 was not written while 500 more components came".to_owned())
        }
    });
    let (base, ctx, _cloud) = on_an_empty_stack(sink.clone());
    let r = converge_engine::update(ctx, &p).await;
    expect_ok(&r);
    let entries: Vec<JournalEntry> = sink.batches.lock().unwrap().concat();
    check_journal(&base, &entries);
    assert_eq!(
        converge_state::journal::replay(&base, &entries).unwrap(),
        *r.snapshot
    );
}

#[tokio::test]
async fn an_unchanged_resource_is_journaled_by_its_index_only() {
    let (mut w, _cloud) = world(provider());
    let one = || {
        program(|m| async move {
            let stack = register_stack(&m).await?;
            reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))).await?;
            Ok(())
        })
    };
    expect_ok(&w.up(&one()).await);
    let r = w.up(&one()).await;
    expect_ok(&r);
    assert!(
        all_ops(&r).iter().all(|(_, op)| *op == StepOp::Same),
        "{:?}",
        all_ops(&r)
    );
    // One entry per resource (stack, provider, a), each only an index:
    // no Begin, no state.
    assert_eq!(r.journal.len(), 3, "{:#?}", r.journal);
    for e in &r.journal {
        assert_eq!(e.kind, JournalEntryKind::Success);
        assert!(
            e.state.is_none() && e.same_old.is_some() && e.elide_write,
            "{e}"
        );
    }
    // The world checked that the journal replays to the result; the
    // result is the state as it was.
    assert_eq!(w.resource("a").unwrap().outputs.get("v"), Some(&s("1")));
}

/// A preview that keeps no plan (`record_plans` off, as `converge preview`
/// runs) records no resource plans and no planned inputs, and otherwise
/// plans the same steps with the same result.
#[tokio::test]
async fn a_preview_without_a_kept_plan_plans_the_same_and_records_none() {
    let (mut w, _cloud) = world(provider());
    let two = |v: &'static str| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))).await?;
            reg(&m, &stack, custom(T, "b", inputs(&[("v", v)]))).await?;
            Ok(())
        })
    };
    expect_ok(&w.up(&two("1")).await);
    let kept = w.preview(&two("2")).await;
    expect_ok(&kept);
    assert!(!kept.resource_plans.is_empty());
    assert!(kept.plan.steps.iter().any(|s| s.inputs.is_some()));

    w.options.record_plans = false;
    let bare = w.preview(&two("2")).await;
    expect_ok(&bare);
    assert!(bare.resource_plans.is_empty());
    assert!(bare.plan.steps.iter().all(|s| s.inputs.is_none()));
    let ops = |r: &converge_engine::OperationResult| {
        r.plan
            .steps
            .iter()
            .map(|s| (s.urn.clone(), s.op))
            .collect::<Vec<_>>()
    };
    assert_eq!(ops(&bare), ops(&kept));
    assert_eq!(bare.snapshot, kept.snapshot);
}

/// A sink that keeps each batch as it came, persisting none until the
/// gate opens.
#[derive(Debug)]
struct GatedBatchSink {
    gate: Arc<Semaphore>,
    batches: Mutex<Vec<Vec<JournalEntry>>>,
}

#[async_trait]
impl JournalSink for GatedBatchSink {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        drop(self.gate.acquire().await.expect("gate never closes"));
        self.batches.lock().unwrap().push(batch.to_vec());
        Ok(())
    }
}

/// Entries that come faster than they are written wait in the channel,
/// not in one batch that grows with them: 20,000 components handed over
/// while the first write is held are written in batches of at most the
/// journaler's 16,384, and the journal replays to the result.
#[tokio::test]
async fn a_batch_holds_at_most_sixteen_thousand_entries() {
    const COMPONENTS: usize = 20_000;
    let gate = Arc::new(Semaphore::new(0));
    let sink = Arc::new(GatedBatchSink {
        gate: Arc::clone(&gate),
        batches: Mutex::new(Vec::new()),
    });
    let opener = Arc::clone(&gate);
    let p = program(move |m| {
        let gate = Arc::clone(&opener);
        async move {
            let stack = register_stack(&m).await?;
            for i in 0..COMPONENTS {
                let mut c = component("my:index:Group", &format!("c{i}"));
                c.parent = Some(stack.clone());
                m.register_resource(c).await.map_err(|e| e.to_string())?;
            }
            gate.add_permits(1 << 20);
            Ok(())
        }
    });
    let (base, ctx, _cloud) = on_an_empty_stack(sink.clone());
    let r = converge_engine::update(ctx, &p).await;
    expect_ok(&r);
    let batches = sink.batches.lock().unwrap().clone();
    let largest = batches.iter().map(Vec::len).max().unwrap_or(0);
    assert!(largest <= 16_384, "a batch of {largest} entries");
    let entries: Vec<JournalEntry> = batches.concat();
    assert_eq!(entries.len(), COMPONENTS + 1);
    // The whole journal, not every prefix (`check_journal` replays each).
    assert_eq!(
        converge_state::journal::replay(&base, &entries).unwrap(),
        *r.snapshot
    );
}

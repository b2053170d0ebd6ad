//! The user's interruption (Ctrl-C): once cancelled, no new step starts —
//! registrations, deletions and reads not yet under way are refused — the
//! providers are told to cancel, and the steps under way are waited for
//! and journaled as they end; once stopped, the steps still under way are
//! no longer waited for and stay pending operations. Either way nothing
//! is deleted that the program did not get to declare, the operation ends
//! with `Interrupted`, and (as after every lifecycle test) every journal
//! prefix replays to a valid snapshot and every cloud object is tracked.

use std::time::Duration;

use converge_engine::{Cancellation, EngineError};
use converge_state::OperationType;
use converge_testkit::{custom, program, register_stack, Rpc, TestProgram};

use super::*;

/// Longer than any test runs: a call this slow is never waited for.
const FOREVER: Duration = Duration::from_secs(3600);

/// How long the slow provider's creates and deletes take: long enough for
/// the program to cancel while they are under way.
const SLOW: Duration = Duration::from_millis(300);

/// How long the program waits after starting its slow registrations
/// before it cancels: they have begun by then (their Begin entries are
/// written at once; only the provider call is slow).
const SETTLE: Duration = Duration::from_millis(50);

/// A program of `names`, registered at once (none waits for another).
fn things(names: &'static [&'static str]) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut tasks = tokio::task::JoinSet::new();
        for name in names {
            let (m, stack) = (m.clone(), stack.clone());
            tasks.spawn(
                async move { reg(&m, &stack, custom(T, name, inputs(&[("v", name)]))).await },
            );
        }
        while let Some(joined) = tasks.join_next().await {
            joined.map_err(|e| e.to_string())??;
        }
        Ok(())
    })
}

/// `a` and `b` registered at once; while they are under way the user
/// cancels, then the program goes on to register `c`, and, when
/// `also_stop`, stops the operation before registering `c`.
fn cancelled_midway(cancel: Cancellation, also_stop: bool) -> TestProgram {
    program(move |m| {
        let cancel = cancel.clone();
        async move {
            let stack = register_stack(&m).await?;
            let mut slow = tokio::task::JoinSet::new();
            for name in ["a", "b"] {
                let (m, stack) = (m.clone(), stack.clone());
                slow.spawn(async move {
                    reg(&m, &stack, custom(T, name, inputs(&[("v", name)]))).await
                });
            }
            tokio::time::sleep(SETTLE).await;
            cancel.cancel();
            if also_stop {
                cancel.stop();
            }
            let c = reg(&m, &stack, custom(T, "c", inputs(&[("v", "c")]))).await;
            while slow.join_next().await.is_some() {}
            c.map(|_| ())
        }
    })
}

fn cancellable(world: &mut converge_testkit::Lifecycle) -> Cancellation {
    let cancel = Cancellation::new();
    world.options.cancel = cancel.clone();
    cancel
}

#[tokio::test]
async fn steps_under_way_end_and_are_recorded_and_no_new_one_starts() {
    let calls = std::sync::Arc::new(provider().latency_of(Rpc::Create, SLOW));
    let cloud = calls.cloud().clone();
    let mut w = converge_testkit::Lifecycle::new(
        cloud.clone(),
        std::sync::Arc::new(converge_testkit::MockLoader::single(calls.clone())),
    );
    let cancel = cancellable(&mut w);
    let result = w.up(&cancelled_midway(cancel, false)).await;

    assert_eq!(
        result.error,
        Some(EngineError::Interrupted { stopped: false })
    );
    // The two creates under way finished and are recorded; `c` was never
    // started, and nothing is pending.
    for name in ["a", "b"] {
        let r = w
            .resource(name)
            .unwrap_or_else(|| panic!("{name} recorded"));
        assert!(r.id.is_some(), "{name} has its ID");
    }
    assert!(w.resource("c").is_none());
    assert_eq!(cloud.objects().len(), 2);
    assert!(w.snapshot.pending_operations.is_empty());
    assert_eq!(calls.call_count(Rpc::Cancel), 1, "the provider was told");
    assert_eq!(calls.call_count(Rpc::Create), 2);
}

#[tokio::test]
async fn once_stopped_steps_under_way_stay_pending_operations() {
    let p = provider().latency_of(Rpc::Create, FOREVER);
    let (mut w, cloud) = world(p);
    let cancel = cancellable(&mut w);
    // A deadlock guard, not a timing assertion: a stopped operation ends
    // without its creates.
    let result = tokio::time::timeout(
        Duration::from_secs(60),
        w.up(&cancelled_midway(cancel, true)),
    )
    .await
    .expect("a stopped operation ends");

    assert_eq!(
        result.error,
        Some(EngineError::Interrupted { stopped: true })
    );
    let mut pending: Vec<String> = w
        .snapshot
        .pending_operations
        .iter()
        .map(|p| {
            assert_eq!(p.kind, OperationType::Creating);
            p.resource.urn.name().to_owned()
        })
        .collect();
    pending.sort();
    assert_eq!(pending, ["a", "b"]);
    assert!(w.resource("a").is_none() && w.resource("c").is_none());
    assert!(cloud.objects().is_empty());
}

#[tokio::test]
async fn a_cancelled_update_deletes_nothing_the_program_did_not_reach() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&things(&["x", "y"])).await);
    // The program declares only `x` now, but the user cancels once it is
    // registered: `y` is not deleted.
    let cancel = cancellable(&mut w);
    let only_x = program(move |m| {
        let cancel = cancel.clone();
        async move {
            let stack = register_stack(&m).await?;
            reg(&m, &stack, custom(T, "x", inputs(&[("v", "x")]))).await?;
            cancel.cancel();
            Ok(())
        }
    });
    let result = w.up(&only_x).await;
    assert_eq!(
        result.error,
        Some(EngineError::Interrupted { stopped: false })
    );
    assert!(w.resource("y").is_some(), "y was not deleted");
    assert_eq!(cloud.objects().len(), 2);
}

#[tokio::test]
async fn a_cancel_when_only_steps_under_way_remain_still_ends_as_cancelled() {
    let (mut w, _) = world(provider());
    let cancel = cancellable(&mut w);
    let late = program(move |m| {
        let cancel = cancel.clone();
        async move {
            let stack = register_stack(&m).await?;
            reg(&m, &stack, custom(T, "x", inputs(&[("v", "x")]))).await?;
            cancel.cancel();
            Ok(())
        }
    });
    // Nothing was refused and nothing failed, but the user cancelled: as
    // in Pulumi, the update ends as cancelled, with what it did recorded.
    let r = w.up(&late).await;
    assert_eq!(r.error, Some(EngineError::Interrupted { stopped: false }));
    assert!(w.resource("x").is_some());
}

#[tokio::test]
async fn a_cancelled_destroy_waits_for_its_deletes_and_starts_no_other() {
    let (mut w, cloud) = world(provider().latency_of(Rpc::Delete, SLOW));
    expect_ok(&w.up(&things(&["a", "b", "c"])).await);
    let cancel = cancellable(&mut w);
    let trigger = cancel.clone();
    let cancelling = tokio::spawn(async move {
        // The three deletes (independent) are all under way by then.
        tokio::time::sleep(SETTLE).await;
        trigger.cancel();
    });
    let result = w.destroy().await;
    cancelling.await.unwrap();
    assert_eq!(
        result.error,
        Some(EngineError::Interrupted { stopped: false })
    );
    // The deletes under way finished; what depends on nothing being
    // deleted first — the provider and the stack, which wait for them —
    // was not started.
    assert!(cloud.objects().is_empty(), "the deletes under way finished");
    for name in ["a", "b", "c"] {
        assert!(w.resource(name).is_none(), "{name} is gone from the state");
    }
    assert!(w.resource("proj-test").is_some(), "the stack stays");
    assert!(w.snapshot.pending_operations.is_empty());
    let _ = cancel;
}

#[tokio::test]
async fn a_stopped_refresh_ends_without_its_reads_and_leaves_the_state_as_it_was() {
    let (mut w, _) = world(provider().latency_of(Rpc::Read, FOREVER));
    expect_ok(&w.up(&things(&["a", "b"])).await);
    let before = w.snapshot.resources.clone();
    let cancel = cancellable(&mut w);
    let trigger = cancel.clone();
    let stopping = tokio::spawn(async move {
        tokio::time::sleep(SETTLE).await;
        trigger.cancel();
        trigger.stop();
    });
    let result = tokio::time::timeout(Duration::from_secs(60), w.refresh())
        .await
        .expect("a stopped refresh ends");
    stopping.await.unwrap();
    assert_eq!(
        result.error,
        Some(EngineError::Interrupted { stopped: true })
    );
    assert_eq!(w.snapshot.resources, before, "no read changed the state");
}

#[tokio::test]
async fn an_operation_cancelled_before_it_starts_changes_nothing() {
    let (mut w, cloud) = world(provider());
    let cancel = cancellable(&mut w);
    cancel.cancel();
    let result = w.up(&things(&["a"])).await;
    assert_eq!(
        result.error,
        Some(EngineError::Interrupted { stopped: false })
    );
    assert!(w.snapshot.resources.is_empty());
    assert!(cloud.objects().is_empty());
}

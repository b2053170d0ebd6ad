//! Crash safety: an operation interrupted at a random point leaves, in what
//! its journal sink made durable, a snapshot that verifies and tracks every
//! object in the cloud (as a resource or a pending operation).
//!
//! - Journal faults: the sink fails at a random batch (sometimes after
//!   writing it); the operation must fail, and the durable prefix must
//!   replay to a valid, tracking snapshot.
//! - Aborts: the operation runs on its own task and is aborted after a
//!   random number of provider calls; the prefix durable at the abort, and
//!   the one durable once the journaler has drained, must both be valid.
//!
//! Each case then recovers: an update with well-behaved providers from the
//! durable snapshot, checked like every lifecycle operation.
//!
//! `CONVERGE_CRASH_CASES` (default 300) cases of each kind; `CRASH_SEED=<n>`
//! runs only that seed. Fixtures come from `converge_testkit::fuzz` with
//! `Config::from_env()`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use converge_engine::{EventSink, OperationContext, OperationResult, Program};
use converge_state::journal::replay;
use converge_state::Snapshot;
use converge_testkit::fuzz::{
    outside_ids, phase, run_prior, set_phase, CallSignal, Config, FaultySink, Fixture, OpKind, Rng,
    World,
};
use converge_testkit::{check_cloud_tracked, check_journal, MockCloud};
use tokio::runtime::Runtime;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?}: {e}"))
    })
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(a panic without a message)".to_owned());
    text.split("\nentries:").next().unwrap_or(&text).to_owned()
}

/// Runs `case(seed)` for `CONVERGE_CRASH_CASES` seeds (or `CRASH_SEED`) on
/// every core, each on a fresh single-threaded runtime; panics with the
/// failing seeds and the description (`how`) of the first. A case returns
/// whether the crash happened (the operation may finish first); at least a
/// quarter of the cases must crash, so the test cannot quietly degenerate.
fn run_cases(case: fn(&Runtime, u64) -> bool, how: fn(u64) -> String) {
    let seeds: Vec<u64> = match std::env::var("CRASH_SEED") {
        Ok(s) => vec![s.trim().parse().expect("CRASH_SEED is a number")],
        Err(_) => (0..env_u64("CONVERGE_CRASH_CASES", 300)).collect(),
    };
    let next = AtomicUsize::new(0);
    let crashed = AtomicUsize::new(0);
    let failures: Mutex<Vec<(u64, String)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, usize::from);
    std::thread::scope(|scope| {
        for _ in 0..workers.min(seeds.len()) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&seed) = seeds.get(k) else { return };
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .expect("a runtime");
                let outcome = catch_unwind(AssertUnwindSafe(|| case(&runtime, seed)));
                if outcome.as_ref().is_ok_and(|c| *c) {
                    crashed.fetch_add(1, Ordering::SeqCst);
                }
                if let Err(p) = outcome {
                    let described = describe(seed, how);
                    failures.lock().unwrap().push((
                        seed,
                        format!(
                            "{described}\nfailed in {}: {}",
                            phase(),
                            panic_message(p.as_ref())
                        ),
                    ));
                }
            });
        }
    });
    let mut failures = failures.into_inner().unwrap();
    failures.sort();
    for (seed, message) in &failures {
        let failed = message.rsplit("\nfailed in ").next().unwrap_or(message);
        println!("seed {seed}: {failed}");
    }
    if let Some((_, first)) = failures.first() {
        let seeds: Vec<String> = failures.iter().map(|(s, _)| s.to_string()).collect();
        panic!(
            "{} cases failed (seeds {}); the first:\n{first}",
            failures.len(),
            seeds.join(", ")
        );
    }
    let crashed = crashed.into_inner();
    println!("{crashed} of {} cases crashed mid-operation", seeds.len());
    assert!(
        seeds.len() < 20 || crashed * 4 >= seeds.len(),
        "only {crashed} of {} cases crashed",
        seeds.len()
    );
}

/// The description of a case, without running it.
fn describe(seed: u64, how: fn(u64) -> String) -> String {
    let fixture = Fixture::generate_with(seed, Config::from_env()).to_string();
    format!(
        "{}crash: {}",
        fixture.replace("FUZZ_SEED", "CRASH_SEED"),
        how(seed)
    )
}

fn context(
    world: &World,
    fixture: &Fixture,
    sink: Arc<FaultySink>,
    signal: Option<Arc<CallSignal>>,
) -> OperationContext {
    OperationContext {
        base: Arc::new(world.lifecycle.snapshot.clone()),
        loader: Arc::new(fixture.behaviour.loader(&world.cloud, signal)),
        sink,
        events: EventSink::discard(),
        options: fixture.operation.options(),
    }
}

/// The fixture's operation, with a preview run as an update (a preview
/// persists nothing).
async fn operate(kind: OpKind, ctx: OperationContext, program: &dyn Program) -> OperationResult {
    match kind {
        OpKind::Update | OpKind::Preview => converge_engine::update(ctx, program).await,
        OpKind::Refresh => converge_engine::refresh(ctx).await,
        OpKind::Destroy => converge_engine::destroy(ctx).await,
    }
}

/// What was durable replays to a valid snapshot that tracks every object.
fn check_durable(
    base: &Snapshot,
    durable: &[converge_state::journal::JournalEntry],
    cloud: &MockCloud,
    outside: &[String],
) -> Snapshot {
    check_journal(base, durable);
    let snapshot = replay(base, durable).expect("check_journal replayed it");
    check_cloud_tracked(cloud, &snapshot, outside);
    snapshot
}

/// The objects Converge may leave behind on purpose, as of `world`.
fn outside(world: &World) -> Vec<String> {
    let mut out = world.lifecycle.outside.clone();
    out.extend(outside_ids(&world.lifecycle.snapshot));
    out
}

/// Carries on from the durable snapshot with well-behaved providers.
async fn recover(world: &mut World, fixture: &Fixture, snapshot: Snapshot, outside: Vec<String>) {
    world.lifecycle.snapshot = snapshot;
    world.lifecycle.outside = outside;
    world.recover(&fixture.next).await;
}

#[derive(Debug, Clone, Copy)]
struct JournalFault {
    batch: usize,
    keep_failed_batch: bool,
}

impl std::fmt::Display for JournalFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the journal sink fails at batch {}", self.batch)?;
        if self.keep_failed_batch {
            write!(f, " (after writing it)")?;
        }
        Ok(())
    }
}

fn journal_fault(seed: u64) -> JournalFault {
    let mut rng = Rng::new(seed ^ 0x6A6F_7572_6E61_6C00);
    JournalFault {
        // Skewed towards early batches: fixtures are small.
        batch: {
            let most = rng.range(1, 30);
            rng.below(most)
        },
        keep_failed_batch: rng.chance(30),
    }
}

fn journal_fault_case(runtime: &Runtime, seed: u64) -> bool {
    let fixture = Fixture::generate_with(seed, Config::from_env());
    let fault = journal_fault(seed);
    runtime.block_on(async {
        let mut world = run_prior(&fixture).await;
        set_phase("the crashed operation");
        let base = world.lifecycle.snapshot.clone();
        let outside = outside(&world);
        let sink = Arc::new(FaultySink::new(Some(fault.batch), fault.keep_failed_batch));
        let ctx = context(&world, &fixture, Arc::clone(&sink), None);
        let result = operate(fixture.operation.kind, ctx, &fixture.next.program()).await;
        let durable = sink.entries();
        if sink.failed() {
            assert!(
                result.error.is_some(),
                "the journal failed at batch {} but the operation succeeded",
                fault.batch
            );
        }
        assert!(
            durable.starts_with(&result.journal),
            "the result's journal is not a prefix of what was persisted"
        );
        if !fault.keep_failed_batch {
            assert_eq!(
                durable, result.journal,
                "the result's journal is not what was persisted"
            );
        }
        let snapshot = check_durable(&base, &durable, &world.cloud, &outside);
        recover(&mut world, &fixture, snapshot, outside).await;
        sink.failed()
    })
}

#[derive(Debug, Clone, Copy)]
struct AbortPoint {
    /// Abort once this many provider calls have been made.
    calls: usize,
    /// Then yield this many times first.
    yields: usize,
}

impl std::fmt::Display for AbortPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the operation is aborted after {} provider calls and {} more yields",
            self.calls, self.yields
        )
    }
}

fn abort_point(seed: u64) -> AbortPoint {
    let mut rng = Rng::new(seed ^ 0x6162_6F72_7400);
    AbortPoint {
        calls: {
            let most = rng.range(1, 30);
            rng.range(1, most)
        },
        yields: rng.below(6),
    }
}

fn abort_case(runtime: &Runtime, seed: u64) -> bool {
    let fixture = Fixture::generate_with(seed, Config::from_env());
    let point = abort_point(seed);
    runtime.block_on(async {
        let mut world = run_prior(&fixture).await;
        set_phase("the crashed operation");
        let base = world.lifecycle.snapshot.clone();
        let outside = outside(&world);
        let sink = Arc::new(FaultySink::new(None, false));
        let signal = CallSignal::new(point.calls);
        let ctx = context(
            &world,
            &fixture,
            Arc::clone(&sink),
            Some(Arc::clone(&signal)),
        );
        let (kind, program) = (fixture.operation.kind, fixture.next.program());
        let mut task = tokio::spawn(async move { operate(kind, ctx, &program).await });
        let crashed = tokio::select! {
            () = signal.reached() => {
                for _ in 0..point.yields {
                    tokio::task::yield_now().await;
                }
                task.abort();
                // The crash: what is durable now, against the cloud now.
                let at_abort = sink.entries();
                check_durable(&base, &at_abort, &world.cloud, &outside);
                let cancelled = task.await.is_err_and(|e| e.is_cancelled());
                // Entries queued before the abort may still be written.
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                }
                assert!(sink.entries().starts_with(&at_abort));
                cancelled
            }
            finished = &mut task => {
                let result = finished.expect("the operation does not panic");
                assert_eq!(sink.entries(), result.journal);
                false
            }
        };
        let snapshot = check_durable(&base, &sink.entries(), &world.cloud, &outside);
        recover(&mut world, &fixture, snapshot, outside).await;
        crashed
    })
}

#[test]
fn journal_faults_leave_a_valid_tracking_snapshot() {
    run_cases(journal_fault_case, |seed| journal_fault(seed).to_string());
}

#[test]
fn aborted_operations_leave_a_valid_tracking_snapshot() {
    run_cases(abort_case, |seed| abort_point(seed).to_string());
}

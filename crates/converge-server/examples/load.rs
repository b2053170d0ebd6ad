//! The state service under load, through Converge's own HTTP backend:
//! `--stacks M` workers, each running updates of stacks of its own for
//! `--seconds D` — create the stack, take its lease, open its journal,
//! append K steps (a Begin and a Success entry each, one append per
//! entry, as an update whose steps run one after another), have the
//! service compact the journal, record the history, release — then read
//! every stack back and check it: its state verifies, holds K resources
//! and no pending operation, and its history one record.
//!
//! Prints JSON lines: one `load` line (updates, journal entries per
//! second, append latency p50/p99/max in ms, errors) and one `verify`
//! line. `scripts/load` runs it against replicas behind HAProxy.
//!
//! ```text
//! cargo run --release -p converge-server --example load -- \
//!     --url http://127.0.0.1:8080 --token cvg-… --stacks 8 --steps 20 --seconds 30
//! ```

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use converge_backend::http::{HttpBackend, HttpBackendOptions, RetryPolicy};
use converge_backend::{
    HistoryStore, JournalStore, ListHistoryOptions, LockInfo, StackLocker, StackRef, StackStore,
    UpdateKind,
};
use converge_model::{PropertyValue, ResourceState, Urn};
use converge_state::checkpoint::{read_checkpoint, write_checkpoint, StackCheckpoint};
use converge_state::journal::{base_digest, entry_to_json, JournalEntry};
use converge_state::secrets::SecretsMode;
use converge_state::{OperationType, PendingOperation, Snapshot};

struct Args {
    url: String,
    token: String,
    organization: String,
    stacks: usize,
    steps: usize,
    seconds: u64,
    label: String,
}

fn args() -> Args {
    let mut a = Args {
        url: String::new(),
        token: std::env::var("CONVERGE_LOAD_TOKEN").unwrap_or_default(),
        organization: "organization".to_owned(),
        stacks: 8,
        steps: 20,
        seconds: 30,
        label: String::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => a.url = value(),
            "--token" => a.token = value(),
            "--organization" => a.organization = value(),
            "--stacks" => a.stacks = value().parse().expect("--stacks N"),
            "--steps" => a.steps = value().parse().expect("--steps K"),
            "--seconds" => a.seconds = value().parse().expect("--seconds D"),
            "--label" => a.label = value(),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        !a.url.is_empty() && !a.token.is_empty(),
        "--url and --token are needed"
    );
    a
}

/// The entries of step `i`: a create begun, then done.
fn step(stack: &str, i: usize, seq: u64) -> [Vec<u8>; 2] {
    let urn = Urn::parse(&format!("urn:pulumi:{stack}::load::load:index:Thing::r{i}")).unwrap();
    let mut state = ResourceState::new(urn, false);
    state
        .outputs
        .insert("size".to_owned(), PropertyValue::string("x".repeat(200)));
    let op = u64::try_from(i + 1).unwrap();
    let begin = JournalEntry::begin(
        seq,
        op,
        Some(PendingOperation {
            resource: state.clone(),
            kind: OperationType::Creating,
        }),
    );
    let success = JournalEntry::success(seq + 1, op).with_state(state);
    [begin, success].map(|e| entry_to_json(&e, SecretsMode::Opaque).unwrap())
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    entries: u64,
    updates: u64,
    errors: Vec<String>,
    stacks: Vec<StackRef>,
}

async fn one_update(
    backend: &HttpBackend,
    stack: &StackRef,
    steps: usize,
    tally: &Mutex<Tally>,
) -> Result<(), converge_backend::BackendError> {
    let base = write_checkpoint(
        &StackCheckpoint {
            stack: stack.stack.clone(),
            config: None,
            latest: Some(Snapshot::empty("2026-01-01T00:00:00Z")),
        },
        SecretsMode::Opaque,
    )
    .unwrap();
    backend.create_stack(stack, &base).await?;
    let guard = backend.lock(stack, LockInfo::current()).await?;
    backend.open_journal(stack, &base_digest(&base)).await?;
    let mut seq = 1;
    for i in 0..steps {
        for entry in step(&stack.stack, i, seq) {
            let started = Instant::now();
            backend.append_journal(stack, &[entry]).await?;
            let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            let mut t = tally.lock().unwrap();
            t.latencies_us.push(us);
            t.entries += 1;
        }
        seq += 2;
    }
    backend.commit_journal(stack).await?;
    let record = serde_json::json!({
        "kind": "update", "startTime": 0, "endTime": 0, "result": "succeeded",
        "version": 1, "resourceChanges": { "create": steps },
    });
    backend
        .add_history(stack, UpdateKind::Update, record.to_string().as_bytes())
        .await?;
    guard.release().await?;
    let mut t = tally.lock().unwrap();
    t.updates += 1;
    t.stacks.push(stack.clone());
    Ok(())
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)] as f64 / 1000.0
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let a = args();
    let backend = HttpBackend::new(HttpBackendOptions {
        url: a.url.clone(),
        token: a.token.clone(),
        organization: a.organization.clone(),
        retry: RetryPolicy::default(),
    })
    .expect("a backend");
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let deadline = Instant::now() + Duration::from_secs(a.seconds);
    let started = Instant::now();
    let workers: Vec<_> = (0..a.stacks)
        .map(|w| {
            let (backend, tally, run, org) = (
                backend.clone(),
                Arc::clone(&tally),
                run.clone(),
                a.organization.clone(),
            );
            let steps = a.steps;
            tokio::spawn(async move {
                let mut n = 0;
                while Instant::now() < deadline {
                    let stack =
                        StackRef::with_organization(&org, "load", format!("{run}-w{w}-u{n}"))
                            .unwrap();
                    if let Err(e) = one_update(&backend, &stack, steps, &tally).await {
                        tally.lock().unwrap().errors.push(format!("{stack}: {e}"));
                    }
                    n += 1;
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let mut t = std::mem::take(&mut *tally.lock().unwrap());
    t.latencies_us.sort_unstable();
    println!(
        "{}",
        serde_json::json!({
            "kind": "load",
            "label": a.label,
            "stacks": a.stacks,
            "steps": a.steps,
            "seconds": elapsed,
            "updates": t.updates,
            "entries": t.entries,
            "entries_per_s": t.entries as f64 / elapsed,
            "append_p50_ms": percentile(&t.latencies_us, 50.0),
            "append_p99_ms": percentile(&t.latencies_us, 99.0),
            "append_max_ms": percentile(&t.latencies_us, 100.0),
            "errors": t.errors.len(),
            "first_errors": t.errors.iter().take(3).collect::<Vec<_>>(),
        })
    );
    // Every stack reads back whole.
    let (mut verified, mut resources, mut bad) = (0, 0, Vec::new());
    for stack in &t.stacks {
        let bytes = backend.load_checkpoint(stack).await.ok().flatten();
        let snapshot = bytes
            .as_deref()
            .and_then(|b| read_checkpoint(b, SecretsMode::Opaque).ok())
            .and_then(|cp| cp.latest);
        let history = backend
            .list_history(stack, &ListHistoryOptions::default())
            .await
            .map(|h| h.len())
            .unwrap_or(0);
        match snapshot {
            Some(s)
                if converge_state::integrity::verify(&s).is_ok()
                    && s.resources.len() == a.steps
                    && s.pending_operations.is_empty()
                    && history == 1 =>
            {
                verified += 1;
                resources += s.resources.len();
            }
            _ => bad.push(stack.to_string()),
        }
    }
    println!(
        "{}",
        serde_json::json!({
            "kind": "verify",
            "label": a.label,
            "stacks": t.stacks.len(),
            "verified": verified,
            "resources": resources,
            "failed": bad.iter().take(3).collect::<Vec<_>>(),
        })
    );
    if !bad.is_empty() || !t.errors.is_empty() {
        std::process::exit(1);
    }
}

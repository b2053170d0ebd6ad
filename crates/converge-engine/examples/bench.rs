//! Engine benchmarks: prints one JSON object per line. Run by
//! `scripts/bench` in release mode; numbers go to BENCHMARKS.md.
//!
//! - `up_create`, `preview_nochange`, `up_1pct`, `destroy` for N resources
//!   with a zero-latency in-process provider and journaled persistence on a
//!   file backend: wall time and bytes written (journal + checkpoint). Each
//!   row is the median of `BENCH_RUNS` runs on a fresh stack (9 up to 10k
//!   resources and 5 above by default; on a small shared machine the same
//!   10k row varies by a factor of two from one run to the next), with
//!   every run's time in `runs_ms`. A `growth` line per row then gives the
//!   ratio of each size's median to the previous size's.
//!   Between operations the bench pauses, untimed, for a quarter of the
//!   last one's time: an operation frees its bookkeeping on a blocking
//!   thread after it answers, and the next row is the user's next command,
//!   which does not share a process with it.
//! - `dag_latency`: a DAG of chains with a 50 ms provider, against the
//!   lower bound max(critical path × latency, N × latency / parallel).
//! - `backend_up`: a 1,000-resource create, then an update of 1 % of it, on
//!   each backend there is — the file backend, an S3 server when
//!   `CONVERGE_BENCH_S3_URL` names one, a `converge serve` state service
//!   when `CONVERGE_BENCH_HTTP_URL` (and `_TOKEN`) name one (scripts/bench
//!   starts both on 127.0.0.1): wall time and bytes sent.
//!
//! `BENCH_ZERO_LATENCY_ONLY=1` runs the zero-latency rows and nothing
//! else. To profile one zero-latency row alone, start the bench under
//! `perf record -D -1 --control fifo:CTL,ACK` with `BENCH_PERF_CTL=CTL`,
//! `BENCH_PERF_ACK=ACK` and `BENCH_PERF_ROW=up_1pct` (say): sampling is
//! enabled for that row's runs only, from the operation's start to its
//! compaction.

use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator of the `converge` binary (with mimalloc's default options:
/// the binary also shortens its purge delay, which trades time for RSS;
/// this bench measures time only).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use converge_backend::http::{HttpBackend, HttpBackendOptions, RetryPolicy};
use converge_backend::{Backend, FileBackend, LockInfo, ObjectBackend, StackRef};
use converge_engine::stack_state::{Completion, StackState};
use converge_engine::{
    DeploymentOptions, DiscardSink, EventSink, JournalSink, OperationContext, OperationResult,
    Program,
};
use converge_model::PropertyValue;
use converge_testkit::{custom, program, register_stack, MockCloud, MockLoader, MockProvider};

const T: &str = "pkg:index:Thing";

/// N independent resources registered concurrently; resource i has input
/// `gen` = 1 if i is among the changed ones.
fn flat(n: usize, changed_every: Option<usize>) -> impl Program {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..n {
            let m = m.clone();
            let stack = stack.clone();
            let generation = match changed_every {
                Some(k) if i % k == 0 => 1.0,
                _ => 0.0,
            };
            tasks.spawn(async move {
                let mut g = custom(T, &format!("r{i}"), Default::default());
                g.inputs
                    .insert("i".to_owned(), PropertyValue::Number(i as f64));
                g.inputs
                    .insert("gen".to_owned(), PropertyValue::Number(generation));
                g.inputs.insert(
                    "name".to_owned(),
                    PropertyValue::from(format!("resource-number-{i}")),
                );
                g.parent = Some(stack);
                m.register_resource(g)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.map_err(|e| e.to_string())??;
        }
        Ok(())
    })
}

/// `chains` chains of `length` resources, each depending on the previous.
fn dag(chains: usize, length: usize) -> impl Program {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut tasks = tokio::task::JoinSet::new();
        for c in 0..chains {
            let m = m.clone();
            let stack = stack.clone();
            tasks.spawn(async move {
                let mut previous = None;
                for k in 0..length {
                    let mut g = custom(T, &format!("c{c}-{k}"), Default::default());
                    g.parent = Some(stack.clone());
                    if let Some(p) = previous.take() {
                        g.dependencies = vec![p];
                    }
                    let r = m.register_resource(g).await.map_err(|e| e.to_string())?;
                    previous = Some(r.urn);
                }
                Ok::<_, String>(())
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.map_err(|e| e.to_string())??;
        }
        Ok(())
    })
}

struct World {
    _dir: tempfile::TempDir,
    state: StackState,
    loader: Arc<MockLoader>,
    /// Sample the next operation (see the module's doc).
    profile: bool,
}

/// `perf record --control`'s command and acknowledgement fifos, and the
/// row to sample.
struct Profiler {
    ctl: std::path::PathBuf,
    ack: std::path::PathBuf,
    row: String,
}

impl Profiler {
    fn from_env() -> Option<Profiler> {
        Some(Profiler {
            ctl: std::env::var_os("BENCH_PERF_CTL")?.into(),
            ack: std::env::var_os("BENCH_PERF_ACK")?.into(),
            row: std::env::var("BENCH_PERF_ROW").ok()?,
        })
    }

    /// Whether `row` is the one sampled.
    fn wants(row: &str) -> bool {
        PROFILER.as_ref().is_some_and(|p| p.row == row)
    }

    /// Sends `enable` or `disable` and waits for perf's acknowledgement.
    fn send(command: &str) {
        use std::io::{BufRead, Write};
        let Some(p) = PROFILER.as_ref() else { return };
        let mut ctl = std::fs::OpenOptions::new()
            .write(true)
            .open(&p.ctl)
            .expect("perf control fifo");
        writeln!(ctl, "{command}").expect("write to perf");
        let ack = std::fs::File::open(&p.ack).expect("perf ack fifo");
        let mut line = String::new();
        std::io::BufReader::new(ack)
            .read_line(&mut line)
            .expect("read perf's ack");
    }
}

static PROFILER: std::sync::LazyLock<Option<Profiler>> =
    std::sync::LazyLock::new(Profiler::from_env);

impl World {
    async fn new(latency: Duration) -> World {
        let dir = tempfile::tempdir().expect("temp dir");
        let backend: Arc<dyn Backend> = Arc::new(FileBackend::new(dir.path(), ""));
        World::on(backend, dir, latency).await
    }

    async fn on(backend: Arc<dyn Backend>, dir: tempfile::TempDir, latency: Duration) -> World {
        let stack = StackRef::new("bench", "dev").expect("stack name");
        StackState::new(backend.clone(), stack.clone())
            .create()
            .await
            .expect("create stack");
        let provider = MockProvider::new("pkg")
            .with_cloud(MockCloud::new())
            .latency(latency);
        World {
            _dir: dir,
            state: StackState::new(backend, stack),
            loader: Arc::new(MockLoader::single(provider)),
            profile: false,
        }
    }

    /// The options `converge up --skip-preview` and `converge preview`
    /// run with: the CLI keeps neither the persisted journal entries in
    /// memory nor a plan record per resource (it saves no plan there).
    fn options(&self, parallel: usize) -> DeploymentOptions {
        let mut o = DeploymentOptions::new("dev", "bench");
        o.parallel = parallel;
        o.keep_journal = false;
        o.record_plans = false;
        o
    }

    /// The stored checkpoint's size.
    async fn snapshot_bytes(&self) -> usize {
        self.state
            .backend()
            .load_checkpoint(self.state.stack())
            .await
            .expect("load")
            .map_or(0, |b| b.len())
    }

    /// A row's `bytes` written beside the stored checkpoint's size.
    async fn written_against_snapshot(&self, bytes: usize) -> serde_json::Value {
        let snapshot_bytes = self.snapshot_bytes().await;
        serde_json::json!({"bytes_written": bytes, "snapshot_bytes": snapshot_bytes,
            "bytes_per_snapshot_byte": bytes as f64 / snapshot_bytes as f64})
    }

    /// Runs an operation as the CLI does, through the stack's owner (lock,
    /// recovery, journal, compaction).
    async fn run(&mut self, op: &str, program: Option<&dyn Program>, parallel: usize) -> Run {
        let mut locked = self
            .state
            .lock(LockInfo::current())
            .await
            .expect("lock the stack");
        let journal = if op == "preview" {
            None
        } else {
            Some(locked.start().await.expect("open journal"))
        };
        let sink: Arc<dyn JournalSink> = match &journal {
            Some(j) => j.clone(),
            None => Arc::new(DiscardSink),
        };
        let ctx = OperationContext {
            base: locked.shared_base(),
            loader: self.loader.clone(),
            sink,
            events: EventSink::discard(),
            options: self.options(parallel),
        };
        // Timed from the operation's start to its compaction, as before the
        // owner type existed, so the figures stay comparable.
        let profile = std::mem::take(&mut self.profile);
        if profile {
            Profiler::send("enable");
        }
        let start = Instant::now();
        let cpu_start = cpu_time();
        let result = match (op, program) {
            ("preview", Some(p)) => converge_engine::preview(ctx, p).await,
            ("destroy", _) => converge_engine::destroy(ctx).await,
            (_, Some(p)) => converge_engine::update(ctx, p).await,
            _ => unreachable!("an update needs a program"),
        };
        // A preview persists nothing (its journal stays in memory).
        let mut written = 0;
        if let Some(journal) = journal {
            written += journal.bytes_persisted() as usize;
            written += match locked
                .finish(journal, &result, None)
                .await
                .expect("compact")
                .completion
            {
                Completion::Uploaded { bytes } => bytes,
                Completion::CompactedByStore => 0,
            };
        }
        let ms = start.elapsed().as_millis();
        let cpu_ms = cpu_time()
            .zip(cpu_start)
            .map(|(end, start)| end.saturating_sub(start).as_millis());
        if profile {
            Profiler::send("disable");
        }
        locked.release().await.expect("release");
        // Untimed: the operation frees its bookkeeping and the base it
        // replaced on a blocking thread after it answers; a user's next
        // command is another process, so the next row does not start
        // while that runs.
        tokio::time::sleep(Duration::from_millis((ms as u64 / 4).max(20))).await;
        if let Some(e) = &result.error {
            panic!("{op} failed: {e}");
        }
        Run {
            result,
            written,
            wall_ms: ms,
            cpu_ms,
        }
    }
}

/// One timed operation.
struct Run {
    result: OperationResult,
    /// Bytes written: journal entries and checkpoint.
    written: usize,
    wall_ms: u128,
    /// CPU time of every thread of the process over the same span (`None`
    /// where `/proc/self/stat` is not readable): next to the wall time, it
    /// says how much of the span both cores were busy.
    cpu_ms: Option<u128>,
}

/// The process's user and system CPU time so far, from `/proc/self/stat`
/// (fields 14 and 15, in clock ticks of 10 ms on Linux).
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces; fields after it follow
    // its closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ').skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(Duration::from_millis((user + system) * 10))
}

fn line(fields: serde_json::Value) {
    println!("{fields}");
}

/// One run of the four zero-latency rows on a fresh stack of `n`.
struct ZeroLatencyRun {
    rows: Vec<Row>,
}

/// A row of one run: its name, times and the rest of its line.
struct Row {
    name: &'static str,
    wall_ms: u128,
    cpu_ms: Option<u128>,
    rest: serde_json::Value,
}

impl Row {
    fn new(name: &'static str, run: &Run, rest: serde_json::Value) -> Row {
        Row {
            name,
            wall_ms: run.wall_ms,
            cpu_ms: run.cpu_ms,
            rest,
        }
    }
}

async fn zero_latency_once(n: usize) -> ZeroLatencyRun {
    let mut rows = Vec::new();
    let mut w = World::new(Duration::ZERO).await;
    w.profile = Profiler::wants("up_create");
    let run = w.run("update", Some(&flat(n, None)), 16).await;
    let rest = w.written_against_snapshot(run.written).await;
    rows.push(Row::new("up_create", &run, rest));
    w.profile = Profiler::wants("preview_nochange");
    let run = w.run("preview", Some(&flat(n, None)), 16).await;
    let changes = run
        .result
        .plan
        .steps
        .iter()
        .filter(|s| s.op != converge_engine::StepOp::Same)
        .count();
    let rest = serde_json::json!({"bytes_written": run.written, "changes": changes});
    rows.push(Row::new("preview_nochange", &run, rest));
    w.profile = Profiler::wants("up_1pct");
    let run = w.run("update", Some(&flat(n, Some(100))), 16).await;
    let rest = w.written_against_snapshot(run.written).await;
    rows.push(Row::new("up_1pct", &run, rest));
    w.profile = Profiler::wants("destroy");
    let run = w.run("destroy", None, 16).await;
    let rest = serde_json::json!({"bytes_written": run.written});
    rows.push(Row::new("destroy", &run, rest));
    ZeroLatencyRun { rows }
}

/// The median of `times` (the upper one of an even count).
fn median(times: &[u128]) -> u128 {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

/// Runs the zero-latency rows `runs` times for `n` resources and prints
/// each row's median; returns the medians by row.
async fn zero_latency(n: usize, runs: usize) -> Vec<(&'static str, u128)> {
    let mut all = Vec::with_capacity(runs);
    for _ in 0..runs {
        all.push(zero_latency_once(n).await);
    }
    let first = &all[0];
    let mut medians = Vec::new();
    for (i, row) in first.rows.iter().enumerate() {
        let times: Vec<u128> = all.iter().map(|run| run.rows[i].wall_ms).collect();
        let cpu: Vec<Option<u128>> = all.iter().map(|run| run.rows[i].cpu_ms).collect();
        let wall_ms = median(&times);
        let mut fields = serde_json::json!({"bench": row.name, "n": n, "wall_ms": wall_ms,
            "runs_ms": times, "cpu_runs_ms": cpu});
        if let (Some(out), Some(rest)) = (fields.as_object_mut(), row.rest.as_object()) {
            out.extend(rest.clone());
        }
        line(fields);
        medians.push((row.name, wall_ms));
    }
    medians
}

async fn latency(chains: usize, length: usize, parallel: usize) {
    let latency_ms = 50u128;
    let mut w = World::new(Duration::from_millis(latency_ms as u64)).await;
    let n = chains * length;
    let Run {
        written: bytes,
        wall_ms: ms,
        ..
    } = w.run("update", Some(&dag(chains, length)), parallel).await;
    // Each create makes two provider calls (Check, Create), each 50 ms;
    // only Create takes a pool slot. The default provider adds CheckConfig
    // and Configure before anything else.
    let per_resource = 2 * latency_ms;
    let setup = 2 * latency_ms;
    let critical = setup + length as u128 * per_resource;
    let throughput = setup + (n as u128 * latency_ms).div_ceil(parallel as u128);
    let bound = critical.max(throughput);
    line(
        serde_json::json!({"bench": "dag_latency", "n": n, "chains": chains, "critical_path": length,
        "latency_ms": latency_ms, "parallel": parallel, "wall_ms": ms, "lower_bound_ms": bound,
        "ratio_to_bound": ms as f64 / bound as f64, "bytes_written": bytes}),
    );
}

/// The same 1,000-resource create on each backend available.
async fn backends(n: usize) {
    let mut available: Vec<(&str, Arc<dyn Backend>)> = Vec::new();
    let dir = tempfile::tempdir().expect("temp dir");
    available.push(("file", Arc::new(FileBackend::new(dir.path(), ""))));
    if let Ok(url) = std::env::var("CONVERGE_BENCH_S3_URL") {
        let url = url.replace("{run}", &format!("{}", std::process::id()));
        available.push(("s3", Arc::new(ObjectBackend::open(&url).expect("S3 URL"))));
    }
    if let Ok(url) = std::env::var("CONVERGE_BENCH_HTTP_URL") {
        let service = HttpBackend::new(HttpBackendOptions {
            url,
            token: std::env::var("CONVERGE_BENCH_HTTP_TOKEN").unwrap_or_default(),
            organization: "organization".to_owned(),
            retry: RetryPolicy::default(),
        })
        .expect("service URL");
        available.push(("service", Arc::new(service)));
    }
    for (name, backend) in available {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut w = World::on(backend, dir, Duration::ZERO).await;
        let run = w.run("update", Some(&flat(n, None)), 16).await;
        line(
            serde_json::json!({"bench": "backend_up", "op": "create", "backend": name, "n": n,
            "wall_ms": run.wall_ms, "bytes_sent": run.written, "snapshot_bytes": w.snapshot_bytes().await}),
        );
        let run = w.run("update", Some(&flat(n, Some(100))), 16).await;
        line(
            serde_json::json!({"bench": "backend_up", "op": "update_1pct", "backend": name, "n": n,
            "wall_ms": run.wall_ms, "bytes_sent": run.written, "snapshot_bytes": w.snapshot_bytes().await}),
        );
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let runs = |n: usize| -> usize {
        std::env::var("BENCH_RUNS")
            .ok()
            .and_then(|r| r.trim().parse().ok())
            .filter(|&r| r > 0)
            .unwrap_or(if n <= 10_000 { 9 } else { 5 })
    };
    runtime.block_on(async {
        let mut previous: Option<(usize, Vec<(&str, u128)>)> = None;
        for n in sizes {
            let medians = zero_latency(n, runs(n)).await;
            if let Some((from, before)) = &previous {
                for ((row, was), (_, now)) in before.iter().zip(&medians) {
                    line(
                        serde_json::json!({"bench": "growth", "row": row, "from": from,
                        "to": n, "ratio": *now as f64 / (*was).max(1) as f64}),
                    );
                }
            }
            previous = Some((n, medians));
        }
        // `BENCH_ZERO_LATENCY_ONLY=1`: only the rows above (to count a
        // size's instructions alone, say under callgrind).
        if std::env::var_os("BENCH_ZERO_LATENCY_ONLY").is_some() {
            return;
        }
        latency(20, 10, 16).await;
        latency(100, 5, 16).await;
        latency(100, 5, 64).await;
        backends(1_000).await;
    });
}

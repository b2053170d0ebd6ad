//! Engine benchmarks: prints one JSON object per line. Run by
//! `scripts/bench` in release mode; numbers go to BENCHMARKS.md.
//!
//! - `up_create`, `preview_nochange`, `up_1pct`, `destroy` for N resources
//!   with a zero-latency in-process provider and journaled persistence on a
//!   file backend: wall time, CPU time, peak RSS and bytes written
//!   (journal + checkpoint). Each row is the median of `BENCH_RUNS` runs on
//!   a fresh stack (9 by default at every size: on a small shared machine
//!   the same 10k row varies by a factor of two from one run to the next,
//!   and a 100k row by a third), with every run's time in `runs_ms`. A `growth`
//!   line per row then gives the ratio of each size's median to the
//!   previous size's.
//!   Each operation runs in a process of its own (this bench with
//!   `--row ROW --n N --dir DIR`), timed from the operation's start to its
//!   compaction, as a user's next command is a new `converge`: no row
//!   reuses memory an earlier one faulted in, or pays for its frees. The
//!   sizes take turns, a round being one stack of each size, so that a
//!   slow spell of the machine falls on all of them.
//! - `dag_latency`: a DAG of chains with a 50 ms provider, against the
//!   lower bound max(critical path × latency, N × latency / parallel).
//! - `backend_up`: a 1,000-resource create, then an update of 1 % of it, on
//!   each backend there is — the file backend, an S3 server when
//!   `CONVERGE_BENCH_S3_URL` names one, a `converge serve` state service
//!   when `CONVERGE_BENCH_HTTP_URL` (and `_TOKEN`) name one (scripts/bench
//!   starts both on 127.0.0.1): wall time and bytes sent.
//!
//! `BENCH_ZERO_LATENCY_ONLY=1` runs the zero-latency rows and nothing
//! else. `bench --new-stack DIR` creates an empty stack in DIR, and
//! `bench --row up_create --n 100000 --dir DIR` runs one operation on it,
//! to time or profile a row by hand. To profile one zero-latency row
//! alone, start the bench under
//! `perf record -D -1 --control fifo:CTL,ACK` with `BENCH_PERF_CTL=CTL`,
//! `BENCH_PERF_ACK=ACK` and `BENCH_PERF_ROW=up_1pct` (say): sampling is
//! enabled for that row's runs only, from the operation's start to its
//! compaction.

use std::path::Path;
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

const PACKAGE: &str = "pkg";
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
    /// The stack's directory, removed with the world (`None`: a directory
    /// the parent process owns).
    _dir: Option<tempfile::TempDir>,
    state: StackState,
    loader: Arc<MockLoader>,
    cloud: Arc<MockCloud>,
    /// Sample the next operation (see the module's doc).
    profile: bool,
    /// Whether this process is one operation's own (`--row`): the cloud is
    /// seeded from the stack's state before the operation, and nothing
    /// pauses after it, since the process ends.
    own_process: bool,
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

/// The stack every world deploys.
fn bench_stack() -> StackRef {
    StackRef::new("bench", "dev").expect("stack name")
}

/// A new, empty stack on `backend`.
async fn create_stack(backend: Arc<dyn Backend>) {
    StackState::new(backend, bench_stack())
        .create()
        .await
        .expect("create stack");
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
        create_stack(backend.clone()).await;
        World::with(backend, Some(dir), latency)
    }

    /// The stack another process created in `dir`, for one operation.
    fn open(dir: &Path) -> World {
        let backend: Arc<dyn Backend> = Arc::new(FileBackend::new(dir, ""));
        let mut w = World::with(backend, None, Duration::ZERO);
        w.own_process = true;
        w
    }

    fn with(backend: Arc<dyn Backend>, dir: Option<tempfile::TempDir>, latency: Duration) -> World {
        let cloud = MockCloud::new();
        let provider = MockProvider::new(PACKAGE)
            .with_cloud(cloud.clone())
            .latency(latency);
        World {
            _dir: dir,
            state: StackState::new(backend, bench_stack()),
            loader: Arc::new(MockLoader::single(provider)),
            cloud,
            profile: false,
            own_process: false,
        }
    }

    /// Puts the stack's objects back into this process's mock cloud, as
    /// the process that created them left them.
    fn seed_cloud(&self, base: &converge_state::Snapshot) {
        for r in base.resources.iter().filter(|r| r.custom) {
            if let Some(id) = &r.id {
                self.cloud.restore(id, &r.urn, PACKAGE, r.inputs.clone());
            }
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
        let base = locked.shared_base();
        if self.own_process {
            self.seed_cloud(&base);
        }
        let ctx = OperationContext {
            base,
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
        // while that runs. (An operation in its own process ends instead.)
        if !self.own_process {
            tokio::time::sleep(Duration::from_millis((ms as u64 / 4).max(20))).await;
        }
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

/// The zero-latency rows, in the order one run performs them on a stack.
const ROWS: [&str; 4] = ["up_create", "preview_nochange", "up_1pct", "destroy"];

/// One row's operation on the stack in `dir`, in this process (`--row`):
/// its line's fields, `wall_ms` and `cpu_ms` among them.
async fn one_row(row: &str, n: usize, dir: &Path) -> serde_json::Value {
    let mut w = World::open(dir);
    w.profile = Profiler::wants(row);
    let (run, mut fields) = match row {
        "up_create" | "up_1pct" => {
            let changed_every = (row == "up_1pct").then_some(100);
            let run = w.run("update", Some(&flat(n, changed_every)), 16).await;
            let fields = w.written_against_snapshot(run.written).await;
            (run, fields)
        }
        "preview_nochange" => {
            let run = w.run("preview", Some(&flat(n, None)), 16).await;
            let changes = run
                .result
                .plan
                .steps
                .iter()
                .filter(|s| s.op != converge_engine::StepOp::Same)
                .count();
            let fields = serde_json::json!({"bytes_written": run.written, "changes": changes});
            (run, fields)
        }
        "destroy" => {
            let run = w.run("destroy", None, 16).await;
            let fields = serde_json::json!({"bytes_written": run.written});
            (run, fields)
        }
        other => panic!("no zero-latency row {other:?}"),
    };
    fields["wall_ms"] = serde_json::json!(run.wall_ms);
    fields["cpu_ms"] = serde_json::json!(run.cpu_ms);
    fields["peak_rss_kb"] = serde_json::json!(peak_rss_kb());
    fields
}

/// The process's peak resident set so far (`VmHWM` of `/proc/self/status`):
/// in a row's own process, the stored state's load and the operation.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `row` for the stack in `dir` in a new process of this bench, as a
/// user's next command runs in a new `converge`: it starts from the
/// stored state, with none of the previous operation's memory.
fn row_in_own_process(row: &str, n: usize, dir: &Path) -> serde_json::Value {
    let exe = std::env::current_exe().expect("the bench's own path");
    let out = std::process::Command::new(exe)
        .args(["--row", row, "--n", &n.to_string(), "--dir"])
        .arg(dir)
        .stderr(std::process::Stdio::inherit())
        .output()
        .expect("start a row's process");
    assert!(out.status.success(), "{row} of {n} failed: {}", out.status);
    serde_json::from_slice(&out.stdout).expect("a row's line")
}

/// The median of `times` (the upper one of an even count).
fn median(times: &[u128]) -> u128 {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    sorted[sorted.len() / 2]
}

/// Runs the zero-latency rows for every size, `runs` times each, and
/// prints each row's median per size, then the growth between sizes.
/// The sizes take turns (a round is one fresh stack of each size), so a
/// slow spell of the machine falls on all of them; each operation runs in a
/// process of its own, so no size runs on memory an earlier operation
/// left warm.
fn zero_latency(runtime: &tokio::runtime::Runtime, sizes: &[usize], runs: usize) {
    let mut results: Vec<Vec<Vec<serde_json::Value>>> =
        sizes.iter().map(|_| vec![Vec::new(); ROWS.len()]).collect();
    for _ in 0..runs {
        for (by_row, &n) in results.iter_mut().zip(sizes) {
            let dir = tempfile::tempdir().expect("temp dir");
            let backend: Arc<dyn Backend> = Arc::new(FileBackend::new(dir.path(), ""));
            runtime.block_on(create_stack(backend));
            for (row, lines) in ROWS.iter().zip(by_row.iter_mut()) {
                lines.push(row_in_own_process(row, n, dir.path()));
            }
        }
    }
    let mut previous: Option<(usize, Vec<u128>)> = None;
    for (by_row, &n) in results.iter().zip(sizes) {
        let mut medians = Vec::new();
        for (row, lines) in ROWS.iter().zip(by_row) {
            let times: Vec<u128> = lines
                .iter()
                .map(|l| l["wall_ms"].as_u64().unwrap_or(0).into())
                .collect();
            let cpu: Vec<Option<u64>> = lines.iter().map(|l| l["cpu_ms"].as_u64()).collect();
            let rss = lines.iter().filter_map(|l| l["peak_rss_kb"].as_u64()).max();
            let wall_ms = median(&times);
            let mut fields = serde_json::json!({"bench": row, "n": n, "wall_ms": wall_ms,
                "runs_ms": times, "cpu_runs_ms": cpu, "peak_rss_kb": rss});
            // Bytes and changes are the same in every run: the first's.
            if let (Some(out), Some(first)) = (
                fields.as_object_mut(),
                lines.first().and_then(|l| l.as_object()),
            ) {
                for (key, value) in first {
                    if !["wall_ms", "cpu_ms", "peak_rss_kb"].contains(&key.as_str()) {
                        out.insert(key.clone(), value.clone());
                    }
                }
            }
            line(fields);
            medians.push(wall_ms);
        }
        if let Some((from, before)) = &previous {
            for ((row, was), now) in ROWS.iter().zip(before).zip(&medians) {
                line(
                    serde_json::json!({"bench": "growth", "row": row, "from": from,
                    "to": n, "ratio": *now as f64 / (*was).max(1) as f64}),
                );
            }
        }
        previous = Some((n, medians));
    }
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
    // `--row ROW --n N --dir DIR`: one zero-latency operation, in a
    // process of its own (see `zero_latency`).
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `--new-stack DIR`: an empty stack in DIR for `--row` (to time or
    // profile one operation by hand).
    if let [flag, dir] = &args[..] {
        if flag == "--new-stack" {
            let backend: Arc<dyn Backend> = Arc::new(FileBackend::new(Path::new(dir), ""));
            runtime.block_on(create_stack(backend));
            return;
        }
    }
    if let [flag, row, n_flag, n, dir_flag, dir] = &args[..] {
        if (flag.as_str(), n_flag.as_str(), dir_flag.as_str()) == ("--row", "--n", "--dir") {
            let n = n.parse().expect("--n takes a number");
            // On a worker of the runtime, as a program's tasks are: polled
            // by `block_on` on the main thread, which is no worker, the
            // program's loop was woken across threads (a futex wake) for
            // each of its N registrations' tasks ending, a cost of this
            // harness that the CLI (one thread) never pays.
            let dir = Path::new(dir).to_owned();
            let row = row.clone();
            let fields = runtime
                .block_on(
                    async move { tokio::spawn(async move { one_row(&row, n, &dir).await }).await },
                )
                .expect("the row's task");
            line(fields);
            // Untimed and unwanted: freeing what the operation left.
            std::process::exit(0);
        }
    }
    let sizes: Vec<usize> = std::env::var("BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000, 10_000, 100_000]);
    let runs = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.trim().parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(9);
    zero_latency(&runtime, &sizes, runs);
    // `BENCH_ZERO_LATENCY_ONLY=1`: only the rows above (to count a
    // size's instructions alone, say under callgrind with
    // `--trace-children=yes`: each operation is a process of its own).
    if std::env::var_os("BENCH_ZERO_LATENCY_ONLY").is_some() {
        return;
    }
    runtime.block_on(async {
        latency(20, 10, 16).await;
        latency(100, 5, 16).await;
        latency(100, 5, 64).await;
        backends(1_000).await;
    });
}

//! The state service as a team runs it: a PostgreSQL of the test's own,
//! three `converge serve` replicas on it and HAProxy in front of them, all
//! on 127.0.0.1, with `converge up`s on several stacks at once through the
//! balancer. Round one: a replica is killed with SIGKILL. Round two:
//! PostgreSQL restarts, then the replicas are restarted one by one with
//! SIGTERM (a rolling restart). Every `up` succeeds or fails with a clear
//! error; afterwards every stack converges (a second `up` changes
//! nothing), its state verifies and holds exactly the objects that exist,
//! no object was created or deleted twice (no journal entry was lost or
//! applied twice), and the history holds one record per update that
//! started, each succeeded or failed.
//!
//! Needs `CONVERGE_TEST_HAPROXY` (the haproxy binary) and
//! `CONVERGE_TEST_POSTGRES_BIN` (PostgreSQL's bin directory), which
//! scripts/test exports; skipped without them (under CI=true it fails).
//! The test runs a PostgreSQL of its own because it restarts it.

use crate::common;

use common::service::Service;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use converge_state::checkpoint::read_deployment;
use converge_state::integrity;
use converge_state::secrets::SecretsMode;

/// Stacks updated at once, one worker each.
const WORKERS: usize = 6;
/// Objects each update creates (and the next one deletes).
const OBJECTS: usize = 5;
/// Replicas behind the balancer.
const REPLICAS: usize = 3;
/// The replicas' lease: an update whose client stopped renewing is
/// closed this long after.
const LEASE_SECONDS: &str = "6";
/// A hang guard for anything the test waits for.
const GUARD: Duration = Duration::from_secs(300);

fn env_path(name: &str) -> Option<PathBuf> {
    match std::env::var_os(name) {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true but {name} is not set: scripts/test sets it"
            );
            eprintln!("SKIPPED: set {name} (scripts/test does)");
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_port(port: u16, what: &str) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < GUARD, "{what} never listened on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A PostgreSQL cluster in a temporary directory, as scripts/lib/postgres.sh
/// runs one (as the `postgres` user when the test runs as root, since
/// PostgreSQL refuses root); stopped when dropped.
struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    root: bool,
}

impl Postgres {
    fn start(bin: PathBuf) -> Postgres {
        let dir = tempfile::tempdir().unwrap();
        let root = rustix::process::getuid().is_root();
        if root {
            // The postgres user must reach and own the cluster's directory.
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            let status = Command::new("chown")
                .arg("postgres")
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success(), "chown postgres {}", dir.path().display());
        }
        let pg = Postgres {
            bin,
            dir,
            port: free_port(),
            root,
        };
        let data = pg.data();
        pg.run(
            "initdb",
            &["-D", &data, "-U", "converge", "--auth=trust", "-E", "UTF8"],
        );
        pg.start_server();
        pg.run(
            "createdb",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &pg.port.to_string(),
                "-U",
                "converge",
                "balancer",
            ],
        );
        pg
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn url(&self) -> String {
        format!("postgres://converge@127.0.0.1:{}/balancer", self.port)
    }

    fn tool(&self, tool: &str) -> Command {
        let exe = self.bin.join(tool);
        if self.root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            Command::new(exe)
        }
    }

    fn run(&self, tool: &str, args: &[&str]) {
        let out = self.tool(tool).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{tool} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn start_server(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c max_connections=200",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log").display().to_string();
        let data = self.data();
        self.run(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-w", "-o", &options, "start"],
        );
    }

    fn stop_server(&self, mode: &str) {
        let data = self.data();
        self.run("pg_ctl", &["-D", &data, "-m", mode, "-w", "stop"]);
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .tool("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "stop"])
            .output();
    }
}

/// PostgreSQL, the replicas on fixed ports and HAProxy in front of them.
struct Cluster {
    postgres: Postgres,
    dir: tempfile::TempDir,
    ports: Vec<u16>,
    replicas: Vec<Option<Service>>,
    haproxy: Child,
    balancer: u16,
    token: String,
}

impl Cluster {
    fn start(haproxy: &Path, postgres_bin: PathBuf) -> Cluster {
        let postgres = Postgres::start(postgres_bin);
        let dir = tempfile::tempdir().unwrap();
        let ports: Vec<u16> = (0..REPLICAS).map(|_| free_port()).collect();
        let balancer = free_port();
        let mut servers = String::new();
        for (i, port) in ports.iter().enumerate() {
            servers.push_str(&format!(
                "    server r{i} 127.0.0.1:{port} check inter 200ms fall 1 rise 1\n"
            ));
        }
        // Only a connection that failed is retried by the balancer (the
        // request certainly did not reach a replica); everything else is
        // the client's to retry, by what it knows of the request.
        let config = format!(
            "global\n    maxconn 1000\n\
             defaults\n    mode http\n    timeout connect 2s\n    timeout client 120s\n    \
             timeout server 120s\n    retries 3\n    option redispatch 1\n    \
             retry-on conn-failure\n\
             frontend state\n    bind 127.0.0.1:{balancer}\n    default_backend replicas\n\
             backend replicas\n    balance roundrobin\n    option forwardfor\n{servers}"
        );
        let config_file = dir.path().join("haproxy.cfg");
        std::fs::write(&config_file, config).unwrap();
        let haproxy = Command::new(haproxy)
            .arg("-f")
            .arg(&config_file)
            .arg("-db")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut cluster = Cluster {
            postgres,
            dir,
            replicas: (0..REPLICAS).map(|_| None).collect(),
            ports,
            haproxy,
            balancer,
            token: String::new(),
        };
        for i in 0..REPLICAS {
            cluster.start_replica(i);
        }
        cluster.token = cluster.replicas[0].as_ref().unwrap().token.clone();
        wait_for_port(balancer, "haproxy");
        cluster
    }

    fn start_replica(&mut self, i: usize) {
        let data = self.dir.path().join(format!("replica{i}"));
        let listen = format!("127.0.0.1:{}", self.ports[i]);
        let service = Service::start_with(
            &self.dir.path().join("home"),
            &data,
            &listen,
            "organization",
            Some(&self.postgres.url()),
            &[
                "--lease-seconds",
                LEASE_SECONDS,
                "--trusted-proxy",
                "127.0.0.1",
            ],
        );
        self.replicas[i] = Some(service);
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.balancer)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.haproxy.kill();
        let _ = self.haproxy.wait();
    }
}

/// One stack, updated again and again by a worker thread: each update
/// (generation g) creates OBJECTS new objects, files in `objects/`, and
/// deletes the previous generation's; every create and delete is logged.
struct Stack {
    scratch: common::Scratch,
    name: String,
    url: String,
    token: String,
    generation: AtomicUsize,
    /// Updates that ended, and how.
    succeeded: AtomicUsize,
    failed: Mutex<Vec<String>>,
    /// Updates whose client was killed.
    interrupted: AtomicUsize,
}

impl Stack {
    fn new(i: usize, url: &str, token: &str) -> Stack {
        let scratch = common::Scratch::new("name: balancer\nruntime: yaml\n");
        std::fs::create_dir_all(scratch.project.join("objects")).unwrap();
        Stack {
            scratch,
            name: format!("s{i}"),
            url: url.to_owned(),
            token: token.to_owned(),
            generation: AtomicUsize::new(0),
            succeeded: AtomicUsize::new(0),
            failed: Mutex::new(Vec::new()),
            interrupted: AtomicUsize::new(0),
        }
    }

    fn names(generation: usize) -> Vec<String> {
        (0..OBJECTS).map(|o| format!("g{generation}o{o}")).collect()
    }

    fn write_program(&self, generation: usize) {
        self.write_program_and(generation, "");
    }

    /// The program of `generation` with `extra` resources after it.
    fn write_program_and(&self, generation: usize, extra: &str) {
        let mut program = String::from("name: balancer\nruntime: yaml\nresources:\n");
        for name in Stack::names(generation) {
            program.push_str(&format!(
                "  {name}:\n    type: command:local:Command\n    properties:\n      \
                 create: sleep 0.3 && touch objects/{name} && echo {name} >> created.log\n      \
                 delete: rm objects/{name} && echo {name} >> deleted.log\n"
            ));
        }
        program.push_str(extra);
        std::fs::write(self.scratch.project.join("Pulumi.yaml"), program).unwrap();
    }

    fn converge(&self, args: &[&str]) -> Command {
        let mut cmd = self.scratch.command("pw");
        cmd.env("PULUMI_BACKEND_URL", &self.url)
            .env("PULUMI_ACCESS_TOKEN", &self.token)
            .args(args)
            .args(["--stack", &self.name]);
        cmd
    }

    fn output(&self, args: &[&str]) -> Output {
        let child = self
            .converge(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait(child, &format!("converge {args:?} on {}", self.name))
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.output(args);
        assert!(
            out.status.success(),
            "converge {args:?} on {}: {}{}",
            self.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The next generation's update; true if it succeeded. A failure must
    /// be a clear error: exit code 1 and an `error:` line, no panic.
    fn update(&self) -> bool {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.write_program(generation);
        let out = self.output(&["up", "--yes", "--skip-preview"]);
        if out.status.success() {
            self.succeeded.fetch_add(1, Ordering::SeqCst);
            return true;
        }
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            out.status.code() == Some(255)
                && stderr.contains("error: ")
                && !stderr.contains("panicked"),
            "{}: generation {generation} failed without a clear error ({}):\n{stderr}",
            self.name,
            out.status
        );
        self.failed
            .lock()
            .unwrap()
            .push(format!("{} generation {generation}: {stderr}", self.name));
        false
    }

    fn updates(&self) -> usize {
        self.succeeded.load(Ordering::SeqCst) + self.failed.lock().unwrap().len()
    }

    fn log(&self, file: &str) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        let text = std::fs::read_to_string(self.scratch.project.join(file)).unwrap_or_default();
        for line in text.lines() {
            *out.entry(line.to_owned()).or_insert(0) += 1;
        }
        out
    }

    fn objects(&self) -> BTreeSet<String> {
        std::fs::read_dir(self.scratch.project.join("objects"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }
}

/// Waits for `child`, killing it and failing the test past [`GUARD`].
fn wait(mut child: Child, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > GUARD {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} hung for {GUARD:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Workers updating every stack in a loop until stopped.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start(stacks: &[Arc<Stack>]) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = stacks
            .iter()
            .map(|s| {
                let s = Arc::clone(s);
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::SeqCst) {
                        s.update();
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }

    fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads {
            t.join().expect("a worker failed");
        }
    }
}

/// Waits until every stack has ended `more` updates beyond `since`.
fn each_updated(stacks: &[Arc<Stack>], since: &[usize], more: usize, what: &str) {
    let start = Instant::now();
    while stacks
        .iter()
        .zip(since)
        .any(|(s, &n)| s.updates() < n + more)
    {
        assert!(start.elapsed() < GUARD, "updates stalled {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn counts(stacks: &[Arc<Stack>]) -> Vec<usize> {
    stacks.iter().map(|s| s.updates()).collect()
}

/// Waits until an update is half done (its stack has some objects of
/// its generation): the disturbance then hits updates under way.
fn updates_under_way(stacks: &[Arc<Stack>]) {
    let start = Instant::now();
    loop {
        // Between two updates a stack has a whole generation of objects.
        let busy = stacks.iter().any(|s| s.objects().len() % OBJECTS != 0);
        if busy {
            return;
        }
        assert!(start.elapsed() < GUARD, "no update got under way");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn updates_through_a_balancer_survive_a_killed_replica_a_database_restart_and_a_rolling_restart() {
    let Some(haproxy) = env_path("CONVERGE_TEST_HAPROXY") else {
        return;
    };
    let Some(postgres_bin) = env_path("CONVERGE_TEST_POSTGRES_BIN") else {
        return;
    };
    let mut cluster = Cluster::start(&haproxy, postgres_bin);
    let url = cluster.url();
    let stacks: Vec<Arc<Stack>> = (0..WORKERS)
        .map(|i| Arc::new(Stack::new(i, &url, &cluster.token)))
        .collect();
    for s in &stacks {
        s.ok(&["stack", "init", &s.name]);
    }

    // Round one: a replica killed mid-update.
    let load = Load::start(&stacks);
    each_updated(&stacks, &[0; WORKERS], 1, "before the kill");
    updates_under_way(&stacks);
    let at_kill = counts(&stacks);
    cluster.replicas[1].as_mut().unwrap().kill(); // SIGKILL
    each_updated(&stacks, &at_kill, 2, "after a replica was killed");
    load.stop();
    cluster.start_replica(1);

    // Round two: PostgreSQL restarts, then a rolling restart.
    let load = Load::start(&stacks);
    each_updated(&stacks, &counts(&stacks), 1, "before PostgreSQL's restart");
    updates_under_way(&stacks);
    let at_restart = counts(&stacks);
    cluster.postgres.stop_server("fast");
    std::thread::sleep(Duration::from_secs(1));
    cluster.postgres.start_server();
    each_updated(&stacks, &at_restart, 1, "after PostgreSQL restarted");
    for i in 0..REPLICAS {
        updates_under_way(&stacks);
        let status = cluster.replicas[i]
            .as_mut()
            .unwrap()
            .stop_with(rustix::process::Signal::TERM, Duration::from_secs(60))
            .expect("a replica drains and exits after SIGTERM");
        assert!(status.success(), "replica {i} after SIGTERM: {status}");
        cluster.start_replica(i);
    }
    each_updated(&stacks, &counts(&stacks), 1, "after the rolling restart");
    load.stop();

    // Round three: a client killed mid-update; its lease expires and the
    // service records the update as failed.
    interrupt(&stacks[0]);

    let failures: Vec<String> = stacks
        .iter()
        .flat_map(|s| s.failed.lock().unwrap().clone())
        .collect();
    eprintln!(
        "{} updates, {} failed{}",
        stacks.iter().map(|s| s.updates()).sum::<usize>(),
        failures.len(),
        failures
            .iter()
            .map(|f| format!("\n--- {f}"))
            .collect::<String>()
    );

    for s in &stacks {
        check_stack(s);
    }
}

/// Kills (SIGKILL) an `up` of `s` while a step is under way: a step
/// that creates nothing outside (a marker file, then a sleep), added to
/// the objects `s` has.
fn interrupt(s: &Stack) {
    let generation = s.generation.load(Ordering::SeqCst);
    let marker = s.scratch.dir.path().join("holding");
    s.write_program_and(
        generation,
        &format!(
            "  hold:\n    type: command:local:Command\n    properties:\n      \
             create: touch {} && sleep 20\n",
            marker.display()
        ),
    );
    let mut up = s
        .converge(&["up", "--yes", "--skip-preview"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !marker.exists() {
        assert!(
            up.try_wait().unwrap().is_none(),
            "{}: the up ended before it was killed",
            s.name
        );
        assert!(
            start.elapsed() < GUARD,
            "{}: the hold step never ran",
            s.name
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    up.kill().unwrap();
    up.wait().unwrap();
    s.interrupted.fetch_add(1, Ordering::SeqCst);
}

/// A stack converges and its state, world and history agree.
fn check_stack(s: &Stack) {
    // An update that failed may have left its lease to expire: the next
    // one waits it out.
    let start = Instant::now();
    while !s.update() {
        assert!(
            start.elapsed() < GUARD,
            "{}: no update succeeds after the disturbances",
            s.name
        );
        std::thread::sleep(Duration::from_secs(2));
    }
    let generation = s.generation.load(Ordering::SeqCst);
    // A step under way when its client was killed stays in the state as
    // a pending operation (the object may exist: the user decides), and
    // only those: here each interrupted `hold` create, which the refresh
    // that forgets interrupted creates then clears.
    let export: serde_json::Value = serde_json::from_str(&s.ok(&["stack", "export"])).unwrap();
    let pending: Vec<String> = export["deployment"]["pending_operations"]
        .as_array()
        .map(|p| {
            p.iter()
                .map(|o| format!("{} {}", o["type"], o["resource"]["urn"]))
                .collect()
        })
        .unwrap_or_default();
    let interrupted = s.interrupted.load(Ordering::SeqCst);
    assert_eq!(
        pending.len(),
        interrupted,
        "{}: pending: {pending:?}",
        s.name
    );
    assert!(
        pending
            .iter()
            .all(|p| p.starts_with("\"creating\"") && p.ends_with("::hold\"")),
        "{}: pending: {pending:?}",
        s.name
    );
    if interrupted > 0 {
        s.ok(&[
            "refresh",
            "--yes",
            "--skip-preview",
            "--clear-pending-creates",
        ]);
    }
    // A second `up` is a no-op.
    s.ok(&["up", "--yes", "--skip-preview", "--expect-no-changes"]);
    s.succeeded.fetch_add(1, Ordering::SeqCst);

    // The objects that exist are exactly the last generation's, and the
    // state records exactly them, once each.
    let expected: BTreeSet<String> = Stack::names(generation).into_iter().collect();
    assert_eq!(s.objects(), expected, "{}: the objects that exist", s.name);
    let export = s.ok(&["stack", "export"]);
    let snapshot = read_deployment(export.as_bytes(), SecretsMode::Opaque)
        .unwrap_or_else(|e| panic!("{}: the export does not read: {e}", s.name));
    integrity::verify(&snapshot).unwrap_or_else(|e| panic!("{}: broken state: {e}", s.name));
    let recorded: Vec<String> = snapshot
        .resources
        .iter()
        .filter(|r| r.urn.type_token() == "command:local:Command")
        .map(|r| r.urn.name().to_owned())
        .collect();
    assert_eq!(
        recorded.iter().cloned().collect::<BTreeSet<_>>(),
        expected,
        "{}: the state's objects",
        s.name
    );
    assert_eq!(recorded.len(), OBJECTS, "{}: {recorded:?}", s.name);
    let v: serde_json::Value = serde_json::from_str(&export).unwrap();
    assert!(
        v["deployment"]["pending_operations"]
            .as_array()
            .is_none_or(|p| p.is_empty()),
        "{}: operations left pending: {export}",
        s.name
    );

    // Nothing was created or deleted twice.
    for (file, what) in [("created.log", "created"), ("deleted.log", "deleted")] {
        let twice: Vec<_> = s.log(file).into_iter().filter(|(_, n)| *n > 1).collect();
        assert!(
            twice.is_empty(),
            "{}: {what} more than once: {twice:?}",
            s.name
        );
    }

    // One history record per update that started: each succeeded one,
    // and each failed one that got the stack's lease, as failed.
    let history: serde_json::Value =
        serde_json::from_str(&s.ok(&["stack", "history", "--json", "--page-size", "1000"]))
            .unwrap();
    let records: Vec<&serde_json::Value> = history
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["kind"] != "refresh")
        .collect();
    let by_result = |r: &str| records.iter().filter(|u| u["result"] == r).count();
    let succeeded = s.succeeded.load(Ordering::SeqCst);
    let failed = s.failed.lock().unwrap().len();
    assert_eq!(
        by_result("succeeded"),
        succeeded,
        "{}: a record per successful update: {history:#}",
        s.name
    );
    assert_eq!(
        by_result("succeeded") + by_result("failed"),
        records.len(),
        "{}: every record succeeded or failed: {history:#}",
        s.name
    );
    let interrupted = s.interrupted.load(Ordering::SeqCst);
    assert!(
        records.len() <= succeeded + failed + interrupted,
        "{}: more records than updates ({succeeded} succeeded, {failed} failed, \
         {interrupted} interrupted): {history:#}",
        s.name
    );
    let closed = records
        .iter()
        .filter(|&&u| {
            u["result"] == "failed"
                && u["message"] == "interrupted: the client stopped renewing its lease"
        })
        .count();
    assert_eq!(
        closed, interrupted,
        "{}: each interrupted update recorded as failed: {history:#}",
        s.name
    );
    for u in &records {
        assert_eq!(u["kind"], "update", "{}: {u}", s.name);
    }
}

//! Two `converge up` on one stack, started at the same instant, on each
//! backend (the file backend, an S3 server, the state service): exactly
//! one runs; the other fails at once with the lock message naming the
//! winner; no object is created twice; the state verifies.
//!
//! The two processes are aligned with the CLI's test hook
//! `CONVERGE_TEST_LOCK_BARRIER` (see `Context::lock_info`): each announces
//! itself and waits, right before it locks, until the test releases both.
//! Each race is on a stack of its own; the program's commands append the
//! name of every object they create to one log, so a double creation shows.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use converge_backend::LockInfo;
use converge_state::checkpoint::read_deployment;
use converge_state::integrity;
use converge_state::secrets::SecretsMode;

/// Races per backend (the service: half on SQLite, half on PostgreSQL).
const RACES: usize = 100;
/// How long any one process may take before the test calls it a hang.
const TIMEOUT: Duration = Duration::from_secs(120);
/// The objects each update creates.
const OBJECTS: [&str; 2] = ["a", "b"];

struct World {
    scratch: common::Scratch,
    backend: common::Backend,
    log: PathBuf,
}

impl World {
    fn new(backend: common::Backend) -> World {
        let scratch = common::Scratch::new("name: races\nruntime: yaml\n");
        let log = scratch.dir.path().join("created.log");
        // A project of its own: PostgreSQL is shared with other tests.
        let project = format!("races-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let mut program = format!("name: {project}\nruntime: yaml\nresources:\n");
        for o in OBJECTS {
            program.push_str(&format!(
                "  {o}:\n    type: command:local:Command\n    properties:\n      \
                 create: echo ${{pulumi.stack}}/{o} >> {}\n",
                log.display()
            ));
        }
        std::fs::write(scratch.project.join("Pulumi.yaml"), program).unwrap();
        World {
            scratch,
            backend,
            log,
        }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        common::converge_on(&self.scratch, &self.backend, args)
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.cmd(&[]), args)
    }

    /// How many times each object was created.
    fn created(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        for line in text.lines() {
            *out.entry(line.to_owned()).or_insert(0) += 1;
        }
        out
    }
}

/// Waits for `child`, killing it and failing the test if it takes longer
/// than [`TIMEOUT`] (a hang, not a slow machine).
fn wait(mut child: Child, what: &str) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what} hung for {TIMEOUT:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

/// One race on a fresh stack `stack`.
fn race(w: &World, stack: &str) {
    w.run(&["stack", "init", stack]);
    let barrier = w.scratch.dir.path().join(format!("barrier-{stack}"));
    let spawn = || {
        w.cmd(&["up", "--yes", "--skip-preview", "--stack", stack])
            .env("CONVERGE_TEST_LOCK_BARRIER", &barrier)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut ups = [spawn(), spawn()];
    let pids = ups.each_ref().map(Child::id);
    // Release them once both wait right before locking.
    let arrived = |pid: u32| Path::new(&format!("{}.{pid}", barrier.display())).exists();
    let start = Instant::now();
    while !pids.iter().all(|&pid| arrived(pid)) {
        let exited = ups.iter_mut().any(|up| up.try_wait().unwrap().is_some());
        if exited || start.elapsed() > TIMEOUT {
            let outs = ups.map(|mut up| {
                let _ = up.kill();
                up.wait_with_output().unwrap()
            });
            panic!("{stack}: the ups did not both get to the lock: {outs:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    std::fs::write(&barrier, b"").unwrap();
    let [first, second] = ups;
    let outs = [wait(first, "converge up"), wait(second, "converge up")];

    let report = || {
        outs.iter()
            .zip(pids)
            .map(|(o, pid)| {
                format!(
                    "pid {pid}: {}\n{}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let winners: Vec<usize> = (0..2).filter(|&i| outs[i].status.success()).collect();
    assert_eq!(
        winners.len(),
        1,
        "{stack}: not exactly one winner:\n{}",
        report()
    );
    let (winner, loser) = (winners[0], 1 - winners[0]);
    let err = String::from_utf8_lossy(&outs[loser].stderr);
    let me = LockInfo::current();
    assert!(
        err.contains("the stack is currently locked by")
            && err.contains(&format!(
                "{}@{} (pid {})",
                me.username, me.hostname, pids[winner]
            )),
        "{stack}: the loser does not name the winner:\n{}",
        report()
    );

    // Every object of this stack was created once.
    let created = w.created();
    for o in OBJECTS {
        let name = format!("{stack}/{o}");
        assert_eq!(
            created.get(&name).copied(),
            Some(1),
            "{stack}: {name} created {:?} times:\n{}",
            created.get(&name),
            report()
        );
    }
    // The state verifies, and records them.
    let export = w.run(&["stack", "export", "--stack", stack]);
    let snapshot = read_deployment(export.as_bytes(), SecretsMode::Opaque)
        .unwrap_or_else(|e| panic!("{stack}: the export does not read: {e}"));
    integrity::verify(&snapshot).unwrap_or_else(|e| panic!("{stack}: broken state: {e}"));
    let commands = snapshot
        .resources
        .iter()
        .filter(|r| r.urn.type_token() == "command:local:Command")
        .count();
    assert_eq!(commands, OBJECTS.len(), "{stack}: {export}");
}

fn races(w: World, count: usize) {
    let start = Instant::now();
    for i in 0..count {
        race(&w, &format!("r{i}"));
    }
    eprintln!("{count} races in {:.1?}", start.elapsed());
}

#[test]
fn simultaneous_ups_on_the_file_backend_have_one_winner() {
    races(World::new(common::Backend::File), RACES);
}

#[test]
fn simultaneous_ups_on_s3_have_one_winner() {
    let Some(url) = converge_backend::conformance::test_s3_url("races") else {
        return;
    };
    races(World::new(common::Backend::Url(url)), RACES);
}

/// The state service, on SQLite (its default) and on PostgreSQL (several
/// connections: the two lease requests really run at once), half the races
/// each.
fn service_races(database_url: Option<&str>) {
    let data = tempfile::tempdir().unwrap();
    let service = common::service::Service::start_on(
        data.path(),
        &data.path().join("db"),
        "127.0.0.1:0",
        "organization",
        database_url,
    );
    races(World::new(common::Backend::Service(service)), RACES / 2);
}

#[test]
fn simultaneous_ups_on_the_service_on_sqlite_have_one_winner() {
    service_races(None);
}

#[test]
fn simultaneous_ups_on_the_service_on_postgres_have_one_winner() {
    let Ok(url) = std::env::var("CONVERGE_TEST_DATABASE_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI=true but CONVERGE_TEST_DATABASE_URL is not set: scripts/test starts PostgreSQL"
        );
        eprintln!("SKIPPED: set CONVERGE_TEST_DATABASE_URL (scripts/test does)");
        return;
    };
    service_races(Some(&url));
}

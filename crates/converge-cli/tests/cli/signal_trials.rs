//! Ctrl-C trials, as the kill -9 trials are for crashes: `up`, `destroy`
//! and `refresh` through the binary, on the file backend, an object store
//! and the state service, each interrupted at a random moment by SIGINT
//! (half of them followed by a second SIGINT, some by SIGTERM instead),
//! against the test plugin made slow (it honours `Cancel`) or hanging (it
//! ignores it). After every run: the command exited within its bound with
//! the signal's exit code (or 0, when it finished first), no plugin
//! process is left, no lock or journal is left, the state verifies, every
//! object in the cloud is in the state or its pending operations, the
//! history records the cancellation (or nothing, and the state is as it
//! was, when the signal came before anything changed), and `refresh`
//! then `up` converge to the program.
//!
//! `CONVERGE_SIGNAL_TRIALS` sets the number of runs per backend (default
//! 34: about 100 in all); `CONVERGE_SIGNAL_SEED` repeats a failed series
//! (each test prints its seed); `CONVERGE_SIGNAL_VERBOSE` prints each
//! run's outcome.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use converge_backend::StackRef;
use converge_state::checkpoint;
use converge_state::integrity;
use converge_state::secrets::SecretsMode;

/// How long each of the slow plugin's resource operations takes.
const DELAY_MS: u64 = 400;
/// The trials' `--cancel-timeout`: how long a cancelled run waits for a
/// hanging provider before it stops waiting by itself.
const CANCEL_TIMEOUT: &str = "2s";
/// How long a run may take from its first signal to its exit: the cancel
/// timeout, Converge's deadline for a stopped command (20 s, never reached
/// here unless saving hangs), and the plugins' shutdown grace (5 s). A run
/// that takes longer has hung: the trial fails.
const EXIT_BOUND: Duration = Duration::from_secs(45);
/// How long a plugin process may take to be gone once Converge exited.
const GONE_BOUND: Duration = Duration::from_secs(10);

#[test]
fn ctrl_c_trials_on_the_file_backend() {
    trials("file", common::Backend::File);
}

#[test]
fn ctrl_c_trials_on_an_object_store() {
    let Some(url) = converge_backend::conformance::test_s3_url("signals") else {
        return;
    };
    trials("s3", common::Backend::Url(url));
}

#[test]
fn ctrl_c_trials_on_the_service() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    trials("service", common::Backend::Service(service));
}

/// A small deterministic generator, so that a failed series can be run
/// again from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Up,
    Destroy,
    Refresh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sig {
    Int,
    Term,
}

/// One run: what it does and how it is interrupted.
#[derive(Debug)]
struct Trial {
    op: Op,
    /// The program is the Python one (the published SDK), not YAML.
    python: bool,
    hang: bool,
    first: Sig,
    first_after: Duration,
    second_after: Option<Duration>,
}

struct World {
    scratch: common::Scratch,
    backend: common::Backend,
    bin: PathBuf,
    /// The program's version: each `up` trial changes the values and the
    /// number of resources, so that it creates, updates and deletes.
    generation: usize,
    /// The venv with the `pulumi` SDK, for the Python program's trials.
    venv: Option<PathBuf>,
}

fn trials(name: &str, backend: common::Backend) {
    let seed = std::env::var("CONVERGE_SIGNAL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    let runs: usize = std::env::var("CONVERGE_SIGNAL_TRIALS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(34);
    eprintln!("{name}: {runs} Ctrl-C trials, CONVERGE_SIGNAL_SEED={seed}");
    let mut rng = Rng(seed);
    let scratch = common::Scratch::new(&program(0));
    let bin = common::convergetest_bin_dir(scratch.dir.path());
    // Python trials on the file backend only: the program's process is
    // the same whatever the backend, and each costs an interpreter's start.
    let venv = match &backend {
        common::Backend::File => common::python::venv(),
        _ => None,
    };
    let mut w = World {
        scratch,
        backend,
        bin,
        generation: 0,
        venv,
    };
    w.succeed(&["stack", "init", "dev"]);
    w.converge();
    let mut outcomes: BTreeMap<Outcome, usize> = BTreeMap::new();
    for k in 0..runs {
        let op = match rng.below(10) {
            0..=5 => Op::Up,
            6..=7 => Op::Refresh,
            _ => Op::Destroy,
        };
        let first = if rng.chance(15) { Sig::Term } else { Sig::Int };
        let trial = Trial {
            op,
            python: op == Op::Up && w.venv.is_some() && rng.chance(30),
            hang: rng.chance(25),
            first,
            first_after: rng.millis(100, 1600),
            second_after: (first == Sig::Int && rng.chance(50)).then(|| rng.millis(50, 1200)),
        };
        *outcomes.entry(w.run(k, &trial, name)).or_default() += 1;
    }
    eprintln!("{name}: outcomes {outcomes:?}");
    // A long enough series met both ways a cancellation ends; a shorter one
    // (set by hand) may not.
    if runs >= 20 {
        for kind in [Outcome::Cancelled, Outcome::Stopped] {
            assert!(
                outcomes.contains_key(&kind),
                "{name}: no trial ended {kind:?} (seed {seed}): {outcomes:?}"
            );
        }
    }
}

/// How a trial's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// It finished before the signal had anything left to cancel.
    Finished,
    /// The signal came before it changed anything.
    BeforeStart,
    /// Cancelled: the steps under way ended and were recorded.
    Cancelled,
    /// Stopped: steps still under way were left as pending operations.
    Stopped,
}

/// The Python program of `generation`, the same things as [`program`]'s;
/// it records its pid beside the plugins' (`CONVERGE_TEST_PLUGIN_PIDS`).
fn python_program(generation: usize) -> String {
    let mut py = String::from(
        "import os\nimport pulumi\n\
         open(os.path.join(os.environ['CONVERGE_TEST_PLUGIN_PIDS'], str(os.getpid())), 'w').close()\n",
    );
    for (name, value) in things(generation) {
        py.push_str(&format!(
            "pulumi.CustomResource('convergetest:index:Thing', '{name}', {{'value': '{value}', 'size': None, 'length': None, 'pluginVersion': None}})\n"
        ));
    }
    py
}

/// The program of `generation`: three to five things.
fn program(generation: usize) -> String {
    let mut yaml = String::from("name: sigtrial\nruntime: yaml\nresources:\n");
    for (name, value) in things(generation) {
        yaml.push_str(&format!(
            "  {name}:\n    type: convergetest:index:Thing\n    properties:\n      value: {value}\n"
        ));
    }
    yaml
}

/// The things of `generation`'s program, by name, with their values.
fn things(generation: usize) -> BTreeMap<String, String> {
    (0..3 + generation % 3)
        .map(|i| (format!("t{i}"), format!("g{generation}-t{i}")))
        .collect()
}

impl World {
    fn cmd(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.scratch.with_test_plugin(&self.bin);
        self.backend.apply(&mut cmd);
        cmd.args(args);
        cmd
    }

    fn succeed(&self, args: &[&str]) -> String {
        let out = self.cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "converge {args:?}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The project's program for this generation: YAML, or the Python one.
    fn write_program(&self, python: bool) {
        let project = &self.scratch.project;
        match (&self.venv, python) {
            (Some(venv), true) => {
                std::fs::write(
                    project.join("Pulumi.yaml"),
                    format!(
                        "name: sigtrial\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
                        venv.display()
                    ),
                )
                .unwrap();
                std::fs::write(project.join("__main__.py"), python_program(self.generation))
                    .unwrap();
            }
            _ => std::fs::write(project.join("Pulumi.yaml"), program(self.generation)).unwrap(),
        }
    }

    /// `refresh`, then `up` with a plugin that answers at once: the state
    /// holds the program's things with their values.
    fn converge(&self) {
        self.write_program(false);
        self.succeed(&["refresh", "--yes", "--skip-preview"]);
        self.succeed(&["up", "--yes", "--skip-preview"]);
        let state = self.export();
        let mut recorded = BTreeMap::new();
        for r in state["deployment"]["resources"].as_array().unwrap() {
            if r["type"] == "convergetest:index:Thing" {
                let name = r["urn"].as_str().unwrap().rsplit("::").next().unwrap();
                let value = r["outputs"]["value"].as_str().unwrap_or_default();
                recorded.insert(name.to_owned(), value.to_owned());
            }
        }
        assert_eq!(recorded, things(self.generation), "refresh + up converged");
        self.check_tracked(&state);
    }

    /// `stack export`, checked for integrity.
    fn export(&self) -> serde_json::Value {
        let out = self.succeed(&["stack", "export"]);
        let snapshot = checkpoint::read_deployment(out.as_bytes(), SecretsMode::Opaque)
            .expect("the export reads");
        integrity::verify(&snapshot).expect("the state verifies");
        serde_json::from_str(&out).unwrap()
    }

    /// The newest update record, if any.
    fn last_update(&self) -> Option<serde_json::Value> {
        let out = self.succeed(&["stack", "history", "--json", "--page-size", "1"]);
        let records: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
        records.into_iter().next()
    }

    /// Every object in the plugin's cloud is a resource of the state (by
    /// ID) or the resource of one of its pending operations (by URN).
    fn check_tracked(&self, state: &serde_json::Value) {
        let cloud = self.scratch.dir.path().join("cloud.json");
        let Ok(text) = std::fs::read_to_string(&cloud) else {
            return;
        };
        let cloud: serde_json::Value = serde_json::from_str(&text).unwrap();
        let d = &state["deployment"];
        let empty = Vec::new();
        let resources = d["resources"].as_array().unwrap_or(&empty);
        let pending = d["pending_operations"].as_array().unwrap_or(&empty);
        for (id, object) in cloud["objects"].as_object().unwrap() {
            let urn = object["urn"].as_str().unwrap();
            let tracked = resources.iter().any(|r| r["id"] == id.as_str())
                || pending.iter().any(|p| p["resource"]["urn"] == urn);
            assert!(tracked, "object {id} ({urn}) is tracked by the state");
        }
    }

    /// The backend's view: locks held and a journal left.
    fn locks_and_journal(&self) -> (usize, bool) {
        let stack = StackRef::new("sigtrial", "dev").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let backend: Box<dyn converge_backend::Backend> = match &self.backend {
                common::Backend::File => Box::new(
                    converge_backend::FileBackend::open(
                        &format!("file://{}", self.scratch.backend.display()),
                        &self.scratch.project,
                    )
                    .unwrap(),
                ),
                common::Backend::Url(url) => {
                    Box::new(converge_backend::ObjectBackend::open(url).unwrap())
                }
                common::Backend::Service(s) => Box::new(
                    converge_backend::http::HttpBackend::new(
                        converge_backend::http::HttpBackendOptions {
                            url: s.url.clone(),
                            token: s.token.clone(),
                            organization: "organization".to_owned(),
                            retry: Default::default(),
                        },
                    )
                    .unwrap(),
                ),
            };
            let locks = backend.list_locks(&stack).await.unwrap().len();
            let journal = backend.load_journal(&stack).await.unwrap().is_some();
            (locks, journal)
        })
    }

    fn run(&mut self, k: usize, trial: &Trial, backend: &str) -> Outcome {
        let what = format!("{backend} trial {k}: {trial:?}");
        if trial.op == Op::Up {
            self.generation += 1;
        }
        self.write_program(trial.python);
        let before = self.export();
        let version_before = self.last_update().map(|u| u["version"].clone());
        let pids = tempfile::tempdir().unwrap();
        let verb = match trial.op {
            Op::Up => "up",
            Op::Destroy => "destroy",
            Op::Refresh => "refresh",
        };
        let out = self.scratch.dir.path().join(format!("trial-{k}.out"));
        let mut cmd = self.cmd(&[verb, "--yes", "--skip-preview"]);
        cmd.env("CONVERGE_CANCEL_TIMEOUT", CANCEL_TIMEOUT)
            .env("CONVERGE_TEST_PLUGIN_PIDS", pids.path())
            .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
            .stderr(Stdio::from(
                std::fs::File::create(out.with_extension("err")).unwrap(),
            ));
        if trial.hang {
            cmd.env("CONVERGE_TEST_PLUGIN_HANG", "1");
        } else {
            cmd.env("CONVERGE_TEST_PLUGIN_DELAY_MS", DELAY_MS.to_string());
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(trial.first_after);
        signal(&child, trial.first);
        let signalled = Instant::now();
        if let Some(after) = trial.second_after {
            std::thread::sleep(after);
            signal(&child, Sig::Int);
        }
        let status = wait_within(&mut child, signalled, &what, &out);
        let output = || {
            format!(
                "{}{}",
                std::fs::read_to_string(&out).unwrap_or_default(),
                std::fs::read_to_string(out.with_extension("err")).unwrap_or_default()
            )
        };
        let code = status.code();
        let interrupted = match trial.first {
            Sig::Int => 130,
            Sig::Term => 143,
        };
        assert!(
            code == Some(0) || code == Some(interrupted),
            "{what}: exit {status}, expected 0 or {interrupted}\n{}",
            output()
        );
        check_processes_gone(pids.path(), &what);
        let (locks, journal) = self.locks_and_journal();
        assert_eq!(locks, 0, "{what}: a lock was left\n{}", output());
        assert!(!journal, "{what}: a journal was left\n{}", output());
        let after = self.export();
        self.check_tracked(&after);
        let last = self.last_update();
        let recorded = last
            .as_ref()
            .filter(|u| Some(&u["version"]) != version_before.as_ref());
        let pending = |state: &serde_json::Value| {
            state["deployment"]["pending_operations"]
                .as_array()
                .map_or(0, Vec::len)
        };
        let outcome = match (recorded, code) {
            (Some(u), Some(0)) => {
                assert_eq!(u["result"], "succeeded", "{what}");
                Outcome::Finished
            }
            (Some(u), _) => {
                assert_eq!(u["result"], "failed", "{what}\n{}", output());
                assert_eq!(
                    u["convergeCancelled"],
                    true,
                    "{what}: the history records the cancellation\n{}",
                    output()
                );
                if pending(&after) > pending(&before) {
                    Outcome::Stopped
                } else {
                    Outcome::Cancelled
                }
            }
            (None, Some(c)) if c != 0 => {
                // Interrupted before it began: nothing changed.
                assert_eq!(
                    before["deployment"]["resources"],
                    after["deployment"]["resources"],
                    "{what}: nothing was recorded, yet the state changed\n{}",
                    output()
                );
                Outcome::BeforeStart
            }
            (None, _) => panic!("{what}: it succeeded, yet no update was recorded"),
        };
        if std::env::var_os("CONVERGE_SIGNAL_VERBOSE").is_some() {
            eprintln!("{what}: {outcome:?}");
        }
        self.converge();
        outcome
    }
}

/// Sends `sig` to the `converge` process alone (not its group): as a
/// terminal's Ctrl-C would reach it, since plugins and programs lead
/// groups of their own.
fn signal(child: &Child, sig: Sig) {
    use rustix::process::{kill_process, Pid, Signal};
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    let _ = kill_process(
        pid,
        match sig {
            Sig::Int => Signal::INT,
            Sig::Term => Signal::TERM,
        },
    );
}

/// Waits for `child` to exit, at most [`EXIT_BOUND`] after `signalled`;
/// a run that outlasts it is killed and fails the trial.
fn wait_within(
    child: &mut Child,
    signalled: Instant,
    what: &str,
    out: &Path,
) -> std::process::ExitStatus {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if signalled.elapsed() > EXIT_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what}: still running {EXIT_BOUND:?} after its signal\n{}{}",
                std::fs::read_to_string(out).unwrap_or_default(),
                std::fs::read_to_string(out.with_extension("err")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every plugin and program process the run started (each recorded its
/// pid) is gone:
/// exited, or a zombie waiting for a reaper (it no longer runs).
fn check_processes_gone(pids: &Path, what: &str) {
    let started = Instant::now();
    for entry in std::fs::read_dir(pids).unwrap() {
        let pid = entry.unwrap().file_name().to_string_lossy().into_owned();
        let stat = PathBuf::from(format!("/proc/{pid}/stat"));
        loop {
            let running = std::fs::read_to_string(&stat)
                .map(|s| {
                    // `pid (comm) state …`: the state follows the last `)`.
                    s.rsplit_once(')')
                        .map(|(_, rest)| rest.trim_start())
                        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
                })
                .unwrap_or(false);
            if !running {
                break;
            }
            assert!(
                started.elapsed() < GONE_BOUND,
                "{what}: process {pid} is still running after Converge exited"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

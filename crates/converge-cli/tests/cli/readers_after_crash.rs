//! What a user sees right after a crash: `converge up` and `converge
//! destroy` SIGKILLed at random moments, on the file backend, an S3 server
//! and the state service. Right after each kill, before anything else
//! writes, the readers (`stack export`, `stack output`, `stack ls`, without
//! the passphrase) show the journal's steps: the export verifies, holds
//! every object the provider made (as a resource or a pending operation)
//! and no object it deleted (unless under a pending delete), and the other
//! readers agree with it. On the file backend the reader compacts the dead
//! update's journal, so the DIY checkpoint file itself — what Pulumi's CLI
//! reads — holds the steps. Then `refresh` and `up` converge.
//!
//! The objects are files made and removed by `command:local:Command`
//! with a delay (the provider's latency). `CONVERGE_CRASH_TRIALS` sets the
//! number of trials per backend (default: 100 on the file backend, 50 on
//! each other); `CONVERGE_CRASH_SEED` the seed of the kill moments.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{Command as Process, Output, Stdio};
use std::time::Duration;

use converge_state::checkpoint;
use converge_state::integrity;
use converge_state::secrets::SecretsMode;

/// Resources per program.
const N: usize = 8;

struct World {
    scratch: common::Scratch,
    project: PathBuf,
    backend: common::Backend,
}

/// The program of generation `generation`: N objects named by it, so each
/// new generation replaces every object (a create and a delete each).
fn program(generation: usize) -> String {
    let mut p = String::from("name: crashread\nruntime: yaml\nresources:\n");
    for i in 0..N {
        p.push_str(&format!(
            "  obj{i}:\n    type: command:local:Command\n    properties:\n      \
             create: sleep 0.05 && touch objects/obj{i}-{generation}\n      \
             delete: sleep 0.05 && rm -f objects/obj{i}-{generation}\n      \
             triggers: [{generation}]\n"
        ));
    }
    p.push_str(&format!("outputs:\n  generation: \"{generation}\"\n"));
    p
}

/// A small deterministic generator of kill moments (xorshift).
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// What a state records of the objects: by file name, the live resources
/// and the pending operations (kind, file name).
#[derive(Debug, Default)]
struct Tracked {
    resources: BTreeSet<String>,
    pending: Vec<(String, String)>,
    count: usize,
}

fn object_of(resource: &serde_json::Value) -> Option<String> {
    let create = resource["inputs"]["create"].as_str()?;
    create.rsplit("objects/").next().map(str::to_owned)
}

fn tracked(export: &serde_json::Value) -> Tracked {
    let d = &export["deployment"];
    let resources = d["resources"].as_array().cloned().unwrap_or_default();
    let pending = d["pending_operations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    Tracked {
        count: resources.len(),
        resources: resources.iter().filter_map(object_of).collect(),
        pending: pending
            .iter()
            .filter_map(|p| Some((p["type"].as_str()?.to_owned(), object_of(&p["resource"])?)))
            .collect(),
    }
}

impl World {
    fn new(backend: common::Backend) -> World {
        let scratch = common::Scratch::new(&program(0));
        let project = scratch.project.clone();
        std::fs::create_dir_all(project.join("objects")).unwrap();
        let w = World {
            scratch,
            project,
            backend,
        };
        w.ok(&["stack", "init", "dev"]);
        w
    }

    fn cmd(&self, args: &[&str]) -> Process {
        common::converge_on(&self.scratch, &self.backend, args)
    }

    /// A reader: no passphrase at all.
    fn read(&self, args: &[&str]) -> Output {
        let mut c = self.cmd(args);
        c.env_remove("PULUMI_CONFIG_PASSPHRASE");
        c.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "converge {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn objects(&self) -> BTreeSet<String> {
        std::fs::read_dir(self.project.join("objects"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    /// `stack export` without the passphrase; checks integrity.
    fn export(&self) -> serde_json::Value {
        let out = self.read(&["stack", "export"]);
        assert!(
            out.status.success(),
            "export: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let snapshot = checkpoint::read_deployment(&out.stdout, SecretsMode::Opaque)
            .expect("the export reads");
        integrity::verify(&snapshot).expect("the export verifies");
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The DIY checkpoint file as Pulumi reads it, and whether a journal
    /// file is left beside it.
    fn diy_checkpoint(&self) -> (serde_json::Value, bool) {
        let stacks = self.scratch.backend.join(".pulumi/stacks/crashread");
        let bytes = std::fs::read(stacks.join("dev.json")).unwrap();
        let journal_left = std::fs::read_dir(&stacks)
            .unwrap()
            .any(|e| e.unwrap().file_name().to_string_lossy().contains("journal"));
        (serde_json::from_slice(&bytes).unwrap(), journal_left)
    }
}

fn trials(default: usize) -> usize {
    std::env::var("CONVERGE_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One backend's trials; returns how many kills landed mid-operation.
fn run_trials(w: &World, count: usize, seed: u64, service: bool) -> usize {
    let mut moments = Moments(seed | 1);
    let mut interrupted = 0;
    w.ok(&["up", "--yes", "--skip-preview"]);
    for trial in 1..=count {
        let generation = trial;
        std::fs::write(w.project.join("Pulumi.yaml"), program(generation)).unwrap();
        let destroy = trial % 2 == 0;
        let args: &[&str] = if destroy {
            &["destroy", "--yes", "--skip-preview", "--parallel", "4"]
        } else {
            &["up", "--yes", "--skip-preview", "--parallel", "4"]
        };
        let before = w.objects();
        let mut op = w
            .cmd(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Kill once a random number of objects changed (a random moment of
        // the operation), a few milliseconds either way.
        let changes = if destroy { N } else { 2 * N };
        let target = 1 + moments.next_ms(changes as u64 - 1) as usize;
        let started = std::time::Instant::now();
        while op.try_wait().unwrap().is_none()
            && w.objects().symmetric_difference(&before).count() < target
            && started.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        // A reader while the operation runs sees a state that verifies
        // (checked below to be a prefix of what the operation did).
        let live = (trial % 5 == 0).then(|| tracked(&w.export()));
        std::thread::sleep(Duration::from_millis(moments.next_ms(30)));
        if op.try_wait().unwrap().is_none() {
            interrupted += 1;
        }
        op.kill().ok(); // SIGKILL
        op.wait().unwrap();

        // Right after the kill: the readers, before any other write.
        let context = format!("trial {trial} ({})", args[0]);
        let export = w.export();
        let seen = tracked(&export);
        let objects = w.objects();
        let pending_objects: BTreeSet<&String> = seen.pending.iter().map(|(_, o)| o).collect();
        for object in &objects {
            assert!(
                seen.resources.contains(object) || pending_objects.contains(object),
                "{context}: {object} exists but the export lost track of it: {seen:?}"
            );
        }
        let objects_now = w.objects();
        for object in &seen.resources {
            let being_deleted = seen
                .pending
                .iter()
                .any(|(kind, o)| o == object && kind == "deleting");
            assert!(
                objects_now.contains(object) || objects.contains(object) || being_deleted,
                "{context}: the export holds {object}, which the provider deleted: {seen:?}"
            );
        }
        if let Some(live) = &live {
            let after: BTreeSet<&String> = seen
                .resources
                .iter()
                .chain(pending_objects.iter().copied())
                .collect();
            if destroy {
                // Nothing a destroy removed comes back.
                assert!(
                    seen.resources.is_subset(&live.resources),
                    "{context}: the live export {live:?} is not a prefix of {seen:?}"
                );
            } else {
                // What the update had made is still there.
                let suffix = format!("-{generation}");
                for made in live.resources.iter().filter(|o| o.ends_with(&suffix)) {
                    assert!(
                        after.contains(made),
                        "{context}: the live export {live:?} is not a prefix of {seen:?}"
                    );
                }
            }
        }
        let outputs = w.read(&["stack", "output", "--json"]);
        assert!(outputs.status.success(), "{context}: stack output");
        let outputs: serde_json::Value = serde_json::from_slice(&outputs.stdout).unwrap();
        let stack_outputs = export["deployment"]["resources"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["type"] == "pulumi:pulumi:Stack"))
            .map(|r| r["outputs"].clone())
            .unwrap_or_else(|| serde_json::json!({}));
        assert_eq!(outputs, stack_outputs, "{context}: stack output vs export");
        let ls = w.read(&["stack", "ls", "--json"]);
        assert!(ls.status.success(), "{context}: stack ls");
        let ls: serde_json::Value = serde_json::from_slice(&ls.stdout).unwrap();
        assert_eq!(
            ls[0]["resourceCount"].as_u64(),
            Some(seen.count as u64),
            "{context}: stack ls vs export"
        );
        if matches!(w.backend, common::Backend::File) {
            // One read-only command later, the DIY checkpoint file itself
            // holds the journaled steps, and no journal is left.
            let (diy, journal_left) = w.diy_checkpoint();
            assert!(!journal_left, "{context}: the reader left the journal");
            let latest = &diy["checkpoint"]["latest"];
            assert_eq!(
                latest["resources"].as_array().map_or(0, Vec::len),
                seen.count,
                "{context}: the DIY checkpoint lacks journaled steps"
            );
        }

        // Then refresh and up converge.
        if service {
            w.ok(&["cancel", "--yes"]);
        }
        w.ok(&["refresh", "--yes", "--clear-pending-creates"]);
        w.ok(&["up", "--yes", "--skip-preview"]);
        let expected: BTreeSet<String> = (0..N).map(|i| format!("obj{i}-{generation}")).collect();
        let settled = tracked(&w.export());
        assert_eq!(
            w.objects(),
            expected,
            "{context}: the objects after converging"
        );
        assert_eq!(settled.resources, expected, "{context}: the state");
    }
    interrupted
}

fn report(backend: &str, count: usize, interrupted: usize) {
    eprintln!("{backend}: {count} trials, {interrupted} killed mid-operation");
    // Most kills must land mid-operation, or the test tests nothing.
    assert!(
        interrupted * 2 >= count,
        "{backend}: only {interrupted} of {count} kills interrupted an operation"
    );
}

fn seed() -> u64 {
    std::env::var("CONVERGE_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_c0de)
}

#[test]
fn readers_see_every_step_after_a_kill_on_the_file_backend() {
    let count = trials(100);
    let w = World::new(common::Backend::File);
    let interrupted = run_trials(&w, count, seed(), false);
    report("file", count, interrupted);
}

#[test]
fn readers_see_every_step_after_a_kill_on_s3() {
    let Some(url) = converge_backend::conformance::test_s3_url("readers") else {
        return;
    };
    let count = trials(50);
    let w = World::new(common::Backend::Url(url));
    let interrupted = run_trials(&w, count, seed() ^ 0x53, false);
    report("s3", count, interrupted);
}

#[test]
fn readers_see_every_step_after_a_kill_on_the_service() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    let count = trials(50);
    let w = World::new(common::Backend::Service(service));
    let interrupted = run_trials(&w, count, seed() ^ 0x5e, true);
    report("service", count, interrupted);
}

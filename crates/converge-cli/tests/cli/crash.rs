//! SIGKILL of `converge up` mid-deployment, on each backend (file, an
//! object store, the state service): the state verifies, every object
//! created is in the state or in its pending operations, the next run
//! reports the interrupted operations, and a documented command resolves
//! them.

use crate::common;

use std::path::PathBuf;
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

struct World {
    scratch: common::Scratch,
    project: PathBuf,
    backend: common::Backend,
}

impl World {
    fn new(resources: usize, backend: common::Backend) -> World {
        // Each resource is a real object: a file made by a slow command.
        let mut program = String::from("name: crash\nruntime: yaml\nresources:\n");
        for i in 0..resources {
            program.push_str(&format!(
                "  obj{i}:\n    type: command:local:Command\n    properties:\n      create: sleep 0.1 && touch objects/obj{i}\n      delete: rm -f objects/obj{i}\n"
            ));
        }
        let scratch = common::Scratch::new(&program);
        let project = scratch.project.clone();
        std::fs::create_dir_all(project.join("objects")).unwrap();
        let w = World {
            scratch,
            project,
            backend,
        };
        assert!(w.cmd(&["stack", "init", "dev"]).status().unwrap().success());
        w
    }

    fn cmd(&self, args: &[&str]) -> Process {
        common::converge_on(&self.scratch, &self.backend, args)
    }

    fn objects(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.project.join("objects"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn state(&self) -> serde_json::Value {
        let out = self.cmd(&["stack", "export"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// The names of the resources a state records, and of those in pending
/// operations.
fn tracked(state: &serde_json::Value) -> (Vec<String>, Vec<String>) {
    let name = |r: &serde_json::Value| {
        r["urn"]
            .as_str()
            .unwrap()
            .rsplit("::")
            .next()
            .unwrap()
            .to_owned()
    };
    let resources = state["deployment"]["resources"]
        .as_array()
        .map(|rs| rs.iter().map(name).collect())
        .unwrap_or_default();
    let pending = state["deployment"]["pending_operations"]
        .as_array()
        .map(|ps| ps.iter().map(|p| name(&p["resource"])).collect())
        .unwrap_or_default();
    (resources, pending)
}

/// On the file backend the killed process's lock file is stale (its pid is
/// gone) and removed; the next operation replays its journal.
#[test]
fn sigkill_mid_update_loses_track_of_nothing() {
    sigkill_mid_update(World::new(40, common::Backend::File), Recovery::NextRun);
}

/// The same on an object store: the lease of the killed process (of this
/// host, no longer running) is taken over, its journal objects replayed.
#[test]
fn sigkill_mid_update_on_s3_loses_track_of_nothing() {
    let Some(url) = converge_backend::conformance::test_s3_url("crash") else {
        return;
    };
    sigkill_mid_update(World::new(40, common::Backend::Url(url)), Recovery::NextRun);
}

/// On the state service the killed update's lease stays until it expires
/// or `converge cancel` breaks it; the service then compacts its journal.
#[test]
fn sigkill_mid_update_on_the_service_loses_track_of_nothing() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    sigkill_mid_update(
        World::new(40, common::Backend::Service(service)),
        Recovery::Cancel,
    );
}

/// How the interrupted update is resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Recovery {
    /// The next operation recovers it by itself.
    NextRun,
    /// `converge cancel --yes` first (the backend holds the lease).
    Cancel,
}

fn sigkill_mid_update(w: World, recovery: Recovery) {
    let mut up = w
        .cmd(&["up", "--yes", "--skip-preview", "--parallel", "4"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once some objects exist, well before all do.
    let start = Instant::now();
    while w.objects().len() < 6 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    up.kill().unwrap(); // SIGKILL
    up.wait().unwrap();
    let made = w.objects();
    assert!(made.len() < 40, "the update finished before it was killed");

    // The next operation recovers the journal; its state verifies (it is
    // refused otherwise) and reports what was in flight.
    if recovery == Recovery::Cancel {
        let out = w.cmd(&["refresh", "--yes"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "the dead update's lease was ignored");
        assert!(stderr.contains("converge cancel"), "{stderr}");
        let out = w.cmd(&["cancel", "--yes"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = w.cmd(&["refresh", "--yes"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    if recovery == Recovery::NextRun {
        assert!(
            stderr.contains("recovered an interrupted update"),
            "{stderr}"
        );
    }
    let (resources, pending) = tracked(&w.state());
    for object in &made {
        assert!(
            resources.contains(object) || pending.contains(object),
            "{object} exists but the state lost track of it: {resources:?} {pending:?}"
        );
    }
    // Interrupted creates are reported until cleared.
    if !pending.is_empty() {
        let out = w.cmd(&["up", "--yes", "--skip-preview"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("interrupted"), "{stderr}");
        assert!(stderr.contains("--clear-pending-creates"), "{stderr}");
        assert!(w
            .cmd(&["refresh", "--yes", "--clear-pending-creates"])
            .status()
            .unwrap()
            .success());
        let (_, pending) = tracked(&w.state());
        assert!(pending.is_empty(), "{pending:?}");
    }
    // The program converges; destroy removes every object.
    assert!(w
        .cmd(&["up", "--yes", "--skip-preview"])
        .status()
        .unwrap()
        .success());
    assert_eq!(w.objects().len(), 40);
    assert!(w
        .cmd(&["destroy", "--yes", "--skip-preview"])
        .status()
        .unwrap()
        .success());
    assert!(w.objects().is_empty(), "{:?}", w.objects());
}

/// A running update's service lease broken from elsewhere (`converge
/// cancel` on another machine: the service's lock endpoint): the update
/// stops at its next write and says that its lease was lost, not that a
/// provider or the disk failed; the state keeps track of every object.
#[test]
fn a_lost_lease_is_named_as_such() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    let w = World::new(40, common::Backend::Service(service));
    let up = w
        .cmd(&["up", "--yes", "--skip-preview", "--parallel", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while w.objects().len() < 2 && start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let common::Backend::Service(service) = &w.backend else {
        unreachable!()
    };
    let status = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            reqwest::Client::new()
                .delete(format!(
                    "{}/api/stacks/organization/crash/dev/locks",
                    service.url
                ))
                .header("authorization", format!("token {}", service.token))
                .send()
                .await
                .unwrap()
                .status()
        });
    assert!(status.is_success(), "{status}");
    let out = up.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the update went on without its lease"
    );
    assert!(stderr.contains("lease was lost"), "{stderr}");
    assert!(!stderr.contains("a provider failed"), "{stderr}");
    let (resources, pending) = tracked(&w.state());
    for object in w.objects() {
        assert!(
            resources.contains(&object) || pending.contains(&object),
            "{object} exists but the state lost track of it"
        );
    }
}

/// A component's registration is answered before its journal entry is
/// durable (it touches nothing outside Converge). A SIGKILL right
/// after the program got that answer loses nothing a re-run does not redo:
/// the custom resource registered before it is tracked with its ID, the
/// state verifies, and the next `up` keeps the object and registers the
/// component again.
#[test]
fn sigkill_right_after_an_unsynced_component_registration_loses_nothing() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let marker_dir = tempfile::tempdir().unwrap();
    let marker = marker_dir.path().join("registered");
    let release = marker_dir.path().join("release");
    let program = format!(
        r#"import os, time
import pulumi
import pulumi_random as random

class Group(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("crash:index:Group", name, None, opts)
        self.register_outputs({{}})

pet = random.RandomPet("pet", length=2)
group = Group("group", pulumi.ResourceOptions(depends_on=[pet]))

def hold(urn):
    # First run: tell the test the component's registration was answered,
    # then wait here (blocking the program) until converge is gone.
    if os.path.exists({release:?}):
        return urn
    with open({marker:?}, "w") as f:
        f.write(urn)
    parent = os.getppid()
    while os.getppid() == parent:
        time.sleep(0.05)
    os._exit(1)

group.urn.apply(hold)
"#
    );
    let w = common::python::PythonWorld::new(&venv, &program);
    let mut up = w.spawn_up();
    let start = Instant::now();
    while !marker.exists() && start.elapsed() < Duration::from_secs(120) {
        if let Some(status) = up.try_wait().unwrap() {
            panic!("converge up ended ({status}) before the component was registered");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(marker.exists(), "the component was never registered");
    up.kill().unwrap(); // SIGKILL, right after the answer
    up.wait().unwrap();

    // Any reader sees a verified state that tracks the pet.
    let export: serde_json::Value = serde_json::from_str(&w.run(&["stack", "export"])).unwrap();
    let pet_id = |state: &serde_json::Value| -> Option<String> {
        state["deployment"]["resources"]
            .as_array()?
            .iter()
            .find(|r| r["type"] == "random:index/randomPet:RandomPet")
            .and_then(|r| r["id"].as_str().map(str::to_owned))
    };
    let id = pet_id(&export).expect("the pet, created before the kill, is tracked");

    // The re-run redoes what was lost (the component, at most) and keeps
    // the pet; the run after it has nothing to do.
    std::fs::write(&release, b"").unwrap();
    w.run(&["up", "--yes", "--skip-preview"]);
    let export: serde_json::Value = serde_json::from_str(&w.run(&["stack", "export"])).unwrap();
    assert_eq!(
        pet_id(&export).as_deref(),
        Some(id.as_str()),
        "the pet was replaced"
    );
    let types: Vec<&str> = export["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["type"].as_str())
        .collect();
    assert!(types.contains(&"crash:index:Group"), "{types:?}");
    let again = w.run(&["up", "--yes", "--skip-preview"]);
    assert!(
        again.contains("unchanged") && !again.contains("created"),
        "{again}"
    );
}

/// An update that leaves most resources unchanged journals them as run
/// lines (`sameOlds`). Killed after them, while the one changed resource is
/// being created, the very next reader sees every resource in place and the
/// interrupted create, and the next update changes nothing else.
#[test]
fn sigkill_after_unchanged_resources_keeps_them_for_the_next_reader() {
    let w = World::new(20, common::Backend::File);
    assert!(w
        .cmd(&["up", "--yes", "--skip-preview"])
        .status()
        .unwrap()
        .success());
    // In this update's order (the order its steps finished); the next one
    // records them in the order it registers them.
    let sorted = |mut names: Vec<String>| {
        names.sort();
        names
    };
    let before = sorted(tracked(&w.state()).0);

    // The same program plus one slow resource registered after the rest.
    let program = std::fs::read_to_string(w.project.join("Pulumi.yaml")).unwrap();
    let after: Vec<String> = (0..20).map(|i| format!("\"${{obj{i}}}\"")).collect();
    let slow = format!(
        "  slow:\n    type: command:local:Command\n    properties:\n      \
         create: touch objects/slow-started && sleep 60 && touch objects/slow\n      \
         delete: rm -f objects/slow objects/slow-started\n    \
         options:\n      dependsOn: [{}]\n",
        after.join(", ")
    );
    std::fs::write(w.project.join("Pulumi.yaml"), format!("{program}{slow}")).unwrap();
    let mut up = w
        .cmd(&["up", "--yes", "--skip-preview"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = w.project.join("objects/slow-started");
    let start = Instant::now();
    while !started.exists() && start.elapsed() < Duration::from_secs(60) {
        if up.try_wait().unwrap().is_some() {
            let out = up.wait_with_output().unwrap();
            panic!("the update ended: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(started.exists(), "the slow create never started");
    // Its Begin is durable before the command runs, and covers the
    // unchanged resources' entries before it.
    let journal = w.scratch.backend.join(".pulumi/journals/crash/dev.journal");
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.contains("\"sameOlds\":["), "{text}");
    up.kill().unwrap(); // SIGKILL
    up.wait().unwrap();

    // The next command, a reader: every resource where it was, the create
    // pending.
    let (resources, pending) = tracked(&w.state());
    assert_eq!(sorted(resources), before);
    assert_eq!(pending, ["slow"]);
    // The next update recovers the journal and touches nothing else.
    std::fs::write(w.project.join("Pulumi.yaml"), &program).unwrap();
    let out = w.cmd(&["preview", "--expect-no-changes"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sorted(tracked(&w.state()).0), before);
}

//! The `converge` binary on each backend: the file backend, an object store
//! (a real S3-compatible server on 127.0.0.1, started by scripts/test) and
//! the state service (`converge serve`).

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use converge_backend::{
    HistoryStore, JournalStore, LockInfo, ObjectBackend, StackLocker, StackRef, StackStore,
};

const PROGRAM: &str = "name: objproj
runtime: yaml
resources:
  pet:
    type: random:index/randomPet:RandomPet
    properties:
      length: 2
  slow:
    type: command:local:Command
    properties:
      create: touch started && sleep ${wait}
config:
  wait:
    type: string
    default: \"0\"
outputs:
  pet: ${pet.id}
";

struct World {
    scratch: common::Scratch,
    backend: common::Backend,
}

impl World {
    fn new(backend: common::Backend) -> World {
        let w = World {
            scratch: common::Scratch::new(PROGRAM),
            backend,
        };
        w.run(&["stack", "init", "dev"]);
        w
    }

    fn s3(url: &str) -> World {
        World::new(common::Backend::Url(url.to_owned()))
    }

    fn cmd(&self, args: &[&str]) -> Command {
        common::converge_on(&self.scratch, &self.backend, args)
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.cmd(&[]), args)
    }

    /// Starts an `up` whose slow command takes 3 seconds, and returns once
    /// that command has started: the update holds the stack.
    fn slow_up(&self) -> std::process::Child {
        self.run(&["config", "set", "wait", "3"]);
        let started = self.scratch.project.join("started");
        let up = self
            .cmd(&["up", "--yes", "--skip-preview"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !started.exists() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the update never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        up
    }

    /// The object store this world's stacks are in.
    fn bucket(&self) -> ObjectBackend {
        match &self.backend {
            common::Backend::Url(url) => ObjectBackend::open(url).unwrap(),
            other => panic!("not an object store: {other:?}"),
        }
    }
}

fn dev() -> StackRef {
    StackRef::new("objproj", "dev").unwrap()
}

/// The AWS SDKs' `AWS_ENDPOINT_URL` names an S3-compatible server as well
/// as `?endpoint=` does: a plain `s3://bucket/prefix` URL then reaches it
/// (path-style, plain HTTP when the variable says `http://`).
#[test]
fn aws_endpoint_url_names_the_s3_server() {
    let Some(endpoint) = std::env::var_os("CONVERGE_TEST_S3_ENDPOINT") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "scripts/test sets CONVERGE_TEST_S3_ENDPOINT"
        );
        return;
    };
    let endpoint = endpoint.to_string_lossy().into_owned();
    let bucket =
        std::env::var("CONVERGE_TEST_S3_BUCKET").unwrap_or_else(|_| "converge-test".to_owned());
    let url = format!(
        "s3://{bucket}/env-endpoint-{}?region=us-east-1",
        uuid::Uuid::new_v4().simple()
    );
    let scratch = common::Scratch::new(PROGRAM);
    let backend = common::Backend::Url(url.clone());
    let run = |args: &[&str]| {
        let mut cmd = common::converge_on(&scratch, &backend, &[]);
        cmd.env("AWS_ENDPOINT_URL", format!("http://{endpoint}"));
        common::stdout_of(cmd, args)
    };
    run(&["stack", "init", "dev"]);
    let up = run(&["up", "--yes"]);
    assert!(up.contains("+ 3 created"), "{up}");
    // The state is in that server's bucket, where `?endpoint=` finds it.
    let explicit = format!(
        "s3://{bucket}/{}?endpoint={endpoint}&disableSSL=true&region=us-east-1",
        url.trim_start_matches(&format!("s3://{bucket}/"))
            .split('?')
            .next()
            .unwrap()
    );
    let stacks = common::stdout_of(
        common::converge_on(&scratch, &common::Backend::Url(explicit), &[]),
        &["stack", "ls"],
    );
    assert!(stacks.contains("dev"), "{stacks}");
    run(&["destroy", "--yes"]);
}

#[test]
fn login_deploy_and_destroy_on_s3() {
    let Some(url) = converge_backend::conformance::test_s3_url("e2e") else {
        return;
    };
    let w = World::s3(&url);
    // `login` remembers an s3:// URL like any other.
    let mut login = w.scratch.command("pw");
    login.env_remove("PULUMI_BACKEND_URL").args(["login", &url]);
    let out = login.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut whoami = w.scratch.command("pw");
    whoami
        .env_remove("PULUMI_BACKEND_URL")
        .args(["whoami", "-v"]);
    let who = String::from_utf8(whoami.output().unwrap().stdout).unwrap();
    assert!(who.contains(&url), "{who}");

    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 3 created"), "{up}");
    let again = w.run(&["up", "--yes"]);
    assert!(again.contains("3 unchanged"), "{again}");
    assert!(w.run(&["stack", "ls"]).contains("dev"));
    let export: serde_json::Value = serde_json::from_str(&w.run(&["stack", "export"])).unwrap();
    assert_eq!(
        export["deployment"]["resources"].as_array().unwrap().len(),
        5
    );
    // The checkpoint is in the bucket, on Pulumi's layout; no journal or
    // lease is left behind.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let b = w.bucket();
        let cp = b.load_checkpoint(&dev()).await.unwrap().unwrap();
        let cp: serde_json::Value = serde_json::from_slice(&cp).unwrap();
        assert_eq!(cp["version"], 3);
        assert!(b.load_journal(&dev()).await.unwrap().is_none());
        assert!(b.list_locks(&dev()).await.unwrap().is_empty());
        assert_eq!(
            b.list_history(&dev(), &Default::default())
                .await
                .unwrap()
                .len(),
            2
        );
    });
    let down = w.run(&["destroy", "--yes"]);
    assert!(down.contains("- 3 deleted"), "{down}");
}

/// Two `converge up` on one stack from two processes: exactly one runs;
/// the other fails at once, naming the holder.
fn a_second_up_fails_fast_naming_the_holder(w: World) {
    let first = w.slow_up();
    let second = w.cmd(&["up", "--yes", "--skip-preview"]).output().unwrap();
    assert!(!second.status.success());
    let err = String::from_utf8_lossy(&second.stderr);
    let me = LockInfo::current();
    assert!(err.contains("the stack is currently locked by"), "{err}");
    assert!(
        err.contains(&format!("{}@{}", me.username, me.hostname)),
        "{err}"
    );
    let first = first.wait_with_output().unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(w.run(&["up", "--yes"]).contains("3 unchanged"));
}

#[test]
fn a_second_up_fails_fast_on_the_file_backend() {
    a_second_up_fails_fast_naming_the_holder(World::new(common::Backend::File));
}

#[test]
fn a_second_up_fails_fast_on_s3() {
    let Some(url) = converge_backend::conformance::test_s3_url("two") else {
        return;
    };
    a_second_up_fails_fast_naming_the_holder(World::s3(&url));
}

#[test]
fn a_second_up_fails_fast_on_the_service() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    a_second_up_fails_fast_naming_the_holder(World::new(common::Backend::Service(service)));
}

/// `converge cancel` on an update that still runs on this host interrupts
/// it as Ctrl-C would: the step under way finishes and is recorded, the
/// lock is released, and nothing is left pending or untracked (its lock
/// is never broken under it).
fn cancel_interrupts_a_running_update_of_this_host(w: World) {
    let up = w.slow_up();
    let cancel = w.run(&["cancel", "--yes"]);
    assert!(
        cancel.contains(&format!("Interrupted the update of pid {}", up.id())),
        "{cancel}"
    );
    assert!(
        cancel.contains("the update stopped and released stack dev"),
        "{cancel}"
    );
    let up = up.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&up.stderr);
    assert!(err.contains("cancelling"), "{err}");
    // The interrupted update recorded its step under way: the state has
    // the command's object and no operation pending.
    let export: serde_json::Value = serde_json::from_str(&w.run(&["stack", "export"])).unwrap();
    let resources = export["deployment"]["resources"].as_array().unwrap();
    assert!(
        resources
            .iter()
            .any(|r| r["urn"].as_str().unwrap().ends_with("::slow")),
        "{export}"
    );
    assert!(
        export["deployment"]["pending_operations"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{export}"
    );
    assert!(w.run(&["cancel"]).contains("nothing to cancel"));
    // The next update completes what the cancelled one did not start.
    let next = w.run(&["up", "--yes"]);
    assert!(next.contains("unchanged"), "{next}");
    assert!(w.run(&["up", "--yes"]).contains("3 unchanged"));
}

/// A preview takes no lock, as Pulumi's does not: while an update holds
/// the stack, a preview runs on what that update has recorded so far and
/// says so; the update is not disturbed.
fn a_preview_runs_while_an_update_holds_the_stack(w: World) {
    let up = w.slow_up();
    let preview = w.cmd(&["preview"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&preview.stderr);
    assert!(preview.status.success(), "{stderr}");
    assert!(
        stderr.contains("is running, or stopped before it finished"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&preview.stdout).contains("Previewing update (dev)"),
        "{}",
        String::from_utf8_lossy(&preview.stdout)
    );
    let up = up.wait_with_output().unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let after = w.cmd(&["preview", "--expect-no-changes"]).output().unwrap();
    assert!(
        after.status.success(),
        "{}",
        String::from_utf8_lossy(&after.stderr)
    );
    assert!(!String::from_utf8_lossy(&after.stderr).contains("is running"));
}

#[test]
fn a_preview_runs_while_an_update_holds_the_stack_on_the_file_backend() {
    a_preview_runs_while_an_update_holds_the_stack(World::new(common::Backend::File));
}

#[test]
fn a_preview_runs_while_an_update_holds_the_stack_on_the_service() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    a_preview_runs_while_an_update_holds_the_stack(World::new(common::Backend::Service(service)));
}

#[test]
fn cancel_interrupts_a_running_update_on_the_file_backend() {
    cancel_interrupts_a_running_update_of_this_host(World::new(common::Backend::File));
}

#[test]
fn cancel_interrupts_a_running_update_on_the_service() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    cancel_interrupts_a_running_update_of_this_host(World::new(common::Backend::Service(service)));
}

/// A lease held by a process elsewhere blocks updates until `converge
/// cancel` breaks it.
#[test]
fn cancel_breaks_a_lease_held_elsewhere() {
    let Some(url) = converge_backend::conformance::test_s3_url("cancel") else {
        return;
    };
    let w = World::s3(&url);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let b = w.bucket();
    let elsewhere = LockInfo {
        pid: 4242,
        username: "alice".into(),
        hostname: "build-agent-7".into(),
        timestamp: "2026-11-01T10:00:00Z".into(),
    };
    let guard = rt.block_on(b.lock(&dev(), elsewhere)).unwrap();
    std::mem::forget(guard);

    let blocked = w.cmd(&["up", "--yes"]).output().unwrap();
    assert!(!blocked.status.success());
    let err = String::from_utf8_lossy(&blocked.stderr);
    assert!(err.contains("alice@build-agent-7 (pid 4242)"), "{err}");
    assert!(err.contains("converge cancel"), "{err}");

    let refused = w.cmd(&["cancel"]).output().unwrap();
    assert!(
        !refused.status.success(),
        "cancel without --yes, non-interactive"
    );
    let cancel = w.run(&["cancel", "--yes"]);
    assert!(cancel.contains("alice@build-agent-7"), "{cancel}");
    assert!(cancel.contains("broke 1 lock"), "{cancel}");
    assert!(w.run(&["cancel"]).contains("nothing to cancel"));
    assert!(w.run(&["up", "--yes"]).contains("+ 3 created"));
}

/// `pulumi.organization` (YAML) and `pulumi.get_organization()` (the
/// Python SDK) name the state service's organization; on a self-managed
/// backend, `organization`, as Pulumi's.
#[test]
fn programs_see_the_stacks_organization() {
    const YAML: &str = "name: orgproj\nruntime: yaml\noutputs:\n  org: ${pulumi.organization}\n";
    let data = tempfile::tempdir().unwrap();
    let service = common::service::Service::start_in(
        data.path(),
        &data.path().join("db"),
        "127.0.0.1:0",
        "acme",
    );
    let on_service = common::Backend::Service(service);
    let output = |scratch: &common::Scratch, backend: &common::Backend| {
        let run =
            |args: &[&str]| common::stdout_of(common::converge_on(scratch, backend, &[]), args);
        run(&["stack", "init", "dev"]);
        run(&["up", "--yes", "--skip-preview"]);
        run(&["stack", "output", "org"]).trim().to_owned()
    };
    assert_eq!(output(&common::Scratch::new(YAML), &on_service), "acme");
    assert_eq!(
        output(&common::Scratch::new(YAML), &common::Backend::File),
        "organization"
    );
    let Some(venv) = common::python::venv() else {
        return;
    };
    let python = common::Scratch::new(&format!(
        "name: orgpy\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
        venv.display()
    ));
    std::fs::write(
        python.project.join("__main__.py"),
        "import pulumi\npulumi.export('org', pulumi.get_organization())\n",
    )
    .unwrap();
    assert_eq!(output(&python, &on_service), "acme");
}

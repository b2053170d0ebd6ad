//! End-to-end: `converge serve` as a subprocess, and the CLI on it as an
//! `http://` backend: login with a token, stack init, up, a second up with
//! no changes, export, destroy.

use crate::common;

use common::service::Service;

use std::path::PathBuf;
use std::process::Stdio;

fn quickstart() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart/Pulumi.yaml")
}

struct World {
    scratch: common::Scratch,
}

impl World {
    fn new() -> World {
        let scratch = common::Scratch::new("name: demo\nruntime: yaml\n");
        std::fs::copy(quickstart(), scratch.project.join("Pulumi.yaml")).unwrap();
        World { scratch }
    }

    fn with_program(program: &str) -> World {
        World {
            scratch: common::Scratch::new(program),
        }
    }

    /// `converge` on the backend of the last login (no PULUMI_BACKEND_URL).
    fn converge(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = self.scratch.command("pw");
        cmd.env_remove("PULUMI_BACKEND_URL")
            .env_remove("PULUMI_ACCESS_TOKEN")
            .args(args);
        cmd.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.converge(args);
        assert!(
            out.status.success(),
            "converge {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.converge(args);
        assert!(!out.status.success(), "converge {args:?} should fail");
        String::from_utf8(out.stderr).unwrap()
    }
}

#[test]
fn the_cli_deploys_through_converge_serve() {
    let w = World::new();
    let data = w.scratch.dir.path().join("service");
    let service = Service::start(&w.scratch.home, &data, "127.0.0.1:0");

    // The token file is the owner's only.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(data.join("token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "token file mode {mode:o}");
    }

    let err = w.fails(&["login", &service.url, "--token", "cvg-not-a-token"]);
    assert!(err.contains("401") && err.contains("unknown"), "{err}");
    let out = w.ok(&["login", &service.url, "--token", &service.token]);
    assert!(out.contains("organization organization"), "{out}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let creds = w.scratch.home.join("credentials.json");
        let mode = std::fs::metadata(&creds).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "credentials mode {mode:o}");
    }

    w.ok(&["stack", "init", "dev"]);
    let out = w.ok(&["stack", "ls"]);
    assert!(out.contains("dev"), "{out}");

    let out = w.ok(&["up", "--yes"]);
    assert!(out.contains("+ 6 created"), "{out}");
    let out = w.ok(&["up", "--yes"]);
    assert!(
        out.contains("6 unchanged") && !out.contains("created"),
        "{out}"
    );

    let export = w.ok(&["stack", "export"]);
    let export: serde_json::Value = serde_json::from_str(&export).unwrap();
    let resources = export["deployment"]["resources"].as_array().unwrap();
    assert_eq!(
        resources.len(),
        9,
        "the stack, its 5 resources and their 3 default providers"
    );
    assert!(
        resources
            .iter()
            .any(|r| r["type"] == "random:index/randomPet:RandomPet"),
        "{resources:?}"
    );
    assert!(
        !export.to_string().contains("\"plaintext\""),
        "no secret in plaintext in the exported state"
    );

    // The service keeps the same checkpoint the CLI reads.
    let out = w.ok(&["stack", "output", "petName"]);
    assert!(!out.trim().is_empty());

    let out = w.ok(&["destroy", "--yes"]);
    assert!(out.contains("- 6 deleted"), "{out}");
    assert!(!w.scratch.project.join("out/motd-dev.txt").exists());
    w.ok(&["stack", "rm", "dev", "--yes"]);
    let out = w.ok(&["stack", "ls"]);
    assert!(!out.contains("dev"), "{out}");
}

#[test]
fn a_restarted_service_keeps_its_token_and_state() {
    let w = World::new();
    let data = w.scratch.dir.path().join("service");
    let mut service = Service::start(&w.scratch.home, &data, "127.0.0.1:0");
    w.ok(&["login", &service.url, "--token", &service.token]);
    w.ok(&["stack", "init", "dev"]);
    w.ok(&["up", "--yes"]);
    service.kill();

    // Same database, same token file: the token stays valid. The port
    // changes, so log in again.
    let service2 = Service::start(&w.scratch.home, &data, "127.0.0.1:0");
    assert_eq!(service2.token, service.token);
    w.ok(&["login", &service2.url, "--token", &service2.token]);
    let out = w.ok(&["up", "--yes"]);
    assert!(
        out.contains("6 unchanged") && !out.contains("created"),
        "{out}"
    );
    w.ok(&["destroy", "--yes"]);
}

/// SIGTERM (a rolling restart) and Ctrl-C end the service cleanly: it
/// stops accepting, finishes what is in flight and exits 0; restarted on
/// the same database, it has lost nothing.
#[test]
fn sigterm_and_ctrl_c_stop_the_service_cleanly() {
    use rustix::process::Signal;
    let w = World::new();
    let data = w.scratch.dir.path().join("service");
    let guard = std::time::Duration::from_secs(60);
    let mut service = Service::start(&w.scratch.home, &data, "127.0.0.1:0");
    w.ok(&["login", &service.url, "--token", &service.token]);
    w.ok(&["stack", "init", "dev"]);
    w.ok(&["up", "--yes"]);
    let status = service.stop_with(Signal::TERM, guard);
    assert!(status.is_some_and(|s| s.success()), "{status:?}");

    let mut service = Service::start(&w.scratch.home, &data, "127.0.0.1:0");
    w.ok(&["login", &service.url, "--token", &service.token]);
    let out = w.ok(&["up", "--yes"]);
    assert!(out.contains("6 unchanged"), "{out}");
    let status = service.stop_with(Signal::INT, guard);
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

/// SIGKILL of `converge serve` in the middle of an update, restarted on
/// the same database and port: the CLI's requests are retried (journal
/// appends by sequence ID, never twice), the update completes, and the
/// state holds exactly the objects that exist.
#[test]
fn the_service_killed_mid_update_restarts_and_the_update_completes() {
    let count = 12;
    let mut program = String::from("name: crash\nruntime: yaml\nresources:\n");
    for i in 0..count {
        program.push_str(&format!(
            "  obj{i}:\n    type: command:local:Command\n    properties:\n      create: sleep 0.2 && touch objects/obj{i}\n      delete: rm -f objects/obj{i}\n"
        ));
    }
    let w = World::with_program(&program);
    let objects = w.scratch.project.join("objects");
    std::fs::create_dir_all(&objects).unwrap();
    let made = || std::fs::read_dir(&objects).unwrap().count();
    let data = w.scratch.dir.path().join("service");
    let mut service = Service::start(&w.scratch.home, &data, "127.0.0.1:0");
    let listen = service.url.trim_start_matches("http://").to_owned();
    w.ok(&["login", &service.url, "--token", &service.token]);
    w.ok(&["stack", "init", "dev"]);

    let mut up = w.scratch.command("pw");
    up.env_remove("PULUMI_BACKEND_URL")
        .env_remove("PULUMI_ACCESS_TOKEN")
        .args(["up", "--yes", "--skip-preview", "--parallel", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut up = up.spawn().unwrap();
    while made() < 2 {
        if let Some(status) = up.try_wait().unwrap() {
            panic!("converge up ended before the service was killed: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    service.kill(); // SIGKILL
    let at_kill = made();
    assert!(
        at_kill < count,
        "the update finished before the service was killed"
    );
    let _restarted = Service::start(&w.scratch.home, &data, &listen);

    let out = up.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the update completes: {stdout}{stderr}"
    );
    // The objects and the stack (the default provider is not counted).
    assert!(
        stdout.contains(&format!("+ {} created", count + 1)),
        "{stdout}"
    );
    assert_eq!(made(), count);

    let export: serde_json::Value = serde_json::from_str(&w.ok(&["stack", "export"])).unwrap();
    let resources = export["deployment"]["resources"].as_array().unwrap();
    let objs = resources
        .iter()
        .filter(|r| r["type"] == "command:local:Command")
        .count();
    assert_eq!(objs, count, "every object is in the state, once");
    assert!(
        export["deployment"]["pending_operations"]
            .as_array()
            .is_none_or(|p| p.is_empty()),
        "nothing left pending: {export}"
    );
    let out = w.ok(&["up", "--yes"]);
    assert!(
        !out.contains("created") && !out.contains("deleted"),
        "{out}"
    );
    w.ok(&["destroy", "--yes"]);
    assert_eq!(made(), 0);
}

/// Without a login: `PULUMI_BACKEND_URL` and `PULUMI_ACCESS_TOKEN`; and
/// `converge cancel` of an update whose process is gone.
#[test]
fn the_environment_names_the_service_and_cancel_breaks_a_held_update() {
    let w = World::new();
    let data = w.scratch.dir.path().join("service");
    let service = Service::start(&w.scratch.home, &data, "127.0.0.1:0");
    let run = |args: &[&str]| {
        let mut cmd = w.scratch.command("pw");
        cmd.env("PULUMI_BACKEND_URL", &service.url)
            .env("PULUMI_ACCESS_TOKEN", &service.token)
            .args(args);
        cmd.output().unwrap()
    };
    assert!(run(&["stack", "init", "dev"]).status.success());
    let out = run(&["cancel", "--yes"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to cancel"));

    // An update whose process died: it took the lease, then its runtime
    // (and heartbeat) ended without a release.
    {
        use converge_backend::http::{HttpBackend, HttpBackendOptions, RetryPolicy};
        use converge_backend::{LockInfo, StackLocker, StackRef};
        let backend = HttpBackend::new(HttpBackendOptions {
            url: service.url.clone(),
            token: service.token.clone(),
            organization: "organization".to_owned(),
            retry: RetryPolicy::default(),
        })
        .unwrap();
        let ghost = LockInfo {
            pid: 4242,
            username: "ghost".to_owned(),
            hostname: "gone".to_owned(),
            timestamp: "2024-05-01T10:00:00Z".to_owned(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let stack = StackRef::new("quickstart", "dev").unwrap();
            std::mem::forget(backend.lock(&stack, ghost).await.unwrap());
        });
    }
    let out = run(&["up", "--yes"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("locked by ghost@gone (pid 4242)"), "{err}");
    let out = run(&["cancel", "--yes"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("broke 1 lock"),
        "{stdout}"
    );
    let out = run(&["up", "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(run(&["destroy", "--yes"]).status.success());
}

/// A token of another organization than the default: stack names typed
/// without an organization live in the token's.
#[test]
fn unqualified_stack_names_live_in_the_tokens_organization() {
    let w = World::new();
    let data = w.scratch.dir.path().join("service");
    let service = Service::start_in(&w.scratch.home, &data, "127.0.0.1:0", "acme");
    let out = w.ok(&["login", &service.url, "--token", &service.token]);
    assert!(out.contains("organization acme"), "{out}");
    // `whoami` names the token's user and organization, as login did,
    // not the local OS user.
    let login_user = out
        .split_whitespace()
        .skip_while(|w| *w != "as")
        .nth(1)
        .map(|u| u.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '_'))
        .unwrap_or_default()
        .to_owned();
    let who = w.ok(&["whoami", "-v"]);
    assert!(who.contains("Organizations: acme"), "{who}");
    assert!(
        !login_user.is_empty() && who.contains(&format!("User: {login_user}")),
        "login said {out:?}; whoami said {who:?}"
    );
    w.ok(&["stack", "init", "dev"]);
    let out = w.ok(&["up", "--yes"]);
    assert!(out.contains("+ 6 created"), "{out}");
    let out = w.ok(&["stack", "output", "petName", "-s", "acme/quickstart/dev"]);
    assert!(!out.trim().is_empty());
    let err = w.fails(&["stack", "output", "petName", "-s", "other/quickstart/dev"]);
    assert!(err.contains("403") && err.contains("acme"), "{err}");
    w.ok(&["destroy", "--yes"]);
}

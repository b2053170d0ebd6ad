//! End-to-end tests of `converge preview | up | refresh | destroy` that need
//! no provider: confirmation rules, unsupported programs, empty stacks,
//! interrupted operations left in the state.

use crate::common;

use std::path::PathBuf;

use assert_cmd::Command;

struct World {
    scratch: common::Scratch,
    backend: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> World {
        let scratch = common::Scratch::new("name: demo\nruntime: yaml\n");
        let (backend, project) = (scratch.backend.clone(), scratch.project.clone());
        let w = World {
            scratch,
            backend,
            project,
        };
        w.ok(&["stack", "init", "dev"]);
        w
    }

    fn converge(&self) -> Command {
        Command::from_std(self.scratch.command("pw"))
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.converge().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "converge {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.converge().args(args).output().unwrap();
        assert!(!out.status.success(), "converge {args:?} should fail");
        String::from_utf8(out.stderr).unwrap()
    }

    fn state(&self) -> Vec<u8> {
        std::fs::read(self.backend.join(".pulumi/stacks/demo/dev.json")).unwrap()
    }
}

#[test]
fn operations_need_yes_when_not_interactive() {
    let w = World::new();
    let before = w.state();
    let err = w.fails(&["destroy"]);
    assert!(err.contains("--yes"), "{err}");
    let err = w.fails(&["refresh"]);
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(before, w.state());
}

#[test]
fn an_unsupported_program_is_a_clear_error_that_changes_nothing() {
    let w = World::new();
    std::fs::write(
        w.project.join("Pulumi.yaml"),
        "name: demo\nruntime: cobol\n",
    )
    .unwrap();
    let before = w.state();
    let err = w.fails(&["up", "--yes"]);
    assert!(err.contains("unknown runtime `cobol`"), "{err}");
    let err = w.fails(&["preview"]);
    assert!(err.contains("unknown runtime"), "{err}");
    assert_eq!(before, w.state());
    assert!(!w
        .backend
        .join(".pulumi/locks/organization/demo/dev")
        .read_dir()
        .map(|mut d| d.next().is_some())
        .unwrap_or(false));
}

#[test]
fn refresh_and_destroy_of_an_empty_stack() {
    let w = World::new();
    let out = w.ok(&["refresh", "--yes"]);
    assert!(out.contains("no changes"), "{out}");
    let out = w.ok(&["destroy", "--yes", "--skip-preview"]);
    assert!(out.contains("no changes"), "{out}");
    // The preview's digest, then the destroy's events, one a line.
    let json = w.ok(&["destroy", "--yes", "--json"]);
    let values: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&json)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(values[0]["changeSummary"], serde_json::json!({}), "{json}");
    let summary = values.iter().find_map(|v| v.get("summaryEvent")).unwrap();
    assert_eq!(summary["resourceChanges"], serde_json::json!({}), "{json}");
    // The update history records each run.
    let history = w.backend.join(".pulumi/history/demo/dev");
    assert!(history.read_dir().unwrap().count() >= 3);
}

#[test]
fn interrupted_operations_are_reported_and_cleared() {
    let w = World::new();
    let stack_urn = "urn:pulumi:dev::demo::pulumi:pulumi:Stack::demo-dev";
    let deployment = serde_json::json!({
        "version": 3,
        "deployment": {
            "manifest": {"time": "2026-11-01T00:00:00Z", "magic": "", "version": "v3"},
            "resources": [{"urn": stack_urn, "custom": false, "type": "pulumi:pulumi:Stack"}],
            "pending_operations": [{
                "resource": {"urn": "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet",
                             "custom": true, "type": "random:index/randomPet:RandomPet", "parent": stack_urn},
                "type": "creating"
            }]
        }
    });
    std::fs::write(w.project.join("state.json"), deployment.to_string()).unwrap();
    w.ok(&["stack", "import", "--file", "state.json"]);
    let out = w.converge().args(["refresh", "--yes"]).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("creating urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet"),
        "{err}"
    );
    assert!(err.contains("--clear-pending-creates"), "{err}");
    assert!(String::from_utf8(w.state())
        .unwrap()
        .contains("pending_operations"));
    w.ok(&["refresh", "--yes", "--clear-pending-creates"]);
    assert!(!String::from_utf8(w.state())
        .unwrap()
        .contains("pending_operations"));
}

fn quickstart() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/quickstart/Pulumi.yaml")
}

#[test]
fn the_quickstart_deploys_offline_and_a_second_run_changes_nothing() {
    let w = World::new();
    std::fs::copy(quickstart(), w.project.join("Pulumi.yaml")).unwrap();
    w.ok(&["stack", "init", "dev"]);
    let out = w.ok(&["up", "--yes", "-s", "dev"]);
    assert!(out.contains("+ 6 created"), "{out}");
    assert!(out.contains("password: [secret]"), "{out}");
    let motd = std::fs::read_to_string(w.project.join("out/motd-dev.txt")).unwrap();
    assert!(motd.starts_with("hello, "), "{motd}");
    let out = w.ok(&["up", "--yes", "-s", "dev", "--refresh"]);
    assert!(out.contains("refreshing..."), "{out}");
    assert_eq!(out.matches("Updating (dev)").count(), 1, "{out}");
    assert!(
        out.contains("6 unchanged") && !out.contains("created"),
        "{out}"
    );
    // Config changes flow through: the file is updated in place.
    w.ok(&["config", "set", "greeting", "bonjour"]);
    let out = w.ok(&["up", "--yes", "--diff"]);
    assert!(out.contains("~ 1 updated"), "{out}");
    assert!(std::fs::read_to_string(w.project.join("out/motd-dev.txt"))
        .unwrap()
        .starts_with("bonjour, "));
    // No secret in plaintext in the state.
    let password = w.ok(&["stack", "output", "password", "--show-secrets"]);
    assert_eq!(password.trim().len(), 20);
    assert!(!String::from_utf8_lossy(&w.state()).contains(password.trim()));
    let out = w.ok(&["destroy", "--yes"]);
    assert!(out.contains("- 6 deleted"), "{out}");
    assert!(!w.project.join("out/motd-dev.txt").exists());
}

#[test]
fn a_bad_yaml_program_points_at_the_line_and_changes_nothing() {
    let w = World::new();
    std::fs::write(
        w.project.join("Pulumi.yaml"),
        "name: demo\nruntime: yaml\nresources:\n  pet:\n    type: random:index/randomPet:RandomPet\n    properties:\n      prefix: ${missing.id}\n",
    )
    .unwrap();
    let before = w.state();
    let err = w.fails(&["preview"]);
    assert!(err.contains("Pulumi.yaml:7:"), "{err}");
    assert!(err.contains("missing"), "{err}");
    assert_eq!(before, w.state());
}

/// `converge up` at a terminal (a pseudo-terminal from util-linux's
/// `script`, the answers typed ahead): `details` shows each planned step
/// with its properties, leaves default providers out as the step lines do,
/// and asks again; `no` then changes nothing.
#[test]
fn the_prompt_shows_details_and_asks_again() {
    let w = World::new();
    std::fs::write(
        w.project.join("Pulumi.yaml"),
        "name: demo\nruntime: yaml\nresources:\n  pet:\n    type: random:RandomPet\n    properties:\n      length: 3\n",
    )
    .unwrap();
    let before = w.state();
    let at_terminal = |answers: &str| {
        let converge = assert_cmd::cargo::cargo_bin("converge");
        let mut script = std::process::Command::new("script");
        script
            .args(["-qec", &format!("{} up", converge.display()), "/dev/null"])
            .current_dir(&w.project)
            .env("CONVERGE_HOME", &w.scratch.home)
            .env(
                "PULUMI_BACKEND_URL",
                format!("file://{}", w.backend.display()),
            )
            .env("PULUMI_CONFIG_PASSPHRASE", "pw")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = script.spawn().expect("util-linux `script` runs");
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(answers.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status,
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (status, out) = at_terminal("details\nno\n");
    assert!(!status.success(), "{out}");
    let question = "Do you want to perform this update? [yes/no/details]";
    assert_eq!(out.matches(question).count(), 2, "{out}");
    let details = &out[out.find(question).unwrap() + question.len()..];
    assert!(
        details.contains("random:index/randomPet:RandomPet pet create"),
        "{out}"
    );
    assert!(details.contains("+ length   : 3"), "{out}");
    assert!(!out.contains("pulumi:providers:random default"), "{out}");
    assert!(out.contains("confirmation declined"), "{out}");
    assert_eq!(before, w.state());

    let (status, out) = at_terminal("yes\n");
    assert!(status.success(), "{out}");
    assert!(
        out.contains("random:index/randomPet:RandomPet pet created"),
        "{out}"
    );
}

/// What a command printed with a secret input (here the secret config
/// value in its command line) is secret, as pulumi-command makes every
/// output depend on every input: never in plaintext on the display, in
/// the stack's outputs or in any file of the backend.
#[test]
fn a_commands_output_of_a_secret_stays_secret() {
    let w = World::new();
    std::fs::write(
        w.project.join("Pulumi.yaml"),
        "name: demo\nruntime: yaml\nconfig:\n  dbpass:\n    type: string\n    secret: true\n\
         resources:\n  c:\n    type: command:local:Command\n    properties:\n      create: echo pass=${dbpass}\n\
         outputs:\n  out: ${c.stdout}\n",
    )
    .unwrap();
    let secret = "PlainButSecret123";
    w.ok(&["config", "set", "--secret", "dbpass", secret]);
    let up = w.ok(&["up", "--yes"]);
    assert!(!up.contains(secret), "{up}");
    let outputs = w.ok(&["stack", "output", "--json"]);
    assert!(!outputs.contains(secret), "{outputs}");
    assert!(outputs.contains("[secret]"), "{outputs}");
    let shown = w.ok(&["stack", "output", "out", "--show-secrets"]);
    assert_eq!(shown.trim(), format!("pass={secret}"));
    for entry in common::files_under(&w.backend) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap()).into_owned();
        assert!(
            !text.contains(secret),
            "{} holds the secret",
            entry.display()
        );
    }
    let diff = w.ok(&["preview", "--diff"]);
    assert!(!diff.contains(secret), "{diff}");
}

/// Ctrl-C while the update's last step is under way: the step finishes
/// and is recorded, and the update still ends as cancelled, as Pulumi's
/// does: exit status 130 and a history entry that does not say succeeded.
#[test]
fn ctrl_c_during_the_last_step_ends_the_update_as_cancelled() {
    let w = World::new();
    std::fs::write(
        w.project.join("Pulumi.yaml"),
        "name: demo\nruntime: yaml\nresources:\n  c:\n    type: command:local:Command\n    properties:\n      create: touch started && sleep 3\n",
    )
    .unwrap();
    let mut child = w
        .scratch
        .command("pw")
        .args(["up", "--yes", "--skip-preview"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The command runs once its marker exists.
    let marker = w.project.join("started");
    while !marker.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the update ended ({status}) before its command ran");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cancelled"), "{stderr}");
    // What the step did is recorded; the history says the update did not
    // succeed.
    let state = w.ok(&["stack", "export"]);
    assert!(state.contains("command:local:Command::c"), "{state}");
    let history = w.ok(&["stack", "history", "--json"]);
    let history: serde_json::Value = serde_json::from_str(&history).unwrap();
    assert_eq!(history[0]["result"], "failed", "{history}");
}

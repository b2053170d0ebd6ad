//! End-to-end tests of the `converge` binary: stacks, config, import/export
//! and outputs on a real file backend in a temporary directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use sha2::{Digest, Sha256};

const PASSPHRASE: &str = "correct horse battery staple";

/// A scratch world: a Converge home, a file backend and a project.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    backend: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let backend = dir.path().join("backend");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&backend).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("Pulumi.yaml"), "name: demo\nruntime: yaml\n").unwrap();
        World {
            _dir: dir,
            home,
            backend,
            project,
        }
    }

    fn converge(&self) -> Command {
        let mut cmd = Command::cargo_bin("converge").unwrap();
        cmd.current_dir(&self.project)
            .env("CONVERGE_HOME", &self.home)
            .env(
                "PULUMI_BACKEND_URL",
                format!("file://{}", self.backend.display()),
            )
            .env("PULUMI_CONFIG_PASSPHRASE", PASSPHRASE)
            .env_remove("PULUMI_CONFIG_PASSPHRASE_FILE")
            .arg("--non-interactive");
        cmd
    }

    /// Runs converge and returns stdout, failing the test on a non-zero exit.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.converge().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "converge {args:?} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Runs converge expecting failure; returns stderr.
    fn fails(&self, cmd: &mut Command) -> String {
        let out = cmd.output().unwrap();
        assert!(!out.status.success(), "expected failure, got success");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("error: "), "not an error line: {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "error is not one line: {err}"
        );
        err
    }

    fn stack_file(&self) -> PathBuf {
        self.backend.join(".pulumi/stacks/demo/dev.json")
    }

    /// A stack made without a passphrase at hand (so with no salt yet),
    /// holding the demo state.
    fn init_with_demo_state(&self) {
        self.converge()
            .env_remove("PULUMI_CONFIG_PASSPHRASE")
            .args(["stack", "init", "dev"])
            .assert()
            .success();
        self.ok(&["stack", "import", "--file", demo_state().to_str().unwrap()]);
    }
}

fn demo_state() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo/state.json")
}

/// Every file under `dir` with its SHA-256: a fingerprint of the state.
fn tree_hash(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.insert(
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    hex::encode(Sha256::digest(&bytes)),
                );
            }
        }
    }
    out
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap()
}

#[test]
fn stack_lifecycle_init_ls_select_rm() {
    let w = World::new();
    w.ok(&["stack", "init", "dev"]);
    w.ok(&["stack", "init", "prod"]);
    let ls = w.ok(&["stack", "ls"]);
    assert!(ls.contains("prod*"), "{ls}");
    assert!(ls.contains("dev "), "{ls}");
    w.ok(&["stack", "select", "dev"]);
    assert!(w.ok(&["stack", "ls"]).contains("dev*"));
    assert!(w.stack_file().is_file());
    assert!(w.backend.join(".pulumi/meta.yaml").is_file());

    let err = w.fails(w.converge().args(["stack", "init", "dev"]));
    assert!(err.contains("already exists"), "{err}");
    let err = w.fails(w.converge().args(["stack", "select", "nope"]));
    assert!(err.contains("no stack named nope"), "{err}");

    // unselect forgets the selection: the next command needs --stack.
    assert!(w
        .ok(&["stack", "unselect"])
        .contains("'dev' is no longer selected"));
    assert!(!w.ok(&["stack", "ls"]).contains('*'));
    let err = w.fails(w.converge().args(["stack", "output"]));
    assert!(err.contains("no stack selected"), "{err}");
    w.ok(&["stack", "output", "--stack", "dev"]);
    w.ok(&["stack", "select", "dev"]);

    // rm needs confirmation when not interactive.
    let err = w.fails(w.converge().args(["stack", "rm", "prod"]));
    assert!(err.contains("--yes"), "{err}");
    w.ok(&["stack", "rm", "prod", "--yes"]);
    assert!(!w.ok(&["stack", "ls"]).contains("prod"));
}

/// `stack graph FILE` writes the stack's resources and their edges in
/// DOT, as Pulumi's does: a dependency edge from db-password to pet, a
/// parent edge from each to the stack.
#[test]
fn graph_writes_the_stacks_dependencies_and_parents_in_dot() {
    let w = World::new();
    w.init_with_demo_state();
    let file = w.project.join("stack.dot");
    let out = w.ok(&["stack", "graph", file.to_str().unwrap()]);
    assert!(out.contains("wrote stack dependency graph to"), "{out}");
    let dot = std::fs::read_to_string(&file).unwrap();
    let node = |name: &str| {
        let line = dot
            .lines()
            .find(|l| l.contains(&format!("::{name}\"]")))
            .unwrap_or_else(|| panic!("no node {name} in {dot}"));
        line.trim().split(' ').next().unwrap().to_owned()
    };
    let (stack, pet, password) = (node("demo-dev"), node("pet"), node("db-password"));
    assert!(
        dot.contains(&format!("{password} -> {pet} [color = \"#246C60\"]")),
        "{dot}"
    );
    for child in [&pet, &password] {
        assert!(
            dot.contains(&format!("{child} -> {stack} [color = \"#AA6639\"]")),
            "{dot}"
        );
    }
    w.ok(&[
        "stack",
        "graph",
        file.to_str().unwrap(),
        "--ignore-parent-edges",
        "--short-node-name",
    ]);
    let dot = std::fs::read_to_string(&file).unwrap();
    assert!(dot.contains("[label=\"db-password\"]"), "{dot}");
    assert_eq!(dot.matches(" -> ").count(), 1, "{dot}");
    let err = w.fails(
        w.converge()
            .args(["stack", "graph", "/nonexistent/dir/g.dot"]),
    );
    assert!(err.contains("cannot write /nonexistent/dir/g.dot"), "{err}");
}

#[test]
fn rm_refuses_a_stack_with_resources_unless_forced() {
    let w = World::new();
    w.init_with_demo_state();
    std::fs::write(w.project.join("Pulumi.dev.yaml"), "config:\n  demo:a: b\n").unwrap();
    let err = w.fails(w.converge().args(["stack", "rm", "dev", "--yes"]));
    // The program's resources are counted: not the stack resource, not
    // the default provider.
    assert!(err.contains("still has 2 resource(s)"), "{err}");
    assert!(w.stack_file().is_file());
    w.ok(&["stack", "rm", "dev", "--yes", "--force"]);
    assert!(!w.stack_file().exists());
    assert!(!w.project.join("Pulumi.dev.yaml").exists());
}

#[test]
fn config_plain_secret_and_path_values() {
    let w = World::new();
    w.ok(&["stack", "init", "dev"]);
    w.ok(&["config", "set", "greeting", "hello"]);
    w.ok(&["config", "set", "aws:region", "eu-west-1"]);
    w.ok(&["config", "set", "--secret", "apiKey", "s3cr3t-value"]);
    w.ok(&["config", "set", "--path", "tags.owner", "platform"]);
    w.ok(&["config", "set", "--path", "tags.list[0]", "x"]);

    let file = std::fs::read_to_string(w.project.join("Pulumi.dev.yaml")).unwrap();
    assert!(file.starts_with("encryptionsalt: v1:"), "{file}");
    assert!(file.contains("demo:greeting: hello"), "{file}");
    assert!(file.contains("aws:region: eu-west-1"), "{file}");
    assert!(file.contains("secure: v1:"), "{file}");
    assert!(!file.contains("s3cr3t-value"), "plaintext secret in {file}");

    assert_eq!(w.ok(&["config", "get", "greeting"]), "hello\n");
    assert_eq!(w.ok(&["config", "get", "apiKey"]), "s3cr3t-value\n");
    assert_eq!(
        w.ok(&["config", "get", "--path", "tags.owner"]),
        "platform\n"
    );
    let listed = w.ok(&["config"]);
    assert!(
        listed.contains("apiKey") && listed.contains("[secret]"),
        "{listed}"
    );
    assert!(!listed.contains("s3cr3t-value"), "{listed}");
    assert!(w.ok(&["config", "--show-secrets"]).contains("s3cr3t-value"));
    let got = json(&w.ok(&["config", "get", "apiKey", "--json"]));
    assert_eq!(got["secret"], true);

    w.ok(&["config", "rm", "greeting"]);
    let err = w.fails(w.converge().args(["config", "get", "greeting"]));
    assert!(err.contains("not found"), "{err}");

    // A wrong passphrase is a clear error and changes nothing.
    let before = std::fs::read(w.project.join("Pulumi.dev.yaml")).unwrap();
    let err = w.fails(
        w.converge()
            .env("PULUMI_CONFIG_PASSPHRASE", "wrong")
            .args(["config", "get", "apiKey"]),
    );
    assert!(err.contains("passphrase"), "{err}");
    assert!(!err.contains("s3cr3t"), "{err}");
    let err = w.fails(
        w.converge()
            .env("PULUMI_CONFIG_PASSPHRASE", "wrong")
            .args(["config", "set", "--secret", "other", "x"]),
    );
    assert!(err.contains("passphrase"), "{err}");
    assert_eq!(
        before,
        std::fs::read(w.project.join("Pulumi.dev.yaml")).unwrap()
    );
}

/// A stack whose settings file has no salt (a fresh checkout) but whose
/// state records one: a new secret is encrypted with the state's key, so
/// the state's secrets and the config's still open with one passphrase.
#[test]
fn a_secret_set_without_a_salt_uses_the_states_key() {
    let w = World::new();
    w.init_with_demo_state();
    // A fresh checkout: the settings file is not committed.
    let settings = w.project.join("Pulumi.dev.yaml");
    std::fs::remove_file(&settings).unwrap();
    w.ok(&["config", "set", "--secret", "token", "t0k3n"]);
    let text = std::fs::read_to_string(&settings).unwrap();
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.stack_file()).unwrap()).unwrap();
    let state_salt = state["checkpoint"]["latest"]["secrets_providers"]["state"]["salt"]
        .as_str()
        .unwrap();
    assert!(
        text.contains(&format!("encryptionsalt: {state_salt}")),
        "{text}"
    );
    assert_eq!(w.ok(&["config", "get", "token"]), "t0k3n\n");
    let out = w.ok(&["stack", "output", "--show-secrets"]);
    assert!(out.contains("s3cr3t"), "{out}");
}

#[test]
fn passphrase_from_file_and_missing_passphrase() {
    let w = World::new();
    w.ok(&["stack", "init", "dev"]);
    let pw = w.project.join("pw.txt");
    std::fs::write(&pw, format!("{PASSPHRASE}\n")).unwrap();
    w.converge()
        .env_remove("PULUMI_CONFIG_PASSPHRASE")
        .env("PULUMI_CONFIG_PASSPHRASE_FILE", &pw)
        .args(["config", "set", "--secret", "k", "v"])
        .assert()
        .success();
    assert_eq!(w.ok(&["config", "get", "k"]), "v\n");
    let err = w.fails(
        w.converge()
            .env_remove("PULUMI_CONFIG_PASSPHRASE")
            .args(["config", "get", "k"]),
    );
    assert!(err.contains("PULUMI_CONFIG_PASSPHRASE"), "{err}");
}

#[test]
fn import_output_and_export_round_trip() {
    let w = World::new();
    w.init_with_demo_state();

    let out = w.ok(&["stack", "output"]);
    assert!(
        out.contains("petName") && out.contains("honest-wombat"),
        "{out}"
    );
    assert!(
        out.contains("dbPassword") && out.contains("[secret]"),
        "{out}"
    );
    assert!(!out.contains("s3cr3t"), "{out}");
    let j = json(&w.ok(&["stack", "output", "--json"]));
    assert_eq!(j["replicas"], 3);
    assert_eq!(j["dbPassword"], "[secret]");
    assert_eq!(
        w.ok(&["stack", "output", "dbPassword", "--show-secrets"]),
        "s3cr3t-Pa55\n"
    );
    let err = w.fails(w.converge().env("PULUMI_CONFIG_PASSPHRASE", "wrong").args([
        "stack",
        "output",
        "--show-secrets",
    ]));
    assert!(err.contains("passphrase"), "{err}");
    // `--shell`: lines a POSIX shell evaluates into variables.
    let script = w.ok(&["stack", "output", "--shell", "--show-secrets"]);
    let shell = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{script}\nprintf '%s|%s|%s' \"$petName\" \"$replicas\" \"$dbPassword\""
        ))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&shell.stdout),
        "honest-wombat|3|s3cr3t-Pa55",
        "{script}"
    );
    assert_eq!(
        w.ok(&["stack", "output", "dbPassword", "--shell"]),
        "dbPassword='[secret]'\n"
    );

    // `converge stack`: the current stack, its resources and outputs, as
    // `pulumi stack` shows them; `--show-name` prints the name alone.
    assert_eq!(w.ok(&["stack", "--show-name"]), "dev\n");
    let summary = w.ok(&["stack", "--show-urns"]);
    assert!(summary.starts_with("Current stack is dev:\n"), "{summary}");
    assert!(summary.contains("Last updated: "), "{summary}");
    assert!(summary.contains("Current stack resources ("), "{summary}");
    assert!(summary.contains("    TYPE"), "{summary}");
    assert!(
        summary.contains("        URN: urn:pulumi:dev::"),
        "{summary}"
    );
    assert!(
        summary.contains("petName") && summary.contains("[secret]") && !summary.contains("s3cr3t"),
        "{summary}"
    );

    // The stack adopted the imported state's salt.
    let settings = std::fs::read_to_string(w.project.join("Pulumi.dev.yaml")).unwrap();
    assert!(
        settings.contains("encryptionsalt: v1:ABEiM0RVZnc="),
        "{settings}"
    );

    // Export equals the import semantically, and is byte-stable.
    let exported = w.ok(&["stack", "export"]);
    let original = json(&std::fs::read_to_string(demo_state()).unwrap());
    let mine = json(&exported);
    assert_eq!(
        original["deployment"]["resources"],
        mine["deployment"]["resources"]
    );
    assert_eq!(
        original["deployment"]["secrets_providers"],
        mine["deployment"]["secrets_providers"]
    );
    assert_eq!(exported, w.ok(&["stack", "export"]));
    let file = w.project.join("exported.json");
    w.ok(&["stack", "export", "--file", "exported.json"]);
    w.ok(&["stack", "import", "--file", "exported.json"]);
    assert_eq!(exported, w.ok(&["stack", "export"]));
    assert_eq!(exported, std::fs::read_to_string(file).unwrap());
}

#[test]
fn import_into_a_stack_with_its_own_salt_re_encrypts_secrets() {
    let w = World::new();
    w.ok(&["stack", "init", "dev"]);
    let settings = std::fs::read_to_string(w.project.join("Pulumi.dev.yaml")).unwrap();
    let salt = settings
        .lines()
        .find_map(|l| l.strip_prefix("encryptionsalt: "))
        .unwrap()
        .to_owned();
    w.ok(&["stack", "import", "--file", demo_state().to_str().unwrap()]);
    let exported = json(&w.ok(&["stack", "export"]));
    assert_eq!(
        exported["deployment"]["secrets_providers"]["state"]["salt"],
        salt.as_str()
    );
    let original = std::fs::read_to_string(demo_state()).unwrap();
    let stack_output = &exported["deployment"]["resources"][0]["outputs"]["dbPassword"];
    let ciphertext = stack_output["ciphertext"].as_str().unwrap();
    assert!(!original.contains(ciphertext), "not re-encrypted");
    assert_eq!(
        w.ok(&["stack", "output", "dbPassword", "--show-secrets"]),
        "s3cr3t-Pa55\n"
    );
}

#[test]
fn import_from_stdin() {
    let w = World::new();
    w.ok(&["stack", "init", "dev"]);
    w.converge()
        .args(["stack", "import"])
        .write_stdin(std::fs::read(demo_state()).unwrap())
        .assert()
        .success();
    assert!(w.ok(&["stack", "output"]).contains("honest-wombat"));
}

fn broken_state(mutate: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v = json(&std::fs::read_to_string(demo_state()).unwrap());
    mutate(&mut v);
    v.to_string()
}

#[test]
fn bad_input_is_one_clear_error_and_changes_nothing() {
    let w = World::new();
    w.init_with_demo_state();
    let dir = w.project.clone();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "malformed.json",
            "{\"version\": 3, \"deployment\": {".into(),
            "not valid JSON",
        ),
        (
            "version.json",
            broken_state(|v| v["version"] = 99.into()),
            "version",
        ),
        (
            "feature.json",
            broken_state(|v| {
                v["version"] = 4.into();
                v["features"] = serde_json::json!(["timeTravel"]);
            }),
            "timeTravel",
        ),
        (
            "urn.json",
            broken_state(|v| {
                v["deployment"]["resources"][2]["urn"] = "urn:pulumi:dev::demo".into()
            }),
            "invalid URN",
        ),
        (
            "order.json",
            broken_state(|v| {
                let r = v["deployment"]["resources"].as_array_mut().unwrap();
                r.swap(2, 3);
            }),
            "integrity",
        ),
        (
            "provider.json",
            broken_state(|v| {
                v["deployment"]["resources"]
                    .as_array_mut()
                    .unwrap()
                    .remove(1);
            }),
            "provider",
        ),
        (
            "duplicate.json",
            broken_state(|v| {
                let r = v["deployment"]["resources"].as_array_mut().unwrap();
                let dup = r[3].clone();
                r.push(dup);
            }),
            "integrity",
        ),
        (
            "component-id.json",
            broken_state(|v| v["deployment"]["resources"][0]["id"] = "x".into()),
            "",
        ),
    ];
    let before = tree_hash(&w.backend);
    for (name, content, expect) in &cases {
        std::fs::write(dir.join(name), content).unwrap();
        let err = w.fails(w.converge().args(["stack", "import", "--file", name]));
        assert!(err.contains(expect), "{name}: {err}");
        assert_eq!(before, tree_hash(&w.backend), "{name} changed the state");
    }
    let err = w.fails(
        w.converge()
            .args(["stack", "import", "--file", "missing.json"]),
    );
    assert!(err.contains("missing.json"), "{err}");
    let err = w.fails(w.converge().args(["stack", "output", "-s", "nope"]));
    assert!(err.contains("no stack named nope"), "{err}");
    let err = w.fails(w.converge().args(["stack", "output", "-s", "../etc"]));
    assert!(err.contains("invalid"), "{err}");
    assert_eq!(before, tree_hash(&w.backend));

    // --force imports a snapshot that fails integrity (but parses).
    w.converge()
        .args(["stack", "import", "--force", "--file", "order.json"])
        .assert()
        .success();
}

#[test]
fn corrupt_stack_file_is_reported_not_overwritten() {
    let w = World::new();
    w.init_with_demo_state();
    std::fs::write(w.stack_file(), b"{ not json").unwrap();
    let before = tree_hash(&w.backend);
    let err = w.fails(w.converge().args(["stack", "output"]));
    assert!(err.contains("not valid JSON"), "{err}");
    let err = w.fails(w.converge().args(["stack", "export"]));
    assert!(err.contains("not valid JSON"), "{err}");
    // The error names the way back, and it works: an earlier version,
    // imported with --force in place of the damaged state.
    assert!(err.contains("stack import --force"), "{err}");
    assert_eq!(before, tree_hash(&w.backend));
    let earlier = std::fs::read_to_string(demo_state()).unwrap();
    std::fs::write(w.project.join("earlier.json"), &earlier).unwrap();
    let err = w.fails(
        w.converge()
            .args(["stack", "import", "--file", "earlier.json"]),
    );
    assert!(err.contains("not valid JSON"), "without --force: {err}");
    assert_eq!(before, tree_hash(&w.backend), "a refused import wrote");
    let out = w
        .converge()
        .args(["stack", "import", "--force", "--file", "earlier.json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("cannot be read"), "{stderr}");
    let outputs = w.ok(&["stack", "export"]);
    let expected: serde_json::Value = serde_json::from_str(&earlier).unwrap();
    let got: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    assert_eq!(
        got["deployment"]["resources"], expected["deployment"]["resources"],
        "the earlier state is back"
    );
}

#[test]
fn backend_that_is_not_a_directory() {
    let w = World::new();
    let file = w.project.join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let err = w.fails(
        w.converge()
            .env("PULUMI_BACKEND_URL", format!("file://{}", file.display()))
            .args(["stack", "init", "dev"]),
    );
    assert!(err.contains("not-a-dir"), "{err}");
    let err = w.fails(
        w.converge()
            .env("PULUMI_BACKEND_URL", "ftp://bucket")
            .args(["stack", "ls"]),
    );
    assert!(err.contains("not supported yet"), "{err}");
}

#[test]
fn a_held_lock_names_its_holder_and_changes_nothing() {
    let w = World::new();
    w.init_with_demo_state();
    let locks = w.backend.join(".pulumi/locks/organization/demo/dev");
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::write(
        locks.join("0b7c5f0e-3c1a-4a8e-9d51-0c6b1f2a3d4e.json"),
        r#"{"pid":4242,"username":"alice","hostname":"build-7","timestamp":"2026-11-22T10:00:00Z"}"#,
    )
    .unwrap();
    let before = tree_hash(&w.backend);
    let err =
        w.fails(
            w.converge()
                .args(["stack", "import", "--file", demo_state().to_str().unwrap()]),
        );
    assert!(
        err.contains("alice") && err.contains("build-7") && err.contains("4242"),
        "{err}"
    );
    assert_eq!(before, tree_hash(&w.backend));
}

#[test]
fn opens_a_directory_laid_out_by_pulumi() {
    // A DIY backend as Pulumi writes it: meta.yaml and a project-scoped
    // checkpoint whose deployment is the demo state.
    let w = World::new();
    let deployment = json(&std::fs::read_to_string(demo_state()).unwrap())["deployment"].clone();
    let checkpoint = serde_json::json!({
        "version": 3,
        "checkpoint": { "stack": "organization/demo/dev", "latest": deployment }
    });
    std::fs::create_dir_all(w.backend.join(".pulumi/stacks/demo")).unwrap();
    std::fs::write(w.backend.join(".pulumi/meta.yaml"), "version: 1\n").unwrap();
    std::fs::write(
        w.stack_file(),
        serde_json::to_string_pretty(&checkpoint).unwrap(),
    )
    .unwrap();
    let ls = w.ok(&["stack", "ls"]);
    assert!(ls.contains("dev") && ls.contains('4'), "{ls}");
    let out = w.ok(&["stack", "output", "-s", "dev", "--json"]);
    assert_eq!(json(&out)["petName"], "honest-wombat");
}

#[test]
fn login_logout_whoami() {
    let w = World::new();
    let out = w
        .converge()
        .env_remove("PULUMI_BACKEND_URL")
        .args(["login", &format!("file://{}", w.backend.display())])
        .output()
        .unwrap();
    assert!(out.status.success());
    let who = w
        .converge()
        .env_remove("PULUMI_BACKEND_URL")
        .args(["whoami", "-v"])
        .output()
        .unwrap();
    let who = String::from_utf8(who.stdout).unwrap();
    assert!(
        who.contains(&format!("file://{}", w.backend.display())),
        "{who}"
    );
    w.converge()
        .env_remove("PULUMI_BACKEND_URL")
        .args(["stack", "init", "dev"])
        .assert()
        .success();
    assert!(w.stack_file().is_file());
    w.converge().args(["logout"]).assert().success();
    let who = w
        .converge()
        .env_remove("PULUMI_BACKEND_URL")
        .env("HOME", w.project.join("h"))
        .args(["whoami", "-v"])
        .output()
        .unwrap();
    assert!(String::from_utf8(who.stdout).unwrap().contains("file://~"));
}

#[test]
fn cwd_flag_finds_the_project() {
    let w = World::new();
    let mut cmd = w.converge();
    cmd.current_dir(w.backend.parent().unwrap())
        .args(["--cwd", "project", "stack", "init", "dev"])
        .assert()
        .success();
    let err = w.fails(
        w.converge()
            .current_dir(w.backend.parent().unwrap())
            .args(["stack", "init", "dev2"]),
    );
    assert!(err.contains("Pulumi.yaml"), "{err}");
}

//! Which stack a command works on, through the `converge` binary: `stack
//! import` of another stack's or project's deployment refused, each
//! resource named, state unchanged, unless `--force`; a name of another
//! project's stack refused by `stack init` and `stack select` in a project
//! directory (as Pulumi refuses it); `stack rename` into another project
//! noted; `stack rm` of a fully qualified name from outside any project;
//! and `stack export --show-secrets`, whose file imports back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common;

/// The passphrase of the demo state's secrets.
const PASSPHRASE: &str = "correct horse battery staple";

const DEMO_URNS: [&str; 4] = [
    "urn:pulumi:dev::demo::pulumi:pulumi:Stack::demo-dev",
    "urn:pulumi:dev::demo::pulumi:providers:random::default_4_16_0",
    "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet",
    "urn:pulumi:dev::demo::random:index/randomPassword:RandomPassword::db-password",
];

fn demo_state() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo/state.json")
}

struct World {
    scratch: common::Scratch,
}

impl World {
    fn new() -> World {
        World {
            scratch: common::Scratch::new("name: demo\nruntime: yaml\n"),
        }
    }

    fn cmd(&self) -> Command {
        self.scratch.command(PASSPHRASE)
    }

    /// `converge` in a directory outside any project.
    fn outside(&self) -> Command {
        let dir = self.scratch.dir.path().join("elsewhere");
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = self.cmd();
        c.current_dir(dir);
        c
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.cmd(), args)
    }

    fn fails(&self, args: &[&str]) -> String {
        common::failure_of(self.cmd(), args)
    }

    /// Every file of the backend with its bytes.
    fn backend_files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut dirs = vec![self.scratch.backend.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        out
    }

    /// Writes the demo state with its URNs' `dev::demo` replaced.
    fn demo_as(&self, file: &str, stack: &str, project: &str) -> String {
        let text = std::fs::read_to_string(demo_state()).unwrap().replace(
            "urn:pulumi:dev::demo::",
            &format!("urn:pulumi:{stack}::{project}::"),
        );
        std::fs::write(self.scratch.project.join(file), text).unwrap();
        file.to_owned()
    }
}

#[test]
fn importing_another_stacks_deployment_is_refused_unless_forced() {
    let w = World::new();
    w.run(&["stack", "init", "beta"]);
    let before = w.backend_files();
    let demo = demo_state().display().to_string();

    let err = w.fails(&["stack", "import", "--file", &demo]);
    for urn in DEMO_URNS {
        assert!(
            err.contains(&format!(
                "resource '{urn}' is from a different stack (dev != beta)"
            )),
            "{urn}: {err}"
        );
    }
    assert!(err.contains("--force"), "{err}");
    assert!(!err.contains("different project"), "{err}");
    assert_eq!(before, w.backend_files(), "a refused import wrote");

    let other = w.demo_as("other.json", "beta", "otherproj");
    let err = w.fails(&["stack", "import", "--file", &other]);
    assert!(
        err.contains(
            "resource 'urn:pulumi:beta::otherproj::pulumi:pulumi:Stack::demo-dev' is from a \
             different project (otherproj != demo)"
        ),
        "{err}"
    );
    assert!(!err.contains("different stack"), "{err}");
    assert_eq!(before, w.backend_files(), "a refused import wrote");

    // The stack's own deployment imports.
    let own = w.demo_as("own.json", "beta", "demo");
    assert_eq!(
        w.run(&["stack", "import", "--file", &own]),
        "Import complete.\n"
    );

    // --force imports another stack's as it is, with a warning per resource.
    let out = w
        .cmd()
        .args(["stack", "import", "--force", "--file", &demo])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Import complete.\n");
    for urn in DEMO_URNS {
        assert!(
            stderr.contains(&format!(
                "warning: resource '{urn}' is from a different stack (dev != beta)"
            )),
            "{stderr}"
        );
    }
    let exported = w.run(&["stack", "export"]);
    assert!(exported.contains(DEMO_URNS[2]), "{exported}");
}

#[test]
fn another_projects_stack_names_are_refused_in_a_project() {
    let w = World::new();
    let before = w.backend_files();
    for args in [
        &["stack", "init", "otherproj/eps"][..],
        &["stack", "init", "org/otherproj/eps"],
        &["stack", "select", "otherproj/eps"],
        &["stack", "select", "--create", "organization/otherproj/eps"],
    ] {
        let err = w.fails(args);
        assert!(
            err.contains("provided project name \"otherproj\" doesn't match Pulumi.yaml"),
            "{args:?}: {err}"
        );
    }
    assert_eq!(before, w.backend_files(), "a refused name made a stack");

    // This project's name, qualified, is this project's stack.
    w.run(&["stack", "init", "demo/eps"]);
    w.run(&["stack", "init", "organization/demo/dev"]);
    let ls = w.run(&["stack", "ls"]);
    assert!(ls.contains("dev*") && ls.contains("eps"), "{ls}");

    // Renaming into another project is allowed, with what to change.
    w.run(&["stack", "select", "eps"]);
    let renamed = w.run(&["stack", "rename", "otherproj/eps"]);
    assert!(
        renamed.starts_with("Renamed eps to organization/otherproj/eps\n"),
        "{renamed}"
    );
    assert!(
        renamed.contains("change `name` in Pulumi.yaml to otherproj"),
        "{renamed}"
    );

    // `stack rm` of a fully qualified name works outside any project; a
    // short one says what to pass.
    let err = common::failure_of(w.outside(), &["stack", "rm", "eps", "--yes"]);
    assert!(err.contains("name the stack in full"), "{err}");
    let removed = common::stdout_of(
        w.outside(),
        &["stack", "rm", "organization/otherproj/eps", "--yes"],
    );
    assert_eq!(removed, "Stack 'eps' has been removed!\n");
    let err = common::failure_of(
        w.outside(),
        &["stack", "rm", "organization/otherproj/eps", "--yes"],
    );
    assert!(err.contains("no stack named eps"), "{err}");
    common::stdout_of(w.outside(), &["stack", "rm", "demo/dev", "--yes"]);
    assert!(
        w.scratch.project.join("Pulumi.dev.yaml").exists(),
        "outside the project, its files are not touched"
    );
    let ls: Value = serde_json::from_str(&w.run(&["stack", "ls", "--json"])).unwrap();
    assert_eq!(ls, serde_json::json!([]), "{ls}");
}

#[test]
fn export_show_secrets_writes_plaintext_secrets() {
    let w = World::new();
    w.run(&["stack", "init", "dev"]);
    w.run(&[
        "stack",
        "import",
        "--file",
        &demo_state().display().to_string(),
    ]);
    let export = w.run(&["stack", "export"]);
    assert!(!export.contains("s3cr3t-Pa55"), "{export}");

    let shown = w.run(&["stack", "export", "--show-secrets"]);
    assert!(!shown.contains("\"ciphertext\""), "{shown}");
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        shown["deployment"]["resources"][0]["outputs"]["dbPassword"],
        serde_json::json!({
            "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
            "plaintext": "\"s3cr3t-Pa55\""
        })
    );
    let mut plain: Value = serde_json::from_str(&export).unwrap();
    let mut revealed = shown.clone();
    for v in [&mut plain, &mut revealed] {
        for r in v["deployment"]["resources"].as_array_mut().unwrap() {
            r["outputs"].as_object_mut().map(|o| o.remove("dbPassword"));
            r["outputs"].as_object_mut().map(|o| o.remove("result"));
        }
    }
    assert_eq!(plain, revealed, "only the secrets differ");

    // Such an export imports back: its secrets sealed again.
    let file = w.scratch.project.join("shown.json");
    std::fs::write(&file, shown.to_string()).unwrap();
    let before = w.backend_files();
    let mut mixed = shown.clone();
    mixed["deployment"]["resources"][0]["outputs"]["dbPassword"] =
        serde_json::from_str::<Value>(&export).unwrap()["deployment"]["resources"][0]["outputs"]
            ["dbPassword"]
            .clone();
    std::fs::write(w.scratch.project.join("mixed.json"), mixed.to_string()).unwrap();
    let err = w.fails(&["stack", "import", "--file", "mixed.json"]);
    assert!(
        err.contains("both plaintext and encrypted secrets"),
        "{err}"
    );
    assert_eq!(before, w.backend_files(), "a refused import wrote");
    w.run(&["stack", "import", "--file", "shown.json"]);
    let again = w.run(&["stack", "export"]);
    assert!(
        !again.contains("s3cr3t-Pa55") && !again.contains("\"plaintext\""),
        "{again}"
    );
    assert_eq!(
        w.run(&["stack", "output", "dbPassword", "--show-secrets"]),
        "s3cr3t-Pa55\n"
    );

    let err = common::failure_of(
        {
            let mut c = w.cmd();
            c.env("PULUMI_CONFIG_PASSPHRASE", "wrong");
            c
        },
        &["stack", "export", "--show-secrets"],
    );
    assert!(err.contains("passphrase"), "{err}");
}

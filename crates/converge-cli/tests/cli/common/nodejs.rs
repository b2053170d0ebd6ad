//! A scratch world whose project is a Node.js program run with the
//! published `@pulumi/pulumi` SDK (installed by scripts/test;
//! CONVERGE_TEST_NODE_MODULES names its node_modules).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::Scratch;

/// The SDK's `node_modules`, or `None` (skip) outside CI.
pub fn node_modules() -> Option<PathBuf> {
    match std::env::var_os("CONVERGE_TEST_NODE_MODULES") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var_os("CI").is_some() => {
            panic!("CONVERGE_TEST_NODE_MODULES is not set: run scripts/test")
        }
        None => {
            eprintln!("SKIPPED: set CONVERGE_TEST_NODE_MODULES (scripts/test does) to run Node.js programs");
            None
        }
    }
}

/// A scratch world whose project `name` runs `program` as its `index.js`
/// with the SDK's `node_modules`.
pub fn project(modules: &Path, name: &str, program: &str) -> Scratch {
    let scratch = Scratch::new(&format!("name: {name}\nruntime: nodejs\n"));
    let dir = &scratch.project;
    std::fs::write(dir.join("index.js"), program).unwrap();
    std::fs::write(
        dir.join("package.json"),
        format!(r#"{{"name":"{name}","main":"index.js"}}"#),
    )
    .unwrap();
    std::os::unix::fs::symlink(modules, dir.join("node_modules")).unwrap();
    scratch
}

/// A project `nodeproj` running `program` as its `index.js`, with the
/// SDK's `node_modules`, and its stack `dev`.
pub struct NodeWorld {
    pub scratch: Scratch,
    /// Extra environment for every command.
    pub env: Vec<(OsString, OsString)>,
}

impl NodeWorld {
    pub fn new(modules: &Path, program: &str) -> NodeWorld {
        let scratch = project(modules, "nodeproj", program);
        let w = NodeWorld {
            scratch,
            env: Vec::new(),
        };
        w.run(&["stack", "init", "dev"]);
        w
    }

    /// Replaces the program.
    pub fn write_program(&self, program: &str) {
        std::fs::write(self.scratch.project.join("index.js"), program).unwrap();
    }

    /// Runs `converge args…`, which must succeed; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let mut cmd = self.scratch.command("pw");
        cmd.envs(self.env.iter().cloned());
        super::stdout_of(cmd, args)
    }
}

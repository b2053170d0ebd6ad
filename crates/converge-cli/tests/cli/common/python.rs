//! A scratch world whose project is a Python program run with the
//! published `pulumi` SDK (installed by scripts/test; CONVERGE_TEST_PYTHON
//! names the venv's interpreter).

use std::path::{Path, PathBuf};

use super::Scratch;

/// The venv holding the `pulumi` SDK, or `None` (skip) outside CI.
pub fn venv() -> Option<PathBuf> {
    match std::env::var_os("CONVERGE_TEST_PYTHON") {
        Some(python) => Path::new(&python)
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf),
        None if std::env::var_os("CI").is_some() => {
            panic!("CONVERGE_TEST_PYTHON is not set: run scripts/test")
        }
        None => {
            eprintln!(
                "SKIPPED: set CONVERGE_TEST_PYTHON (scripts/test does) to run Python programs"
            );
            None
        }
    }
}

/// A project `pyproj` running `program` as its `__main__.py` with the
/// venv's interpreter, and its stack `dev`.
pub struct PythonWorld {
    pub scratch: Scratch,
}

impl PythonWorld {
    pub fn new(venv: &Path, program: &str) -> PythonWorld {
        let scratch = Scratch::new(&format!(
            "name: pyproj\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
            venv.display()
        ));
        std::fs::write(scratch.project.join("__main__.py"), program).unwrap();
        let w = PythonWorld { scratch };
        w.run(&["stack", "init", "dev"]);
        w
    }

    pub fn cmd(&self, args: &[&str]) -> std::process::Output {
        self.scratch.command("pw").args(args).output().unwrap()
    }

    /// Runs `converge args…`, which must succeed; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        super::stdout_of(self.scratch.command("pw"), args)
    }

    /// Runs `converge args…`, which must fail; its stdout and stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        super::failure_of(self.scratch.command("pw"), args)
    }

    /// Starts `converge up --yes --skip-preview` in the background, its
    /// output discarded (a test that waits on the program meanwhile).
    pub fn spawn_up(&self) -> std::process::Child {
        let mut up = self.scratch.command("pw");
        up.args(["up", "--yes", "--skip-preview"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        up.spawn().unwrap()
    }

    /// The stack's checkpoint file.
    pub fn state(&self) -> String {
        std::fs::read_to_string(self.scratch.backend.join(".pulumi/stacks/pyproj/dev.json"))
            .unwrap()
    }
}

/// A Python project (`__main__.py` = the program) with the test plugin
/// installed at versions 1.0.0 and 2.0.0 in a plugin directory of its own
/// (ambient plugins off: the program gets a version only from there), its
/// mock cloud in the scratch directory, and its stack `dev`.
pub struct TwoPluginVersions {
    pub scratch: Scratch,
    pulumi_home: PathBuf,
}

impl TwoPluginVersions {
    /// `None` (skip) without the test venv.
    pub fn new(project: &str, program: &str) -> Option<TwoPluginVersions> {
        let venv = venv()?;
        let scratch = Scratch::new(&format!(
            "name: {project}\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
            venv.display()
        ));
        std::fs::write(scratch.project.join("__main__.py"), program).unwrap();
        let bin = super::convergetest_bin_dir(scratch.dir.path());
        let plugin = std::fs::canonicalize(bin.join("pulumi-resource-convergetest")).unwrap();
        let w = TwoPluginVersions {
            pulumi_home: scratch.dir.path().join("pulumi-home"),
            scratch,
        };
        for version in ["1.0.0", "2.0.0"] {
            let src = w.scratch.dir.path().join(format!("src-{version}"));
            std::fs::create_dir_all(&src).unwrap();
            std::fs::copy(&plugin, src.join("pulumi-resource-convergetest")).unwrap();
            w.run(&[
                "plugin",
                "install",
                "resource",
                "convergetest",
                version,
                "--file",
                src.to_str().unwrap(),
            ]);
        }
        w.run(&["stack", "init", "dev"]);
        Some(w)
    }

    /// `converge` on this world's plugin directory and mock cloud.
    pub fn command(&self) -> std::process::Command {
        super::with_own_plugins(&self.scratch, &self.pulumi_home)
    }

    /// Runs `converge args…`, which must succeed; its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        super::stdout_of(self.command(), args)
    }

    /// The stack's outputs (`stack output --json`).
    pub fn outputs(&self) -> serde_json::Value {
        serde_json::from_str(&self.run(&["stack", "output", "--json"])).unwrap()
    }

    /// The stack's state (`stack export`).
    pub fn state(&self) -> serde_json::Value {
        serde_json::from_str(&self.run(&["stack", "export"])).unwrap()
    }
}

//! What every end-to-end test of the binary shares: a scratch world (a
//! Converge home, a file backend, a project directory) and the `converge`
//! command pointed at it.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

/// A scratch world in a temporary directory.
pub struct Scratch {
    pub dir: tempfile::TempDir,
    pub home: PathBuf,
    pub backend: PathBuf,
    pub project: PathBuf,
}

impl Scratch {
    /// A world whose project has this `Pulumi.yaml`.
    pub fn new(pulumi_yaml: &str) -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let backend = dir.path().join("backend");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&backend).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("Pulumi.yaml"), pulumi_yaml).unwrap();
        Scratch {
            dir,
            home,
            backend,
            project,
        }
    }

    /// `converge --non-interactive` in the project, on this world's home
    /// and backend, with `passphrase`.
    pub fn command(&self, passphrase: &str) -> Command {
        let mut cmd = Command::cargo_bin("converge").unwrap();
        cmd.current_dir(&self.project)
            .env("CONVERGE_HOME", &self.home)
            .env(
                "PULUMI_BACKEND_URL",
                format!("file://{}", self.backend.display()),
            )
            .env("PULUMI_CONFIG_PASSPHRASE", passphrase)
            .env_remove("PULUMI_CONFIG_PASSPHRASE_FILE")
            .arg("--non-interactive");
        cmd
    }
}

impl Scratch {
    /// `converge --non-interactive` (passphrase `pw`) with the test
    /// plugin's directory `bin` first on PATH and the plugin's cloud in
    /// `cloud.json` of this world.
    pub fn with_test_plugin(&self, bin: &std::path::Path) -> Command {
        let mut cmd = self.command("pw");
        cmd.env("PATH", path_with(bin)).env(
            "CONVERGE_TEST_CLOUD_FILE",
            self.dir.path().join("cloud.json"),
        );
        cmd
    }
}

/// Where a test's stacks live.
#[derive(Debug)]
pub enum Backend {
    /// The scratch world's file backend.
    File,
    /// Another backend URL (an object store).
    Url(String),
    /// A `converge serve` process, with its admin token.
    Service(service::Service),
}

impl Backend {
    /// Points `cmd` at this backend.
    pub fn apply(&self, cmd: &mut Command) {
        match self {
            Backend::File => {}
            Backend::Url(url) => {
                cmd.env("PULUMI_BACKEND_URL", url);
            }
            Backend::Service(s) => {
                cmd.env("PULUMI_BACKEND_URL", &s.url)
                    .env("PULUMI_ACCESS_TOKEN", &s.token);
            }
        }
    }
}

/// `converge args…` in `scratch`'s project on `backend`, with the
/// passphrase `pw`.
pub fn converge_on(scratch: &Scratch, backend: &Backend, args: &[&str]) -> Command {
    let mut c = scratch.command("pw");
    backend.apply(&mut c);
    c.args(args);
    c
}

/// Runs `cmd` (`converge args…`), which must succeed; its stdout.
pub fn stdout_of(mut cmd: Command, args: &[&str]) -> String {
    let out = cmd.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "converge {args:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `cmd` (`converge args…`), which must fail; its stdout and stderr.
pub fn failure_of(mut cmd: Command, args: &[&str]) -> String {
    let out = cmd.args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "converge {args:?} succeeded:\n{text}"
    );
    text
}

pub mod nodejs;
pub mod python;
pub mod service;
#[cfg(unix)]
pub mod terminal;
/// `converge` in a scratch world with the convergetest plugin on PATH and
/// its mock cloud in `cloud.json` of the scratch directory.
pub struct ConvergetestCloud {
    bin: PathBuf,
    pub file: PathBuf,
}

impl ConvergetestCloud {
    pub fn new(scratch: &Scratch) -> ConvergetestCloud {
        ConvergetestCloud {
            bin: convergetest_bin_dir(scratch.dir.path()),
            file: scratch.dir.path().join("cloud.json"),
        }
    }

    /// `converge args…` in `scratch`, which must succeed; its stdout, a
    /// blank line and its stderr.
    pub fn run(&self, scratch: &Scratch, args: &[&str]) -> String {
        let out = scratch
            .command("pw")
            .envs(self.env())
            .args(args)
            .output()
            .unwrap();
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "converge {args:?}:\n{text}");
        text
    }

    /// The variables that put the plugin on PATH and name its cloud.
    pub fn env(&self) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
        vec![
            ("PATH".into(), path_with(&self.bin)),
            ("CONVERGE_TEST_CLOUD_FILE".into(), self.file.clone().into()),
        ]
    }

    /// The cloud's objects as the plugin recorded them.
    pub fn state(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(&self.file).unwrap()).unwrap()
    }
}

/// `converge` in `scratch` with the plugin directory `pulumi_home` as its
/// only source of plugins (ambient plugins off), the test plugin's mock
/// cloud in the scratch directory, and no pinned test plugin version.
pub fn with_own_plugins(scratch: &Scratch, pulumi_home: &std::path::Path) -> Command {
    let mut cmd = scratch.command("pw");
    cmd.env("PULUMI_HOME", pulumi_home)
        .env("PULUMI_IGNORE_AMBIENT_PLUGINS", "1")
        .env(
            "CONVERGE_TEST_CLOUD_FILE",
            scratch.dir.path().join("cloud.json"),
        )
        .env_remove("CONVERGE_TEST_PLUGIN_VERSION");
    cmd
}

/// A directory (under `root`) holding `pulumi-resource-convergetest`, the
/// test plugin, for PATH. Cargo builds it into the directory of the
/// `converge` binary under test (a workspace test run has it already;
/// `cargo test -p converge-cli` does not, so it is built here).
pub fn convergetest_bin_dir(root: &std::path::Path) -> PathBuf {
    const EXE: &str = "pulumi-resource-convergetest";
    let converge = assert_cmd::cargo::cargo_bin("converge");
    let target = converge.parent().unwrap();
    let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    build.args([
        "build",
        "--quiet",
        "-p",
        "converge-test-plugin",
        "--bin",
        EXE,
    ]);
    if target.file_name().is_some_and(|d| d == "release") {
        build.arg("--release");
    }
    if let Some(target_dir) = target.parent() {
        build.arg("--target-dir").arg(target_dir);
    }
    let status = build.status().expect("cargo build of the test plugin");
    assert!(status.success(), "cargo build of the test plugin failed");
    let plugin = target.join(EXE);
    assert!(plugin.exists(), "{} was not built", plugin.display());
    let dir = root.join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&plugin, dir.join(EXE)).unwrap();
    dir
}

/// `PATH` with `dir` first.
pub fn path_with(dir: &std::path::Path) -> std::ffi::OsString {
    let mut path = std::ffi::OsString::from(dir.as_os_str());
    if let Some(old) = std::env::var_os("PATH") {
        path.push(":");
        path.push(old);
    }
    path
}

/// Every file under `root`, at any depth.
pub fn files_under(root: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                dirs.push(e.path());
            } else if kind.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

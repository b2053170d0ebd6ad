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

pub mod python;
pub mod s3;

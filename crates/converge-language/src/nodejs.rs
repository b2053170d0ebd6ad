//! Pulumi Node.js programs (`runtime: nodejs`), run by the runner the npm
//! package ships (`@pulumi/pulumi/cmd/run`, found in the project's
//! `node_modules` the way Node resolves packages) against a gRPC
//! [`MonitorServer`](converge_engine::grpc::MonitorServer). TypeScript
//! programs work as with Pulumi: the runner registers `ts-node` when the
//! project depends on `typescript`.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use converge_engine::{Monitor, Program};
use tokio::process::Command;

use crate::process::{self, LanguageError, ProjectSettings, RunOptions};

/// Where the runner lives inside a `node_modules` directory.
const RUNNER: [&str; 4] = ["@pulumi", "pulumi", "cmd", "run"];

/// A Node.js program.
#[derive(Debug, Clone)]
pub struct NodeProgram {
    project: ProjectSettings,
    options: RunOptions,
    node: PathBuf,
}

impl NodeProgram {
    /// The program of the project in `project_dir`.
    pub fn new(project_dir: impl Into<PathBuf>) -> Result<NodeProgram, LanguageError> {
        Ok(NodeProgram {
            project: ProjectSettings::load(project_dir)?,
            options: RunOptions::default(),
            node: PathBuf::from("node"),
        })
    }

    /// Configuration, organization, verbosity.
    pub fn with_options(mut self, options: RunOptions) -> NodeProgram {
        self.options = options;
        self
    }

    /// Runs the program with this `node` rather than the one on `PATH`.
    pub fn with_node(mut self, node: impl Into<PathBuf>) -> NodeProgram {
        self.node = node.into();
        self
    }

    pub fn project(&self) -> &ProjectSettings {
        &self.project
    }

    /// The `node` that runs the program.
    pub fn node(&self) -> &Path {
        &self.node
    }

    /// The nearest `node_modules` of the program's directory or one of its
    /// parents that holds the SDK (`@pulumi/pulumi/cmd/run`), as Node
    /// resolves packages.
    pub fn node_modules(&self) -> Option<PathBuf> {
        let start = self.project.working_dir();
        start.ancestors().find_map(|dir| {
            let modules = dir.join("node_modules");
            let mut runner = modules.clone();
            RUNNER.iter().for_each(|part| runner.push(part));
            runner.join("index.js").is_file().then_some(modules)
        })
    }

    /// `@pulumi/pulumi/cmd/run` in [`Self::node_modules`].
    pub fn runner(&self) -> Option<PathBuf> {
        let mut runner = self.node_modules()?;
        RUNNER.iter().for_each(|part| runner.push(part));
        Some(runner)
    }

    fn command(&self, s: &process::Session) -> Result<Command, String> {
        let runner = self.runner().ok_or_else(|| {
            format!(
                "cannot find the Pulumi Node.js SDK (@pulumi/pulumi) in the node_modules of {} \
                 or its parents; run `npm install` in the project",
                self.project.working_dir().display()
            )
        })?;
        let program = self.project.program_path();
        if !program.exists() {
            return Err(format!("the program {} does not exist", program.display()));
        }
        let mut cmd = Command::new(&self.node);
        cmd.arg(&runner)
            .arg("--monitor")
            .arg(&s.address)
            .arg("--engine")
            .arg(&s.address)
            .arg("--project")
            .arg(&s.project)
            .arg("--stack")
            .arg(&s.stack)
            .arg("--pwd")
            .arg(self.project.working_dir())
            .arg("--root-directory")
            .arg(&self.project.dir)
            .arg("--organization")
            .arg(&self.options.organization)
            .arg("--parallel")
            .arg(s.parallel.to_string());
        if s.preview {
            cmd.arg("--dry-run");
        }
        cmd.arg(&program).current_dir(self.project.working_dir());
        Ok(cmd)
    }
}

#[async_trait]
impl Program for NodeProgram {
    async fn run(&self, monitor: Monitor) -> Result<(), String> {
        process::run(monitor, &self.options, "nodejs", |s| self.command(s)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_runner_in_a_parent_node_modules() {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("app");
        std::fs::create_dir_all(&project).unwrap();
        let program = NodeProgram::new(&project).unwrap();
        assert_eq!(program.runner(), None);
        let runner = root.path().join("node_modules/@pulumi/pulumi/cmd/run");
        std::fs::create_dir_all(&runner).unwrap();
        std::fs::write(runner.join("index.js"), "").unwrap();
        assert_eq!(program.runner(), Some(runner));
    }
}

//! Pulumi Node.js programs (`runtime: nodejs`), run by the runner the npm
//! package ships (`@pulumi/pulumi/cmd/run`, found in the project's
//! `node_modules` the way Node resolves packages) against a gRPC
//! [`MonitorServer`](converge_engine::grpc::MonitorServer). TypeScript
//! programs work as with Pulumi: unless `runtime.options.typescript` is
//! `false`, the runner is told (`PULUMI_NODEJS_TYPESCRIPT=true`, and
//! `PULUMI_NODEJS_TSCONFIG_PATH` from `runtime.options.tsconfig`) to
//! register the `ts-node` the SDK ships, which compiles `.ts` files as
//! they load.

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
        let project = ProjectSettings::load(project_dir)?;
        project.check_entry_point()?;
        Ok(NodeProgram {
            project,
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
        process::own_group(&mut cmd);
        // The runtime option `nodeargs`: Node's own flags, before the SDK's
        // runner (`--max-old-space-size=4096`, `--require ./hook.js`).
        if let Some(args) = self.project.runtime_option("nodeargs") {
            let args = shlex::split(args).ok_or_else(|| {
                format!(
                    "the runtime option `nodeargs: {args}` is not a list of arguments (an \
                     unclosed quote)"
                )
            })?;
            cmd.args(args);
        }
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
        cmd.envs(self.typescript_env());
        Ok(cmd)
    }

    fn has_typescript(&self) -> bool {
        let dir = self.project.working_dir();
        let is_ts = |p: &Path| p.extension().is_some_and(|e| e == "ts");
        let package_main = std::fs::read_to_string(dir.join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|m| m.get("main")?.as_str().map(PathBuf::from));
        dir.join("tsconfig.json").is_file()
            || self.project.runtime_option("tsconfig").is_some()
            || is_ts(&self.project.program_path())
            || package_main.as_deref().is_some_and(is_ts)
            || dir.join("index.ts").is_file()
    }

    /// The variables by which Pulumi's Node.js language host tells the
    /// runner to compile TypeScript: on unless `typescript: false`, as in
    /// Pulumi — but only for a project that has TypeScript (a
    /// `tsconfig.json`, or a `.ts` program: `main`, `package.json`'s
    /// `main`, or `index.ts`), so plain JavaScript programs do not pay
    /// for loading the compiler.
    pub fn typescript_env(&self) -> Vec<(&'static str, String)> {
        let typescript =
            self.project.runtime_option("typescript") != Some("false") && self.has_typescript();
        let mut env = vec![("PULUMI_NODEJS_TYPESCRIPT", typescript.to_string())];
        if let Some(tsconfig) = self.project.runtime_option("tsconfig") {
            let path = self.project.dir.join(tsconfig);
            env.push(("PULUMI_NODEJS_TSCONFIG_PATH", path.display().to_string()));
        }
        env
    }
}

#[async_trait]
impl Program for NodeProgram {
    async fn run(&self, monitor: Monitor) -> Result<(), String> {
        process::run(
            monitor,
            &self.options,
            self.project.working_dir(),
            "nodejs",
            None,
            |s| self.command(s).map(process::Launch::Spawn),
        )
        .await
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

    #[test]
    fn typescript_is_compiled_unless_the_project_turns_it_off() {
        let dir = tempfile::tempdir().unwrap();
        let write = |text: &str| std::fs::write(dir.path().join("Pulumi.yaml"), text).unwrap();
        write("name: p\nruntime: nodejs\n");
        let env = NodeProgram::new(dir.path()).unwrap().typescript_env();
        assert_eq!(env, [("PULUMI_NODEJS_TYPESCRIPT", "false".to_owned())]);
        std::fs::write(dir.path().join("index.ts"), "export {};").unwrap();
        let env = NodeProgram::new(dir.path()).unwrap().typescript_env();
        assert_eq!(env, [("PULUMI_NODEJS_TYPESCRIPT", "true".to_owned())]);
        write("name: p\nruntime:\n  name: nodejs\n  options:\n    typescript: false\n    tsconfig: cfg/ts.json\n");
        let env = NodeProgram::new(dir.path()).unwrap().typescript_env();
        let dir = std::path::absolute(dir.path()).unwrap();
        assert_eq!(
            env,
            [
                ("PULUMI_NODEJS_TYPESCRIPT", "false".to_owned()),
                (
                    "PULUMI_NODEJS_TSCONFIG_PATH",
                    dir.join("cfg/ts.json").display().to_string()
                )
            ]
        );
    }
}

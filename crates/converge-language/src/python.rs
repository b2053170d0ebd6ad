//! Pulumi Python programs (`runtime: python`), run with the published
//! `pulumi` SDK by Converge's own runner script (`bootstrap.py`, what
//! Pulumi's `pulumi-language-python-exec` does) against a gRPC
//! [`MonitorServer`](converge_engine::grpc::MonitorServer).
//!
//! The interpreter is the project's virtualenv's (`runtime.options.
//! virtualenv`, relative to the project directory) if it has one, else
//! `python3` on `PATH`; the program is `main:` of `Pulumi.yaml` (a file or
//! a directory with `__main__.py`), else the project directory.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_engine::{Monitor, Program};
use tokio::process::{Child, Command};

use converge_plugin::child::GroupLeader;

use crate::process::{self, LanguageError, Launch, ProjectSettings, RunOptions, RunnerExit};

/// Converge's runner: parses the engine's arguments, configures the SDK
/// and runs the program in the root stack resource.
pub const BOOTSTRAP: &str = include_str!("bootstrap.py");

/// The runner's exit code when the interpreter has no `pulumi` module
/// (`bootstrap.py`'s `EXIT_NO_SDK`).
const EXIT_NO_SDK: i32 = 33;

/// The environment variable that hands the interpreter the runner's source.
const RUNNER_VARIABLE: &str = "CONVERGE_PYTHON_RUNNER";

/// `python -c` with this: the runner is compiled under a name that says
/// what it is (tracebacks of the runner's own frames show
/// `<converge python runner>`), from the environment — no temporary file,
/// no kilobytes of source in `ps` — and the variable is removed, so the
/// program's own processes do not inherit it. `-c` puts the working
/// directory first on `sys.path`; the runner takes it off again.
const RUNNER_STUB: &str = "import os; exec(compile(os.environ.pop('CONVERGE_PYTHON_RUNNER'), \
                           '<converge python runner>', 'exec'))";

/// A Python program.
#[derive(Debug, Clone)]
pub struct PythonProgram {
    project: ProjectSettings,
    options: RunOptions,
    interpreter: Option<PathBuf>,
    /// The runner started ahead for the first run, if any.
    ahead: Arc<Mutex<Option<PythonAhead>>>,
}

impl PythonProgram {
    /// The program of the project in `project_dir` (its `Pulumi.yaml`, if
    /// any, says where the program and the virtualenv are).
    pub fn new(project_dir: impl Into<PathBuf>) -> Result<PythonProgram, LanguageError> {
        let project = ProjectSettings::load(project_dir)?;
        project.check_entry_point()?;
        Ok(PythonProgram {
            project,
            options: RunOptions::default(),
            interpreter: None,
            ahead: Arc::default(),
        })
    }

    /// Configuration, organization, verbosity.
    pub fn with_options(mut self, options: RunOptions) -> PythonProgram {
        self.options = options;
        self
    }

    /// Runs the program with this interpreter rather than the project's.
    pub fn with_interpreter(mut self, python: impl Into<PathBuf>) -> PythonProgram {
        self.interpreter = Some(python.into());
        self
    }

    pub fn project(&self) -> &ProjectSettings {
        &self.project
    }

    /// The project's virtualenv, if `Pulumi.yaml` names one.
    pub fn virtualenv(&self) -> Option<PathBuf> {
        self.project
            .runtime_option("virtualenv")
            .map(|v| self.project.dir.join(v))
    }

    /// The interpreter the program runs with.
    pub fn interpreter(&self) -> PathBuf {
        if let Some(python) = &self.interpreter {
            return python.clone();
        }
        match self.virtualenv() {
            Some(venv) => venv_python(&venv),
            None => PathBuf::from("python3"),
        }
    }

    /// Starts the interpreter and the runner ahead of the run, so that
    /// Python's start and the SDK's imports (a third of a second or more)
    /// overlap what the CLI does before the program can run: locking the
    /// stack, reading its checkpoint, deriving the passphrase key. The
    /// runner then waits on stdin for the run's arguments (see
    /// `bootstrap.py`, `--wait`); [`PythonProgram::with_ahead`] hands it to
    /// the program's first run. `None` when it cannot start: the run then
    /// starts the interpreter itself and reports why it cannot.
    pub fn start_ahead(&self) -> Option<PythonAhead> {
        let child = self
            .base_command()
            .arg("--wait")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .ok()?;
        let leader = GroupLeader::new(child.id());
        Some(PythonAhead { child, leader })
    }

    /// Runs the program's first run in the runner `ahead` started.
    pub fn with_ahead(self, ahead: PythonAhead) -> PythonProgram {
        *self.ahead.lock().unwrap_or_else(|p| p.into_inner()) = Some(ahead);
        self
    }

    /// The interpreter running the runner in the program's working
    /// directory, with the virtualenv's environment: everything but the
    /// runner's arguments.
    fn base_command(&self) -> Command {
        let python = self.interpreter();
        let mut cmd = Command::new(&python);
        cmd.arg("-c")
            .arg(RUNNER_STUB)
            .env(RUNNER_VARIABLE, BOOTSTRAP)
            .current_dir(self.project.working_dir())
            .env("PYTHONUNBUFFERED", "1");
        process::own_group(&mut cmd);
        if let Some(venv) = self.virtualenv().filter(|_| self.interpreter.is_none()) {
            // As an activated virtualenv: its scripts come first.
            let bin = python.parent().map(Path::to_path_buf).unwrap_or_default();
            let mut path = OsString::from(bin.as_os_str());
            if let Some(old) = std::env::var_os("PATH") {
                path.push(if cfg!(windows) { ";" } else { ":" });
                path.push(old);
            }
            cmd.env("VIRTUAL_ENV", venv).env("PATH", path);
        }
        cmd
    }

    /// The runner's arguments for a run in `s`.
    fn args(&self, s: &process::Session) -> Result<Vec<OsString>, String> {
        let python = self.interpreter();
        if let Some(toolchain) = self.project.runtime_option("toolchain") {
            if toolchain != "pip" && self.interpreter.is_none() {
                return Err(format!(
                    "runtime.options.toolchain is {toolchain:?} in Pulumi.yaml, and Converge runs \
                     Python programs with pip in a virtualenv: set `toolchain: pip` and \
                     `virtualenv: venv`, then install the requirements into it"
                ));
            }
        }
        let venv = self.virtualenv().filter(|_| self.interpreter.is_none());
        if let Some(venv) = &venv {
            if !python.exists() {
                return Err(format!(
                    "the project's virtualenv {} has no Python interpreter ({} does not exist); \
                     create it with `python3 -m venv {}` and install the project's requirements \
                     into it",
                    venv.display(),
                    python.display(),
                    venv.display()
                ));
            }
        }
        let program = self.project.program_path();
        if !program.exists() {
            return Err(format!("the program {} does not exist", program.display()));
        }
        let dry_run = if s.preview { "true" } else { "false" };
        Ok(vec![
            "--monitor".into(),
            s.address.clone().into(),
            "--engine".into(),
            s.address.clone().into(),
            "--project".into(),
            s.project.clone().into(),
            "--root_directory".into(),
            self.project.dir.clone().into(),
            "--stack".into(),
            s.stack.clone().into(),
            "--pwd".into(),
            self.project.working_dir().into(),
            "--dry_run".into(),
            dry_run.into(),
            "--parallel".into(),
            s.parallel.to_string().into(),
            "--organization".into(),
            self.options.organization.clone().into(),
            program.into(),
        ])
    }
}

/// A Python interpreter started ahead of its run by
/// [`PythonProgram::start_ahead`], importing the SDK and then waiting for
/// its arguments; killed if dropped unused.
#[derive(Debug)]
pub struct PythonAhead {
    child: Child,
    leader: GroupLeader,
}

/// The interpreter of a virtualenv.
fn venv_python(venv: &Path) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join("python.exe")
    } else {
        venv.join("bin").join("python")
    }
}

#[async_trait]
impl Program for PythonProgram {
    async fn run(&self, monitor: Monitor) -> Result<(), String> {
        // A missing SDK is said once, as the error, not also as the lines
        // of a traceback through the runner.
        let no_sdk = RunnerExit {
            code: EXIT_NO_SDK,
            error: format!(
                "the Pulumi SDK is not installed for {}: install it with `pip install pulumi` \
                 (into the project's virtualenv, if it has one)",
                self.interpreter().display()
            ),
        };
        let ahead = self.ahead.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(PythonAhead { child, leader }) = ahead {
            let launch = |s: &process::Session| {
                let args = self.args(s)?;
                let text: Option<Vec<String>> =
                    args.iter().map(|a| a.to_str().map(str::to_owned)).collect();
                if let Some(args) = text {
                    return Ok(Launch::Resume {
                        child,
                        leader,
                        args,
                    });
                }
                // A path JSON cannot carry: the interpreter started ahead
                // is dropped (killed), and one starts with the arguments.
                let mut cmd = self.base_command();
                cmd.args(args);
                Ok(Launch::Spawn(cmd))
            };
            return process::run(
                monitor,
                &self.options,
                self.project.working_dir(),
                "python",
                Some(no_sdk),
                launch,
            )
            .await;
        }
        process::run(
            monitor,
            &self.options,
            self.project.working_dir(),
            "python",
            Some(no_sdk),
            |s| {
                let mut cmd = self.base_command();
                cmd.args(self.args(s)?);
                Ok(Launch::Spawn(cmd))
            },
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interpreter_comes_from_the_virtualenv_option() {
        let dir = tempfile::tempdir().unwrap();
        let plain = PythonProgram::new(dir.path()).unwrap();
        assert_eq!(plain.interpreter(), PathBuf::from("python3"));
        std::fs::write(
            dir.path().join("Pulumi.yaml"),
            "name: p\nruntime:\n  name: python\n  options:\n    virtualenv: venv\n",
        )
        .unwrap();
        let with_venv = PythonProgram::new(dir.path()).unwrap();
        assert_eq!(
            with_venv.interpreter(),
            venv_python(&dir.path().join("venv"))
        );
        let explicit = with_venv.with_interpreter("/opt/python");
        assert_eq!(explicit.interpreter(), PathBuf::from("/opt/python"));
    }

    #[test]
    fn a_toolchain_other_than_pip_is_refused_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("Pulumi.yaml"),
            "name: p\nruntime:\n  name: python\n  options:\n    toolchain: uv\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("__main__.py"), "").unwrap();
        let session = process::Session {
            address: "127.0.0.1:1".into(),
            project: "p".into(),
            stack: "dev".into(),
            preview: true,
            parallel: 1,
        };
        let e = PythonProgram::new(dir.path())
            .unwrap()
            .args(&session)
            .unwrap_err();
        assert!(e.contains("\"uv\"") && e.contains("toolchain: pip"), "{e}");
    }
}

//! What the Python and Node.js hosts share: the project's settings from
//! `Pulumi.yaml`, the options of a run, and running the program as a child
//! process against a [`MonitorServer`] until it exits.
//!
//! The program's stdout and stderr lines become info diagnostics of the
//! deployment as they arrive; the end of stderr is kept for the error of a
//! program that dies without reporting why.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use converge_engine::grpc::{MonitorServer, MonitorServerOptions};
use converge_engine::{Monitor, Severity};
use converge_plugin::child::{GroupLeader, Signal};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::entry_point::{self, EntryPointError};

/// The exit code of a program that has reported its failure through the
/// engine's log (both SDKs use 32).
pub const EXIT_REPORTED: i32 = 32;

/// How many lines of stderr an error quotes.
const STDERR_TAIL_LINES: usize = 40;

/// How long the program's output may trail its exit.
const OUTPUT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The project names of `Pulumi.yaml`, in the order Pulumi looks for them.
const PROJECT_FILES: [&str; 2] = ["Pulumi.yaml", "Pulumi.yml"];

/// What a run needs besides the program and the monitor.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// `--organization`; Pulumi's DIY backends say `organization`.
    pub organization: String,
    /// Configuration, `"<project>:<key>"` → plaintext value (objects as
    /// JSON text), passed in `PULUMI_CONFIG`.
    pub config: BTreeMap<String, String>,
    /// Which keys of `config` are secrets (`PULUMI_CONFIG_SECRET_KEYS`).
    pub config_secret_keys: Vec<String>,
    /// Also forward the program's debug-level log messages.
    pub verbose: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            organization: "organization".to_owned(),
            config: BTreeMap::new(),
            config_secret_keys: Vec::new(),
            verbose: false,
        }
    }
}

/// Why a language host could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LanguageError {
    /// Not YAML, past a limit of `converge_yaml`, or not a project.
    #[error("{0}")]
    Yaml(#[from] converge_yaml::YamlError),
    #[error("{0}")]
    EntryPoint(#[from] EntryPointError),
}

/// The settings of a project's `Pulumi.yaml` that a language host uses.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectSettings {
    /// The directory of `Pulumi.yaml` (the root directory).
    pub dir: PathBuf,
    /// `main:`, relative to `dir`.
    pub main: Option<String>,
    /// `runtime.options`, as strings (`virtualenv`, `typescript`, …).
    pub runtime_options: BTreeMap<String, String>,
}

impl ProjectSettings {
    /// Reads `Pulumi.yaml` (or `Pulumi.yml`) in `dir`; a directory without
    /// one has the defaults.
    pub fn load(dir: impl Into<PathBuf>) -> Result<ProjectSettings, LanguageError> {
        let dir: PathBuf = dir.into();
        let dir = std::path::absolute(&dir).unwrap_or(dir);
        let mut settings = ProjectSettings {
            dir: dir.clone(),
            main: None,
            runtime_options: BTreeMap::new(),
        };
        let Some(path) = PROJECT_FILES
            .iter()
            .map(|f| dir.join(f))
            .find(|p| p.is_file())
        else {
            return Ok(settings);
        };
        let doc: serde_json::Value = converge_yaml::load(&path)?;
        settings.main = doc
            .get("main")
            .and_then(|m| m.as_str())
            .filter(|m| !m.is_empty())
            .map(str::to_owned);
        let options = doc
            .get("runtime")
            .and_then(|r| r.get("options"))
            .and_then(|o| o.as_object());
        for (key, value) in options.into_iter().flatten() {
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Null => continue,
                other => other.to_string(),
            };
            settings.runtime_options.insert(key.clone(), text);
        }
        Ok(settings)
    }

    /// Checks that `main` names something that exists inside the project
    /// directory ([`entry_point::resolve`]); a host does before it runs
    /// anything.
    pub fn check_entry_point(&self) -> Result<(), LanguageError> {
        entry_point::resolve(&self.dir, self.main.as_deref())?;
        Ok(())
    }

    /// What the program is: `main` under the project directory, else the
    /// project directory itself.
    pub fn program_path(&self) -> PathBuf {
        match &self.main {
            Some(main) => self.dir.join(main),
            None => self.dir.clone(),
        }
    }

    /// The directory the program runs in: the program's directory when
    /// `main` names one, else the project directory.
    pub fn working_dir(&self) -> PathBuf {
        let program = self.program_path();
        if program.is_dir() {
            program
        } else {
            self.dir.clone()
        }
    }

    pub fn runtime_option(&self, key: &str) -> Option<&str> {
        self.runtime_options.get(key).map(String::as_str)
    }
}

/// What the command of a run is built from.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// The monitor's and the engine's address, `127.0.0.1:<port>`.
    pub address: String,
    pub project: String,
    pub stack: String,
    pub preview: bool,
    pub parallel: usize,
}

/// The last lines a stream printed.
#[derive(Debug, Default)]
struct Tail(VecDeque<String>);

impl Tail {
    fn push(&mut self, line: String) {
        if self.0.len() == STDERR_TAIL_LINES {
            self.0.pop_front();
        }
        self.0.push_back(line);
    }

    fn text(&self) -> String {
        self.0.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// Forwards each line of `stream` as an info diagnostic, keeping the last
/// ones in `tail` if given.
async fn forward(
    stream: impl AsyncRead + Unpin,
    server: Arc<MonitorServer>,
    tail: Option<Arc<Mutex<Tail>>>,
) {
    let mut reader = BufReader::new(stream);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // Converge's output has no colour: the escapes the Node.js SDK puts
        // in the stack traces it prints would show as `^[[90m`.
        let line = converge_engine::events::strip_ansi(String::from_utf8_lossy(&buf).trim_end());
        server.diagnostic(Severity::Info, line.clone());
        if let Some(tail) = &tail {
            tail.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    }
}

/// How a run's process comes to be.
pub(crate) enum Launch {
    /// Spawned now: a command with its arguments complete.
    Spawn(Command),
    /// Started ahead (`python::PythonAhead`), its stdin a pipe on which it
    /// waits for one JSON line: `{"args": [...], "env": {...}}`, its
    /// arguments and the run's configuration variables.
    Resume {
        child: Child,
        leader: GroupLeader,
        args: Vec<String>,
    },
}

/// Makes `cmd`'s process the leader of a process group of its own: the
/// terminal's Ctrl-C reaches Converge, which cancels the operation, not
/// the program, and the program's own children end with its group.
pub(crate) fn own_group(cmd: &mut Command) {
    #[cfg(unix)]
    cmd.process_group(0);
    #[cfg(not(unix))]
    let _ = cmd;
}

/// What a host's runner says by exiting with a code of its own before the
/// program runs, having printed nothing: the error the user reads, once,
/// in place of "exited with code N".
pub(crate) struct RunnerExit {
    pub code: i32,
    pub error: String,
}

/// Runs the program `launch` starts against a fresh monitor server for
/// `monitor`; `Err` is the program's failure, in words for the user.
pub(crate) async fn run(
    monitor: Monitor,
    options: &RunOptions,
    working_dir: PathBuf,
    language: &str,
    runner_exit: Option<RunnerExit>,
    launch: impl FnOnce(&Session) -> Result<Launch, String>,
) -> Result<(), String> {
    let server_options = MonitorServerOptions {
        organization: options.organization.clone(),
        config: options.config.clone(),
        config_secret_keys: options.config_secret_keys.clone(),
        verbose: options.verbose,
        working_directory: working_dir,
    };
    let session = Session {
        address: String::new(),
        project: monitor.project().to_owned(),
        stack: monitor.stack().to_owned(),
        preview: monitor.is_preview(),
        parallel: 0,
    };
    let cancel = monitor.cancellation().clone();
    let server = MonitorServer::start(monitor, server_options)
        .await
        .map_err(|e| e.to_string())?;
    let session = Session {
        address: server.address(),
        parallel: server.parallel(),
        ..session
    };
    let launch = launch(&session)?;
    let config = serde_json::to_string(&options.config).map_err(|e| e.to_string())?;
    let secret_keys =
        serde_json::to_string(&options.config_secret_keys).map_err(|e| e.to_string())?;
    let (mut child, leader, resume) = match launch {
        Launch::Spawn(mut cmd) => {
            cmd.env("PULUMI_CONFIG", config)
                .env("PULUMI_CONFIG_SECRET_KEYS", secret_keys)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let program = format!("{:?}", cmd.as_std().get_program());
            let child = cmd
                .spawn()
                .map_err(|e| format!("cannot start the {language} program with {program}: {e}"))?;
            let leader = GroupLeader::new(child.id());
            (child, leader, None)
        }
        Launch::Resume {
            child,
            leader,
            args,
        } => {
            let env = serde_json::json!({
                "PULUMI_CONFIG": config,
                "PULUMI_CONFIG_SECRET_KEYS": secret_keys,
            });
            let mut line = serde_json::to_vec(&serde_json::json!({ "args": args, "env": env }))
                .map_err(|e| e.to_string())?;
            line.push(b'\n');
            (child, leader, Some(line))
        }
    };

    let server = Arc::new(server);
    let tail = Arc::new(Mutex::new(Tail::default()));
    let mut readers = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        readers.push(tokio::spawn(forward(stdout, Arc::clone(&server), None)));
    }
    if let Some(stderr) = child.stderr.take() {
        readers.push(tokio::spawn(forward(
            stderr,
            Arc::clone(&server),
            Some(Arc::clone(&tail)),
        )));
    }
    if let (Some(line), Some(mut stdin)) = (resume, child.stdin.take()) {
        // A runner that has died already cannot take it; its exit status
        // and stderr say why.
        let _ = stdin.write_all(&line).await;
    }
    // Once the user stops the operation, the program is not waited for:
    // its process group is ended.
    let status = tokio::select! {
        status = child.wait() => status,
        () = cancel.stopped() => {
            leader.signal(Signal::Kill);
            child.wait().await
        }
    };
    // Whatever the program left running in its group ends with it.
    drop(leader);
    for mut reader in readers {
        // A process the program left behind may hold the pipes open.
        if tokio::time::timeout(OUTPUT_GRACE, &mut reader)
            .await
            .is_err()
        {
            reader.abort();
            let _ = reader.await;
        }
    }
    let errors = server.error_messages();
    if let Ok(server) = Arc::try_unwrap(server) {
        server.shutdown().await;
    }
    let stderr_tail = tail.lock().unwrap_or_else(|p| p.into_inner()).text();
    let status = status.map_err(|e| format!("waiting for the {language} program: {e}"))?;
    if let Some(r) = runner_exit {
        if status.code() == Some(r.code) && stderr_tail.is_empty() && errors.is_empty() {
            return Err(r.error);
        }
    }
    outcome(language, status, &errors, &stderr_tail)
}

/// The result of a program by its exit status.
fn outcome(
    language: &str,
    status: ExitStatus,
    errors: &[String],
    stderr_tail: &str,
) -> Result<(), String> {
    let with_stderr = |head: String| {
        if stderr_tail.is_empty() {
            head
        } else {
            format!("{head}; its stderr ends with:\n{stderr_tail}")
        }
    };
    match status.code() {
        Some(0) => Ok(()),
        Some(EXIT_REPORTED) if !errors.is_empty() => {
            Err(converge_engine::events::strip_ansi(&errors.join("\n")))
        }
        Some(EXIT_REPORTED) => Err(with_stderr(format!("the {language} program failed"))),
        Some(code) => Err(with_stderr(format!(
            "the {language} program exited with code {code}"
        ))),
        None => Err(with_stderr(format!(
            "the {language} program was killed ({status})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colours() {
        assert_eq!(
            converge_engine::events::strip_ansi(
                "at f \u{1b}[90m(/x/\u{1b}[39mindex.js:8:11\u{1b}[90m)\u{1b}[39m"
            ),
            "at f (/x/index.js:8:11)"
        );
    }

    #[test]
    fn reads_main_and_runtime_options() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("Pulumi.yaml"),
            "name: proj\nruntime:\n  name: python\n  options:\n    virtualenv: venv\n    typescript: false\nmain: src/\n",
        )
        .unwrap();
        let s = ProjectSettings::load(dir.path()).unwrap();
        assert_eq!(s.main.as_deref(), Some("src/"));
        assert_eq!(s.runtime_option("virtualenv"), Some("venv"));
        assert_eq!(s.runtime_option("typescript"), Some("false"));
        assert_eq!(s.program_path(), dir.path().join("src/"));
    }

    #[test]
    fn a_plain_runtime_and_no_project_file_have_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let s = ProjectSettings::load(dir.path()).unwrap();
        assert_eq!(s.main, None);
        assert_eq!(s.working_dir(), dir.path());
        std::fs::write(dir.path().join("Pulumi.yaml"), "name: p\nruntime: python\n").unwrap();
        let s = ProjectSettings::load(dir.path()).unwrap();
        assert!(s.runtime_options.is_empty());
        std::fs::write(dir.path().join("Pulumi.yaml"), "name: [\n").unwrap();
        assert!(matches!(
            ProjectSettings::load(dir.path()),
            Err(LanguageError::Yaml(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn exit_codes() {
        use std::os::unix::process::ExitStatusExt;
        let code = |c: i32| ExitStatus::from_raw(c << 8);
        assert_eq!(outcome("python", code(0), &[], ""), Ok(()));
        assert_eq!(
            outcome("python", code(32), &["boom".to_owned()], "noise"),
            Err("boom".to_owned())
        );
        assert_eq!(
            outcome("python", code(1), &[], "Traceback\nValueError: x"),
            Err(
                "the python program exited with code 1; its stderr ends with:\nTraceback\nValueError: x"
                    .to_owned()
            )
        );
        assert_eq!(
            outcome("nodejs", code(32), &[], ""),
            Err("the nodejs program failed".to_owned())
        );
    }
}

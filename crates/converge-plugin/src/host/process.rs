//! One running plugin process: launch, port handshake, output forwarding,
//! Cancel-then-kill shutdown, kill on drop.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use converge_proto::pulumirpc::resource_provider_client::ResourceProviderClient;
use converge_proto::pulumirpc::{ProviderHandshakeRequest, ProviderHandshakeResponse};
use converge_proto::MessageLimits;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tonic::transport::{Channel, Endpoint};

use super::{PluginLogLine, PluginLogSource, PluginLogger};
use crate::child::{lock, signal_group, snapshot, stderr_note, truncate, GroupLeader, Signal};

/// How many of a plugin's last stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 20;

/// How a plugin is started: `program`, then `args`, then the engine
/// address. An installed plugin is its executable with no arguments; a
/// dynamic provider is an interpreter running the SDK's provider module.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PluginCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Where it runs (default: the loader's working directory,
    /// `PluginLoaderOptions::working_dir`).
    pub working_dir: Option<PathBuf>,
}

impl PluginCommand {
    /// An installed plugin executable.
    pub fn executable(path: impl Into<PathBuf>) -> Self {
        PluginCommand {
            program: path.into(),
            args: Vec::new(),
            working_dir: None,
        }
    }
}

impl fmt::Display for PluginCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.program.display())?;
        for arg in &self.args {
            write!(f, " {}", arg.to_string_lossy())?;
        }
        Ok(())
    }
}

/// What a launch needs besides the command.
#[derive(Clone)]
pub(crate) struct LaunchSpec {
    pub engine_address: String,
    pub startup_timeout: Duration,
    pub env: Vec<(OsString, OsString)>,
    pub working_dir: Option<PathBuf>,
    pub logger: Option<PluginLogger>,
}

/// Why a plugin could not be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error("could not start plugin {plugin}: {message}")]
    Spawn { plugin: String, message: String },
    #[error("plugin {plugin} exited before printing its port ({status}){}", stderr_note(.stderr))]
    Exited {
        plugin: String,
        status: String,
        stderr: Vec<String>,
    },
    #[error("plugin {plugin} printed {line:?} instead of its port on the first line of stdout{}", stderr_note(.stderr))]
    BadPort {
        plugin: String,
        line: String,
        stderr: Vec<String>,
    },
    #[error("plugin {plugin} did not print its port within {after:?} (set CONVERGE_PLUGIN_TIMEOUT to wait longer){}", stderr_note(.stderr))]
    Timeout {
        plugin: String,
        after: Duration,
        stderr: Vec<String>,
    },
    #[error("the plugin host was shut down")]
    ShutDown,
    #[error("could not start the engine endpoint for plugins: {0}")]
    Engine(String),
    #[error("plugin {plugin} printed port {port} but {message}{}", stderr_note(.stderr))]
    Connect {
        plugin: String,
        port: u16,
        message: String,
        stderr: Vec<String>,
    },
}

/// A running plugin: its gRPC channel and its process.
pub(crate) struct PluginProcess {
    pub package: String,
    pub command: PluginCommand,
    pub pid: Option<u32>,
    pub port: u16,
    channel: Channel,
    child: Mutex<Option<Child>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// The version from `GetPluginInfo` (`None`: unversioned or unanswered).
    pub version: Option<semver::Version>,
    /// The answer to `Handshake`, if the plugin implements it.
    pub handshake: Option<ProviderHandshakeResponse>,
    /// Taken by the first `Configure` (a configured process is not shared).
    claimed: AtomicBool,
    closed: AtomicBool,
    /// The process group's registration, ended after the process.
    _leader: GroupLeader,
}

impl fmt::Debug for PluginProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginProcess")
            .field("package", &self.package)
            .field("command", &self.command)
            .field("pid", &self.pid)
            .field("port", &self.port)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl PluginProcess {
    /// Runs `plugin` with the engine address as its last argument, reads
    /// its port from the first line of stdout, connects, and asks
    /// `GetPluginInfo` and `Handshake` (both optional for the plugin).
    pub async fn launch(
        package: &str,
        plugin: &PluginCommand,
        spec: &LaunchSpec,
    ) -> Result<PluginProcess, LaunchError> {
        let mut command = Command::new(&plugin.program);
        command
            .args(&plugin.args)
            .arg(&spec.engine_address)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &spec.env {
            command.env(k, v);
        }
        if let Some(dir) = plugin.working_dir.as_ref().or(spec.working_dir.as_ref()) {
            command.current_dir(dir);
        }
        // Its own process group: a plugin that is a wrapper script dies
        // with its children, and the terminal's Ctrl-C reaches Converge
        // (which cancels) rather than the plugins.
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|e| LaunchError::Spawn {
            plugin: plugin.to_string(),
            message: e.to_string(),
        })?;
        let pid = child.id();
        // From here on, the group is ended on every path: killed with the
        // leader on a failed start, and reached on Converge's exit.
        let leader = GroupLeader::new(pid);
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_task = child.stderr.take().map(|stderr| {
            forward(
                stderr,
                package,
                pid,
                PluginLogSource::Stderr,
                spec.logger.clone(),
                Some(tail.clone()),
            )
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();

        let first = tokio::time::timeout(spec.startup_timeout, stdout.next_line()).await;
        let port = match first {
            Ok(Ok(Some(line))) => match line.trim().parse::<u16>() {
                Ok(port) if port != 0 => port,
                _ => {
                    signal_group(pid, Signal::Kill);
                    let _ = child.start_kill();
                    let stderr = settle(pid, &mut child, stderr_task, &tail).await.1;
                    return Err(LaunchError::BadPort {
                        plugin: plugin.to_string(),
                        line: truncate(&line, 200),
                        stderr,
                    });
                }
            },
            Ok(Err(e)) => {
                signal_group(pid, Signal::Kill);
                let _ = child.start_kill();
                let stderr = settle(pid, &mut child, stderr_task, &tail).await.1;
                return Err(LaunchError::BadPort {
                    plugin: plugin.to_string(),
                    line: format!("<unreadable: {e}>"),
                    stderr,
                });
            }
            Ok(Ok(None)) => {
                let (status, stderr) = settle(pid, &mut child, stderr_task, &tail).await;
                return Err(LaunchError::Exited {
                    plugin: plugin.to_string(),
                    status: status.map_or_else(|| "still running".to_owned(), |s| s.to_string()),
                    stderr,
                });
            }
            Err(_) => {
                signal_group(pid, Signal::Kill);
                let _ = child.start_kill();
                let stderr = settle(pid, &mut child, stderr_task, &tail).await.1;
                return Err(LaunchError::Timeout {
                    plugin: plugin.to_string(),
                    after: spec.startup_timeout,
                    stderr,
                });
            }
        };
        // Keep draining stdout so that a chatty plugin never blocks on it.
        tokio::spawn(forward_lines(
            stdout,
            package.to_owned(),
            pid,
            PluginLogSource::Stdout,
            spec.logger.clone(),
            None,
        ));

        let connect_error =
            |message: String, tail: &Arc<Mutex<VecDeque<String>>>| LaunchError::Connect {
                plugin: plugin.to_string(),
                port,
                message,
                stderr: snapshot(tail),
            };
        let channel = match connect(port, spec.startup_timeout).await {
            Ok(channel) => channel,
            Err(e) => {
                signal_group(pid, Signal::Kill);
                let _ = child.start_kill();
                return Err(connect_error(
                    format!("could not be connected to: {e}"),
                    &tail,
                ));
            }
        };
        // From here on, dropping `process` (on any error) kills the group.
        let mut process = PluginProcess {
            package: package.to_owned(),
            command: plugin.clone(),
            pid,
            port,
            channel,
            child: Mutex::new(Some(child)),
            stderr_tail: tail.clone(),
            version: None,
            handshake: None,
            claimed: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            _leader: leader,
        };
        let mut client = process.client();
        let unanswered = |call: &str| {
            format!(
                "did not answer {call} within {:?} (set CONVERGE_PLUGIN_TIMEOUT to wait longer)",
                spec.startup_timeout
            )
        };
        let info = tokio::time::timeout(spec.startup_timeout, client.get_plugin_info(()))
            .await
            .map_err(|_| connect_error(unanswered("GetPluginInfo"), &tail))?;
        process.version = match info {
            Ok(info) => parse_version(&info.into_inner().version),
            Err(s) if s.code() == tonic::Code::Unimplemented => None,
            Err(s) => {
                return Err(connect_error(
                    format!("GetPluginInfo failed: {}", s.message()),
                    &tail,
                ))
            }
        };
        let handshake = client.handshake(ProviderHandshakeRequest {
            engine_address: spec.engine_address.clone(),
            configure_with_urn: true,
            ..ProviderHandshakeRequest::default()
        });
        process.handshake = match tokio::time::timeout(spec.startup_timeout, handshake).await {
            Ok(Ok(r)) => Some(r.into_inner()),
            Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => None,
            Ok(Err(s)) => {
                return Err(connect_error(
                    format!("Handshake failed: {}", s.message()),
                    &tail,
                ))
            }
            Err(_) => return Err(connect_error(unanswered("Handshake"), &tail)),
        };
        let version = &process.version;
        tracing::debug!(package, command = %plugin, ?pid, port, ?version, "plugin started");
        Ok(process)
    }

    /// A client on this process's channel, with Pulumi's message limits.
    pub fn client(&self) -> ResourceProviderClient<Channel> {
        ResourceProviderClient::new(self.channel.clone()).with_message_limits()
    }

    /// Takes this process for one configured provider; false if another
    /// provider already took it.
    pub fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::SeqCst)
    }

    pub fn is_claimed(&self) -> bool {
        self.claimed.load(Ordering::SeqCst)
    }

    /// The plugin's last stderr lines.
    pub fn stderr_tail(&self) -> Vec<String> {
        snapshot(&self.stderr_tail)
    }

    /// How the process ended, if it has.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        let mut child = lock(&self.child);
        child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// True once the process was shut down or killed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// If the process is gone: how (exit status and last stderr lines),
    /// to explain a failed call.
    pub fn death_note(&self) -> Option<String> {
        if self.is_closed() {
            return Some(" (the plugin was shut down)".to_owned());
        }
        self.exit_status().map(|status| {
            format!(
                " (plugin {} exited: {status}){}",
                self.command,
                stderr_note(&self.stderr_tail())
            )
        })
    }

    /// Sends `Cancel`; then, as Pulumi, SIGINT (the Go SDK's cue for a
    /// graceful exit); waits until `grace` has passed since the start for
    /// the process to exit; then kills its process group and reaps it.
    /// Idempotent.
    pub async fn shutdown(&self, grace: Duration) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let deadline = tokio::time::Instant::now() + grace;
        let mut client = self.client();
        let _ = tokio::time::timeout_at(deadline, client.cancel(())).await;
        drop(client);
        let child = lock(&self.child).take();
        if let Some(mut child) = child {
            signal_group(self.pid, Signal::Interrupt);
            let exited = tokio::time::timeout_at(deadline, child.wait()).await;
            signal_group(self.pid, Signal::Kill);
            if exited.is_err() {
                let _ = child.start_kill();
                let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            }
        }
        tracing::debug!(package = self.package, pid = ?self.pid, "plugin shut down");
    }

    /// Kills the process group without ceremony (drop, loader drop).
    pub fn kill(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Some(child) = lock(&self.child).as_mut() {
            if !matches!(child.try_wait(), Ok(Some(_))) {
                signal_group(self.pid, Signal::Kill);
                let _ = child.start_kill();
            }
        }
    }
}

impl Drop for PluginProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `v1.2.3` or `1.2.3`; anything else (empty, garbage) is unversioned.
pub(crate) fn parse_version(text: &str) -> Option<semver::Version> {
    let text = text.trim();
    semver::Version::parse(text.strip_prefix('v').unwrap_or(text)).ok()
}

/// After a failed start: the exit status (waiting briefly) and the stderr
/// lines written until the pipe closed (waiting briefly).
async fn settle(
    pid: Option<u32>,
    child: &mut Child,
    stderr_task: Option<JoinHandle<()>>,
    tail: &Arc<Mutex<VecDeque<String>>>,
) -> (Option<ExitStatus>, Vec<String>) {
    let status = tokio::time::timeout(Duration::from_secs(2), child.wait())
        .await
        .ok()
        .and_then(Result::ok);
    if status.is_none() {
        signal_group(pid, Signal::Kill);
        let _ = child.start_kill();
    }
    if let Some(task) = stderr_task {
        let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
    }
    (status, snapshot(tail))
}

async fn connect(port: u16, timeout: Duration) -> Result<Channel, tonic::transport::Error> {
    let endpoint = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))?
        .connect_timeout(timeout.min(Duration::from_secs(10)))
        .tcp_nodelay(true);
    // The port is printed once the plugin listens; retry briefly anyway.
    let mut attempt = 0;
    loop {
        match endpoint.connect().await {
            Ok(channel) => return Ok(channel),
            Err(e) if attempt >= 10 => return Err(e),
            Err(_) => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(50 * attempt)).await;
            }
        }
    }
}

fn forward<R: AsyncRead + Unpin + Send + 'static>(
    reader: R,
    package: &str,
    pid: Option<u32>,
    source: PluginLogSource,
    logger: Option<PluginLogger>,
    tail: Option<Arc<Mutex<VecDeque<String>>>>,
) -> JoinHandle<()> {
    tokio::spawn(forward_lines(
        BufReader::new(reader).lines(),
        package.to_owned(),
        pid,
        source,
        logger,
        tail,
    ))
}

/// Forwards every line to `tracing` and the logger; keeps the last lines in
/// `tail`.
async fn forward_lines<R: tokio::io::AsyncBufRead + Unpin>(
    mut lines: tokio::io::Lines<R>,
    package: String,
    pid: Option<u32>,
    source: PluginLogSource,
    logger: Option<PluginLogger>,
    tail: Option<Arc<Mutex<VecDeque<String>>>>,
) {
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "converge_plugin::host", package, ?pid, ?source, "{line}");
        if let Some(tail) = &tail {
            let mut tail = lock(tail);
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line.clone());
        }
        if let Some(logger) = &logger {
            logger(&PluginLogLine {
                package: Some(package.clone()),
                pid,
                source,
                message: line,
            });
        }
    }
}

//! A running policy pack: its process (in its own process group,
//! registered with [`GroupLeader`] so that every exit path of Converge
//! ends it), the port it prints, and the `pulumirpc.Analyzer` calls.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use converge_proto::pulumirpc::analyzer_client::AnalyzerClient;
use converge_proto::pulumirpc::{AnalyzerHandshakeRequest, AnalyzerStackConfigureRequest};
use converge_proto::MessageLimits;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tonic::transport::{Channel, Endpoint};

use super::config::{self, ConfigError, PackConfig, PolicyConfig};
use super::pack::{PackError, PolicyPackDir};
use super::{
    wire, AnalyzedResource, Analyzer, AnalyzerError, PackInfo, PolicyDiagnostic, Remediation,
    StackResource,
};
use crate::child::{lock, snapshot, stderr_note, truncate, GroupLeader};
use crate::host::engine::LocalEngine;

/// How many of a pack's last stderr lines are kept for errors.
const STDERR_TAIL_LINES: usize = 20;

/// What starting a pack needs besides the pack.
#[derive(Debug, Clone)]
pub struct PackStartOptions {
    pub stack: String,
    pub project: String,
    pub organization: String,
    /// A preview (`PULUMI_DRY_RUN`, `ConfigureStack.dry_run`).
    pub dry_run: bool,
    /// How long the pack has to print its port and answer its first calls.
    pub startup_timeout: Duration,
    /// The stack's tags, which policies may read.
    pub tags: BTreeMap<String, String>,
}

/// Why a pack could not be started or configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackStartError {
    #[error(transparent)]
    Pack(#[from] PackError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("policy pack {dir}: could not start {program}: {message}")]
    Spawn {
        dir: PathBuf,
        program: String,
        message: String,
    },
    #[error("policy pack {dir}: {message}{}", stderr_note(.stderr))]
    Start {
        dir: PathBuf,
        message: String,
        stderr: Vec<String>,
    },
}

/// A policy pack's running process and what it said of itself.
pub struct PolicyPackProcess {
    dir: PathBuf,
    info: PackInfo,
    channel: Channel,
    /// Each policy's level and settings, as the pack was configured.
    config: BTreeMap<String, PolicyConfig>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    _child: Child,
    _leader: GroupLeader,
    _engine: Arc<LocalEngine>,
}

impl std::fmt::Debug for PolicyPackProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyPackProcess")
            .field("dir", &self.dir)
            .field("pack", &self.info.label())
            .finish_non_exhaustive()
    }
}

impl PolicyPackProcess {
    /// Starts the pack in `pack`, asks what it is (`GetAnalyzerInfo`),
    /// resolves and validates each policy's configuration with `config`
    /// (a `--policy-pack-config` file), and configures it. Every failure
    /// names the pack and comes before any resource is looked at.
    pub async fn start(
        pack: &PolicyPackDir,
        config: Option<&PackConfig>,
        options: &PackStartOptions,
    ) -> Result<PolicyPackProcess, PackStartError> {
        let engine =
            Arc::new(
                LocalEngine::start(None)
                    .await
                    .map_err(|e| PackStartError::Start {
                        dir: pack.dir.clone(),
                        message: format!("could not start the engine endpoint for it: {e}"),
                        stderr: Vec::new(),
                    })?,
            );
        let command = pack.command(&engine.address())?;
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .envs(command.env.iter().cloned())
            .envs(pack_environment(options))
            .current_dir(&pack.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| PackStartError::Spawn {
            dir: pack.dir.clone(),
            program: command.program.display().to_string(),
            message: e.to_string(),
        })?;
        let leader = GroupLeader::new(child.id());
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_tail(BufReader::new(stderr), Some(tail.clone())));
        }
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        let fail = |message: String, tail: &Arc<Mutex<VecDeque<String>>>| PackStartError::Start {
            dir: pack.dir.clone(),
            message,
            stderr: snapshot(tail),
        };
        let first = tokio::time::timeout(options.startup_timeout, stdout.next_line()).await;
        let port = match first {
            Ok(Ok(Some(line))) => match line.trim().parse::<u16>() {
                Ok(port) if port != 0 => port,
                _ => {
                    let _ = child.wait().await;
                    settle().await;
                    return Err(fail(
                        format!(
                            "printed {:?} instead of its port on the first line of stdout",
                            truncate(&line, 200)
                        ),
                        &tail,
                    ));
                }
            },
            Ok(Ok(None)) | Ok(Err(_)) => {
                let status = child.wait().await.map(|s| s.to_string()).unwrap_or_default();
                settle().await;
                return Err(fail(
                    format!("exited before printing its port ({status})"),
                    &tail,
                ));
            }
            Err(_) => {
                return Err(fail(
                    format!(
                        "did not print its port within {:?} (set CONVERGE_PLUGIN_TIMEOUT to wait longer)",
                        options.startup_timeout
                    ),
                    &tail,
                ))
            }
        };
        tokio::spawn(keep_tail(stdout.into_inner(), None));
        let channel = connect(port, options.startup_timeout).await.map_err(|e| {
            fail(
                format!("printed port {port} but could not be connected to: {e}"),
                &tail,
            )
        })?;
        let mut client = AnalyzerClient::new(channel.clone()).with_message_limits();
        let timeout = options.startup_timeout;
        let call_error = |call: &str, e: String| fail(format!("{call} failed: {e}"), &tail);
        // Handshake is optional: the SDKs' packs do not implement it.
        let handshake = client.handshake(AnalyzerHandshakeRequest {
            engine_address: engine.address(),
            root_directory: Some(pack.dir.display().to_string()),
            program_directory: Some(pack.dir.display().to_string()),
        });
        match tokio::time::timeout(timeout, handshake).await {
            Ok(Ok(_)) => {}
            Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => {}
            Ok(Err(s)) => return Err(call_error("Handshake", s.message().to_owned())),
            Err(_) => return Err(call_error("Handshake", "no answer".to_owned())),
        }
        let info = match tokio::time::timeout(timeout, client.get_analyzer_info(())).await {
            Ok(Ok(r)) => r.into_inner(),
            Ok(Err(s)) => return Err(call_error("GetAnalyzerInfo", s.message().to_owned())),
            Err(_) => return Err(call_error("GetAnalyzerInfo", "no answer".to_owned())),
        };
        let mut info = wire::pack_info(info, pack.version.as_deref());
        let resolved = config::resolve(&info, config)?;
        // From here on, each policy's level is the one in effect.
        for policy in &mut info.policies {
            if let Some(level) = resolved.get(&policy.name).and_then(|c| c.enforcement_level) {
                policy.enforcement_level = level;
            }
        }
        let configure = client.configure(wire::configure(&resolved));
        match tokio::time::timeout(timeout, configure).await {
            Ok(Ok(_)) => {}
            Ok(Err(s)) => return Err(call_error("Configure", s.message().to_owned())),
            Err(_) => return Err(call_error("Configure", "no answer".to_owned())),
        }
        let stack = client.configure_stack(AnalyzerStackConfigureRequest {
            stack: options.stack.clone(),
            project: options.project.clone(),
            organization: options.organization.clone(),
            dry_run: options.dry_run,
            tags: options.tags.clone().into_iter().collect(),
            ..AnalyzerStackConfigureRequest::default()
        });
        match tokio::time::timeout(timeout, stack).await {
            Ok(Ok(_)) => {}
            Ok(Err(s)) if s.code() == tonic::Code::Unimplemented => {}
            Ok(Err(s)) => return Err(call_error("ConfigureStack", s.message().to_owned())),
            Err(_) => return Err(call_error("ConfigureStack", "no answer".to_owned())),
        }
        Ok(PolicyPackProcess {
            dir: pack.dir.clone(),
            info,
            channel,
            config: resolved,
            stderr_tail: tail,
            _child: child,
            _leader: leader,
            _engine: engine,
        })
    }

    /// Each policy's level and settings, as the pack was configured.
    pub fn config(&self) -> &BTreeMap<String, PolicyConfig> {
        &self.config
    }

    fn client(&self) -> AnalyzerClient<Channel> {
        AnalyzerClient::new(self.channel.clone()).with_message_limits()
    }

    fn call_error(&self, call: &'static str, status: &tonic::Status) -> AnalyzerError {
        let tail = snapshot(&self.stderr_tail);
        AnalyzerError::Call {
            pack: self.info.label(),
            call,
            message: format!("{}{}", status.message(), stderr_note(&tail)),
        }
    }

    fn values_error(&self, call: &'static str, message: String) -> AnalyzerError {
        AnalyzerError::Values {
            pack: self.info.label(),
            call,
            message,
        }
    }
}

#[async_trait]
impl Analyzer for PolicyPackProcess {
    fn info(&self) -> &PackInfo {
        &self.info
    }

    async fn remediate(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<Remediation>, AnalyzerError> {
        let request =
            wire::analyze_request(resource).map_err(|m| self.values_error("Remediate", m))?;
        let response = self
            .client()
            .remediate(request)
            .await
            .map_err(|s| self.call_error("Remediate", &s))?;
        wire::remediations(&self.info, response.into_inner())
            .map_err(|m| self.values_error("Remediate", m))
    }

    async fn analyze(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError> {
        let request =
            wire::analyze_request(resource).map_err(|m| self.values_error("Analyze", m))?;
        let response = self
            .client()
            .analyze(request)
            .await
            .map_err(|s| self.call_error("Analyze", &s))?;
        Ok(wire::diagnostics(&self.info, response.into_inner()))
    }

    async fn analyze_stack(
        &self,
        resources: &[StackResource],
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError> {
        let request =
            wire::stack_request(resources).map_err(|m| self.values_error("AnalyzeStack", m))?;
        let response = self
            .client()
            .analyze_stack(request)
            .await
            .map_err(|s| self.call_error("AnalyzeStack", &s))?;
        Ok(wire::diagnostics(&self.info, response.into_inner()))
    }
}

/// Gives a pack that exited a moment to flush its stderr into the tail.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(100)).await;
}

/// Reads a pack's output to its end (so that it never blocks on a full
/// pipe), keeping the last lines in `tail` when given.
async fn keep_tail<R: tokio::io::AsyncBufRead + Unpin>(
    reader: R,
    tail: Option<Arc<Mutex<VecDeque<String>>>>,
) {
    let mut lines = reader.lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "converge::policy", "{line}");
        if let Some(tail) = &tail {
            let mut t = lock(tail);
            if t.len() == STDERR_TAIL_LINES {
                t.pop_front();
            }
            t.push_back(line);
        }
    }
}

async fn connect(port: u16, timeout: Duration) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_shared(format!("http://127.0.0.1:{port}"))?
        .connect_timeout(timeout)
        .connect()
        .await
}

/// What a pack is told of the stack through its environment, as the
/// SDKs' packs read it.
fn pack_environment(options: &PackStartOptions) -> Vec<(OsString, OsString)> {
    vec![
        ("PULUMI_PROJECT".into(), options.project.clone().into()),
        ("PULUMI_STACK".into(), options.stack.clone().into()),
        (
            "PULUMI_ORGANIZATION".into(),
            options.organization.clone().into(),
        ),
        ("PULUMI_DRY_RUN".into(), options.dry_run.to_string().into()),
    ]
}

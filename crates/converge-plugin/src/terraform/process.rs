//! One running Terraform provider: launched the go-plugin way, its
//! handshake line read and checked, connected over TLS (unix socket or
//! tcp), its stderr logged through `tracing`, asked to exit with
//! `GRPCController.Shutdown` and killed after a grace period, killed on drop.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use converge_proto::plugin::grpc_controller_client::GrpcControllerClient;
use converge_proto::plugin::Empty;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio::process::{Child, Command};
use tonic::transport::{Channel, Endpoint, Uri};

use super::handshake::{Handshake, HandshakeError, Network, PROTOCOL_VERSIONS};
use super::tls::{ClientCertificate, ServerKey, TlsError};
use crate::child::{lock, signal_group, snapshot, stderr_note, truncate, GroupLeader, Signal};

/// go-plugin's magic cookie for Terraform providers (Go providers exit
/// without it).
pub const MAGIC_COOKIE_KEY: &str = "TF_PLUGIN_MAGIC_COOKIE";
pub const MAGIC_COOKIE_VALUE: &str =
    "d602bf8f470bc67ca7faa0386276bbdd4330efaf76d1a219cb4d6991ca9872b2";

/// How many of a provider's last stderr lines are kept for error messages.
const STDERR_TAIL_LINES: usize = 20;

/// How a provider is launched.
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// Plugin protocol versions we speak, sent in `PLUGIN_PROTOCOL_VERSIONS`.
    pub protocol_versions: Vec<u32>,
    /// How long the provider may take to print its handshake line and to
    /// accept the connection.
    pub handshake_timeout: Duration,
    /// Extra environment variables.
    pub env: Vec<(OsString, OsString)>,
    pub working_dir: Option<PathBuf>,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        LaunchOptions {
            protocol_versions: PROTOCOL_VERSIONS.to_vec(),
            handshake_timeout: Duration::from_secs(30),
            env: Vec::new(),
            working_dir: None,
        }
    }
}

/// Why a provider could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("could not start Terraform provider {provider}: {message}")]
    Spawn { provider: String, message: String },
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("Terraform provider {provider} exited before its handshake ({status}){}", stderr_note(.stderr))]
    Exited {
        provider: String,
        status: String,
        stderr: Vec<String>,
    },
    #[error("Terraform provider {provider} speaks plugin protocol {found}, and Converge speaks {} (tfplugin{}): use a release of the provider that speaks one of them", join(.accepted, " and "), join(.accepted, "/"))]
    Protocol {
        provider: String,
        found: String,
        accepted: Vec<u32>,
    },
    #[error("Terraform provider {provider} printed a bad handshake line {line:?}: {source}{}", stderr_note(.stderr))]
    Handshake {
        provider: String,
        line: String,
        source: HandshakeError,
        stderr: Vec<String>,
    },
    #[error("could not read the handshake line of Terraform provider {provider}: {message}{}", stderr_note(.stderr))]
    Unreadable {
        provider: String,
        message: String,
        stderr: Vec<String>,
    },
    #[error("Terraform provider {provider} did not print its handshake line within {after:?}{}", stderr_note(.stderr))]
    Timeout {
        provider: String,
        after: Duration,
        stderr: Vec<String>,
    },
    #[error("Terraform provider {provider} listens on {address} but could not be connected to: {message}{}", stderr_note(.stderr))]
    Connect {
        provider: String,
        address: String,
        message: String,
        stderr: Vec<String>,
    },
}

/// A running provider and its gRPC channel.
#[derive(Debug)]
pub struct ProviderProcess {
    provider: String,
    pid: Option<u32>,
    handshake: Handshake,
    channel: Channel,
    child: Mutex<Option<Child>>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Registers the provider's process group from its spawn on, so that
    /// Converge's exit paths reach it whatever happens to this value.
    _leader: GroupLeader,
}

impl ProviderProcess {
    /// Runs `executable` with the go-plugin environment, reads and checks
    /// its handshake line, and connects. On any failure the process is
    /// killed and reaped.
    pub async fn launch(
        executable: &Path,
        options: &LaunchOptions,
    ) -> Result<ProviderProcess, LaunchError> {
        let provider = executable.display().to_string();
        let identity = ClientCertificate::generate()?;
        let versions = options
            .protocol_versions
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut command = Command::new(executable);
        command
            .env(MAGIC_COOKIE_KEY, MAGIC_COOKIE_VALUE)
            .env("PLUGIN_PROTOCOL_VERSIONS", versions)
            .env("PLUGIN_CLIENT_CERT", identity.pem())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &options.env {
            command.env(k, v);
        }
        if let Some(dir) = &options.working_dir {
            command.current_dir(dir);
        }
        // Its own process group: a wrapper script dies with its children.
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|e| LaunchError::Spawn {
            provider: provider.clone(),
            message: e.to_string(),
        })?;
        let pid = child.id();
        let leader = GroupLeader::new(pid);
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let stderr_task = child.stderr.take().map(|stderr| {
            tokio::spawn(log_lines(
                stderr,
                provider.clone(),
                "stderr",
                Some(tail.clone()),
            ))
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();

        let first = tokio::time::timeout(options.handshake_timeout, stdout.next_line()).await;
        let failure = match first {
            Ok(Ok(Some(line))) => match Handshake::parse(&line, &options.protocol_versions) {
                Ok(handshake) => Ok(handshake),
                Err(source) => Err(Failure::Handshake(line, source)),
            },
            Ok(Err(e)) => Err(Failure::Unreadable(e.to_string())),
            Ok(Ok(None)) => Err(Failure::Exited),
            Err(_) => Err(Failure::Timeout),
        };
        let handshake = match failure {
            Ok(handshake) => handshake,
            Err(failure) => {
                if !matches!(failure, Failure::Exited) {
                    kill_group(pid, &mut child);
                }
                let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
                if status.is_err() {
                    kill_group(pid, &mut child);
                    let _ = child.wait().await;
                }
                if let Some(task) = stderr_task {
                    let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
                }
                let stderr = snapshot(&tail);
                return Err(match failure {
                    Failure::Handshake(_, HandshakeError::ProtocolVersion { found, accepted }) => {
                        LaunchError::Protocol {
                            provider,
                            found,
                            accepted,
                        }
                    }
                    Failure::Handshake(line, source) => LaunchError::Handshake {
                        provider,
                        line: truncate(&line, 200),
                        source,
                        stderr,
                    },
                    Failure::Unreadable(message) => LaunchError::Unreadable {
                        provider,
                        message,
                        stderr,
                    },
                    Failure::Exited => LaunchError::Exited {
                        provider,
                        status: match status {
                            Ok(Ok(status)) => status.to_string(),
                            _ => "still running, killed".to_owned(),
                        },
                        stderr,
                    },
                    Failure::Timeout => LaunchError::Timeout {
                        provider,
                        after: options.handshake_timeout,
                        stderr,
                    },
                });
            }
        };
        // Keep draining stdout so that a chatty provider never blocks on it.
        tokio::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                tracing::debug!(target: "converge_plugin::terraform", stream = "stdout", "{line}");
            }
        });

        let key = handshake
            .server_certificate
            .as_deref()
            .and_then(|c| ServerKey::of(c).ok());
        let (tls, rejection) = match &handshake.server_certificate {
            Some(cert) => match identity.client_config(cert) {
                Ok((config, rejection)) => (Some(Arc::new(config)), Some(rejection)),
                Err(e) => {
                    kill_group(pid, &mut child);
                    let _ = child.wait().await;
                    return Err(LaunchError::Connect {
                        provider,
                        address: handshake.address.clone(),
                        message: e.to_string(),
                        stderr: snapshot(&tail),
                    });
                }
            },
            None => (None, None),
        };
        let connected = tokio::time::timeout(
            options.handshake_timeout,
            connect(handshake.network, handshake.address.clone(), tls),
        )
        .await;
        let channel = match connected {
            Ok(Ok(channel)) => channel,
            failed => {
                kill_group(pid, &mut child);
                let _ = child.wait().await;
                return Err(LaunchError::Connect {
                    provider,
                    address: handshake.address.clone(),
                    message: match (rejection.and_then(|r| r.reason()), failed) {
                        // The TLS verifier's own words: the one real cause.
                        (Some(reason), _) => format!("TLS handshake refused: {reason}"),
                        (None, Ok(Err(e))) => {
                            let chain = error_chain(&e);
                            match &key {
                                // No signature reached our verifier: the
                                // provider could sign with none of the
                                // schemes of the key it printed.
                                Some(key) if chain.contains("tls handshake") => format!(
                                    "TLS handshake failed ({chain}): Converge offered the \
                                     signature schemes of the {key} in its handshake line and \
                                     it signed with none, most likely because the certificate \
                                     it uses is not the one its handshake line carried"
                                ),
                                _ => chain,
                            }
                        }
                        (None, _) => {
                            format!("no connection within {:?}", options.handshake_timeout)
                        }
                    },
                    stderr: snapshot(&tail),
                });
            }
        };
        tracing::debug!(provider, ?pid, ?handshake.network, address = handshake.address, "Terraform provider started");
        Ok(ProviderProcess {
            provider,
            pid,
            handshake,
            channel,
            child: Mutex::new(Some(child)),
            stderr_tail: tail,
            _leader: leader,
        })
    }

    /// The handshake the provider printed.
    pub fn handshake(&self) -> &Handshake {
        &self.handshake
    }

    /// The gRPC channel to the provider (`tfplugin6.Provider`,
    /// `plugin.GRPCController`, `plugin.GRPCStdio`).
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }

    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The provider's last stderr lines.
    pub fn stderr_tail(&self) -> Vec<String> {
        snapshot(&self.stderr_tail)
    }

    /// Asks the provider to exit with `GRPCController.Shutdown`, waits up to
    /// `grace` for it, then kills its process group; reaps it either way.
    /// Returns how it ended (`None` if it was already shut down).
    pub async fn shutdown(&self, grace: Duration) -> Option<ExitStatus> {
        let mut child = lock(&self.child).take()?;
        let deadline = tokio::time::Instant::now() + grace;
        let mut controller = GrpcControllerClient::new(self.channel.clone());
        // The provider may close the connection before it answers.
        match tokio::time::timeout_at(deadline, controller.shutdown(Empty {})).await {
            Ok(Ok(_)) => {}
            Ok(Err(status)) => {
                tracing::debug!(provider = self.provider, %status, "GRPCController.Shutdown")
            }
            Err(_) => tracing::debug!(
                provider = self.provider,
                "GRPCController.Shutdown timed out"
            ),
        }
        let status = match tokio::time::timeout_at(deadline, child.wait()).await {
            Ok(Ok(status)) => {
                // Whatever it started dies with it.
                signal_group(self.pid, Signal::Kill);
                Some(status)
            }
            _ => {
                tracing::warn!(
                    provider = self.provider,
                    "Terraform provider did not exit within {grace:?} of Shutdown; killing it"
                );
                kill_group(self.pid, &mut child);
                child.wait().await.ok()
            }
        };
        tracing::debug!(
            provider = self.provider,
            ?status,
            "Terraform provider shut down"
        );
        status
    }
}

impl Drop for ProviderProcess {
    fn drop(&mut self) {
        if let Some(child) = lock(&self.child).as_mut() {
            if !matches!(child.try_wait(), Ok(Some(_))) {
                kill_group(self.pid, child);
            }
        }
    }
}

enum Failure {
    Handshake(String, HandshakeError),
    Unreadable(String),
    Exited,
    Timeout,
}

trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

/// Connects to the provider's socket, over TLS when it printed a
/// certificate. tonic sees plain `http://localhost`; the connector does
/// the transport and TLS.
async fn connect(
    network: Network,
    address: String,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<Channel, tonic::transport::Error> {
    let connector = tower::service_fn(move |_: Uri| {
        let address = address.clone();
        let tls = tls.clone();
        async move {
            let stream: Box<dyn Io> = match network {
                #[cfg(unix)]
                Network::Unix => Box::new(tokio::net::UnixStream::connect(&address).await?),
                #[cfg(not(unix))]
                Network::Unix => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::Unsupported,
                        "unix sockets are not supported on this platform",
                    ))
                }
                Network::Tcp => {
                    let stream = tokio::net::TcpStream::connect(&address).await?;
                    stream.set_nodelay(true)?;
                    Box::new(stream)
                }
            };
            let stream: Box<dyn Io> = match tls {
                Some(config) => {
                    let name = rustls::pki_types::ServerName::try_from("localhost")
                        .expect("localhost is a valid server name");
                    Box::new(
                        tokio_rustls::TlsConnector::from(config)
                            .connect(name, stream)
                            .await?,
                    )
                }
                None => stream,
            };
            Ok::<_, std::io::Error>(TokioIo::new(stream))
        }
    });
    Endpoint::from_static("http://localhost")
        .connect_with_connector(connector)
        .await
}

fn join(versions: &[u32], separator: &str) -> String {
    versions
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

/// The error and its sources, one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let more = e.to_string();
        // Wrappers often repeat their source's text.
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = e.source();
    }
    text
}

/// Forwards every line to `tracing` (never to our own stdout or stderr);
/// keeps the last lines in `tail`.
async fn log_lines<R: AsyncRead + Unpin>(
    reader: R,
    provider: String,
    stream: &'static str,
    tail: Option<Arc<Mutex<VecDeque<String>>>>,
) {
    let mut lines = BufReader::new(reader).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(target: "converge_plugin::terraform", provider, stream, "{line}");
        if let Some(tail) = &tail {
            let mut tail = lock(tail);
            if tail.len() == STDERR_TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
}

fn kill_group(pid: Option<u32>, child: &mut Child) {
    signal_group(pid, Signal::Kill);
    let _ = child.start_kill();
}

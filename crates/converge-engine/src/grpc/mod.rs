//! The gRPC face of a deployment: Pulumi's `ResourceMonitor` and `Engine`
//! services, served on `127.0.0.1` for a language host's program (seed 000's
//! resource monitor). Every call is unmarshalled into the engine's terms and
//! handed to the same [`Monitor`] in-process programs use; nothing here
//! reaches past it. What is left here is the wire: marshalling, feature
//! negotiation, status codes, the program's log and root resource.
//!
//! - `resource_monitor`: `RegisterResource`, `ReadResource`,
//!   `RegisterResourceOutputs`, `Invoke`, feature negotiation, shutdown.
//! - `construct`: remote components (`RegisterResource` with `remote`) →
//!   [`Monitor::construct`], and `Call` → [`Monitor::call`]; the provider
//!   registers resources back through this server.
//! - `engine_service`: `Log` (→ [`EngineEvent::Diagnostic`]), the root
//!   resource, `RequirePulumiVersion`.
//! - `goals`: requests → [`ResourceGoal`]/[`ReadGoal`], wire aliases →
//!   engine [`Alias`]es (the engine resolves them).
//! - `invoke`: `Invoke` → [`Monitor::invoke`].
//! - `packages`: `RegisterPackage` → [`Monitor::register_package`], and
//!   the `packageRef`s later requests carry.
//! - `transforms`: the program's resource and invoke transforms, called
//!   back through its `Callbacks` service before a registration or invoke
//!   goes on.
//! - `hooks`: the program's resource and error hooks by name, which the
//!   engine's steps run through its `Callbacks` service; the deletions
//!   run when the program signals it is done
//!   (`SignalAndWaitForShutdown`), while it still serves their hooks.
//!
//! Nothing here may hang a program: every method a program may call answers
//! promptly, with `Unimplemented` (or "not supported") where Converge lacks
//! the feature.
//!
//! [`EngineEvent::Diagnostic`]: crate::EngineEvent::Diagnostic
//! [`ResourceGoal`]: crate::ResourceGoal
//! [`ReadGoal`]: crate::ReadGoal
//! [`Alias`]: crate::Alias

mod callbacks;
mod construct;
mod engine_service;
mod goals;
mod hooks;
mod inherited_options;
mod invoke;
mod migrations;
mod output_values;
mod packages;
mod provider_scopes;
mod resource_monitor;
mod transforms;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use converge_proto::pulumirpc::engine_server::EngineServer;
use converge_proto::pulumirpc::resource_monitor_server::ResourceMonitorServer;
use converge_proto::MessageLimits;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::events::Severity;
use crate::goal::ProgramContext;
use crate::monitor::Monitor;

/// The Pulumi version Converge answers to `RequirePulumiVersion`: the
/// engine behaviour it implements is that of this release.
pub const COMPATIBLE_PULUMI_VERSION: &str = "3.272.0";

/// How many error messages a program logged are kept (the last ones).
const KEPT_ERRORS: usize = 20;

/// How long [`MonitorServer::shutdown`] lets in-flight calls finish.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// What the monitor tells the program about its deployment besides what
/// the [`Monitor`] knows (`GetDeploymentInfo`), and how it logs.
#[derive(Debug, Clone, Default)]
pub struct MonitorServerOptions {
    /// The organization (`--organization`); Pulumi's DIY backends use
    /// `organization`.
    pub organization: String,
    /// Configuration, `"<namespace>:<key>"` → value (plaintext).
    pub config: BTreeMap<String, String>,
    /// Which configuration keys are secrets.
    pub config_secret_keys: Vec<String>,
    /// Forward the program's debug-level log messages too.
    pub verbose: bool,
    /// The directory the program runs in: relative paths of file assets
    /// and archives are read under it to hash them (empty: Converge's own
    /// current directory).
    pub working_directory: std::path::PathBuf,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on 127.0.0.1 for the resource monitor: {0}")]
    Bind(#[from] std::io::Error),
}

/// State shared by the services of one server.
#[derive(Debug)]
pub(crate) struct Shared {
    pub monitor: Monitor,
    pub options: MonitorServerOptions,
    /// What component providers are told of the program, with this
    /// server's `127.0.0.1:<port>` (they register their resources here).
    pub program: ProgramContext,
    /// The root resource the program set (`SetRootResource`); else the
    /// monitor's registered stack resource.
    pub root: Mutex<Option<String>>,
    /// The last error messages the program logged, oldest first.
    pub errors: Mutex<Vec<String>>,
    /// The program's transforms, and which registration has which.
    pub transforms: transforms::Transforms,
    /// The program's resource and error hooks, by name.
    pub hooks: Arc<hooks::Hooks>,
    /// The providers each registration names, for invokes parented to it.
    pub provider_scopes: provider_scopes::ProviderScopes,
    /// Each registration's inheritable options, for its children.
    pub inherited: inherited_options::InheritedOptions,
    /// The packages the program registered, by reference.
    pub packages: packages::Packages,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn record_error(&self, message: &str) {
        let mut errors = lock(&self.errors);
        errors.push(message.to_owned());
        let excess = errors.len().saturating_sub(KEPT_ERRORS);
        errors.drain(..excess);
    }
}

/// A running resource monitor + engine server for one program. Dropping it
/// stops the server.
#[derive(Debug)]
pub struct MonitorServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), tonic::transport::Error>>>,
}

impl MonitorServer {
    /// Serves `ResourceMonitor` and `Engine` for `monitor` on a random port
    /// of 127.0.0.1, with 400 MiB message limits.
    pub async fn start(
        monitor: Monitor,
        options: MonitorServerOptions,
    ) -> Result<MonitorServer, ServerError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let incoming =
            tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
        let program = ProgramContext {
            organization: options.organization.clone(),
            config: options.config.clone(),
            config_secret_keys: options.config_secret_keys.clone(),
            monitor_endpoint: addr.to_string(),
        };
        let hooks = Arc::new(hooks::Hooks::default());
        monitor.set_hook_runner(Arc::clone(&hooks) as Arc<dyn crate::hooks::HookRunner>);
        monitor.set_state_migrator(Arc::new(migrations::Migrations::default()));
        let shared = Arc::new(Shared {
            monitor,
            options,
            program,
            root: Mutex::new(None),
            errors: Mutex::new(Vec::new()),
            transforms: transforms::Transforms::default(),
            provider_scopes: provider_scopes::ProviderScopes::default(),
            inherited: inherited_options::InheritedOptions::default(),
            hooks,
            packages: packages::Packages::default(),
        });
        let monitor_service =
            ResourceMonitorServer::new(resource_monitor::ResourceMonitorService {
                shared: Arc::clone(&shared),
            })
            .with_message_limits();
        let engine_service = EngineServer::new(engine_service::EngineService {
            shared: Arc::clone(&shared),
        })
        .with_message_limits();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(monitor_service)
                .add_service(engine_service)
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = rx.await;
                }),
        );
        Ok(MonitorServer {
            addr,
            shared,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// The address to give the program (`--monitor` and `--engine`):
    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// How many resource operations the program may run at once
    /// (`--parallel`).
    pub fn parallel(&self) -> usize {
        self.shared.monitor.parallel()
    }

    /// The error-level messages the program logged, oldest first (the last
    /// few). A program that exits with code 32 has reported its failure
    /// here.
    pub fn error_messages(&self) -> Vec<String> {
        lock(&self.shared.errors).clone()
    }

    /// Reports a message about the program (its output, how it ended) as a
    /// diagnostic of the deployment.
    pub fn diagnostic(&self, severity: Severity, message: impl Into<String>) {
        if severity == Severity::Debug && !self.shared.options.verbose {
            return;
        }
        self.shared.monitor.diagnostic(severity, None, message);
    }

    /// Stops serving and waits until the server is down.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(mut task) = self.task.take() {
            // Graceful: in-flight calls finish. A connection a straggling
            // process keeps open must not hold the deployment up.
            let graceful = tokio::time::timeout(SHUTDOWN_GRACE, &mut task).await;
            if graceful.is_err() {
                task.abort();
            }
        }
    }
}

impl Drop for MonitorServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests;

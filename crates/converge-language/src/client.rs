//! Inline programs: the program an Automation API SDK runs in its own
//! process (`--client ADDR`). The SDK serves `pulumirpc.LanguageRuntime`
//! at ADDR; the engine asks it for the packages the program needs
//! (`GetRequiredPackages`, informational: providers are loaded by package
//! as any program's) and runs the program with `Run`, pointed at a
//! resource monitor started for the run — what `pulumi --client` does.
//!
//! The program's output goes to the SDK's own stdout and stderr; its
//! failure comes back as `RunResponse.error` (and, reported through the
//! engine's log, as error diagnostics).

use async_trait::async_trait;
use converge_engine::grpc::{MonitorServer, MonitorServerOptions};
use converge_engine::{Monitor, Program};
use converge_proto::pulumirpc::language_runtime_client::LanguageRuntimeClient;
use converge_proto::pulumirpc::{GetRequiredPackagesRequest, ProgramInfo, RunRequest};
use converge_proto::MessageLimits;

use crate::process::{ProjectSettings, RunOptions};

/// A program served by the language runtime at an address.
#[derive(Debug, Clone)]
pub struct ClientProgram {
    address: String,
    project: ProjectSettings,
    options: RunOptions,
}

impl ClientProgram {
    /// The program of the runtime at `address` (`HOST:PORT`), for the
    /// project in `project_dir`.
    pub fn new(
        address: impl Into<String>,
        project_dir: impl Into<std::path::PathBuf>,
    ) -> Result<ClientProgram, crate::process::LanguageError> {
        Ok(ClientProgram {
            address: address.into(),
            project: ProjectSettings::load(project_dir)?,
            options: RunOptions::default(),
        })
    }

    /// Configuration, organization, verbosity.
    pub fn with_options(mut self, options: RunOptions) -> ClientProgram {
        self.options = options;
        self
    }

    async fn connect(&self) -> Result<LanguageRuntimeClient<tonic::transport::Channel>, String> {
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", self.address))
            .map_err(|e| format!("--client {}: not an address: {e}", self.address))?;
        let channel = endpoint.connect().await.map_err(|e| {
            format!(
                "cannot reach the program's language runtime at {} (--client): {e}",
                self.address
            )
        })?;
        Ok(LanguageRuntimeClient::new(channel).with_message_limits())
    }

    fn info(&self) -> ProgramInfo {
        let root = self.project.dir.display().to_string();
        ProgramInfo {
            root_directory: root.clone(),
            program_directory: self.project.working_dir().display().to_string(),
            entry_point: ".".to_owned(),
            options: None,
        }
    }
}

#[async_trait]
impl Program for ClientProgram {
    async fn run(&self, monitor: Monitor) -> Result<(), String> {
        let mut client = self.connect().await?;
        // The packages the program names: informational, as the engine
        // loads every provider by package when a registration needs it.
        // A runtime that predates the call answers Unimplemented.
        let packages = client
            .get_required_packages(GetRequiredPackagesRequest {
                info: Some(self.info()),
            })
            .await;
        if let Err(status) = packages {
            if status.code() != tonic::Code::Unimplemented {
                return Err(format!(
                    "the program's language runtime at {} failed: {}",
                    self.address,
                    status.message()
                ));
            }
        }
        let project = monitor.project().to_owned();
        let stack = monitor.stack().to_owned();
        let preview = monitor.is_preview();
        let cancel = monitor.cancellation().clone();
        let server = MonitorServer::start(
            monitor,
            MonitorServerOptions {
                organization: self.options.organization.clone(),
                config: self.options.config.clone(),
                config_secret_keys: self.options.config_secret_keys.clone(),
                verbose: self.options.verbose,
                working_directory: self.project.working_dir(),
            },
        )
        .await
        .map_err(|e| e.to_string())?;
        let address = server.address();
        let request = RunRequest {
            project,
            stack,
            pwd: self.project.working_dir().display().to_string(),
            program: ".".to_owned(),
            // The engine's address, as Pulumi passes it to a runtime.
            args: vec![address.clone()],
            config: self.options.config.clone().into_iter().collect(),
            dry_run: preview,
            parallel: i32::try_from(server.parallel()).unwrap_or(i32::MAX),
            monitor_address: address,
            config_secret_keys: self.options.config_secret_keys.clone(),
            organization: self.options.organization.clone(),
            info: Some(self.info()),
            ..RunRequest::default()
        };
        // Once the user stops the operation, the program is not waited for.
        let response = tokio::select! {
            response = client.run(request) => Some(response),
            () = cancel.stopped() => None,
        };
        let errors = server.error_messages();
        server.shutdown().await;
        let Some(response) = response else {
            return Err("the program was stopped".to_owned());
        };
        let response = response
            .map_err(|status| {
                format!(
                    "the program's language runtime at {} failed: {}",
                    self.address,
                    status.message()
                )
            })?
            .into_inner();
        if response.error.is_empty() {
            return Ok(());
        }
        if !errors.is_empty() && response.bail {
            return Err(errors.join("\n"));
        }
        Err(response.error)
    }
}

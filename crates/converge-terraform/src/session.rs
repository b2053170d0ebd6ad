//! One connection to a Terraform provider: its gRPC client, the process
//! behind it (if Converge started one), its schema and the Pulumi tokens
//! of its resource types and data sources.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use converge_plugin::terraform::process::{LaunchOptions, ProviderProcess};
use converge_plugin::ProviderError;
use converge_proto::tfplugin6 as tf;
use tonic::transport::Channel;

use crate::client::TfClient;

use crate::diagnostics::Findings;
use crate::names::{function_token, resource_token};
use crate::schema::{ProviderSchema, TypeSchema};

/// A channel to a provider, the plugin protocol version it chose (5 or
/// 6), and its process when Converge runs it.
#[derive(Debug)]
pub struct Connection {
    pub channel: Channel,
    pub protocol: u32,
    pub process: Option<ProviderProcess>,
}

/// Opens connections to one provider: one for schema and validation, and
/// one per provider configuration (Terraform configures a provider
/// process once; the loader shares it among instances configured alike).
#[async_trait]
pub trait Connector: Send + Sync + fmt::Debug {
    async fn connect(&self) -> Result<Connection, ProviderError>;
}

/// Starts the provider executable (the go-plugin handshake, AutoMTLS).
#[derive(Debug, Clone)]
pub struct ProcessConnector {
    pub executable: PathBuf,
    pub options: LaunchOptions,
}

#[async_trait]
impl Connector for ProcessConnector {
    async fn connect(&self) -> Result<Connection, ProviderError> {
        let process = ProviderProcess::launch(&self.executable, &self.options)
            .await
            .map_err(|e| ProviderError::Unavailable(e.to_string()))?;
        Ok(Connection {
            channel: process.channel(),
            protocol: process.handshake().protocol_version,
            process: Some(process),
        })
    }
}

/// A resource type or data source by its Pulumi token.
#[derive(Debug, Clone)]
pub struct Member {
    pub tf_type: String,
    pub schema: TypeSchema,
}

/// A connected provider with its schema.
pub struct Session {
    pub package: String,
    client: TfClient,
    process: Option<ProviderProcess>,
    pub schema: Arc<ProviderSchema>,
    /// Pulumi token → resource type.
    pub resources: BTreeMap<String, Member>,
    /// Pulumi token → data source.
    pub functions: BTreeMap<String, Member>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("package", &self.package)
            .field("protocol", &self.client.version())
            .field("pid", &self.process.as_ref().and_then(ProviderProcess::pid))
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Connects and reads the schema (`GetProviderSchema`, which protocol
    /// 6 asks of every new connection before other calls).
    pub async fn open(package: &str, connection: Connection) -> Result<Session, ProviderError> {
        let mut session = Session {
            package: package.to_owned(),
            client: TfClient::new(connection.channel, connection.protocol),
            process: connection.process,
            schema: Arc::default(),
            resources: BTreeMap::new(),
            functions: BTreeMap::new(),
        };
        let response = session
            .client()
            .get_provider_schema(tf::get_provider_schema::Request {})
            .await
            .map_err(|s| session.rpc_error("GetProviderSchema", &s))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, None);
        if findings.has_errors() {
            return Err(ProviderError::Failed(format!(
                "Terraform provider {package}: GetProviderSchema failed: {}",
                findings.error_lines().join("; ")
            )));
        }
        let schema = ProviderSchema::from_response(&response).map_err(|e| {
            ProviderError::Failed(format!("Terraform provider {package}: bad schema: {e}"))
        })?;
        for (tf_type, s) in &schema.resources {
            session.resources.insert(
                resource_token(package, tf_type),
                Member {
                    tf_type: tf_type.clone(),
                    schema: s.clone(),
                },
            );
        }
        for (tf_type, s) in &schema.data_sources {
            session.functions.insert(
                function_token(package, tf_type),
                Member {
                    tf_type: tf_type.clone(),
                    schema: s.clone(),
                },
            );
        }
        session.schema = Arc::new(schema);
        Ok(session)
    }

    /// A client for one call (clients are cheap clones of the channel).
    pub fn client(&self) -> TfClient {
        self.client.clone()
    }

    /// A failed call as a provider error, with the provider's last stderr
    /// lines when it went away.
    pub fn rpc_error(&self, rpc: &str, status: &tonic::Status) -> ProviderError {
        let tail = self
            .process
            .as_ref()
            .map(ProviderProcess::stderr_tail)
            .unwrap_or_default();
        let note = if tail.is_empty() {
            String::new()
        } else {
            format!("; its last output:\n  {}", tail.join("\n  "))
        };
        ProviderError::Unavailable(format!(
            "Terraform provider {}: {rpc}: {}{note}",
            self.package,
            status.message()
        ))
    }

    /// Asks the provider process to exit (then kills it after `grace`).
    pub async fn shutdown(&self, grace: Duration) {
        if let Some(p) = &self.process {
            p.shutdown(grace).await;
        }
    }
}

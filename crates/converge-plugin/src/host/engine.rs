//! The engine endpoint plugins are given when the caller has none.
//!
//! Every plugin is started with an engine address as its first argument,
//! and that address must be live: plugins built on Pulumi's Go SDK refuse
//! to start without one (older SDKs) or wait for an `Attach` (newer), dial
//! it lazily for `Engine.Log`, and every five minutes health-check it
//! (`grpc.health.v1.Health/Check`), shutting themselves down unless it
//! answers — `Unimplemented` counts as alive. A made-up address would
//! therefore kill long deployments. When [`super::PluginLoaderOptions`] has
//! no engine address, the loader serves this minimal `pulumirpc.Engine` on
//! `127.0.0.1`: `Log` goes to `tracing` and the loader's logger, every
//! other call (including health checks) answers `Unimplemented`.

use std::net::SocketAddr;

use converge_proto::pulumirpc::engine_server::{Engine, EngineServer};
use converge_proto::pulumirpc::{LogRequest, LogSeverity};
use converge_proto::MessageLimits;
use tokio::task::JoinHandle;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use super::{PluginLogLine, PluginLogSource, PluginLogger};

/// A running local engine endpoint; stops when dropped.
#[derive(Debug)]
pub(crate) struct LocalEngine {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl LocalEngine {
    pub async fn start(logger: Option<PluginLogger>) -> std::io::Result<LocalEngine> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let service = EngineServer::new(LogOnlyEngine { logger }).with_message_limits();
        let task = tokio::spawn(async move {
            let served = tonic::transport::Server::builder()
                .add_service(service)
                .serve_with_incoming(TcpIncoming::from(listener))
                .await;
            if let Err(e) = served {
                tracing::warn!("the plugin host's engine endpoint stopped: {e}");
            }
        });
        Ok(LocalEngine { addr, task })
    }

    /// `127.0.0.1:<port>`, as plugins expect it (no scheme).
    pub fn address(&self) -> String {
        self.addr.to_string()
    }
}

impl Drop for LocalEngine {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct LogOnlyEngine {
    logger: Option<PluginLogger>,
}

#[tonic::async_trait]
impl Engine for LogOnlyEngine {
    async fn log(&self, request: Request<LogRequest>) -> Result<Response<()>, Status> {
        let req = request.into_inner();
        let severity = req.severity();
        match severity {
            LogSeverity::Error => tracing::error!(urn = req.urn, "{}", req.message),
            LogSeverity::Warning => tracing::warn!(urn = req.urn, "{}", req.message),
            LogSeverity::Info => tracing::info!(urn = req.urn, "{}", req.message),
            LogSeverity::Debug => tracing::debug!(urn = req.urn, "{}", req.message),
        }
        if let Some(logger) = &self.logger {
            logger(&PluginLogLine {
                package: None,
                pid: None,
                source: PluginLogSource::Engine(severity),
                message: req.message,
            });
        }
        Ok(Response::new(()))
    }
}

//! The SDK floor for `scripts/bench_sdk.py`: a resource monitor
//! and engine that answer every RPC at once and keep nothing. A program run
//! against it costs what the language SDK and gRPC cost; the same program
//! run by `converge up` costs that plus Converge. The ratio of the two is
//! Converge's overhead as a program sees it.
//!
//! Prints `127.0.0.1:PORT` on its first line, then serves until killed.
//! Registrations answer with a URN built from the type and name, an ID for
//! custom resources, and the inputs as outputs; features are answered as
//! Converge's monitor answers them, so the SDK takes the same paths.

use converge_proto::pulumirpc::engine_server::{Engine, EngineServer};
use converge_proto::pulumirpc::resource_monitor_server::{ResourceMonitor, ResourceMonitorServer};
use converge_proto::pulumirpc::{
    CallResponse, DeploymentInfo, GetRootResourceRequest, GetRootResourceResponse, LogRequest,
    ReadResourceRequest, ReadResourceResponse, RegisterResourceOutputsRequest,
    RegisterResourceRequest, RegisterResourceResponse, RequirePulumiVersionRequest,
    RequirePulumiVersionResponse, ResourceCallRequest, ResourceInvokeRequest,
    ResourceInvokeResponse, SetRootResourceRequest, SetRootResourceResponse,
    SupportsFeatureRequest, SupportsFeatureResponse,
};
use std::sync::Mutex;
use tonic::{Request, Response, Status};

/// Converge's answers to `SupportsFeature` (see the monitor's `SUPPORTED`).
const SUPPORTED: [&str; 5] = [
    "secrets",
    "resourceReferences",
    "outputValues",
    "deletedWith",
    "aliasSpecs",
];

#[derive(Debug, Default)]
struct Null;

#[tonic::async_trait]
impl ResourceMonitor for Null {
    async fn get_deployment_info(
        &self,
        _: Request<()>,
    ) -> Result<Response<DeploymentInfo>, Status> {
        Ok(Response::new(DeploymentInfo::default()))
    }

    async fn supports_feature(
        &self,
        request: Request<SupportsFeatureRequest>,
    ) -> Result<Response<SupportsFeatureResponse>, Status> {
        let id = request.into_inner().id;
        Ok(Response::new(SupportsFeatureResponse {
            has_support: SUPPORTED.contains(&id.as_str()),
        }))
    }

    async fn invoke(
        &self,
        _: Request<ResourceInvokeRequest>,
    ) -> Result<Response<ResourceInvokeResponse>, Status> {
        Ok(Response::new(ResourceInvokeResponse::default()))
    }

    async fn call(
        &self,
        _: Request<ResourceCallRequest>,
    ) -> Result<Response<CallResponse>, Status> {
        Ok(Response::new(CallResponse::default()))
    }

    async fn read_resource(
        &self,
        request: Request<ReadResourceRequest>,
    ) -> Result<Response<ReadResourceResponse>, Status> {
        let req = request.into_inner();
        Ok(Response::new(ReadResourceResponse {
            urn: format!("urn:pulumi:bench::bench::{}::{}", req.r#type, req.name),
            properties: req.properties,
            ..ReadResourceResponse::default()
        }))
    }

    async fn register_resource(
        &self,
        request: Request<RegisterResourceRequest>,
    ) -> Result<Response<RegisterResourceResponse>, Status> {
        let req = request.into_inner();
        Ok(Response::new(RegisterResourceResponse {
            urn: format!("urn:pulumi:bench::bench::{}::{}", req.r#type, req.name),
            id: match req.custom {
                true => format!("id-{}", req.name),
                false => String::new(),
            },
            object: req.object,
            ..RegisterResourceResponse::default()
        }))
    }

    async fn register_resource_outputs(
        &self,
        _: Request<RegisterResourceOutputsRequest>,
    ) -> Result<Response<()>, Status> {
        Ok(Response::new(()))
    }

    async fn signal_and_wait_for_shutdown(&self, _: Request<()>) -> Result<Response<()>, Status> {
        Ok(Response::new(()))
    }
}

#[derive(Debug, Default)]
struct NullEngine {
    root: Mutex<String>,
}

#[tonic::async_trait]
impl Engine for NullEngine {
    async fn log(&self, _: Request<LogRequest>) -> Result<Response<()>, Status> {
        Ok(Response::new(()))
    }

    async fn get_root_resource(
        &self,
        _: Request<GetRootResourceRequest>,
    ) -> Result<Response<GetRootResourceResponse>, Status> {
        let urn = self.root.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok(Response::new(GetRootResourceResponse { urn }))
    }

    async fn set_root_resource(
        &self,
        request: Request<SetRootResourceRequest>,
    ) -> Result<Response<SetRootResourceResponse>, Status> {
        *self.root.lock().unwrap_or_else(|p| p.into_inner()) = request.into_inner().urn;
        Ok(Response::new(SetRootResourceResponse {}))
    }

    async fn require_pulumi_version(
        &self,
        _: Request<RequirePulumiVersionRequest>,
    ) -> Result<Response<RequirePulumiVersionResponse>, Status> {
        Ok(Response::new(RequirePulumiVersionResponse {}))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    println!("{}", listener.local_addr()?);
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(ResourceMonitorServer::new(Null))
        .add_service(EngineServer::new(NullEngine::default()))
        .serve_with_incoming(incoming)
        .await?;
    Ok(())
}

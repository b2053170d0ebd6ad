//! The `pulumirpc.ResourceMonitor` service over a [`Monitor`].
//!
//! [`Monitor`]: crate::Monitor

use std::sync::Arc;

use converge_model::{package_of, provider_package, Urn};
use converge_proto::marshal_properties;
use converge_proto::pulumirpc::resource_monitor_server::ResourceMonitor;
use converge_proto::pulumirpc::{
    CallResponse, Callback, DeploymentInfo, ReadResourceRequest, ReadResourceResponse,
    RegisterErrorHookRequest, RegisterPackageRequest, RegisterPackageResponse,
    RegisterResourceHookRequest, RegisterResourceOutputsRequest, RegisterResourceRequest,
    RegisterResourceResponse, ResourceCallRequest, ResourceInvokeRequest, ResourceInvokeResponse,
    ResourceMonitorFeature, SupportsFeatureRequest, SupportsFeatureResponse,
};
use tonic::{Request, Response, Status};

use super::goals::{self, to_program};
use super::{construct, invoke, Shared};
use crate::error::EngineError;

/// The features Converge's monitor supports, by their legacy names
/// (`SupportsFeature`) and as enum values (`GetDeploymentInfo`). Everything
/// else is answered "not supported", so the SDKs either fall back or tell
/// the user.
const SUPPORTED: [(&str, ResourceMonitorFeature); 18] = [
    ("secrets", ResourceMonitorFeature::Secrets),
    (
        "resourceReferences",
        ResourceMonitorFeature::ResourceReferences,
    ),
    ("outputValues", ResourceMonitorFeature::OutputValues),
    ("deletedWith", ResourceMonitorFeature::DeletedWith),
    ("parameterization", ResourceMonitorFeature::Parameterization),
    ("aliasSpecs", ResourceMonitorFeature::AliasSpecs),
    ("transforms", ResourceMonitorFeature::Transforms),
    ("invokeTransforms", ResourceMonitorFeature::InvokeTransforms),
    (
        "replacementTrigger",
        ResourceMonitorFeature::ReplacementTrigger,
    ),
    ("replaceWith", ResourceMonitorFeature::ReplaceWith),
    ("resourceHooks", ResourceMonitorFeature::ResourceHooks),
    ("errorHooks", ResourceMonitorFeature::ErrorHooks),
    (
        "sendsOptionsToHooks",
        ResourceMonitorFeature::SendsOptionsToHooks,
    ),
    ("invokeDependsOn", ResourceMonitorFeature::InvokeDependsOn),
    ("invokeParent", ResourceMonitorFeature::InvokeParent),
    ("stateMigrations", ResourceMonitorFeature::StateMigrations),
    (
        "invokeOutputValues",
        ResourceMonitorFeature::InvokeOutputValues,
    ),
    ("callOutputValues", ResourceMonitorFeature::CallOutputValues),
];

#[derive(Debug)]
pub(crate) struct ResourceMonitorService {
    pub shared: Arc<Shared>,
}

/// An engine error as a gRPC status. When the deployment itself has
/// failed (a step failed; the engine reports that), the program is told
/// the monitor is shutting down, as Pulumi does, so that it stops without
/// restating the failure.
pub(crate) fn engine_error(shared: &Shared, e: EngineError) -> Status {
    if shared.monitor.has_failed() {
        Status::unavailable(format!("the resource monitor is shutting down: {e}"))
    } else {
        Status::unknown(e.to_string())
    }
}

impl ResourceMonitorService {
    fn engine_error(&self, e: EngineError) -> Status {
        engine_error(&self.shared, e)
    }

    /// A registration that failed. When the operation goes on after
    /// errors and the program takes step results (the SDKs' `supportsResult
    /// Reporting`), the answer says the resource failed — its outputs are
    /// then unknown to the program, which goes on, and what depends on it
    /// is skipped — rather than an error that ends the program.
    fn failed_registration(
        &self,
        req: &RegisterResourceRequest,
        e: EngineError,
    ) -> Result<RegisterResourceResponse, Status> {
        let continues =
            self.shared.monitor.continues_on_error() && !self.shared.monitor.has_failed();
        match e.urn() {
            Some(urn) if continues && req.supports_result_reporting => {
                Ok(RegisterResourceResponse {
                    urn: urn.to_string(),
                    result: converge_proto::pulumirpc::Result::Fail as i32,
                    ..RegisterResourceResponse::default()
                })
            }
            _ => Err(self.engine_error(e)),
        }
    }
}

#[tonic::async_trait]
impl ResourceMonitor for ResourceMonitorService {
    async fn get_deployment_info(
        &self,
        _request: Request<()>,
    ) -> Result<Response<DeploymentInfo>, Status> {
        let m = &self.shared.monitor;
        let o = &self.shared.options;
        Ok(Response::new(DeploymentInfo {
            project: m.project().to_owned(),
            stack: m.stack().to_owned(),
            organization: o.organization.clone(),
            config: o.config.clone().into_iter().collect(),
            config_secret_keys: o.config_secret_keys.clone(),
            dry_run: m.is_preview(),
            parallel: i32::try_from(m.parallel()).unwrap_or(i32::MAX),
            supported_features: SUPPORTED.iter().map(|(_, f)| *f as i32).collect(),
        }))
    }

    async fn supports_feature(
        &self,
        request: Request<SupportsFeatureRequest>,
    ) -> Result<Response<SupportsFeatureResponse>, Status> {
        let id = request.into_inner().id;
        Ok(Response::new(SupportsFeatureResponse {
            has_support: SUPPORTED.iter().any(|(name, _)| *name == id),
        }))
    }

    async fn invoke(
        &self,
        request: Request<ResourceInvokeRequest>,
    ) -> Result<Response<ResourceInvokeResponse>, Status> {
        invoke::invoke(&self.shared, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn call(
        &self,
        request: Request<ResourceCallRequest>,
    ) -> Result<Response<CallResponse>, Status> {
        construct::call(&self.shared, request.into_inner())
            .await
            .map(Response::new)
    }

    async fn read_resource(
        &self,
        request: Request<ReadResourceRequest>,
    ) -> Result<Response<ReadResourceResponse>, Status> {
        let req = request.into_inner();
        let what = format!("read {} {:?}", req.r#type, req.name);
        self.shared
            .packages
            .check(&what, package_of(&req.r#type), &req.package_ref)?;
        let goal = goals::read_goal(&req)?;
        let result = self
            .shared
            .monitor
            .read_resource(goal)
            .await
            .map_err(|e| self.engine_error(e))?;
        let mut outputs = result.outputs;
        goals::mark_secret(&mut outputs, &req.additional_secret_outputs);
        let properties = marshal_properties(
            &outputs,
            to_program(req.accept_secrets, req.accept_resources),
        )
        .map_err(|e| Status::internal(format!("{}: outputs: {e}", result.urn)))?;
        Ok(Response::new(ReadResourceResponse {
            urn: result.urn.to_string(),
            properties: Some(properties),
            id: result.id.unwrap_or_default(),
            ..ReadResourceResponse::default()
        }))
    }

    async fn register_resource(
        &self,
        request: Request<RegisterResourceRequest>,
    ) -> Result<Response<RegisterResourceResponse>, Status> {
        let mut req = request.into_inner();
        let transforms = self.shared.transforms.apply(&mut req).await?;
        self.shared.inherited.inherit(&mut req);
        goals::check_supported(&req)?;
        if !req.remote {
            let what = format!("{} {:?}", req.r#type, req.name);
            let package = provider_package(&req.r#type).unwrap_or_else(|| package_of(&req.r#type));
            self.shared
                .packages
                .check(&what, package, &req.package_ref)?;
        }
        if req.remote {
            let response = construct::register_remote(&self.shared, &req).await?;
            self.shared
                .transforms
                .registered(&response.urn, &req.parent, transforms.own);
            self.shared.provider_scopes.registered(&response.urn, &req);
            self.shared.inherited.registered(&response.urn, &req);
            return Ok(Response::new(response));
        }
        let mut goal = goals::resource_goal(&req)?;
        goal.inputs = goals::hash_files(
            format!("{} {:?}", req.r#type, req.name),
            goal.inputs,
            &self.shared.options.working_directory,
        )
        .await?;
        let result = match self.shared.monitor.register_resource(goal).await {
            Ok(result) => result,
            Err(e) => return self.failed_registration(&req, e).map(Response::new),
        };
        self.shared
            .transforms
            .registered(result.urn.as_str(), &req.parent, transforms.own);
        self.shared
            .provider_scopes
            .registered(result.urn.as_str(), &req);
        self.shared.inherited.registered(result.urn.as_str(), &req);
        let object = marshal_properties(
            &result.outputs,
            to_program(req.accept_secrets, req.accept_resources),
        )
        .map_err(|e| Status::internal(format!("{}: outputs: {e}", result.urn)))?;
        Ok(Response::new(RegisterResourceResponse {
            urn: result.urn.to_string(),
            id: result.id.unwrap_or_default(),
            object: Some(object),
            ..RegisterResourceResponse::default()
        }))
    }

    async fn register_resource_outputs(
        &self,
        request: Request<RegisterResourceOutputsRequest>,
    ) -> Result<Response<()>, Status> {
        let req = request.into_inner();
        let urn = Urn::parse(&req.urn).map_err(|e| goals::invalid("urn", e))?;
        let outputs = goals::properties("outputs", req.outputs.as_ref())?;
        let outputs = goals::hash_files(
            format!("the outputs of {urn}"),
            outputs,
            &self.shared.options.working_directory,
        )
        .await?;
        self.shared
            .monitor
            .register_resource_outputs(&urn, outputs)
            .await
            .map_err(|e| self.engine_error(e))?;
        Ok(Response::new(()))
    }

    async fn register_package(
        &self,
        request: Request<RegisterPackageRequest>,
    ) -> Result<Response<RegisterPackageResponse>, Status> {
        let reference = self
            .shared
            .packages
            .register(&self.shared.monitor, request.into_inner())?;
        Ok(Response::new(RegisterPackageResponse { r#ref: reference }))
    }

    async fn register_stack_transform(
        &self,
        request: Request<Callback>,
    ) -> Result<Response<()>, Status> {
        self.shared.transforms.add_stack(request.into_inner());
        Ok(Response::new(()))
    }

    async fn register_stack_invoke_transform(
        &self,
        request: Request<Callback>,
    ) -> Result<Response<()>, Status> {
        self.shared
            .transforms
            .add_stack_invoke(request.into_inner());
        Ok(Response::new(()))
    }

    async fn register_resource_hook(
        &self,
        request: Request<RegisterResourceHookRequest>,
    ) -> Result<Response<()>, Status> {
        self.shared.hooks.add_resource_hook(request.into_inner())?;
        Ok(Response::new(()))
    }

    async fn register_error_hook(
        &self,
        request: Request<RegisterErrorHookRequest>,
    ) -> Result<Response<()>, Status> {
        self.shared.hooks.add_error_hook(request.into_inner())?;
        Ok(Response::new(()))
    }

    /// The program is done and waits: a program that registered hooks
    /// waits for the deletions too, which may call them. One that logged
    /// an error is left to the operation to judge once it has exited.
    async fn signal_and_wait_for_shutdown(
        &self,
        _request: Request<()>,
    ) -> Result<Response<()>, Status> {
        if super::lock(&self.shared.errors).is_empty() {
            self.shared.monitor.program_done().await;
        }
        Ok(Response::new(()))
    }
}

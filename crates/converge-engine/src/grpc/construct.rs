//! Remote components and methods (seed 000's component providers):
//! `RegisterResource` with `remote: true` → the component provider's
//! `Construct`; `ResourceMonitor.Call` → the provider's `Call`.
//!
//! The provider is resolved exactly as for a custom resource (the explicit
//! `provider` reference, else the default provider of the type's package
//! and version). It is given this monitor's own address and registers the
//! component and its children here while it works, so they are stepped and
//! journaled like every other registration. No worker-pool permit is held
//! while it does: its registrations need them.

use converge_proto::marshal::dependency_map;
use std::collections::BTreeMap;
use std::sync::Arc;

use converge_model::Urn;
use converge_plugin::{CallRequest, ConstructOptions, ConstructRequest, DeploymentContext};
use converge_proto::pulumirpc::{
    register_resource_response, CallResponse, CheckFailure, RegisterResourceRequest,
    RegisterResourceResponse, ResourceCallRequest,
};
use converge_proto::{marshal_properties, MarshalOptions};
use tonic::Status;

use super::goals::{self, to_program};
use super::{invoke, Shared};
use crate::error::EngineError;
use crate::step_generator;

/// What a provider needs to register resources with this monitor.
fn context(shared: &Shared) -> DeploymentContext {
    let m = &shared.monitor;
    let o = &shared.options;
    DeploymentContext {
        project: m.project().to_owned(),
        stack: m.stack().to_owned(),
        organization: o.organization.clone(),
        config: o.config.clone(),
        config_secret_keys: o.config_secret_keys.clone(),
        dry_run: m.is_preview(),
        parallel: m.deployment.opts.parallel,
        monitor_endpoint: shared.endpoint.clone(),
    }
}

/// `RegisterResource` of a remote component: `Construct` on its provider;
/// the answer is the URN and state the provider reports.
pub(crate) async fn register_remote(
    shared: &Shared,
    req: &RegisterResourceRequest,
) -> Result<RegisterResourceResponse, Status> {
    if req.custom {
        return Err(goals::invalid(
            &format!("{} {:?}", req.r#type, req.name),
            "a remote component cannot be a custom resource",
        ));
    }
    let goal = goals::resource_goal(shared, req)?;
    let d = &shared.monitor.deployment;
    let constructed = async {
        let urn = step_generator::make_urn(d, &goal.type_token, &goal.name, goal.parent.as_ref())?;
        d.check_not_failed(&urn)?;
        let reference = step_generator::resolve_provider(d, &goal).await?;
        let provider = invoke::instance(d, reference).await?;
        let options = ConstructOptions {
            protect: req.protect,
            aliases: goal.options.aliases.clone(),
            additional_secret_outputs: goal.options.additional_secret_outputs.clone(),
            custom_timeouts: goal.options.custom_timeouts.clone(),
            deleted_with: goal.options.deleted_with.clone(),
            delete_before_replace: goal.options.delete_before_replace,
            ignore_changes: goal.options.ignore_changes.clone(),
            replace_on_changes: goal.options.replace_on_changes.clone(),
            retain_on_delete: req.retain_on_delete,
        };
        let request = ConstructRequest {
            context: context(shared),
            type_token: goal.type_token.clone(),
            name: goal.name.clone(),
            parent: goal.parent.clone(),
            inputs: goal.inputs.clone(),
            input_dependencies: goal.property_dependencies.clone(),
            providers: req
                .providers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<BTreeMap<_, _>>(),
            dependencies: goal.dependencies.clone(),
            options,
        };
        let failed = |source| EngineError::Construct {
            type_token: goal.type_token.clone(),
            name: goal.name.clone(),
            source,
        };
        let response = provider.construct(request).await.map_err(failed)?;
        // The provider must have registered what it returns: the program's
        // children of the component refer to it.
        if !d.progress().registered.contains_key(&response.urn) {
            return Err(failed(converge_plugin::ProviderError::Failed(format!(
                "the provider returned {}, which it did not register",
                response.urn
            ))));
        }
        Ok(response)
    }
    .await;
    let response = constructed.map_err(|e| {
        d.fail(&e);
        super::resource_monitor::engine_error(shared, e)
    })?;
    let object = marshal_properties(
        &response.state,
        to_program(req.accept_secrets, req.accept_resources),
    )
    .map_err(|e| Status::internal(format!("{}: outputs: {e}", response.urn)))?;
    Ok(RegisterResourceResponse {
        urn: response.urn.to_string(),
        id: String::new(),
        object: Some(object),
        property_dependencies: dependency_map(&response.state_dependencies, |urns| {
            register_resource_response::PropertyDependencies { urns }
        }),
        ..RegisterResourceResponse::default()
    })
}

/// `Call`: a component method or a function that may register resources,
/// on the explicit provider or the default provider of the token's
/// package.
pub(crate) async fn call(
    shared: &Shared,
    req: ResourceCallRequest,
) -> Result<CallResponse, Status> {
    let what = format!("call {}", req.tok);
    if !req.package_ref.is_empty() {
        return Err(Status::unimplemented(format!(
            "{what}: parameterized packages (packageRef) are not supported by Converge yet"
        )));
    }
    let args = goals::properties("args", req.args.as_ref())?;
    let mut arg_dependencies = BTreeMap::new();
    for (key, deps) in &req.arg_dependencies {
        let urns = deps
            .urns
            .iter()
            .map(|u| Urn::parse(u).map_err(|e| goals::invalid("argDependencies", e)))
            .collect::<Result<Vec<_>, _>>()?;
        arg_dependencies.insert(key.clone(), urns);
    }
    let d: &Arc<_> = &shared.monitor.deployment;
    let provider = invoke::provider_for(d, &req.tok, &req.provider, &req.version)
        .await
        .map_err(|e| Status::failed_precondition(format!("{what}: {e}")))?;
    let response = provider
        .call(CallRequest {
            context: context(shared),
            token: req.tok.clone(),
            args,
            arg_dependencies,
        })
        .await
        .map_err(|e| Status::unknown(format!("{what}: {e}")))?;
    // Unknowns (a preview's), secrets and resource references are kept:
    // the SDKs unwrap them; output values only for a caller that takes them.
    let opts = MarshalOptions {
        keep_output_values: req.accept_output_values,
        ..MarshalOptions::full()
    };
    let ret = marshal_properties(&response.outputs, opts)
        .map_err(|e| Status::internal(format!("{what}: result: {e}")))?;
    Ok(CallResponse {
        r#return: Some(ret),
        return_dependencies: dependency_map(&response.return_dependencies, |urns| {
            converge_proto::pulumirpc::call_response::ReturnDependencies { urns }
        }),
        failures: response
            .failures
            .into_iter()
            .map(|f| CheckFailure {
                property: f.property,
                reason: f.reason,
            })
            .collect(),
    })
}

//! Remote components and methods (seed 000's component providers):
//! `RegisterResource` with `remote: true` → [`Monitor::construct`];
//! `ResourceMonitor.Call` → [`Monitor::call`]. The provider is given this
//! server's own address and registers resources back here.
//!
//! [`Monitor::construct`]: crate::Monitor::construct
//! [`Monitor::call`]: crate::Monitor::call

use std::collections::BTreeMap;

use converge_model::{package_of, Urn};
use converge_proto::marshal::dependency_map;
use converge_proto::pulumirpc::{
    register_resource_response, CallResponse, CheckFailure, RegisterResourceRequest,
    RegisterResourceResponse, ResourceCallRequest,
};
use converge_proto::{marshal_properties, MarshalOptions};
use tonic::Status;

use super::goals::{self, non_empty, to_program};
use super::{output_values, Shared};
use crate::error::EngineError;
use crate::goal::{CallGoal, ConstructGoal};

/// `RegisterResource` of a remote component: [`Monitor::construct`]; the
/// answer is the URN and state the provider reports.
///
/// [`Monitor::construct`]: crate::Monitor::construct
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
    let goal = ConstructGoal {
        resource: goals::resource_goal(req)?,
        protect: req.protect,
        retain_on_delete: req.retain_on_delete,
        providers: req
            .providers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    let response = shared
        .monitor
        .construct(goal, &shared.program)
        .await
        .map_err(|e| super::resource_monitor::engine_error(shared, e))?;
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
    shared
        .packages
        .check(&what, package_of(&req.tok), &req.package_ref)?;
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
    // Output values among the arguments carry their own dependencies.
    for (key, found) in output_values::argument_dependencies(req.args.as_ref())? {
        let deps = arg_dependencies.entry(key).or_default();
        for urn in found {
            if !deps.contains(&urn) {
                deps.push(urn);
            }
        }
    }
    let goal = CallGoal {
        token: req.tok.clone(),
        args,
        arg_dependencies,
        provider: non_empty(&req.provider),
        version: non_empty(&req.version),
    };
    let response = shared
        .monitor
        .call(goal, &shared.program)
        .await
        .map_err(|e| match e {
            EngineError::Call { .. } => Status::unknown(e.to_string()),
            // The provider could not be found or configured.
            e => Status::failed_precondition(format!("{what}: {e}")),
        })?;
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

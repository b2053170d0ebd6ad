//! `Invoke` → [`Monitor::invoke`]: the engine's own function
//! `pulumi:pulumi:getResource`, and provider functions (data sources).
//!
//! [`Monitor::invoke`]: crate::Monitor::invoke

use std::collections::BTreeSet;

use converge_model::{package_of, PropertyValue, Urn};
use converge_proto::pulumirpc::{CheckFailure, ResourceInvokeRequest, ResourceInvokeResponse};
use converge_proto::{marshal_properties, MarshalOptions};
use tonic::Status;

use super::goals::{self, non_empty, to_program};
use super::{output_values, Shared};
use crate::error::EngineError;
use crate::goal::InvokeGoal;
use crate::monitor::InvokeReadiness;

pub(crate) async fn invoke(
    shared: &Shared,
    mut req: ResourceInvokeRequest,
) -> Result<ResourceInvokeResponse, Status> {
    shared.transforms.apply_invoke(&mut req).await?;
    // A parameterized package's function names the package the program
    // registered; its default provider serves it parameterized.
    shared.packages.check(
        &format!("invoke {}", req.tok),
        package_of(&req.tok),
        &req.package_ref,
    )?;
    let args = goals::properties("args", req.args.as_ref())?;
    // What the invoke waits for: its `dependsOn`, and what the output
    // values among its arguments depend on.
    let mut wait_for = BTreeSet::new();
    for u in &req.depends_on {
        wait_for.insert(Urn::parse(u).map_err(|e| goals::invalid("dependsOn", e))?);
    }
    for deps in output_values::argument_dependencies(req.args.as_ref())?.into_values() {
        wait_for.extend(deps);
    }
    let unknown = ResourceInvokeResponse {
        r#return: None,
        failures: Vec::new(),
        unknown: true,
    };
    if args.values().any(PropertyValue::contains_unknowns) {
        return Ok(unknown);
    }
    if !wait_for.is_empty() {
        let urns: Vec<Urn> = wait_for.into_iter().collect();
        let readiness = shared
            .monitor
            .invoke_readiness(&urns)
            .await
            .map_err(|e| match e {
                EngineError::UnknownInvokeDependency(_) => {
                    Status::invalid_argument(format!("invoke {}: {e}", req.tok))
                }
                e => Status::unknown(format!("invoke {}: {e}", req.tok)),
            })?;
        if readiness == InvokeReadiness::Pending {
            return Ok(unknown);
        }
    }
    // An invoke parented to a resource runs on the provider that resource
    // names for its package, as a child resource would.
    let provider = non_empty(&req.provider).or_else(|| {
        (!req.parent.is_empty())
            .then(|| shared.provider_scopes.provider_for(&req.parent, &req.tok))
            .flatten()
    });
    let goal = InvokeGoal {
        token: req.tok.clone(),
        args,
        provider,
        version: non_empty(&req.version),
    };
    let response = shared.monitor.invoke(goal).await.map_err(|e| match e {
        EngineError::GetResourceArgument | EngineError::GetResourceUrn(_) => {
            Status::invalid_argument(e.to_string())
        }
        EngineError::UnknownResource(_) => Status::not_found(e.to_string()),
        EngineError::Invoke { .. } => Status::unknown(e.to_string()),
        // The provider could not be found or configured.
        e => Status::failed_precondition(format!("invoke {}: {e}", req.tok)),
    })?;
    let opts = MarshalOptions {
        keep_output_values: req.accept_output_values,
        ..to_program(true, req.accept_resources)
    };
    let ret = marshal_properties(&response.outputs, opts)
        .map_err(|e| Status::internal(format!("invoke {}: result: {e}", req.tok)))?;
    Ok(ResourceInvokeResponse {
        r#return: Some(ret),
        failures: response
            .failures
            .into_iter()
            .map(|f| CheckFailure {
                property: f.property,
                reason: f.reason,
            })
            .collect(),
        unknown: false,
    })
}

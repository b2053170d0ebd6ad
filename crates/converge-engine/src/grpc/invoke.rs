//! `Invoke` → [`Monitor::invoke`]: the engine's own function
//! `pulumi:pulumi:getResource`, and provider functions (data sources).
//!
//! [`Monitor::invoke`]: crate::Monitor::invoke

use converge_proto::marshal_properties;
use converge_proto::pulumirpc::{CheckFailure, ResourceInvokeRequest, ResourceInvokeResponse};
use tonic::Status;

use super::goals::{self, non_empty, to_program};
use super::Shared;
use crate::error::EngineError;
use crate::goal::InvokeGoal;

pub(crate) async fn invoke(
    shared: &Shared,
    mut req: ResourceInvokeRequest,
) -> Result<ResourceInvokeResponse, Status> {
    shared.transforms.apply_invoke(&mut req).await?;
    if !req.package_ref.is_empty() {
        return Err(Status::unimplemented(format!(
            "invoke {}: parameterized packages (packageRef) are not supported by Converge yet",
            req.tok
        )));
    }
    let goal = InvokeGoal {
        token: req.tok.clone(),
        args: goals::properties("args", req.args.as_ref())?,
        provider: non_empty(&req.provider),
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
    let ret = marshal_properties(&response.outputs, to_program(true, req.accept_resources))
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

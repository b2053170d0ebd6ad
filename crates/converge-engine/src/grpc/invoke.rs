//! `Invoke`: the engine's own function `pulumi:pulumi:getResource`, and
//! provider functions (data sources) through the deployment's providers.

use std::sync::Arc;

use converge_model::{PropertyMap, PropertyValue, ProviderReference, ResourceState, Urn};
use converge_plugin::{InvokeRequest, Provider};
use converge_proto::marshal_properties;
use converge_proto::pulumirpc::{CheckFailure, ResourceInvokeRequest, ResourceInvokeResponse};
use tonic::Status;

use super::goals::{self, to_program};
use super::Shared;
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::{step_generator, steps};

const GET_RESOURCE: &str = "pulumi:pulumi:getResource";

pub(crate) async fn invoke(
    shared: &Shared,
    req: ResourceInvokeRequest,
) -> Result<ResourceInvokeResponse, Status> {
    if !req.package_ref.is_empty() {
        return Err(Status::unimplemented(format!(
            "invoke {}: parameterized packages (packageRef) are not supported by Converge yet",
            req.tok
        )));
    }
    let args = goals::properties("args", req.args.as_ref())?;
    let d = &shared.monitor.deployment;
    let (outputs, failures) = if req.tok == GET_RESOURCE {
        (get_resource(d, &args)?, Vec::new())
    } else {
        let provider = provider_for(d, &req.tok, &req.provider, &req.version)
            .await
            .map_err(|e| Status::failed_precondition(format!("invoke {}: {e}", req.tok)))?;
        let response = provider
            .invoke(InvokeRequest {
                token: req.tok.clone(),
                args,
            })
            .await
            .map_err(|e| Status::unknown(format!("invoke {}: {e}", req.tok)))?;
        (response.outputs, response.failures)
    };
    let ret = marshal_properties(&outputs, to_program(true, req.accept_resources))
        .map_err(|e| Status::internal(format!("invoke {}: result: {e}", req.tok)))?;
    Ok(ResourceInvokeResponse {
        r#return: Some(ret),
        failures: failures
            .into_iter()
            .map(|f| CheckFailure {
                property: f.property,
                reason: f.reason,
            })
            .collect(),
        unknown: false,
    })
}

/// `pulumi:pulumi:getResource {urn}` → `{urn, id, state}` of a resource
/// registered in this deployment (or, failing that, in the base state).
fn get_resource(d: &Deployment, args: &PropertyMap) -> Result<PropertyMap, Status> {
    let text = match args.get("urn") {
        Some(PropertyValue::String(s)) => s.clone(),
        _ => {
            return Err(Status::invalid_argument(format!(
                "{GET_RESOURCE}: the argument \"urn\" must be a string"
            )))
        }
    };
    let urn = Urn::parse(&text).map_err(|e| goals::invalid(GET_RESOURCE, e))?;
    let state: Option<ResourceState> = d
        .progress()
        .registered
        .get(&urn)
        .map(|r| r.state.clone())
        .or_else(|| d.olds.get(&urn).map(|&i| d.base.resources[i].clone()));
    let state = state
        .ok_or_else(|| Status::not_found(format!("{GET_RESOURCE}: unknown resource {urn}")))?;
    let mut out = PropertyMap::new();
    out.insert("urn".to_owned(), PropertyValue::String(urn.to_string()));
    out.insert(
        "id".to_owned(),
        state
            .id
            .map(PropertyValue::String)
            .unwrap_or(PropertyValue::Null),
    );
    out.insert("state".to_owned(), PropertyValue::Object(state.outputs));
    Ok(out)
}

/// The provider a function (invoke) or method (call) runs on: the explicit
/// reference, else the default provider of the token's package (registered
/// on first use, as for resources).
pub(crate) async fn provider_for(
    d: &Arc<Deployment>,
    token: &str,
    provider: &str,
    version: &str,
) -> Result<Arc<dyn Provider>, EngineError> {
    let reference = if provider.is_empty() {
        let package = token.split(':').next().unwrap_or_default();
        let version = (!version.is_empty()).then_some(version);
        step_generator::default_provider(d, package, version).await?
    } else {
        ProviderReference::parse(provider)?
    };
    instance(d, reference).await
}

/// The configured provider instance behind `reference`.
pub(crate) async fn instance(
    d: &Deployment,
    reference: ProviderReference,
) -> Result<Arc<dyn Provider>, EngineError> {
    // `provider_of` also finds providers only the base state knows.
    let mut subject = ResourceState::new(reference.urn.clone(), true);
    subject.provider = Some(reference);
    steps::provider_of(d, &subject).await
}

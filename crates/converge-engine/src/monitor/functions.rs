//! Functions and methods a program calls: `Invoke` (the engine's own
//! `pulumi:pulumi:getResource`, else a provider function) and `Call` (a
//! component method). Both run on the provider a resource of the token's
//! package would get: the explicit reference, else the package's default
//! provider (registered on first use, configured from the stack's
//! configuration), so a program's functions see the provider its
//! resources see.

use std::sync::Arc;

use converge_model::{
    package_of, PropertyMap, PropertyValue, ProviderReference, ResourceState, Urn,
};
use converge_plugin::{CallRequest, CallResponse, InvokeRequest, InvokeResponse, Provider};

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::goal::{CallGoal, InvokeGoal};
use crate::{step_generator, steps};

/// The engine's own function: `{urn}` → `{urn, id, provider, state}` of a
/// resource.
pub const GET_RESOURCE: &str = "pulumi:pulumi:getResource";

pub(super) async fn invoke(
    d: &Arc<Deployment>,
    goal: InvokeGoal,
) -> Result<InvokeResponse, EngineError> {
    if goal.token == GET_RESOURCE {
        // Served by the builtin provider, whose default provider resource
        // (`pulumi:providers:pulumi::default`) is recorded once used, as
        // Pulumi records it.
        step_generator::default_provider(d, crate::pulumi_provider::PACKAGE, None).await?;
        return Ok(InvokeResponse {
            outputs: get_resource(d, &goal.args)?,
            failures: Vec::new(),
        });
    }
    let provider = provider_for(
        d,
        &goal.token,
        goal.provider.as_deref(),
        goal.version.as_deref(),
    )
    .await?;
    provider
        .invoke(InvokeRequest {
            token: goal.token.clone(),
            args: goal.args,
        })
        .await
        .map_err(|source| EngineError::Invoke {
            token: goal.token,
            source,
        })
}

pub(super) async fn call(
    d: &Arc<Deployment>,
    goal: CallGoal,
    context: converge_plugin::DeploymentContext,
) -> Result<CallResponse, EngineError> {
    let provider = provider_for(
        d,
        &goal.token,
        goal.provider.as_deref(),
        goal.version.as_deref(),
    )
    .await?;
    provider
        .call(CallRequest {
            context,
            token: goal.token.clone(),
            args: goal.args,
            arg_dependencies: goal.arg_dependencies,
        })
        .await
        .map_err(|source| EngineError::Call {
            token: goal.token,
            source,
        })
}

/// `{urn}` → `{urn, id, provider, state}` of a resource registered in
/// this deployment (or, failing that, in the base state). `provider` is
/// the reference `<urn>::<id>` of a custom resource's provider, absent for
/// components and providers.
fn get_resource(d: &Deployment, args: &PropertyMap) -> Result<PropertyMap, EngineError> {
    let urn = match args.get("urn") {
        Some(PropertyValue::String(s)) => Urn::parse(s).map_err(EngineError::GetResourceUrn)?,
        _ => return Err(EngineError::GetResourceArgument),
    };
    let state: Option<ResourceState> = d
        .progress()
        .registered
        .get(&urn)
        .map(|r| r.state.clone())
        .or_else(|| d.old_index_of(&urn).map(|i| d.old_state(i).clone()));
    let state = state.ok_or_else(|| EngineError::UnknownResource(urn.clone()))?;
    let mut out = PropertyMap::new();
    out.insert("urn".to_owned(), PropertyValue::String(urn.to_string()));
    out.insert(
        "id".to_owned(),
        state
            .id
            .map(PropertyValue::String)
            .unwrap_or(PropertyValue::Null),
    );
    if let Some(provider) = &state.provider {
        out.insert(
            "provider".to_owned(),
            PropertyValue::String(provider.to_string()),
        );
    }
    out.insert("state".to_owned(), PropertyValue::Object(state.outputs));
    Ok(out)
}

/// The provider a function or method runs on: the explicit reference,
/// else the default provider of the token's package (at `version`).
async fn provider_for(
    d: &Arc<Deployment>,
    token: &str,
    provider: Option<&str>,
    version: Option<&str>,
) -> Result<Arc<dyn Provider>, EngineError> {
    let reference = match provider {
        Some(text) => ProviderReference::parse(text)?,
        None => step_generator::default_provider(d, package_of(token), version).await?,
    };
    instance(d, reference).await
}

/// The configured provider instance behind `reference`.
pub(super) async fn instance(
    d: &Deployment,
    reference: ProviderReference,
) -> Result<Arc<dyn Provider>, EngineError> {
    // `provider_of` also finds providers only the base state knows.
    let mut subject = ResourceState::new(reference.urn.clone(), true);
    subject.provider = Some(reference);
    steps::provider_of(d, &subject).await
}

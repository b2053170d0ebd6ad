//! Remote components: a component resource its provider's `Construct`
//! builds.
//!
//! The provider is resolved exactly as for a custom resource (the explicit
//! `provider` reference, else the default provider of the type's package
//! and version). It is given the program's monitor endpoint and registers
//! the component and its children there while it works, so they are
//! stepped and journaled like every other registration. No worker-pool
//! permit is held while it does: its registrations need them.

use std::sync::Arc;

use converge_plugin::{ConstructOptions, ConstructRequest, ConstructResponse, DeploymentContext};

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::goal::ConstructGoal;
use crate::step_generator::{self, aliases};

use super::functions;

pub(super) async fn construct(
    d: &Arc<Deployment>,
    goal: ConstructGoal,
    context: DeploymentContext,
) -> Result<ConstructResponse, EngineError> {
    let r = &goal.resource;
    let urn = step_generator::make_urn(d, &r.type_token, &r.name, r.parent.as_ref())?;
    d.check_not_failed(&urn)?;
    step_generator::check_timeouts(&urn, r.options.custom_timeouts.as_ref())?;
    // The provider registers the component with these (resolved) aliases.
    let aliases = aliases::resolve(d, r, &urn)?;
    let reference = step_generator::resolve_provider(d, r).await?;
    let provider = functions::instance(d, reference).await?;
    let options = ConstructOptions {
        protect: goal.protect,
        aliases,
        additional_secret_outputs: r.options.additional_secret_outputs.clone(),
        custom_timeouts: r.options.custom_timeouts.clone(),
        deleted_with: r.options.deleted_with.clone(),
        delete_before_replace: r.options.delete_before_replace,
        ignore_changes: r.options.ignore_changes.clone(),
        replace_on_changes: r.options.replace_on_changes.clone(),
        retain_on_delete: goal.retain_on_delete,
    };
    let request = ConstructRequest {
        context,
        type_token: r.type_token.clone(),
        name: r.name.clone(),
        parent: r.parent.clone(),
        inputs: r.inputs.clone(),
        input_dependencies: r.property_dependencies.clone(),
        providers: goal.providers.clone(),
        dependencies: r.dependencies.clone(),
        options,
    };
    let failed = |source| EngineError::Construct {
        type_token: r.type_token.clone(),
        name: r.name.clone(),
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

//! Update: change an object in place.

use std::collections::BTreeMap;
use std::sync::Arc;

use converge_model::{PropertyDiff, ResourceState};
use converge_plugin::{ProviderError, UpdateRequest};
use converge_state::journal::JournalEntry;
use converge_state::OperationType;

use super::{claim, failed, finish, mark_secret_outputs, provider_of, timeout};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;
use crate::hooks::{self, ErrorHookCall, HookCall, HookKind};

pub(crate) async fn run(
    d: &Deployment,
    old_index: usize,
    mut new: ResourceState,
    diff: BTreeMap<String, PropertyDiff>,
) -> Result<Arc<ResourceState>, EngineError> {
    let old = d.old_state(old_index);
    let old = &*old;
    let urn = new.urn.clone();
    let start = crate::events::StepStart {
        old: Some(old),
        new: Some(&new),
        diff: Some(&diff),
    };
    d.started(StepOp::Update, &urn, start);
    hooks::run(
        d,
        &new,
        hook_call(d, HookKind::BeforeUpdate, old, &new),
        false,
    )
    .await
    .map_err(|e| failed(d, StepOp::Update, &urn, e))?;
    let op_id = d.next_operation();
    // A component's update touches nothing outside Converge: no Begin,
    // and its end entry is not waited for.
    if new.custom {
        d.begin(op_id, Some((OperationType::Updating, new.clone())))
            .await
            .map_err(|e| failed(d, StepOp::Update, &urn, e))?;
    }
    let mut errors = Vec::new();
    let outcome = loop {
        let outcome = match d.provider_turn(&urn).await {
            Ok(_permit) => perform(d, old, &mut new).await,
            Err(e) => Err(e),
        };
        match outcome {
            Err(e) if hooks::retry(d, &new, &e, &mut errors, error_call(old, &new)).await => {}
            outcome => break outcome,
        }
    };
    // An update that changed the object but did not finish (a partial
    // failure) records what the provider returned, then fails the step:
    // the recorded state is the object as it now is.
    let partial = match outcome {
        Ok(()) => None,
        Err(EngineError::Step {
            source:
                ProviderError::PartialFailure {
                    properties,
                    reasons,
                    ..
                },
            ..
        }) if !d.opts.preview => {
            new.outputs = properties;
            mark_secret_outputs(
                &new.inputs,
                &mut new.outputs,
                &new.additional_secret_outputs,
            );
            new.init_errors = reasons.clone();
            Some(reasons)
        }
        Err(e) => {
            d.end_failed(op_id).await;
            return Err(failed(d, StepOp::Update, &urn, e));
        }
    };
    // Pulumi's state records when a resource last changed.
    if !d.opts.preview {
        new.modified = Some(converge_backend::now_rfc3339());
    }
    let entry = super::rename::take_over(
        d,
        JournalEntry::success(0, op_id).with_state(new.clone()),
        old_index,
        &new.urn,
    );
    match new.custom {
        true => d.end(entry).await,
        false => d.end_unsynced(entry),
    }
    .map_err(|e| failed(d, StepOp::Update, &urn, e))?;
    claim(d, StepOp::Update, old_index, &urn)?;
    super::rename::finish(d, old_index, &new)
        .await
        .map_err(|e| failed(d, StepOp::Update, &urn, e))?;
    if let Some(reasons) = partial {
        super::finish_partial(d, op_id, &new);
        let err = EngineError::Step {
            op: StepOp::Update,
            urn: urn.clone(),
            source: ProviderError::Failed(reasons.join("; ")),
        };
        return Err(failed(d, StepOp::Update, &urn, err));
    }
    crate::saved_plan::enforce::apply_result(d, &new);
    hooks::run(
        d,
        &new,
        hook_call(d, HookKind::AfterUpdate, old, &new),
        false,
    )
    .await?;
    Ok(finish(d, StepOp::Update, Some(op_id), Some(old), new, diff))
}

/// What an update's hooks of `kind` are told: old and new inputs, the old
/// outputs, and after the update the new ones.
fn hook_call<'a>(
    d: &Deployment,
    kind: HookKind,
    old: &'a ResourceState,
    new: &'a ResourceState,
) -> HookCall<'a> {
    HookCall {
        kind,
        urn: &new.urn,
        id: old.id.as_deref().unwrap_or_default(),
        type_token: &new.type_token,
        new_inputs: Some(&new.inputs),
        old_inputs: Some(&old.inputs),
        new_outputs: (kind == HookKind::AfterUpdate).then_some(&new.outputs),
        old_outputs: Some(&old.outputs),
        old_options: Some(old),
        new_options: Some(new),
        preview: d.opts.preview,
    }
}

fn error_call<'a>(old: &'a ResourceState, new: &'a ResourceState) -> ErrorHookCall<'a> {
    ErrorHookCall {
        urn: &new.urn,
        id: old.id.as_deref().unwrap_or_default(),
        type_token: &new.type_token,
        new_inputs: Some(&new.inputs),
        old_inputs: Some(&old.inputs),
        old_outputs: Some(&old.outputs),
        failed_operation: "update",
        old_options: Some(old),
        new_options: Some(new),
    }
}

/// The provider call of an update from `old` to `new` (`new.outputs` is
/// set from its answer).
pub(crate) async fn perform(
    d: &Deployment,
    old: &ResourceState,
    new: &mut ResourceState,
) -> Result<(), EngineError> {
    let urn = new.urn.clone();
    if new.is_provider() {
        d.registry
            .configure(&urn, old.id.as_deref(), &new.inputs, d.opts.preview)
            .await
            .map_err(|source| EngineError::Provider {
                urn: urn.clone(),
                source,
            })?;
        new.outputs = converge_plugin::parameterization::without_internal(&new.inputs);
        return Ok(());
    }
    if !new.custom {
        return Ok(());
    }
    let provider = provider_of(d, new).await?;
    let response = provider
        .update(UpdateRequest {
            urn: urn.clone(),
            id: old.id.clone().unwrap_or_default(),
            old_inputs: old.inputs.clone(),
            old_outputs: old.outputs.clone(),
            new_inputs: new.inputs.clone(),
            timeout: timeout(new, "update"),
            ignore_changes: new.ignore_changes.clone(),
            preview: d.opts.preview,
            planned: crate::saved_plan::enforce::planned_outputs(d, &urn, &[StepOp::Update]),
        })
        .await
        .map_err(|source| EngineError::Step {
            op: StepOp::Update,
            urn,
            source,
        })?;
    new.outputs = response.properties;
    mark_secret_outputs(
        &new.inputs,
        &mut new.outputs,
        &new.additional_secret_outputs,
    );
    Ok(())
}

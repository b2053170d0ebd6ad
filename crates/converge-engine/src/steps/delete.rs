//! Delete: remove an old object (or, for delete-before-replace, remove it
//! and mark its state pending replacement).

use converge_model::ResourceState;
use converge_plugin::DeleteRequest;
use converge_state::journal::JournalEntry;

use super::{failed, provider_of, report, timeout};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;
use crate::hooks::{self, ErrorHookCall, HookCall, HookKind};

/// How the deleted state leaves the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeleteMode {
    /// Removed from the snapshot.
    Remove,
    /// Kept, marked pending replacement (delete-before-replace).
    PendingReplacement,
}

/// What the delete does to the real object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ObjectAction {
    /// Call the provider's Delete.
    Delete,
    /// Only forget the state: retainOnDelete, deletedWith a resource also
    /// being deleted, external or component resources, or an object a
    /// delete-before-replace already removed.
    Forget,
}

pub(crate) async fn run(
    d: &Deployment,
    op: StepOp,
    old_index: usize,
    mode: DeleteMode,
    action: ObjectAction,
) -> Result<(), EngineError> {
    let old = &d.base.resources[old_index];
    let urn = old.urn.clone();
    let start = crate::events::StepStart {
        old: Some(old),
        ..Default::default()
    };
    d.started(op, &urn, start);
    // The hooks the state records, by name: the program may no longer
    // declare the resource. A component has no object but its hooks run.
    let hooked = action == ObjectAction::Delete || !old.custom;
    if hooked {
        hooks::run(d, old, hook_call(d, HookKind::BeforeDelete, old), true)
            .await
            .map_err(|e| failed(d, op, &urn, e))?;
    }
    let op_id = d.next_operation();
    let begun = match action {
        ObjectAction::Delete => d.begin_deleting(op_id, old_index).await,
        ObjectAction::Forget => d.begin(op_id, None).await,
    };
    begun.map_err(|e| failed(d, op, &urn, e))?;
    if action == ObjectAction::Delete && !d.opts.preview {
        let mut errors = Vec::new();
        let outcome = loop {
            let outcome = match d.provider_turn(&urn).await {
                Ok(_permit) => perform(d, old).await,
                Err(e) => Err(e),
            };
            match outcome {
                Err(e) if hooks::retry(d, old, &e, &mut errors, error_call(old)).await => {}
                outcome => break outcome,
            }
        };
        if let Err(e) = outcome {
            d.end_failed(op_id).await;
            return Err(failed(d, op, &urn, e));
        }
    }
    let entry = match mode {
        DeleteMode::Remove => JournalEntry::success(0, op_id).with_remove_old(old_index),
        DeleteMode::PendingReplacement => {
            JournalEntry::success(0, op_id).with_pending_replacement_old(old_index)
        }
    };
    d.end(entry).await.map_err(|e| failed(d, op, &urn, e))?;
    if mode == DeleteMode::PendingReplacement {
        d.progress().object_deleted(old_index);
    }
    report(d, op, Some(old), None, Default::default());
    if hooked {
        hooks::run(d, old, hook_call(d, HookKind::AfterDelete, old), true).await?;
    }
    Ok(())
}

/// What a delete's hooks are told: the old inputs and outputs.
fn hook_call<'a>(d: &Deployment, kind: HookKind, old: &'a ResourceState) -> HookCall<'a> {
    HookCall {
        kind,
        urn: &old.urn,
        id: old.id.as_deref().unwrap_or_default(),
        type_token: &old.type_token,
        new_inputs: None,
        old_inputs: Some(&old.inputs),
        new_outputs: None,
        old_outputs: Some(&old.outputs),
        old_options: Some(old),
        new_options: None,
        preview: d.opts.preview,
    }
}

fn error_call(old: &ResourceState) -> ErrorHookCall<'_> {
    ErrorHookCall {
        urn: &old.urn,
        id: old.id.as_deref().unwrap_or_default(),
        type_token: &old.type_token,
        new_inputs: None,
        old_inputs: Some(&old.inputs),
        old_outputs: Some(&old.outputs),
        failed_operation: "delete",
        old_options: Some(old),
        new_options: None,
    }
}

async fn perform(d: &Deployment, old: &ResourceState) -> Result<(), EngineError> {
    if old.is_provider() {
        if let Some(reference) = provider_reference(old) {
            d.registry.remove(&reference);
        }
        return Ok(());
    }
    if !old.custom || old.external {
        return Ok(());
    }
    let provider = provider_of(d, old).await?;
    provider
        .delete(DeleteRequest {
            urn: old.urn.clone(),
            id: old.id.clone().unwrap_or_default(),
            inputs: old.inputs.clone(),
            outputs: old.outputs.clone(),
            timeout: timeout(old, "delete"),
        })
        .await
        .map_err(|source| EngineError::Step {
            op: StepOp::Delete,
            urn: old.urn.clone(),
            source,
        })
}

fn provider_reference(state: &ResourceState) -> Option<converge_model::ProviderReference> {
    Some(converge_model::ProviderReference {
        urn: state.urn.clone(),
        id: state.id.clone()?,
    })
}

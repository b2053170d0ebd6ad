//! Create: a new object (or the replacement of an old one).

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use converge_model::{PropertyDiff, ResourceState};
use converge_plugin::{CreateRequest, ProviderError};
use converge_state::journal::JournalEntry;
use converge_state::OperationType;

use super::{claim, failed, finish, mark_secret_outputs, provider_of, timeout};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;
use crate::hooks::{self, ErrorHookCall, HookCall, HookKind};

#[derive(Debug)]
pub(crate) struct CreateStep {
    /// `Create`, or `CreateReplacement` for a replacement.
    pub op: StepOp,
    pub state: ResourceState,
    /// The old resource this one takes the place of, removed on success
    /// (delete-before-replace, or an old resource already gone).
    pub remove_old: Option<usize>,
    /// The old resource to mark for deletion on success
    /// (create-before-delete).
    pub delete_old: Option<usize>,
    /// Boxed: most creates have none, and the step is held while it waits.
    pub old: Option<Box<ResourceState>>,
    pub diff: BTreeMap<String, PropertyDiff>,
}

/// Runs a create. The step stays where the future holds it: an `async fn`
/// would keep it twice (as given and as its fields' locals), and thousands
/// of creates may wait for their Begin entry at once.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice"
)]
pub(crate) fn run(
    d: &Deployment,
    mut step: CreateStep,
) -> impl Future<Output = Result<Arc<ResourceState>, EngineError>> + Send + '_ {
    async move {
        let (op, remove_old, delete_old) = (step.op, step.remove_old, step.delete_old);
        let state = &mut step.state;
        let urn = state.urn.clone();
        let start = crate::events::StepStart {
            old: step.old.as_deref(),
            new: Some(&*state),
            diff: Some(&step.diff),
        };
        d.started(op, &urn, start);
        // Before hooks run before anything is journaled: their failure
        // leaves nothing done.
        hooks::run(d, state, hook_call(d, HookKind::BeforeCreate, state), false)
            .await
            .map_err(|e| failed(d, op, &urn, e))?;
        let op_id = d.next_operation();
        // A component has nothing outside Converge to lose track of: no
        // Begin, and its end entry is not waited for (see `record`).
        if state.custom {
            // The pending copy moves into the entry before the await.
            let begun = {
                let mut pending = state.clone();
                pending.id = None;
                d.begin(op_id, Some((OperationType::Creating, pending)))
            };
            begun.await.map_err(|e| failed(d, op, &urn, e))?;
        }

        let mut errors = Vec::new();
        let outcome = loop {
            let outcome = match d.provider_turn(&urn).await {
                Ok(_permit) => perform(d, state).await,
                Err(e) => Err(e),
            };
            match outcome {
                Err(e) if hooks::retry(d, state, &e, &mut errors, error_call(state)).await => {}
                outcome => break outcome,
            }
        };
        let takeover = Takeover {
            op,
            op_id,
            remove_old,
            delete_old,
        };
        match outcome {
            Ok(()) => {}
            Err(EngineError::Step {
                source:
                    ProviderError::PartialFailure {
                        id,
                        properties,
                        reasons,
                    },
                ..
            }) if !d.opts.preview => {
                // The object exists but did not initialise: record it, so it is
                // never lost track of, and fail the step.
                state.id = Some(id);
                state.outputs = properties;
                state.init_errors = reasons.clone();
                record(d, takeover, state).await?;
                super::finish_partial(d, op_id, state);
                let err = EngineError::Step {
                    op,
                    urn: urn.clone(),
                    source: ProviderError::Failed(reasons.join("; ")),
                };
                return Err(failed(d, op, &urn, err));
            }
            Err(e) => {
                d.end_failed(op_id).await;
                return Err(failed(d, op, &urn, e));
            }
        }
        record(d, takeover, state).await?;
        crate::saved_plan::enforce::apply_result(d, state);
        hooks::run(d, state, hook_call(d, HookKind::AfterCreate, state), false).await?;
        Ok(finish(
            d,
            op,
            Some(op_id),
            step.old.as_deref(),
            step.state,
            step.diff,
        ))
    }
}

/// What a create's hooks of `kind` are told: the new inputs, and after
/// the create its ID and outputs.
fn hook_call<'a>(d: &Deployment, kind: HookKind, state: &'a ResourceState) -> HookCall<'a> {
    let after = kind == HookKind::AfterCreate;
    HookCall {
        kind,
        urn: &state.urn,
        id: state.id.as_deref().filter(|_| after).unwrap_or_default(),
        type_token: &state.type_token,
        new_inputs: Some(&state.inputs),
        old_inputs: None,
        new_outputs: after.then_some(&state.outputs),
        old_outputs: None,
        old_options: None,
        new_options: Some(state),
        preview: d.opts.preview,
    }
}

fn error_call(state: &ResourceState) -> ErrorHookCall<'_> {
    ErrorHookCall {
        urn: &state.urn,
        id: "",
        type_token: &state.type_token,
        new_inputs: Some(&state.inputs),
        old_inputs: None,
        old_outputs: None,
        failed_operation: "create",
        old_options: None,
        new_options: Some(state),
    }
}

/// How a created state takes the place of an old one.
#[derive(Debug, Clone, Copy)]
struct Takeover {
    op: StepOp,
    op_id: u64,
    remove_old: Option<usize>,
    delete_old: Option<usize>,
}

/// Journals a created object (fully or partially initialised) and the old
/// state it takes over, renames included, stamped created and modified
/// now (outside a preview), as Pulumi's state records. A component's entry is handed over
/// unsynced: nothing outside Converge depends on it.
async fn record(d: &Deployment, t: Takeover, state: &mut ResourceState) -> Result<(), EngineError> {
    if !d.opts.preview {
        let now = converge_backend::now_rfc3339();
        state.created = Some(now.clone());
        state.modified = Some(now);
    }
    let urn = &state.urn;
    let mut entry = JournalEntry::success(0, t.op_id).with_state(state.clone());
    entry.delete_old = t.delete_old;
    if let Some(i) = t.remove_old {
        entry = super::rename::take_over(d, entry, i, urn);
    }
    match state.custom {
        true => d.end(entry).await,
        false => d.end_unsynced(entry),
    }
    .map_err(|e| failed(d, t.op, urn, e))?;
    if let Some(i) = t.remove_old {
        claim(d, t.op, i, urn)?;
        super::rename::finish(d, i, state)
            .await
            .map_err(|e| failed(d, t.op, urn, e))?;
    }
    if let Some(i) = t.delete_old {
        let replaced = d.progress().replace(i, urn);
        replaced.map_err(|e| failed(d, t.op, urn, e))?;
    }
    Ok(())
}

/// The provider call: configure a provider resource, create a custom
/// resource, nothing for a component.
async fn perform(d: &Deployment, state: &mut ResourceState) -> Result<(), EngineError> {
    let urn = state.urn.clone();
    if state.is_provider() {
        let id = d
            .registry
            .configure(&urn, None, &state.inputs, d.opts.preview)
            .await
            .map_err(|source| EngineError::Provider {
                urn: urn.clone(),
                source,
            })?;
        state.id = Some(id);
        // The engine's `__internal` record is not the provider's output.
        state.outputs = converge_plugin::parameterization::without_internal(&state.inputs);
        return Ok(());
    }
    if !state.custom {
        return Ok(());
    }
    let provider = provider_of(d, state).await?;
    let response = provider
        .create(CreateRequest {
            urn: urn.clone(),
            properties: state.inputs.clone(),
            timeout: timeout(state, "create"),
            preview: d.opts.preview,
            planned: crate::saved_plan::enforce::planned_outputs(
                d,
                &urn,
                &[StepOp::Create, StepOp::CreateReplacement],
            ),
        })
        .await
        .map_err(|source| EngineError::Step {
            op: StepOp::Create,
            urn: urn.clone(),
            source,
        })?;
    if !d.opts.preview && response.id.is_empty() {
        return Err(EngineError::Step {
            op: StepOp::Create,
            urn,
            source: ProviderError::Failed("the provider returned an empty ID".to_owned()),
        });
    }
    state.id = (!response.id.is_empty()).then_some(response.id);
    state.outputs = response.properties;
    mark_secret_outputs(
        &state.inputs,
        &mut state.outputs,
        &state.additional_secret_outputs,
    );
    Ok(())
}

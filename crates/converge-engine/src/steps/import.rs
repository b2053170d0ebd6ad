//! Import: adopt an existing object by ID (seed 001): Read it, Check the
//! program's inputs against what was read, Diff — and fail unless the diff
//! is empty, so an import never changes the object.

use converge_model::ResourceState;
use converge_plugin::{CheckRequest, DiffChanges, DiffRequest, ReadRequest};
use converge_state::journal::JournalEntry;
use converge_state::OperationType;

use super::{claim, failed, finish, mark_secret_outputs, provider_of, read_within};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;

pub(crate) async fn run(
    d: &Deployment,
    old_index: Option<usize>,
    mut state: ResourceState,
    import_id: String,
) -> Result<ResourceState, EngineError> {
    let urn = state.urn.clone();
    let op = StepOp::Import;
    d.started(op, &urn);
    let op_id = d.next_operation();
    let mut pending = state.clone();
    pending.id = Some(import_id.clone());
    d.begin(op_id, Some((OperationType::Importing, pending)))
        .await
        .map_err(|e| failed(d, op, &urn, e))?;
    let outcome = perform(d, &mut state, &import_id).await;
    if let Err(e) = outcome {
        d.end_failed(op_id).await;
        return Err(failed(d, op, &urn, e));
    }
    let mut entry = JournalEntry::success(0, op_id).with_state(state.clone());
    entry.remove_old = old_index;
    d.end(entry).await.map_err(|e| failed(d, op, &urn, e))?;
    if let Some(i) = old_index {
        claim(d, op, i, &urn)?;
    }
    finish(d, op, Some(op_id), None, &state, Default::default());
    Ok(state)
}

async fn perform(
    d: &Deployment,
    state: &mut ResourceState,
    import_id: &str,
) -> Result<(), EngineError> {
    let urn = state.urn.clone();
    let step_err = |source| EngineError::Step {
        op: StepOp::Import,
        urn: urn.clone(),
        source,
    };
    let provider = provider_of(d, state).await?;
    let _permit = d.pool.acquire().await;
    let request = ReadRequest {
        urn: urn.clone(),
        id: import_id.to_owned(),
        inputs: None,
        state: None,
        timeout: None,
    };
    let timeouts = state.custom_timeouts.as_ref();
    let read = read_within(provider.as_ref(), StepOp::Import, timeouts, request).await?;
    if read.id.is_empty() {
        return Err(EngineError::ImportNotFound {
            urn,
            id: import_id.to_owned(),
        });
    }
    let checked = provider
        .check(CheckRequest {
            urn: urn.clone(),
            olds: read.inputs.clone(),
            news: state.inputs.clone(),
            random_seed: Vec::new(),
        })
        .await
        .map_err(step_err)?;
    if !checked.failures.is_empty() {
        return Err(EngineError::CheckFailed {
            urn,
            failures: checked.failures,
        });
    }
    let diff = provider
        .diff(DiffRequest {
            urn: urn.clone(),
            id: read.id.clone(),
            old_inputs: read.inputs.clone(),
            old_outputs: read.properties.clone(),
            new_inputs: checked.inputs.clone(),
            ignore_changes: state.ignore_changes.clone(),
        })
        .await
        .map_err(step_err)?;
    let changed = match diff.changes {
        DiffChanges::None => Vec::new(),
        DiffChanges::Some => changed_keys(&diff),
        DiffChanges::Unknown => converge_model::diff_objects(&read.inputs, &checked.inputs)
            .keys()
            .map(|p| p.to_string())
            .collect(),
    };
    if !changed.is_empty() {
        return Err(EngineError::ImportMismatch { urn, keys: changed });
    }
    state.id = Some(read.id);
    state.inputs = checked.inputs;
    state.outputs = read.properties;
    state.import_id = Some(import_id.to_owned());
    mark_secret_outputs(
        &state.inputs,
        &mut state.outputs,
        &state.additional_secret_outputs,
    );
    Ok(())
}

fn changed_keys(diff: &converge_plugin::DiffResponse) -> Vec<String> {
    match &diff.detailed_diff {
        Some(d) if !d.is_empty() => d.keys().cloned().collect(),
        _ if !diff.changed_keys.is_empty() => diff.changed_keys.clone(),
        _ => vec!["(unspecified)".to_owned()],
    }
}

//! Refresh: read an object's current state and record it, or drop the
//! state of an object that no longer exists.
//!
//! A Read that returns what the state records is no change. Whether a
//! Read that returns something else is drift or only the provider's
//! normalisation (seed 004, "ReadResource") is the provider's call: its
//! Diff is asked with the refreshed inputs and outputs as the olds and the
//! prior inputs — what the program asked for — as the news. No diff is
//! normalisation: the refreshed state is recorded but the step shows as
//! unchanged. A diff is drift: the refresh step, with the keys the
//! provider named (an update would change them back). A provider that
//! cannot tell (or whose Diff fails) gets the engine's comparison of the
//! refreshed and prior inputs.

use std::collections::BTreeMap;

use converge_model::{PropertyDiff, ResourceState};
use converge_plugin::{DiffRequest, Provider, ReadRequest};
use converge_state::journal::JournalEntry;

use super::{failed, provider_of, read_within, report};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;
use crate::step_generator::decide::detailed;

/// Starts the refresh step of base resource `old_index`: shown as started,
/// its Begin durable. Returns the operation's ID for [`end`].
pub(crate) async fn begin(d: &Deployment, old_index: usize) -> Result<u64, EngineError> {
    let old = &d.base.resources[old_index];
    let urn = &old.urn;
    let start = crate::events::StepStart {
        old: Some(old),
        ..Default::default()
    };
    d.started(StepOp::Refresh, urn, start);
    let op_id = d.next_operation();
    d.begin(op_id, None)
        .await
        .map_err(|e| failed(d, StepOp::Refresh, urn, e))?;
    Ok(op_id)
}

/// Ends the refresh step `op_id` of base resource `old_index`: `new`
/// replaces the old state, or, `None`, the object is gone from the state.
pub(crate) async fn end(
    d: &Deployment,
    old_index: usize,
    op_id: u64,
    new: Option<&ResourceState>,
) -> Result<(), EngineError> {
    let mut entry = JournalEntry::refresh_success(0, op_id).with_remove_old(old_index);
    if let Some(state) = new {
        entry = entry.with_state(state.clone());
    }
    let urn = &d.base.resources[old_index].urn;
    d.end(entry)
        .await
        .map_err(|e| failed(d, StepOp::Refresh, urn, e))
}

pub(crate) async fn run(d: &Deployment, old_index: usize) -> Result<(), EngineError> {
    let old = d.base.resources[old_index].clone();
    let urn = old.urn.clone();
    let op = StepOp::Refresh;
    let op_id = begin(d, old_index).await?;
    let read = async {
        let provider = provider_of(d, &old).await?;
        let _permit = d.provider_turn(&urn).await?;
        // A resource that records no outputs (an interrupted create
        // adopted with `refresh --import-pending-creates`) is read by its
        // ID alone, as an import is: there is no state to read from.
        let state = (!old.outputs.is_empty()).then(|| old.outputs.clone());
        let request = ReadRequest {
            urn: urn.clone(),
            id: old.id.clone().unwrap_or_default(),
            inputs: Some(old.inputs.clone()),
            state,
            timeout: None,
        };
        let response = read_within(
            provider.as_ref(),
            op,
            old.custom_timeouts.as_deref(),
            request,
        )
        .await?;
        Ok::<_, EngineError>((provider, response))
    }
    .await;
    let (provider, response) = match read {
        Ok(r) => r,
        Err(e) => {
            d.end_failed(op_id).await;
            return Err(failed(d, op, &urn, e));
        }
    };
    let new = if response.id.is_empty() {
        None
    } else {
        let mut new = old.clone();
        new.id = Some(response.id);
        new.outputs = response.properties;
        if !response.inputs.is_empty() {
            new.inputs = response.inputs;
        }
        Some(new)
    };
    end(d, old_index, op_id, new.as_ref()).await?;
    let (shown, diff) = match &new {
        // Vanished: the refresh deletes it from the state, and it counts
        // as a deletion, as Pulumi counts it.
        None => (StepOp::Delete, BTreeMap::new()),
        // What the state already records is no change, whatever it
        // differs in from the program: drift is reported once, when the
        // Read finds it.
        Some(refreshed)
            if refreshed.id == old.id
                && refreshed.outputs == old.outputs
                && refreshed.inputs == old.inputs =>
        {
            (StepOp::Same, BTreeMap::new())
        }
        Some(refreshed) => {
            let drift = drift(provider.as_ref(), refreshed, &old).await;
            if drift.is_empty() {
                (StepOp::Same, drift)
            } else {
                (op, drift)
            }
        }
    };
    report(d, shown, Some(&old), new.as_ref(), diff);
    Ok(())
}

/// What differs between the refreshed state and what the program asked
/// for (`desired`, the prior state's inputs), as the provider's Diff sees
/// it; empty when the refresh found only normalisation.
async fn drift(
    provider: &dyn Provider,
    refreshed: &ResourceState,
    desired: &ResourceState,
) -> BTreeMap<String, PropertyDiff> {
    let request = DiffRequest {
        urn: refreshed.urn.clone(),
        id: refreshed.id.clone().unwrap_or_default(),
        old_inputs: refreshed.inputs.clone(),
        old_outputs: refreshed.outputs.clone(),
        new_inputs: desired.inputs.clone(),
        ignore_changes: desired.ignore_changes.clone(),
    };
    let response = provider.diff(request).await.unwrap_or_default();
    detailed(&response, refreshed, desired)
}

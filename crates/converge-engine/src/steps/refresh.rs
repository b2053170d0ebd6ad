//! Refresh: read an object's current state; record what changed, or drop
//! the state of an object that no longer exists.

use converge_plugin::ReadRequest;
use converge_state::journal::JournalEntry;

use super::{failed, provider_of, read_within, report};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;

pub(crate) async fn run(d: &Deployment, old_index: usize) -> Result<(), EngineError> {
    let old = d.base.resources[old_index].clone();
    let urn = old.urn.clone();
    let op = StepOp::Refresh;
    d.started(op, &urn);
    let op_id = d.next_operation();
    d.begin(op_id, None)
        .await
        .map_err(|e| failed(d, op, &urn, e))?;
    let read = async {
        let provider = provider_of(d, &old).await?;
        let _permit = d.pool.acquire().await;
        let request = ReadRequest {
            urn: urn.clone(),
            id: old.id.clone().unwrap_or_default(),
            inputs: Some(old.inputs.clone()),
            state: Some(old.outputs.clone()),
            timeout: None,
        };
        read_within(provider.as_ref(), op, old.custom_timeouts.as_ref(), request).await
    }
    .await;
    let response = match read {
        Ok(r) => r,
        Err(e) => {
            d.end_failed(op_id).await;
            return Err(failed(d, op, &urn, e));
        }
    };
    let entry = JournalEntry::refresh_success(0, op_id).with_remove_old(old_index);
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
    let entry = match &new {
        Some(state) => entry.with_state(state.clone()),
        None => entry,
    };
    d.end(entry).await.map_err(|e| failed(d, op, &urn, e))?;
    // An object that has not drifted shows as unchanged.
    let unchanged = new
        .as_ref()
        .is_some_and(|n| n.outputs == old.outputs && n.inputs == old.inputs && n.id == old.id);
    let shown = if unchanged { StepOp::Same } else { op };
    report(d, shown, Some(&old), new.as_ref(), Default::default());
    Ok(())
}

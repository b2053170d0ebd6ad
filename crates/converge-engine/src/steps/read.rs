//! Read: an external object the program reads by ID (`ReadResource`); its
//! state is recorded as external and never managed.

use std::sync::Arc;

use converge_model::ResourceState;
use converge_plugin::{ProviderError, ReadRequest};
use converge_state::journal::JournalEntry;
use converge_state::OperationType;

use super::{claim, failed, finish, provider_of, read_within};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;

pub(crate) async fn run(
    d: &Deployment,
    old_index: Option<usize>,
    mut state: ResourceState,
) -> Result<Arc<ResourceState>, EngineError> {
    let urn = state.urn.clone();
    let op = StepOp::Read;
    let start = crate::events::StepStart {
        old: old_index.map(|i| &d.base.resources[i]),
        new: Some(&state),
        diff: None,
    };
    d.started(op, &urn, start);
    let op_id = d.next_operation();
    d.begin(op_id, Some((OperationType::Reading, state.clone())))
        .await
        .map_err(|e| failed(d, op, &urn, e))?;
    let outcome = async {
        let provider = provider_of(d, &state).await?;
        let _permit = d.provider_turn(&urn).await?;
        let request = ReadRequest {
            urn: urn.clone(),
            id: state.id.clone().unwrap_or_default(),
            inputs: Some(state.inputs.clone()),
            state: None,
            timeout: None,
        };
        let response = read_within(
            provider.as_ref(),
            op,
            state.custom_timeouts.as_deref(),
            request,
        )
        .await?;
        if response.id.is_empty() {
            return Err(EngineError::Step {
                op,
                urn: urn.clone(),
                source: ProviderError::Failed(format!(
                    "resource {} does not exist",
                    state.id.clone().unwrap_or_default()
                )),
            });
        }
        state.id = Some(response.id);
        state.outputs = response.properties;
        Ok(())
    }
    .await;
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
    let old = old_index.map(|i| &d.base.resources[i]);
    Ok(finish(d, op, Some(op_id), old, state, Default::default()))
}

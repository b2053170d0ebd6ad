//! Same: nothing to do; the old state moves into the new snapshot with the
//! program's current options (and, from a provider that upgraded it, its
//! outputs in the provider's current form). When nothing of the state
//! changed, the journal records only the base index (a compact entry).

use std::future::Future;
use std::sync::Arc;

use converge_model::ResourceState;
use converge_state::journal::JournalEntry;

use super::{claim, failed, finish};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;

/// Runs a Same step (an `async move` block: an `async fn` would keep
/// `new` twice).
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice"
)]
pub(crate) fn run(
    d: &Deployment,
    old_index: usize,
    new: ResourceState,
) -> impl Future<Output = Result<Arc<ResourceState>, EngineError>> + Send + '_ {
    async move {
        let urn = new.urn.clone();
        let op_id = d.next_operation();
        // No Begin: nothing is pending while a Same step runs. Its end entry
        // is not waited for either: a crash before it is durable leaves the
        // old state in place, which the next run carries over again.
        let old = &d.base.resources[old_index];
        let entry = match *old == new {
            // The compact form: the base's state as it is.
            true => JournalEntry::same(0, op_id, old_index),
            false => {
                let mut entry = super::rename::take_over(
                    d,
                    JournalEntry::success(0, op_id).with_state(new.clone()),
                    old_index,
                    &new.urn,
                );
                // Only bookkeeping changed unless the outputs did.
                entry.elide_write = old.outputs == new.outputs;
                entry
            }
        };
        d.end_unsynced(entry)
            .map_err(|e| failed(d, StepOp::Same, &urn, e))?;
        claim(d, StepOp::Same, old_index, &urn)?;
        super::rename::finish(d, old_index, &new)
            .await
            .map_err(|e| failed(d, StepOp::Same, &urn, e))?;
        Ok(finish(
            d,
            StepOp::Same,
            Some(op_id),
            Some(&d.base.resources[old_index]),
            new,
            Default::default(),
        ))
    }
}

//! Refresh-only plans (OpenTofu has them; Pulumi does not): a previewed
//! refresh records what it read of each object; `up --plan` journals those
//! states as the refresh's results, calling no provider, so the state
//! becomes exactly what was reviewed.

use std::collections::BTreeMap;

use converge_model::Urn;
use converge_state::plan::{RefreshedObject, ResourcePlan};
use converge_state::Snapshot;

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;
use crate::steps::{self, report};

/// Whether a base resource is one a refresh reads.
fn refreshable(r: &converge_model::ResourceState) -> bool {
    r.custom && !r.is_provider() && !r.pending_replacement && r.id.is_some() && !r.delete
}

/// The plan of a previewed refresh: each object it read, by URN, with its
/// refreshed state (`refreshed` absent: the object is gone).
pub fn refresh_plans(base: &Snapshot, refreshed: &Snapshot) -> BTreeMap<Urn, ResourcePlan> {
    let mut out = BTreeMap::new();
    for r in base.resources.iter().filter(|r| refreshable(r)) {
        let now = refreshed
            .resources
            .iter()
            .find(|n| n.urn == r.urn && !n.delete);
        let plan = match now {
            Some(n) => ResourcePlan {
                steps: vec![StepOp::Refresh.as_str().to_owned()],
                outputs: Some(n.outputs.clone()),
                refreshed: Some(RefreshedObject {
                    id: n.id.clone().unwrap_or_default(),
                    inputs: n.inputs.clone(),
                }),
                ..ResourcePlan::default()
            },
            None => ResourcePlan {
                steps: vec![StepOp::Refresh.as_str().to_owned()],
                ..ResourcePlan::default()
            },
        };
        out.insert(r.urn.clone(), plan);
    }
    out
}

/// Journals the recorded refresh of base resource `old_index`.
pub(crate) async fn apply(
    d: &Deployment,
    old_index: usize,
    recorded: &ResourcePlan,
) -> Result<(), EngineError> {
    let old = d.base.resources[old_index].clone();
    let op_id = steps::refresh::begin(d, old_index).await?;
    let new = recorded.refreshed.as_ref().map(|r| {
        let mut new = old.clone();
        new.id = Some(r.id.clone());
        new.inputs = r.inputs.clone();
        new.outputs = recorded.outputs.clone().unwrap_or_default();
        new
    });
    steps::refresh::end(d, old_index, op_id, new.as_ref()).await?;
    let unchanged = new
        .as_ref()
        .is_some_and(|n| n.outputs == old.outputs && n.inputs == old.inputs && n.id == old.id);
    let shown = match &new {
        // Gone: the refresh deletes it from the state, and counts so.
        None => StepOp::Delete,
        Some(_) if unchanged => StepOp::Same,
        Some(_) => StepOp::Refresh,
    };
    report(d, shown, Some(&old), new.as_ref(), Default::default());
    Ok(())
}

//! The plan a preview yields: every step with its planned state, as a
//! serializable value. A later change checks an update against a saved plan
//! with the Terraform rules of seeds 003/004.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::events::StepOp;

/// One planned (or performed) step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedStep {
    pub op: StepOp,
    pub urn: String,
    #[serde(rename = "type")]
    pub type_token: String,
    /// Changed property paths, with `replace` when the change forces one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub diff: BTreeMap<String, String>,
    /// Planned inputs as JSON (secrets blinded), when the step has inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<serde_json::Value>,
    /// A Read that found outputs other than the state recorded for the
    /// resource (the only reads a change summary counts).
    #[serde(skip)]
    pub read_changed: bool,
}

/// All steps of one preview, in a stable order.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<PlannedStep>,
}

impl Plan {
    /// The steps in URN order, and by kind for one URN. The sort is
    /// unstable, which moves the steps less (at 100,000 steps the stable
    /// sort took 40 ms at the operation's end): two steps of one kind for
    /// one URN keep no particular order, as they came in the order steps
    /// finished, which varies from run to run anyway.
    pub fn new(mut steps: Vec<PlannedStep>) -> Self {
        steps.sort_unstable_by(|a, b| a.urn.cmp(&b.urn).then(a.op.cmp(&b.op)));
        Plan { steps }
    }

    /// The operation's change summary: how many logical steps of each
    /// kind, as Pulumi counts them (every surface that shows counts, from
    /// the CLI's `Resources:` to the Automation API's `resource_changes`,
    /// shows these).
    ///
    /// - Default providers are the engine's own: none of their steps
    ///   counts (an explicit provider's do).
    /// - A replacement counts once, as `replace`: its create-replacement
    ///   stands for it; its delete-replaced and a dropped pending
    ///   replacement do not count.
    /// - An import counts as `import`, and the update that may follow it
    ///   not; an import over a managed object is a replacement.
    /// - A refresh that found drift counts as `update` (one that found
    ///   nothing or the object gone is already `same` or `delete`).
    /// - A read counts only when it found outputs other than the state
    ///   recorded; a first read does not count.
    pub fn counts(&self) -> BTreeMap<StepOp, usize> {
        let mut out = BTreeMap::new();
        // `new` sorts the steps by URN: one URN's steps are together.
        for group in self.steps.chunk_by(|a, b| a.urn == b.urn) {
            let has = |op: StepOp| group.iter().any(|s| s.op == op);
            let (imported, deleted) = (has(StepOp::Import), has(StepOp::DeleteReplaced));
            for s in group {
                let counted = match s.op {
                    _ if is_default_provider(s) => None,
                    StepOp::DeleteReplaced | StepOp::RemovePendingReplace => None,
                    StepOp::CreateReplacement | StepOp::Replace => Some(StepOp::Replace),
                    StepOp::Import if deleted => Some(StepOp::Replace),
                    StepOp::Update if imported => None,
                    StepOp::Refresh => Some(StepOp::Update),
                    StepOp::Read => s.read_changed.then_some(StepOp::Read),
                    op => Some(op),
                };
                if let Some(op) = counted {
                    *out.entry(op).or_insert(0) += 1;
                }
            }
        }
        out
    }
}

/// A step of a default provider (`pulumi:providers:<pkg>::default…`), one
/// the engine adds rather than the program.
fn is_default_provider(step: &PlannedStep) -> bool {
    let name = step.urn.rsplit("::").next().unwrap_or_default();
    converge_model::is_default_provider(&step.type_token, name)
}

//! Saved deployment plans: Pulumi's `DeploymentPlanV1` (the file `pulumi
//! preview --save-plan` writes and `pulumi up --plan` reads), as domain
//! types over converge-model values. [`json`] reads and writes the file;
//! secrets are encrypted as in checkpoints and unknowns are the unknown
//! sentinel.
//!
//! Beyond Pulumi, a plan Converge writes records the state it was made
//! against ([`PlanBase`], field `convergeBase`) and may be a refresh-only
//! plan (`convergeRefreshOnly`): extra fields Pulumi ignores.

pub mod json;

use std::collections::BTreeMap;

use converge_model::{CustomTimeouts, PropertyMap, Urn};
use serde_json::{Map, Value};

use crate::snapshot::Manifest;

pub use json::{
    read_plan, write_plan, PlanError, DIFF_KEYS, GOAL_KEYS, PLAN_KEYS, RESOURCE_PLAN_KEYS,
};

/// A whole saved plan.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentPlan {
    pub manifest: Manifest,
    /// The stack's configuration when the plan was made, as Pulumi's
    /// `config.Map` writes it (`{"secure": …}` for secrets), kept verbatim.
    pub config: Map<String, Value>,
    /// What each resource is planned to do, by URN.
    pub resource_plans: BTreeMap<Urn, ResourcePlan>,
    /// The state the plan was made against (Converge only).
    pub base: Option<PlanBase>,
    /// A plan of a refresh, not of an update (Converge only).
    pub refresh_only: bool,
}

/// The stack state a plan was made against: the stored checkpoint's
/// digest (the journal base digest of `converge_state::journal`) and the
/// number of resources, for the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanBase {
    pub checkpoint_digest: String,
    /// The sequence ID of the last journal entry folded into that
    /// checkpoint when the plan was made (0: none open).
    pub journal_sequence: u64,
}

/// One resource's plan.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourcePlan {
    /// The goal the program is expected to register; `None` for a
    /// resource the plan deletes.
    pub goal: Option<GoalPlan>,
    /// The steps planned for it, in order (`create`, `update`, `same`,
    /// `replace`, `create-replacement`, `delete-replaced`, `delete`, …).
    pub steps: Vec<String>,
    /// The planned state (outputs); unknowns where the preview could not
    /// tell. `None` when the plan records none.
    pub outputs: Option<PropertyMap>,
    /// The random seed of the goal (bytes; base64 in the file).
    pub seed: Vec<u8>,
    /// For a refresh-only plan: the refreshed object (Converge only).
    pub refreshed: Option<RefreshedObject>,
}

/// What a refresh read of one object: its ID and inputs (its outputs are
/// the plan's `state`). Absent from a refresh plan's resource: the object
/// is gone.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RefreshedObject {
    pub id: String,
    pub inputs: PropertyMap,
}

/// The goal of a resource, as the plan expects the program to register it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GoalPlan {
    pub type_token: String,
    pub name: String,
    pub custom: bool,
    /// The checked inputs' change against the old inputs.
    pub input_diff: PlanDiff,
    /// The outputs' change (`RegisterResourceOutputs`).
    pub output_diff: PlanDiff,
    pub parent: Option<Urn>,
    pub protect: bool,
    pub dependencies: Vec<Urn>,
    /// A provider reference `<urn>::<id>`; the ID may be the unknown
    /// sentinel in a preview.
    pub provider: Option<String>,
    pub property_dependencies: BTreeMap<String, Vec<Urn>>,
    pub delete_before_replace: Option<bool>,
    pub ignore_changes: Vec<String>,
    pub ignore_refresh_changes: Vec<String>,
    pub additional_secret_outputs: Vec<String>,
    pub aliases: Vec<Urn>,
    /// Structured aliases, kept as raw JSON.
    pub structured_aliases: Option<Value>,
    /// The import ID, if any.
    pub id: Option<String>,
    pub custom_timeouts: Option<CustomTimeouts>,
}

/// Top-level property changes: added, deleted and updated keys.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlanDiff {
    pub adds: PropertyMap,
    pub deletes: Vec<String>,
    pub updates: PropertyMap,
}

impl PlanDiff {
    /// The change from `olds` to `news`, by top-level key.
    pub fn between(olds: &PropertyMap, news: &PropertyMap) -> PlanDiff {
        let mut diff = PlanDiff::default();
        for (k, v) in news {
            match olds.get(k) {
                None => {
                    diff.adds.insert(k.clone(), v.clone());
                }
                Some(old) if old != v => {
                    diff.updates.insert(k.clone(), v.clone());
                }
                Some(_) => {}
            }
        }
        diff.deletes = olds
            .keys()
            .filter(|k| !news.contains_key(*k))
            .cloned()
            .collect();
        diff
    }

    /// `olds` with this change applied: the inputs the plan expects.
    pub fn apply(&self, olds: &PropertyMap) -> PropertyMap {
        let mut out = olds.clone();
        for k in &self.deletes {
            out.remove(k);
        }
        for (k, v) in self.adds.iter().chain(&self.updates) {
            out.insert(k.clone(), v.clone());
        }
        out
    }

    pub fn is_empty(&self) -> bool {
        self.adds.is_empty() && self.deletes.is_empty() && self.updates.is_empty()
    }
}

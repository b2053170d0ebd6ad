//! Saved plan files of `preview --save-plan` and `up --plan`: Pulumi's
//! `DeploymentPlanV1`, secrets encrypted with the stack's crypter, plus
//! the state the plan was made against.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, Result};
use converge_engine::saved_plan::{check_fresh, Freshness, ResourcePlan};
use converge_engine::LockedStack;
use converge_model::Urn;
use converge_state::plan::{read_plan, write_plan, DeploymentPlan};
use converge_state::secrets::{Crypter, SecretsMode};
use converge_state::Manifest;

use crate::context::now_rfc3339;
use crate::stack_settings::StackSettings;

/// What a plan file records of one preview.
pub struct NewPlan<'a> {
    pub resource_plans: BTreeMap<Urn, ResourcePlan>,
    pub refresh_only: bool,
    pub settings: &'a StackSettings,
}

/// Writes the plan of a preview made against `locked`'s state.
pub fn save(
    path: &Path,
    locked: &LockedStack,
    crypter: &dyn Crypter,
    plan: NewPlan<'_>,
) -> Result<()> {
    let config = match serde_json::to_value(plan.settings.config())? {
        serde_json::Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    let plan = DeploymentPlan {
        manifest: Manifest::converge(now_rfc3339()),
        config,
        resource_plans: plan.resource_plans,
        base: Some(locked.plan_base()),
        refresh_only: plan.refresh_only,
    };
    let bytes = write_plan(&plan, SecretsMode::Crypter(crypter))?;
    crate::atomic_write::write_atomically(path, &bytes)
        .with_context(|| format!("could not write the plan to {}", path.display()))
}

/// Reads a plan file and checks it was made against `locked`'s state.
pub fn load(path: &Path, locked: &LockedStack, crypter: &dyn Crypter) -> Result<DeploymentPlan> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("could not read the plan {}", path.display()))?;
    let plan = read_plan(&bytes, SecretsMode::Crypter(crypter))
        .with_context(|| format!("could not read the plan {}", path.display()))?;
    match check_fresh(&plan, &locked.plan_base())? {
        Freshness::Current => {}
        Freshness::Unrecorded => eprintln!(
            "note: the plan {} does not record the state it was made against; \
             only its resources' plans are checked",
            path.display()
        ),
    }
    Ok(plan)
}

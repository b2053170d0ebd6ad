//! Saved plan files of `preview --save-plan` and `up --plan`: Pulumi's
//! `DeploymentPlanV1`, secrets encrypted with the stack's crypter, plus
//! the state the plan was made against.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context as _, Result};
use converge_backend::StackRef;
use converge_engine::saved_plan::{check_fresh, Freshness, ResourcePlan};
use converge_engine::LockedStack;
use converge_model::Urn;
use converge_state::json_limits;
use converge_state::plan::{
    read_plan, write_plan, DeploymentPlan, DIFF_KEYS, GOAL_KEYS, PLAN_KEYS, RESOURCE_PLAN_KEYS,
};
use converge_state::secrets::{Crypter, SecretsMode};
use converge_state::Manifest;

use crate::atomic_write::{Dash, Output};
use crate::context::now_rfc3339;
use crate::stack_settings::StackSettings;
use crate::unknown_keys::misspelled;

/// What a plan file records of one preview.
pub struct NewPlan<'a> {
    pub resource_plans: BTreeMap<Urn, ResourcePlan>,
    pub refresh_only: bool,
    pub settings: &'a StackSettings,
}

/// Writes the plan of a preview made against `locked`'s state.
pub async fn save(
    path: &Path,
    locked: &mut LockedStack,
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
        base: Some(locked.plan_base().await?),
        refresh_only: plan.refresh_only,
    };
    let bytes = write_plan(&plan, SecretsMode::Crypter(crypter))?;
    Output::named(path, Path::new(""), Dash::Refused, "--save-plan")?
        .write(&bytes)
        .context("could not save the plan")?;
    eprintln!(
        "Saved the plan to {}; apply it with `converge up --plan {}`",
        path.display(),
        path.display()
    );
    Ok(())
}

/// Reads a plan file and checks it was made against `locked`'s state.
pub async fn load(
    path: &Path,
    locked: &mut LockedStack,
    crypter: &dyn Crypter,
) -> Result<DeploymentPlan> {
    let bytes = crate::input_file::read_file(path, "the plan")?;
    check_stack(path, &bytes, locked.stack())?;
    check_keys(path, &bytes)?;
    let plan = read_plan(&bytes, SecretsMode::Crypter(crypter))
        .with_context(|| format!("could not read the plan {}", path.display()))?;
    match check_fresh(&plan, &locked.plan_base().await?)? {
        Freshness::Current => {}
        Freshness::Unrecorded => eprintln!(
            "note: the plan {} does not record the state it was made against; \
             only its resources' plans are checked",
            path.display()
        ),
    }
    Ok(plan)
}

/// Refuses a hand-edited plan whose keys look misspelled, naming each: a
/// misspelled `resourcePlans` would read as a plan of nothing, a
/// misspelled diff key as no change, and the refusal that follows would
/// not say why.
fn check_keys(path: &Path, bytes: &[u8]) -> Result<()> {
    let Ok(serde_json::Value::Object(plan)) = json_limits::from_slice(bytes) else {
        // Malformed or past a limit: `read_plan` says what and where.
        return Ok(());
    };
    let mut slips = Vec::new();
    let mut look = |object: &serde_json::Map<_, _>, known: &[&str], place: &str| {
        for (key, meant) in misspelled(object, known) {
            slips.push(format!(
                "{place}: unknown key `{key}`; did you mean `{meant}`?"
            ));
        }
    };
    look(&plan, PLAN_KEYS, "the plan");
    let resource_plans = plan.get("resourcePlans").and_then(|p| p.as_object());
    for (urn, rp) in resource_plans.into_iter().flatten() {
        let Some(rp) = rp.as_object() else { continue };
        look(rp, RESOURCE_PLAN_KEYS, &format!("the plan of {urn}"));
        let Some(goal) = rp.get("goal").and_then(|g| g.as_object()) else {
            continue;
        };
        look(goal, GOAL_KEYS, &format!("the goal of {urn}"));
        for diff in ["inputDiff", "outputDiff"] {
            if let Some(d) = goal.get(diff).and_then(|d| d.as_object()) {
                look(d, DIFF_KEYS, &format!("the {diff} of {urn}"));
            }
        }
    }
    if !slips.is_empty() {
        bail!(
            "could not read the plan {}:\n  {}\nfix the keys, or make the plan again with \
             `converge preview --save-plan`",
            path.display(),
            slips.join("\n  ")
        );
    }
    Ok(())
}

/// A plan names its stack in its resources' URNs: one made for another
/// stack (or project) is refused by name, before its secrets — encrypted
/// with that stack's key — are read.
fn check_stack(path: &Path, bytes: &[u8], stack: &StackRef) -> Result<()> {
    /// The plan's URNs, the rest skipped unbuilt.
    #[derive(serde::Deserialize)]
    struct Urns {
        #[serde(rename = "resourcePlans", default)]
        resource_plans: BTreeMap<String, serde::de::IgnoredAny>,
    }
    let Ok(plan) = json_limits::from_slice::<Urns>(bytes) else {
        // Malformed or past a limit: `read_plan` says what and where.
        return Ok(());
    };
    let urns = plan
        .resource_plans
        .keys()
        .filter_map(|key| Urn::parse(key).ok());
    for urn in urns {
        if urn.stack() != stack.stack || urn.project() != stack.project {
            bail!(
                "the plan {} was made for stack {} of project {}, not for stack {} of \
                 project {}: run `converge preview --save-plan` on this stack",
                path.display(),
                urn.stack(),
                urn.project(),
                stack.stack,
                stack.project
            );
        }
    }
    Ok(())
}

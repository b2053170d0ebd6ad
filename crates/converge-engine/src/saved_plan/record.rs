//! What a deployment records of each resource for its plan.

use converge_model::{PropertyMap, ResourceState, Urn};
use converge_state::plan::{GoalPlan, PlanDiff, ResourcePlan};

use crate::deployment::Deployment;
use crate::events::StepOp;
use crate::goal::ResourceGoal;

/// The goal of a registration, its inputs checked, against the old
/// inputs (empty for a new resource).
pub(crate) fn goal(
    d: &Deployment,
    goal: &ResourceGoal,
    state: &ResourceState,
    old_inputs: &PropertyMap,
) {
    let plan = GoalPlan {
        type_token: goal.type_token.clone(),
        name: goal.name.clone(),
        custom: goal.custom,
        input_diff: PlanDiff::between(old_inputs, &state.inputs),
        output_diff: PlanDiff::default(),
        parent: state.parent.clone(),
        protect: state.protect,
        dependencies: state.dependencies.clone(),
        provider: state.provider.as_ref().map(ToString::to_string),
        property_dependencies: state.property_dependencies.clone(),
        delete_before_replace: goal.options.delete_before_replace,
        ignore_changes: state.ignore_changes.clone(),
        ignore_refresh_changes: Vec::new(),
        additional_secret_outputs: state.additional_secret_outputs.clone(),
        aliases: d.progress().aliases_of(&state.urn),
        structured_aliases: None,
        id: goal.options.import_id.clone(),
        custom_timeouts: state.custom_timeouts.as_deref().cloned(),
    };
    let mut p = d.progress();
    let entry = p.resource_plans.entry(state.urn.clone()).or_default();
    entry.goal = Some(plan);
    entry.seed = state.urn.as_str().as_bytes().to_vec();
}

/// A finished step of `urn`, with the state it left (its planned state in
/// a preview).
pub(crate) fn step(d: &Deployment, op: StepOp, urn: &Urn, new: Option<&ResourceState>) {
    let mut p = d.progress();
    let entry: &mut ResourcePlan = p.resource_plans.entry(urn.clone()).or_default();
    entry.steps.push(op.as_str().to_owned());
    if let Some(new) = new.filter(|n| &n.urn == urn) {
        entry.outputs = Some(new.outputs.clone());
    }
}

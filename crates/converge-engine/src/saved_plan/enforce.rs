//! An update against a saved plan: each registration's goal and inputs,
//! each step's kind and each deletion are checked against the plan; a
//! resource the plan does not name may not change; planned steps that
//! never ran fail the update. Create and Update results are checked
//! against the planned state with the lifecycle consistency rule.

use std::collections::BTreeSet;

use converge_model::{PropertyMap, PropertyValue, ProviderReference, ResourceState, Urn};
use converge_state::plan::{GoalPlan, ResourcePlan};

use super::{PlanConstraint, PlanUse};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::{Severity, StepOp};
use crate::lifecycle::{
    check_apply_result, check_known_values, check_step_kind, ApplyCheck, Compare,
    ConsistencySeverity,
};

fn enforced(d: &Deployment) -> Option<&PlanConstraint> {
    d.opts.plan.as_ref().filter(|p| p.usage == PlanUse::Enforce)
}

fn violation(urn: &Urn, message: impl Into<String>) -> EngineError {
    EngineError::PlanViolation {
        urn: urn.clone(),
        message: message.into(),
    }
}

fn parse_op(text: &str) -> Option<StepOp> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
}

/// The step that stands for a resource plan: its first.
fn planned_op(rp: &ResourcePlan) -> Option<StepOp> {
    rp.steps.first().and_then(|s| parse_op(s))
}

/// A registration's goal and checked inputs against its plan (before any
/// provider mutation).
pub(crate) fn registration(
    d: &Deployment,
    state: &ResourceState,
    delete_before_replace: Option<bool>,
    old: Option<&ResourceState>,
) -> Result<(), EngineError> {
    let Some(c) = enforced(d) else { return Ok(()) };
    let urn = &state.urn;
    let Some(rp) = c.plan.resource_plans.get(urn) else {
        return match old {
            Some(_) => Ok(()),
            None => Err(violation(
                urn,
                "the resource is not in the plan, so it may not be created",
            )),
        };
    };
    let Some(goal) = &rp.goal else {
        let deletes = rp
            .steps
            .iter()
            .any(|s| s.starts_with("delete") || s == "discard");
        return Err(violation(
            urn,
            if deletes {
                "the plan deletes this resource, but the program still declares it"
            } else {
                "the plan leaves this resource as it is (it was made with --target or \
                 --exclude): apply it with the same --target/--exclude flags"
            },
        ));
    };
    check_goal(goal, state, delete_before_replace).map_err(|m| violation(urn, m))?;
    let olds = old.map(|o| o.inputs.clone()).unwrap_or_default();
    let expected = goal.input_diff.apply(&olds);
    let broken = check_known_values(&expected, &state.inputs, Compare::EXACT);
    if !broken.is_empty() {
        let list: Vec<String> = broken.iter().map(ToString::to_string).collect();
        return Err(violation(
            urn,
            format!("properties changed: {}", list.join("; ")),
        ));
    }
    Ok(())
}

fn set_diff<T: Ord + std::fmt::Display>(planned: &[T], actual: &[T]) -> Option<String> {
    let p: BTreeSet<&T> = planned.iter().collect();
    let a: BTreeSet<&T> = actual.iter().collect();
    let added: Vec<String> = a.difference(&p).map(ToString::to_string).collect();
    let removed: Vec<String> = p.difference(&a).map(ToString::to_string).collect();
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("added {}", added.join(", ")));
    }
    if !removed.is_empty() {
        parts.push(format!("removed {}", removed.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn check_goal(
    goal: &GoalPlan,
    state: &ResourceState,
    delete_before_replace: Option<bool>,
) -> Result<(), String> {
    if goal.custom != state.custom {
        let expected = if goal.custom { "custom" } else { "component" };
        return Err(format!("resource kind changed (expected {expected})"));
    }
    let provider_urn = |text: &str| ProviderReference::parse(text).ok().map(|r| r.urn);
    let planned_provider = goal.provider.as_deref().and_then(provider_urn);
    let actual_provider = state.provider.as_ref().map(|r| r.urn.clone());
    if planned_provider != actual_provider {
        return Err(format!(
            "provider changed (expected {})",
            goal.provider.as_deref().unwrap_or("none")
        ));
    }
    if goal.parent != state.parent {
        return Err(format!(
            "parent changed (expected {})",
            goal.parent
                .as_ref()
                .map_or("none".to_owned(), ToString::to_string)
        ));
    }
    if goal.protect != state.protect {
        return Err(format!("protect changed (expected {})", goal.protect));
    }
    if goal.delete_before_replace != delete_before_replace {
        let expected = goal
            .delete_before_replace
            .map_or("no value".to_owned(), |b| b.to_string());
        return Err(format!("deleteBeforeReplace changed (expected {expected})"));
    }
    if goal.id != state.import_id {
        return Err(format!(
            "import ID changed (expected {})",
            goal.id.as_deref().unwrap_or("none")
        ));
    }
    let timeouts = |t: Option<&converge_model::CustomTimeouts>| {
        t.filter(|t| !t.is_empty()).map(|t| {
            t.entries()
                .iter()
                .map(|(k, v)| (*k, v.and_then(converge_model::go_duration_seconds)))
                .collect::<Vec<_>>()
        })
    };
    if timeouts(goal.custom_timeouts.as_ref()) != timeouts(state.custom_timeouts.as_deref()) {
        return Err("customTimeouts changed".to_owned());
    }
    if let Some(m) = set_diff(&goal.ignore_changes, &state.ignore_changes) {
        return Err(format!("ignoreChanges changed: {m}"));
    }
    if let Some(m) = set_diff(
        &goal.additional_secret_outputs,
        &state.additional_secret_outputs,
    ) {
        return Err(format!("additionalSecretOutputs changed: {m}"));
    }
    if let Some(m) = set_diff(&goal.dependencies, &state.dependencies) {
        return Err(format!("dependencies changed: {m}"));
    }
    for (key, planned) in &goal.property_dependencies {
        if let Some(actual) = state.property_dependencies.get(key) {
            if let Some(m) = set_diff(planned, actual) {
                return Err(format!("dependencies of property {key} changed: {m}"));
            }
        }
    }
    Ok(())
}

/// The step a registration is about to take, against its plan's (a
/// resource the plan does not name may only stay the same).
pub(crate) fn step_kind(d: &Deployment, urn: &Urn, actual: StepOp) -> Result<(), EngineError> {
    let Some(c) = enforced(d) else { return Ok(()) };
    let planned = match c.plan.resource_plans.get(urn) {
        None => StepOp::Same,
        Some(rp) => match planned_op(rp) {
            Some(op) => op,
            None => {
                return Err(violation(
                    urn,
                    format!(
                        "the plan's steps {:?} are not steps Converge knows",
                        rp.steps
                    ),
                ))
            }
        },
    };
    check_step_kind(planned, actual).map_err(|e| {
        let named = if c.plan.resource_plans.contains_key(urn) {
            e.to_string()
        } else {
            format!("the resource is not in the plan, so it may not change, but the update would {actual}")
        };
        violation(urn, named)
    })
}

/// A deletion at the end of the update: the plan must delete the
/// resource too.
pub(crate) fn deletion(d: &Deployment, urn: &Urn) -> Result<(), EngineError> {
    let Some(c) = enforced(d) else { return Ok(()) };
    let planned = c.plan.resource_plans.get(urn).is_some_and(|rp| {
        rp.steps
            .iter()
            .any(|s| matches!(parse_op(s), Some(StepOp::Delete | StepOp::DeleteReplaced)))
    });
    if planned {
        Ok(())
    } else {
        Err(violation(
            urn,
            "the plan does not delete this resource, but the update would delete it",
        ))
    }
}

/// Planned steps (other than `same`) of resources the update never
/// reached.
pub(crate) fn unrun_steps(d: &Deployment) -> Option<EngineError> {
    let c = enforced(d)?;
    let p = d.progress();
    let missing: Vec<(Urn, String)> = c
        .plan
        .resource_plans
        .iter()
        .filter(|(urn, rp)| {
            rp.steps.iter().any(|s| s != StepOp::Same.as_str())
                && p.resource_plans
                    .get(*urn)
                    .is_none_or(|r| r.steps.is_empty())
        })
        .map(|(urn, rp)| (urn.clone(), rp.steps.join(", ")))
        .collect();
    (!missing.is_empty()).then_some(EngineError::PlannedStepsNotRun(missing))
}

/// After a Create or Update: the provider's result against the planned
/// state. Only what the plan knew from the provider counts: a planned
/// output that merely repeats the input of the same name is the engine's
/// echo in a preview, not the provider's promise, and providers may
/// normalise inputs. A Pulumi plugin's inconsistency is a warning.
pub(crate) fn apply_result(d: &Deployment, state: &ResourceState) {
    let Some(c) = &d.opts.plan else { return };
    if d.opts.preview || !state.custom || state.is_provider() {
        return;
    }
    let Some(planned) = c
        .plan
        .resource_plans
        .get(&state.urn)
        .and_then(|rp| rp.outputs.as_ref())
    else {
        return;
    };
    let promised: PropertyMap = planned
        .iter()
        .filter(|(k, v)| {
            // `__`-prefixed outputs are a provider's bookkeeping (the
            // Terraform adapter's `__meta`), not promised values.
            !k.starts_with("__")
                && !matches!(v, PropertyValue::Unknown)
                && state.inputs.get(k.as_str()) != Some(*v)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if promised.is_empty() {
        return;
    }
    let provider = state
        .provider
        .as_ref()
        .map_or_else(|| "(none)".to_owned(), |r| r.urn.to_string());
    let check = ApplyCheck {
        provider: &provider,
        urn: &state.urn,
        severity: ConsistencySeverity::Warning,
        compare: Compare::SHARED,
    };
    for found in check_apply_result(&check, &promised, &state.outputs) {
        let severity = match found.severity {
            ConsistencySeverity::Warning => Severity::Warning,
            ConsistencySeverity::Error => Severity::Error,
        };
        d.events
            .diagnostic(severity, Some(&state.urn), found.to_string());
    }
}

/// What the preview planned for `urn`'s outputs, handed to the provider
/// with a Create or Update that applies the plan: a Terraform provider's
/// final plan is checked against it (seed 004's second-plan rule). Only
/// when the preview planned a step of one of `kinds` (a create's plan
/// says nothing about an update's, and a preview's update may turn into a
/// replacement without a saved plan).
pub(crate) fn planned_outputs(d: &Deployment, urn: &Urn, kinds: &[StepOp]) -> Option<PropertyMap> {
    if d.opts.preview {
        return None;
    }
    let rp = d.opts.plan.as_ref()?.plan.resource_plans.get(urn)?;
    rp.steps
        .iter()
        .any(|s| kinds.iter().any(|k| k.as_str() == s))
        .then(|| rp.outputs.clone())
        .flatten()
}

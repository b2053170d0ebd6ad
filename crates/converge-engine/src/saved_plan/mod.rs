//! Saved plans (`preview --save-plan`, `up --plan`): what a deployment
//! records of each resource — its goal, its steps, its planned state —
//! and, when an update runs against a saved plan, the checks that it does
//! only what the plan says (seed 003's second plan, with Pulumi's plan
//! semantics). The rules themselves are [`crate::lifecycle`]'s.
//!
//! - [`record`]: every operation records a [`ResourcePlan`] per URN in
//!   [`crate::OperationResult::resource_plans`].
//! - [`enforce`]: with [`PlanUse::Enforce`], registrations, steps and
//!   deletions are checked against the plan and planned steps that never
//!   ran fail the update; with either use, Create and Update results are
//!   checked against the planned state (a warning for Pulumi plugins).
//! - [`refresh`]: refresh-only plans: the refreshed states a preview
//!   recorded, applied as they were read.

pub(crate) mod enforce;
pub(crate) mod record;
pub mod refresh;

use std::sync::Arc;

use converge_state::plan::{DeploymentPlan, PlanBase};

pub use converge_state::plan::ResourcePlan;

/// `up --plan` on a stack whose state moved on since the plan was made
/// (OpenTofu's check; Pulumi has none).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "plan is stale: the stack's state changed since the plan was made; run `converge preview --save-plan` again"
)]
pub struct StalePlan;

/// What is known of the state a plan was made against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// The plan records the stack's current state.
    Current,
    /// The plan records none (Pulumi writes none): only the plan's own
    /// checks apply, as in Pulumi.
    Unrecorded,
}

/// Checks that the stack's state is the one `plan` was made against.
pub fn check_fresh(plan: &DeploymentPlan, current: &PlanBase) -> Result<Freshness, StalePlan> {
    match &plan.base {
        None => Ok(Freshness::Unrecorded),
        Some(base) if base == current => Ok(Freshness::Current),
        Some(_) => Err(StalePlan),
    }
}

/// How an operation uses a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanUse {
    /// `up --plan`: the update must keep to the plan.
    Enforce,
    /// The preview before an `up`: only the consistency of Create and
    /// Update results with the planned state is checked.
    ConsistencyOnly,
}

/// A plan an operation runs against.
#[derive(Debug, Clone)]
pub struct PlanConstraint {
    pub plan: Arc<DeploymentPlan>,
    pub usage: PlanUse,
}

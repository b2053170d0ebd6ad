//! The resource-instance change lifecycle rules of seeds 003 and 004, as
//! pure functions over converge-model values. Every provider kind uses
//! them: the step generator and the steps for Pulumi plugins, and the
//! Terraform provider adapter. Each rule
//! returns typed violations naming the property path; what a violation
//! means (an error, a warning) is the caller's choice, except where the
//! rule takes a [`ConsistencySeverity`].
//!
//! - [`step_kind`]: a planned step kind against the kind the apply would
//!   take (a saved plan's steps).
//! - [`values`]: known planned values must hold, unknowns may take any
//!   value (the second-plan rule and the apply rule); the new state is
//!   wholly known; the planned state fills in only computed values.
//! - [`consistency`]: "provider produced an inconsistent result after
//!   apply", with its severity.
//!
//! Deliberately absent: any IO, provider call or schema. The one rule
//! that needs a schema takes an "is this path computed" predicate.

pub mod consistency;
pub mod step_kind;
pub mod values;

pub use consistency::{check_apply_result, ApplyCheck, ConsistencySeverity, InconsistentResult};
pub use step_kind::{check_step_kind, StepKindViolation};
pub use values::{
    check_known_values, check_wholly_known, planned_fills_only_computed, Compare, KeyRule,
    ValueViolation,
};

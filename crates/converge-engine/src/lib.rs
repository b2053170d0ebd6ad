//! The deployment engine (seeds 000 and 002).
//!
//! - [`monitor`]: the one door programs use: [`Monitor::register_resource`],
//!   `read_resource`, `register_resource_outputs`, `invoke`, `call`,
//!   `construct`. In-process programs use it directly; the gRPC resource
//!   monitor ([`grpc`]) translates the wire and calls only it.
//! - `step_generator`: each registration → a step (same, create, update,
//!   replace create-before-delete or delete-before-replace with dependent
//!   replacements, import, read), concurrently per registration.
//! - `steps`: one module per step kind; each brackets its provider call
//!   with durable journal entries.
//! - `deletions`: the end-of-program deletions, scheduled by real
//!   dependencies.
//! - `ledger`: what the deployment did with each old resource, and which
//!   registrations hold which URNs and old resources.
//! - [`journaler`]: the one task that orders and persists journal entries.
//! - [`operations`]: preview, update, refresh, destroy.
//! - [`stack_state`]: the one owner of a stack's state: what every reader
//!   sees (the checkpoint with the journal replayed), recovery after a
//!   crash, journaled base changes, an operation's journal and compaction.
//! - [`pulumi_provider`]: the engine's provider of package `pulumi`
//!   (`StackReference`, the stack-output reads), reading other stacks of
//!   the same backend.
//! - [`lifecycle`]: the rules of seeds 003/004 (plans, applies), one
//!   module for every provider kind.
//! - [`saved_plan`]: what a deployment records for a saved plan, and the
//!   checks of an update against one.
//! - [`import`]: `converge import`'s program (the stack as it is, plus
//!   the resources to adopt).
//! - [`cancel`]: a user's interruption (Ctrl-C): no new step starts, then
//!   steps under way are no longer waited for.
//! - [`driver`]: preview → confirmation → operation on a locked stack,
//!   with refresh-first, saved and consistency plans and the history
//!   record, for every front-end to drive.
//! - `policy`: the policy packs' calls — `Remediate` and `Analyze` after
//!   `Check`, before the step; `AnalyzeStack` at the end — and their
//!   enforcement.
//! - [`events`], [`plan`]: what the front-ends render; `events::pulumi`
//!   is the stream in Pulumi's `EngineEvent` form.

mod alias_hints;
pub mod asset_hashes;
pub mod cancel;
mod check_failures;
mod deletions;
mod deployment;
pub mod driver;
pub mod error;
pub mod events;
pub mod goal;
pub mod grpc;
pub mod hooks;
pub mod import;
pub mod journaler;
mod ledger;
pub mod lifecycle;
pub mod monitor;
pub mod operations;
pub mod plan;
mod policy;
pub mod pulumi_provider;
pub mod saved_plan;
pub mod stack_state;
mod step_generator;
mod steps;
mod targeting;

pub use cancel::{Cancellation, Interruption};
pub use deployment::{default_parallelism, DeploymentOptions, STEPS_IN_FLIGHT};
pub use error::EngineError;
pub use events::{EngineEvent, EventSink, Severity, StepOp};
pub use goal::{
    Alias, AliasParent, AliasSpec, CallGoal, ConstructGoal, ImportInputs, InvokeGoal,
    ProgramContext, ReadGoal, RegisterResult, ResourceGoal, ResourceOptions,
};
pub use journaler::{
    DiscardSink, JournalError, JournalSink, Journaler, JournalerOptions, JournalerOutcome,
};
pub use monitor::{EmptyProgram, InvokeReadiness, Monitor, Program};
pub use operations::{destroy, preview, refresh, update, OperationContext, OperationResult};
pub use plan::{Plan, PlannedStep};
pub use policy::analyze_snapshot;
pub use saved_plan::{PlanConstraint, PlanUse};
pub use stack_state::{LockedStack, StackState, StackStateError};
pub use step_generator::migrations::{MigrationAnswer, MigrationCallback, StateMigrator};

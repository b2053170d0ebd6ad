//! One operation as every front-end drives it: preview → confirmation →
//! the operation, on a locked stack (cargo's `ops` is the model: the
//! library does the work, the command parses arguments and prints).
//!
//! [`drive`] runs, in order:
//!
//! 1. unless the preview is skipped: with `refresh_first`, a previewed
//!    refresh (changing nothing) whose state the preview starts from;
//!    then the preview, recording each resource's plan when the front-end
//!    keeps it (to save or print it) or an update follows (whose results
//!    are checked against what the preview knew: the consistency plan,
//!    unless a saved plan is enforced instead);
//! 2. for a preview (`preview_only`), nothing more: the front-end has the
//!    result;
//! 3. the front-end's confirmation;
//! 4. with `refresh_first`, a journaled refresh of its own;
//! 5. the operation, journaled, compacted and recorded in the stack's
//!    history.
//!
//! The front-end ([`FrontEnd`]) decides what the user sees: each phase's
//! events go where [`FrontEnd::start`] says, and [`FrontEnd::end`] hears
//! each phase's result (a front-end may stop the drive there, with its
//! own error). The driver prints nothing.

use std::sync::Arc;

use async_trait::async_trait;
use converge_plugin::ProviderLoader;
use converge_state::Snapshot;

use crate::deployment::DeploymentOptions;
use crate::error::EngineError;
use crate::events::EventSink;
use crate::journaler::{DiscardSink, JournalSink};
use crate::monitor::{EmptyProgram, Program};
use crate::operations::{self, OperationContext, OperationResult};
use crate::saved_plan::{PlanConstraint, PlanUse};
use crate::stack_state::{Finished, LockedStack, StackStateError, UpdateRecord};

/// What the operation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperationKind {
    /// Run the program, change nothing.
    Preview,
    /// Run the program and make the stack what it declares.
    Update,
    /// Read every resource into the stack.
    Refresh,
    /// Delete every resource of the stack.
    Destroy,
}

/// A phase of a drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The refresh before a preview, changing nothing.
    RefreshPreview,
    /// The preview of the operation.
    Preview,
    /// The refresh before the operation, journaled.
    Refresh,
    /// The operation itself, journaled.
    Operation,
}

impl Phase {
    /// Whether the phase only plans (changes nothing).
    pub fn previews(self) -> bool {
        matches!(self, Phase::RefreshPreview | Phase::Preview)
    }
}

/// How to drive an operation.
#[derive(Debug, Clone)]
pub struct DriverOptions {
    pub kind: OperationKind,
    /// The deployment's options (targets, parallelism, cancellation…);
    /// `preview` and `record_plans` are the driver's to set per phase.
    pub deployment: DeploymentOptions,
    /// Stop after the preview: a preview, or a refresh or destroy
    /// `--preview-only`.
    pub preview_only: bool,
    /// Go to the operation without a preview.
    pub skip_preview: bool,
    /// Refresh the state first (previewed before a preview, journaled
    /// before the operation).
    pub refresh_first: bool,
    /// Record each resource's plan in the preview's result (to save it
    /// as a plan file, print it or write an import file from it).
    pub keep_preview_plans: bool,
    /// A saved plan the operation must follow (`up --plan`).
    pub plan: Option<PlanConstraint>,
    /// The operation's history record.
    pub record: Option<UpdateRecord>,
}

/// What the driver needs from the program's side: the providers and the
/// program (for a preview or an update).
#[derive(Clone, Copy)]
pub struct Sources<'a> {
    pub loader: &'a Arc<dyn ProviderLoader>,
    pub program: Option<&'a dyn Program>,
}

impl std::fmt::Debug for Sources<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sources")
            .field("program", &self.program.is_some())
            .finish_non_exhaustive()
    }
}

/// The front-end of a drive: where each phase's events go, what it makes
/// of each phase's result, and whether the operation may go on.
#[async_trait]
pub trait FrontEnd: Send {
    /// The front-end's error; the driver's own errors convert into it.
    type Error: From<DriverError> + Send;

    /// Phase `phase` starts: the sink its events go to.
    fn start(&mut self, phase: Phase) -> EventSink;

    /// Phase `phase` ended with `result` (all its events were sent),
    /// having run on `base`. An error stops the drive.
    async fn end(
        &mut self,
        phase: Phase,
        base: &Snapshot,
        result: &OperationResult,
    ) -> Result<(), Self::Error>;

    /// After the preview (`None` when it was skipped), before anything
    /// changes: an error stops the drive.
    async fn confirm(&mut self, preview: Option<&OperationResult>) -> Result<(), Self::Error>;
}

/// What a drive did.
#[derive(Debug, Default)]
pub struct Driven {
    /// The preview, unless it was skipped.
    pub preview: Option<OperationResult>,
    /// The operation, unless the drive was a preview.
    pub operation: Option<OperationResult>,
    /// The operation's compaction and history record.
    pub finished: Option<Finished>,
}

/// Why a drive stopped.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The stack's state could not be journaled.
    #[error(transparent)]
    Stack(#[from] StackStateError),
    /// The preview failed.
    #[error("{0}")]
    Preview(#[source] EngineError),
    /// The refresh before the operation failed.
    #[error("the refresh before the {before} failed: {source}")]
    RefreshFirst {
        before: &'static str,
        #[source]
        source: EngineError,
    },
    /// The operation ran, but its final state could not be saved.
    #[error(
        "the {kind} ran, but its final state could not be saved; it will be recovered from \
         the journal on the next run: {source}"
    )]
    Finish {
        kind: &'static str,
        #[source]
        source: StackStateError,
    },
}

impl OperationKind {
    fn name(self) -> &'static str {
        match self {
            OperationKind::Preview => "preview",
            OperationKind::Update => "update",
            OperationKind::Refresh => "refresh",
            OperationKind::Destroy => "destroy",
        }
    }
}

/// Drives the operation `options` describe on `locked`; see the module
/// comment.
pub async fn drive<F: FrontEnd>(
    locked: &mut LockedStack,
    sources: Sources<'_>,
    options: DriverOptions,
    front: &mut F,
) -> Result<Driven, F::Error> {
    let kind = options.kind;
    let mut driven = Driven::default();
    let mut consistency = None;
    if options.preview_only || !options.skip_preview {
        let base = if options.refresh_first {
            let phase = Phase::RefreshPreview;
            let base = locked.shared_base();
            let refreshed = run_phase(
                phase,
                OperationKind::Refresh,
                &base,
                sources,
                with_plan(&options),
                Arc::new(DiscardSink),
                front,
            )
            .await;
            front.end(phase, &base, &refreshed).await?;
            if let Some(e) = refreshed.error {
                return Err(refresh_failed(kind, e).into());
            }
            refreshed.snapshot
        } else {
            locked.shared_base()
        };
        let phase = Phase::Preview;
        let preview = run_phase(
            phase,
            kind,
            &base,
            sources,
            DeploymentOptions {
                record_plans: (kind == OperationKind::Update && !options.preview_only)
                    || options.keep_preview_plans,
                ..with_plan(&options)
            },
            Arc::new(DiscardSink),
            front,
        )
        .await;
        front.end(phase, locked.base(), &preview).await?;
        if options.preview_only {
            driven.preview = Some(preview);
            return Ok(driven);
        }
        if let Some(e) = preview.error {
            return Err(DriverError::Preview(e).into());
        }
        // Without a saved plan, the update's results are still checked
        // against what this preview knew.
        if options.plan.is_none() && kind == OperationKind::Update {
            consistency = Some(PlanConstraint {
                plan: Arc::new(converge_state::plan::DeploymentPlan {
                    manifest: converge_state::Manifest::converge(converge_backend::now_rfc3339()),
                    config: Default::default(),
                    resource_plans: preview.resource_plans.clone(),
                    base: None,
                    refresh_only: false,
                }),
                usage: PlanUse::ConsistencyOnly,
            });
        }
        driven.preview = Some(preview);
    }
    front.confirm(driven.preview.as_ref()).await?;

    if options.refresh_first {
        let phase = Phase::Refresh;
        let journal = locked.start().await.map_err(DriverError::from)?;
        let base = locked.shared_base();
        let refreshed = run_phase(
            phase,
            OperationKind::Refresh,
            &base,
            sources,
            with_plan(&options),
            journal.clone(),
            front,
        )
        .await;
        front.end(phase, &base, &refreshed).await?;
        locked
            .finish(journal, &refreshed, None)
            .await
            .map_err(DriverError::from)?;
        if let Some(e) = refreshed.error {
            return Err(refresh_failed(kind, e).into());
        }
    }

    let phase = Phase::Operation;
    // The history records when the operation itself started.
    let mut record = options.record;
    if let Some(r) = &mut record {
        r.start_time = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(r.start_time, |d| {
                i64::try_from(d.as_secs()).unwrap_or(i64::MAX)
            });
    }
    let journal = locked.start().await.map_err(DriverError::from)?;
    let base = locked.shared_base();
    let plan = options.plan.or(consistency);
    let result = run_phase(
        phase,
        kind,
        &base,
        sources,
        DeploymentOptions {
            // The update records what each resource did only to check it
            // against a plan (`--plan`, or the preview it showed): the
            // records hold a copy of every resource's values.
            record_plans: plan.is_some(),
            plan,
            ..options.deployment.clone()
        },
        journal.clone(),
        front,
    )
    .await;
    front.end(phase, &base, &result).await?;
    let finished = locked
        .finish(journal, &result, record)
        .await
        .map_err(|source| DriverError::Finish {
            kind: kind.name(),
            source,
        })?;
    driven.operation = Some(result);
    driven.finished = Some(finished);
    Ok(driven)
}

/// The deployment's options with the saved plan, if any: the preview and
/// the refreshes run under it as the operation does.
fn with_plan(options: &DriverOptions) -> DeploymentOptions {
    DeploymentOptions {
        plan: options.plan.clone(),
        ..options.deployment.clone()
    }
}

fn refresh_failed(before: OperationKind, source: EngineError) -> DriverError {
    DriverError::RefreshFirst {
        before: before.name(),
        source,
    }
}

/// One engine operation of `kind` on `base`, its events to the sink the
/// front-end gives for `phase`.
async fn run_phase<F: FrontEnd>(
    phase: Phase,
    kind: OperationKind,
    base: &Arc<Snapshot>,
    sources: Sources<'_>,
    options: DeploymentOptions,
    sink: Arc<dyn JournalSink>,
    front: &mut F,
) -> OperationResult {
    let events = front.start(phase);
    let ctx = OperationContext {
        base: Arc::clone(base),
        loader: Arc::clone(sources.loader),
        sink,
        events,
        options: DeploymentOptions {
            preview: phase.previews(),
            ..options
        },
    };
    run_operation(kind, ctx, sources.program).await
}

/// One engine operation of `kind`: a refresh, a destroy, or the program
/// (none: the empty program) previewed or applied as `ctx` says.
pub async fn run_operation(
    kind: OperationKind,
    ctx: OperationContext,
    program: Option<&dyn Program>,
) -> OperationResult {
    match (kind, program) {
        (OperationKind::Refresh, _) => operations::refresh(ctx).await,
        (OperationKind::Destroy, _) => operations::destroy(ctx).await,
        (_, Some(program)) if ctx.options.preview => operations::preview(ctx, program).await,
        (_, Some(program)) => operations::update(ctx, program).await,
        (_, None) => operations::update(ctx, &EmptyProgram).await,
    }
}

//! The operations: preview, update, refresh, destroy.

use std::sync::Arc;

use converge_plugin::{ProviderLoader, ProviderRegistry};
use converge_state::journal::JournalEntry;
use converge_state::Snapshot;

use crate::deletions;
use crate::deployment::{Deployment, DeploymentOptions};
use crate::error::EngineError;
use crate::events::{EventSink, StepOp};
use crate::journaler::{DiscardSink, JournalSink, Journaler, JournalerOptions};
use crate::monitor::{EmptyProgram, Monitor, Program};
use crate::plan::Plan;
use crate::saved_plan::{self, ResourcePlan};
use crate::steps;

/// Everything an operation needs from outside.
#[derive(Debug, Clone)]
pub struct OperationContext {
    /// The last snapshot (integrity-verified by the caller), shared with
    /// whoever holds it (the stack's owner), not copied.
    pub base: Arc<Snapshot>,
    pub loader: Arc<dyn ProviderLoader>,
    /// Where journal entries are made durable (ignored by previews).
    pub sink: Arc<dyn JournalSink>,
    pub events: EventSink,
    pub options: DeploymentOptions,
}

/// What an operation did.
#[derive(Debug)]
pub struct OperationResult {
    /// The base with every persisted journal entry replayed: what the
    /// backend holds now (for a preview: the planned state). Shared, not
    /// copied, with whoever keeps it next (the stack's owner makes it the
    /// new base).
    pub snapshot: Arc<Snapshot>,
    /// Every persisted journal entry, in sequence order (empty unless
    /// `DeploymentOptions::keep_journal`).
    pub journal: Vec<JournalEntry>,
    /// The steps taken (or, for a preview, planned).
    pub plan: Plan,
    /// The first error, if the operation failed.
    pub error: Option<EngineError>,
    /// What the operation did (a preview: plans to do) with each
    /// resource: its goal, steps and resulting state, for a saved plan.
    pub resource_plans: std::collections::BTreeMap<converge_model::Urn, ResourcePlan>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Update,
    Refresh,
    Destroy,
}

fn start(ctx: OperationContext) -> Arc<Deployment> {
    let sink: Arc<dyn JournalSink> = if ctx.options.preview {
        Arc::new(DiscardSink)
    } else {
        ctx.sink
    };
    let base = ctx.base;
    let journal = Journaler::start(
        sink,
        JournalerOptions {
            base: Arc::clone(&base),
            keep_entries: ctx.options.keep_journal,
        },
    );
    Arc::new(Deployment::new(
        ctx.options,
        base,
        ProviderRegistry::new(ctx.loader),
        journal,
        ctx.events,
    ))
}

async fn run(ctx: OperationContext, program: &dyn Program, kind: Kind) -> OperationResult {
    let d = start(ctx);
    let cancelling = tokio::spawn(cancel_providers(Arc::downgrade(&d)));
    // Once the user stops the operation, each phase is dropped where it
    // stands (the program's registrations, the reads, the deletions; the
    // steps under way among them): a step dropped between its Begin entry
    // and its end entry stays a pending operation in the replayed state.
    let program_error = match kind {
        Kind::Update => {
            let monitor = Monitor::new(Arc::clone(&d));
            let error = d
                .unless_stopped(async { program.run(monitor).await.map_err(EngineError::Program) })
                .await
                .err();
            // A pattern may name a resource the program creates: checked
            // once the program has registered everything.
            error.or_else(|| check_patterns(&d).err())
        }
        Kind::Refresh => match check_patterns(&d) {
            Ok(()) => d.unless_stopped(refresh_all(&d)).await.err(),
            Err(e) => Some(e),
        },
        Kind::Destroy => check_patterns(&d).err(),
    };
    // A failed step is the operation's error, rather than the program's
    // report of it.
    let failure = d.progress().failure.clone();
    let program_failed = matches!(
        program_error,
        Some(
            EngineError::Program(_) | EngineError::NoResourceMatches { .. } | EngineError::Stopped
        )
    );
    let mut error = failure.or(program_error);
    // Deletions only follow a program that ran to the end: resources it
    // did not reach are still declared. After a failed step they run only
    // with continue_on_error.
    // (Once the user cancelled, no deletion starts: see `deletions`.)
    let go_on = !program_failed && (error.is_none() || d.opts.continue_on_error);
    // The deletions ran already if the program, which has delete hooks
    // to serve, signalled it was done (`Monitor::program_done`).
    let early = d.early_deletions.lock().await.take();
    if kind != Kind::Refresh && go_on {
        let outcome = match early {
            Some(outcome) => outcome,
            None => {
                d.unless_stopped(deletions::run(&d, kind == Kind::Destroy))
                    .await
            }
        };
        if let Err(e) = outcome {
            error.get_or_insert(e);
        }
    }
    if error.is_none() {
        error = d.progress().failure.clone();
    }
    if error.is_none() && kind == Kind::Update {
        error = saved_plan::enforce::unrun_steps(&d);
    }
    // Going on after failures, the operation names each of them.
    if d.opts.continue_on_error {
        let failures = std::mem::take(&mut d.progress().failures);
        if failures.len() > 1 {
            error = Some(EngineError::Failures(failures));
        }
    }
    // An operation the user cancelled ends as cancelled, rather than with
    // the refusals and failures the cancellation caused (or as a success
    // when the steps under way were all it had left).
    if let Some(interrupted) = d.interruption() {
        error = Some(interrupted);
    }
    cancelling.abort();
    if let Err(e) = crate::monitor::finish_stack_outputs(&d, error.is_some()) {
        error.get_or_insert(e);
    }
    // Unsynced entries (Same steps, components) become durable here at
    // the latest.
    if let Err(e) = d.journal.flush().await {
        error.get_or_insert(e.into());
    }
    let result = finish(&d, error, kind).await;
    Deployment::retire(d);
    result
}

async fn finish(d: &Deployment, mut error: Option<EngineError>, kind: Kind) -> OperationResult {
    let outcome = d.journal.finish();
    let journal = outcome.entries;
    let plan = Plan::new(d.take_steps());
    let resource_plans = std::mem::take(&mut d.progress().resource_plans);
    if kind == Kind::Update && !d.opts.analyzers.is_empty() {
        // A preview went on past its mandatory violations to show them
        // all; it fails now. The stack's policies see a stack that
        // finished as planned.
        let mandatory = d.policies.mandatory();
        if error.is_none() && !mandatory.is_empty() {
            error = Some(EngineError::PolicyViolation {
                urn: None,
                violations: mandatory,
            });
        }
        if let (None, Ok(snapshot)) = (&error, &outcome.snapshot) {
            if let Err(e) = crate::policy::check_stack(d, snapshot).await {
                error = Some(e);
            }
        }
        d.events.send(crate::events::EngineEvent::Policies(
            d.policies.reports(&d.opts.analyzers),
        ));
    }
    d.events.send(crate::events::EngineEvent::Summary {
        counts: plan.counts(),
        error: error.as_ref().map(ToString::to_string),
    });
    match outcome.snapshot {
        Ok(snapshot) => OperationResult {
            snapshot: Arc::new(snapshot),
            journal,
            plan,
            error,
            resource_plans,
        },
        Err(e) => OperationResult {
            snapshot: Arc::clone(&d.base),
            journal,
            plan,
            error: Some(error.unwrap_or(EngineError::Replay(Box::new(e)))),
            resource_plans,
        },
    }
}

/// How long the providers are given to answer `Cancel`.
const CANCEL_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Once the user cancels the operation, asks every provider it configured
/// to stop its outstanding work. Holds the deployment only weakly, so
/// that an operation that ends first is not kept.
async fn cancel_providers(d: std::sync::Weak<Deployment>) {
    let Some(cancel) = d.upgrade().map(|d| d.opts.cancel.clone()) else {
        return;
    };
    cancel.cancelled().await;
    if let Some(d) = d.upgrade() {
        d.registry.cancel_all(CANCEL_CALL_TIMEOUT).await;
    }
}

/// The program signalled that it has registered everything and waits for
/// the operation's steps to be done (`SignalAndWaitForShutdown`): when it
/// has hooks to serve, the deletions run now, while it can, and the
/// operation takes their outcome afterwards. Not after a failed step
/// (unless the operation goes on after errors), nor when a pattern
/// matches nothing: the operation decides those once the program exits,
/// as it does for any program.
pub(crate) async fn program_done(d: &Arc<Deployment>) {
    let mut early = d.early_deletions.lock().await;
    if early.is_some() || !d.hooks.get().is_some_and(|r| r.any_registered()) {
        return;
    }
    let failed = d.progress().failure.is_some();
    if (failed && !d.opts.continue_on_error) || check_patterns(d).is_err() {
        return;
    }
    *early = Some(d.unless_stopped(deletions::run(d, false)).await);
}

/// Every `--target`, `--exclude` and `--replace` pattern names a resource
/// of the base or a registration.
fn check_patterns(d: &Deployment) -> Result<(), EngineError> {
    if !d.selection.has_patterns() {
        return Ok(());
    }
    let p = d.progress();
    let registered: Vec<&converge_model::Urn> = p.registered.iter().map(|(u, _)| u).collect();
    let urns = d.base.resources.iter().map(|r| &r.urn);
    d.selection
        .check_matched(urns.chain(registered.iter().copied()))
}

/// Reads every custom resource of the base, concurrently; with a
/// refresh-only plan, journals what the plan recorded instead.
async fn refresh_all(d: &Arc<Deployment>) -> Result<(), EngineError> {
    let recorded = d
        .opts
        .plan
        .as_ref()
        .filter(|c| c.plan.refresh_only)
        .map(|c| Arc::clone(&c.plan));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, r) in d.base.resources.iter().enumerate() {
        if !d.selection.is_targeted(&r.urn) {
            continue;
        }
        let refreshable = r.custom && !r.is_provider() && !r.pending_replacement && r.id.is_some();
        if !refreshable {
            // As in Pulumi, the refresh has a step for each resource: the
            // stack, components, providers and objects awaiting their
            // replacement have nothing to read and stay as they are.
            if !r.delete {
                steps::report(d, StepOp::Same, Some(r), Some(r), Default::default());
            }
            continue;
        }
        let d = Arc::clone(d);
        match &recorded {
            Some(plan) => {
                let Some(rp) = plan.resource_plans.get(&r.urn).cloned() else {
                    continue;
                };
                tasks.spawn(async move { saved_plan::refresh::apply(&d, i, &rp).await });
            }
            None => {
                tasks.spawn(async move {
                    d.check_not_cancelled(&d.base.resources[i].urn)?;
                    steps::refresh::run(&d, i).await
                });
            }
        }
    }
    let mut first = None;
    while let Some(joined) = tasks.join_next().await {
        if let Ok(Err(e)) = joined {
            first.get_or_insert(e);
        }
    }
    match first {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `up`: runs the program, then deletes what it no longer declares.
pub async fn update(ctx: OperationContext, program: &dyn Program) -> OperationResult {
    run(ctx, program, Kind::Update).await
}

/// `preview`: the same with provider calls in preview mode and nothing
/// persisted.
pub async fn preview(mut ctx: OperationContext, program: &dyn Program) -> OperationResult {
    ctx.options.preview = true;
    run(ctx, program, Kind::Update).await
}

/// `refresh`: reads every resource; vanished ones leave the state.
pub async fn refresh(ctx: OperationContext) -> OperationResult {
    run(ctx, &EmptyProgram, Kind::Refresh).await
}

/// `destroy`: deletes every resource, dependents first.
pub async fn destroy(ctx: OperationContext) -> OperationResult {
    run(ctx, &EmptyProgram, Kind::Destroy).await
}

//! One deployment's shared state: the base snapshot, the provider registry,
//! the journal, and what has happened so far (the ledger of old resources
//! and registrations, the first failure, the steps). Registrations run
//! concurrently; each holds the lock only to read or record bookkeeping,
//! never across a provider call.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use converge_model::{PropertyMap, ProviderReference, ResourceState, Urn, UrnPattern};
use converge_plugin::parameterization::PackageDescriptor;
use converge_plugin::ProviderRegistry;
use converge_state::journal::JournalEntry;
use converge_state::{OperationType, PendingOperation, Snapshot};
use tokio::sync::Semaphore;

use crate::error::EngineError;
use crate::events::{EngineEvent, EventSink, StepOp};
use crate::journaler::Journaler;
use crate::ledger::{Ledger, UrnMap};
use crate::plan::PlannedStep;
use crate::targeting::Selection;

/// What an operation may do and to which resources.
#[derive(Debug, Clone)]
pub struct DeploymentOptions {
    pub stack: String,
    pub project: String,
    /// Provider calls with `preview = true`; nothing real changes.
    pub preview: bool,
    /// How many provider mutations may run at once.
    pub parallel: usize,
    /// How many registrations may be under way at once, from preparing
    /// their step to its end (and, once the program has exited, how many
    /// deletions): the others wait their turn, holding only their goal.
    /// What a step holds while it runs (its future, the states of its
    /// journal entries) then stays the same for 100,000 resources
    /// registered at once as for 4,000. Never fewer than `parallel`.
    pub steps_in_flight: usize,
    /// Only the resources these patterns match (and nothing else) may
    /// change; `None` = all. Each must match a resource of the base or
    /// the program.
    pub targets: Option<Vec<UrnPattern>>,
    /// Also target whatever depends on a target (transitively).
    pub target_dependents: bool,
    /// The resources these patterns match may not change.
    pub excludes: Vec<UrnPattern>,
    /// Also exclude whatever depends on an excluded resource.
    pub exclude_dependents: bool,
    /// Replace the resources these patterns match even if their diff says
    /// otherwise (with `targets`, they are targeted too).
    pub replace: Vec<UrnPattern>,
    /// Keep going with independent work after a step fails.
    pub continue_on_error: bool,
    /// Configuration of default providers, by package.
    pub provider_config: BTreeMap<String, PropertyMap>,
    /// A plan to keep to (`up --plan`) or to check results against.
    pub plan: Option<crate::saved_plan::PlanConstraint>,
    /// Keep every persisted journal entry in memory for
    /// `OperationResult::journal` (on by default; the CLI turns it off,
    /// since it needs only the result snapshot and the entries hold a
    /// copy of every state).
    pub keep_journal: bool,
    /// Record each resource's goal, steps and planned outputs in
    /// `OperationResult::resource_plans`, and each step's planned inputs
    /// in `OperationResult::plan` (on by default; a preview whose plan
    /// nobody keeps — `converge preview` without `--save-plan`, `--json`
    /// or `--import-file` — turns it off: both hold a copy of every
    /// resource's values).
    pub record_plans: bool,
    /// The user's interruption of the operation (see [`crate::cancel`]):
    /// never triggered unless the front-end does.
    pub cancel: crate::cancel::Cancellation,
    /// The policy packs that check each resource before its step and the
    /// stack at the end (`--policy-pack`), in the order given.
    pub analyzers: Vec<Arc<dyn converge_plugin::policy::Analyzer>>,
}

impl DeploymentOptions {
    pub fn new(stack: impl Into<String>, project: impl Into<String>) -> Self {
        DeploymentOptions {
            stack: stack.into(),
            project: project.into(),
            preview: false,
            parallel: default_parallelism(),
            steps_in_flight: STEPS_IN_FLIGHT,
            targets: None,
            target_dependents: false,
            excludes: Vec::new(),
            exclude_dependents: false,
            replace: Vec::new(),
            continue_on_error: false,
            provider_config: BTreeMap::new(),
            plan: None,
            keep_journal: true,
            record_plans: true,
            cancel: crate::cancel::Cancellation::new(),
            analyzers: Vec::new(),
        }
    }

    /// [`DeploymentOptions::steps_in_flight`], at least `parallel` and 1.
    pub fn steps_in_flight(&self) -> usize {
        self.steps_in_flight.max(self.parallel).max(1)
    }

    /// True if `--replace` asks for this resource's replacement.
    pub fn replaces(&self, urn: &Urn) -> bool {
        self.replace.iter().any(|p| p.matches(urn))
    }
}

/// Pulumi's default: a generous bound, since most steps wait on the network.
pub fn default_parallelism() -> usize {
    16
}

/// The default [`DeploymentOptions::steps_in_flight`]: hundreds of times
/// the provider calls that run at once, and journal batches large enough
/// that an entry's write costs next to nothing; a 100,000-resource
/// program registered at once holds a tenth of its steps' memory.
pub const STEPS_IN_FLIGHT: usize = 4096;

/// One deployment's mutable record, under one lock: the [`Ledger`] (old
/// resources and registrations; `progress().registered` reads through to
/// it), the registrations' resolved aliases (their children inherit
/// them), the first failure, and the plans recorded.
#[derive(Debug)]
pub(crate) struct Progress {
    ledger: Ledger,
    aliases: HashMap<Urn, Vec<Urn>>,
    pub failure: Option<EngineError>,
    /// Every failure, in order (with `continue_on_error`, the operation's
    /// error names them all).
    pub failures: Vec<EngineError>,
    /// The registrations that failed or were skipped because what they
    /// depend on did: what depends on them is skipped in turn.
    pub failed: std::collections::HashSet<Urn>,
    /// The registrations replaced (or, in a preview, to be replaced) in
    /// this deployment: what names one in `replaceWith` is replaced too.
    pub replaced: std::collections::HashSet<Urn>,
    /// What this deployment did (or plans to do) with each resource.
    pub resource_plans: BTreeMap<Urn, converge_state::plan::ResourcePlan>,
}

impl Progress {
    /// The resolved aliases of registration `urn` (none if it has none or
    /// is unknown).
    pub fn aliases_of(&self, urn: &Urn) -> Vec<Urn> {
        self.aliases.get(urn).cloned().unwrap_or_default()
    }

    /// Every registration with aliases, and its resolved aliases.
    pub fn aliased(&self) -> impl Iterator<Item = (&Urn, &Vec<Urn>)> {
        self.aliases.iter()
    }

    pub fn record_aliases(&mut self, urn: Urn, aliases: Vec<Urn>) {
        if !aliases.is_empty() {
            self.aliases.insert(urn, aliases);
        }
    }
}

impl Deref for Progress {
    type Target = Ledger;

    fn deref(&self) -> &Ledger {
        &self.ledger
    }
}

impl DerefMut for Progress {
    fn deref_mut(&mut self) -> &mut Ledger {
        &mut self.ledger
    }
}

#[derive(Debug)]
pub(crate) struct Deployment {
    pub opts: DeploymentOptions,
    /// Which resources may change (`targets`, `excludes`, dependents).
    pub selection: Selection,
    pub base: Arc<Snapshot>,
    /// Live (not marked for deletion) base resources by URN.
    pub olds: UrnMap<usize>,
    pub registry: ProviderRegistry,
    pub journal: Journaler,
    pub events: EventSink,
    pub pool: Semaphore,
    /// Registrations (and deletions) under way: see
    /// [`DeploymentOptions::steps_in_flight`].
    pub window: Semaphore,
    next_op: AtomicU64,
    /// Set once work was no longer waited for.
    abandoned: AtomicBool,
    progress: Mutex<Progress>,
    /// The steps taken, under a lock of their own: appending one may fault
    /// in a fresh page of the vector (2 MB under transparent huge pages),
    /// which under `progress` stalled every other step meanwhile.
    steps: Mutex<Vec<PlannedStep>>,
    /// Held while a default provider registers, so that concurrent users
    /// of the same one wait for that registration.
    pub default_providers: tokio::sync::Mutex<()>,
    /// The default providers registered so far, by package and version (a
    /// deployment uses a handful): every registration looks its own up
    /// here, without waiting for the lock above.
    pub default_providers_known: std::sync::RwLock<Vec<DefaultProvider>>,
    /// The packages the program registered (`RegisterPackage`), by name:
    /// a default provider of one of them serves it as registered (its
    /// base plugin, parameterized).
    pub packages: std::sync::RwLock<Vec<PackageDescriptor>>,
    /// Serializes the reference rewrites of renames (`steps::rename`).
    pub renames: tokio::sync::Mutex<()>,
    /// The root stack resource: the first registration of the stack type
    /// without a parent.
    pub root: std::sync::OnceLock<Urn>,
    /// Runs the program's resource hooks (set by the gRPC monitor).
    pub hooks: std::sync::OnceLock<Arc<dyn crate::hooks::HookRunner>>,
    /// Calls the program's state migrations (set by the gRPC monitor).
    pub migrator: std::sync::OnceLock<Arc<dyn crate::step_generator::migrations::StateMigrator>>,
    /// The old states state migrations rewrote.
    pub(crate) migrated: crate::step_generator::migrations::Overlay,
    /// The deletions, once run at the program's signal that it is done
    /// (`Monitor::program_done`) while it waits to serve their hooks:
    /// `Some(outcome)`, which the operation then takes as its deletions'.
    pub early_deletions: tokio::sync::Mutex<Option<Result<(), EngineError>>>,
    /// What the policy packs reported so far.
    pub policies: crate::policy::PolicyLog,
    /// The root stack's outputs as the program registered them, kept
    /// until the operation's end (`Monitor::register_resource_outputs`):
    /// an operation that failed keeps the outputs it did not set.
    pub stack_outputs: Mutex<Option<(Urn, PropertyMap)>>,
}

/// A default provider the deployment registered: the package and version
/// it serves, and the reference every resource of theirs gets (a clone of
/// whose URN shares its text).
#[derive(Debug)]
pub struct DefaultProvider {
    pub package: String,
    pub version: Option<String>,
    pub reference: ProviderReference,
}

impl Deployment {
    pub fn new(
        opts: DeploymentOptions,
        base: Arc<Snapshot>,
        registry: ProviderRegistry,
        journal: Journaler,
        events: EventSink,
    ) -> Self {
        let mut olds = UrnMap::with_capacity_and_hasher(base.resources.len(), Default::default());
        olds.extend(
            base.resources
                .iter()
                .enumerate()
                .filter(|(_, r)| !r.delete)
                .map(|(i, r)| (r.urn.clone(), i)),
        );
        let steps = base.resources.len();
        let pool = Semaphore::new(opts.parallel.max(1));
        let window = Semaphore::new(opts.steps_in_flight());
        let progress = Progress {
            ledger: Ledger::new(Arc::clone(&base)),
            aliases: HashMap::new(),
            failure: None,
            failures: Vec::new(),
            failed: std::collections::HashSet::new(),
            replaced: std::collections::HashSet::new(),
            resource_plans: BTreeMap::new(),
        };
        Deployment {
            selection: Selection::new(&opts, &base),
            opts,
            base,
            olds,
            registry,
            journal,
            events,
            pool,
            window,
            next_op: AtomicU64::new(1),
            abandoned: AtomicBool::new(false),
            progress: Mutex::new(progress),
            policies: crate::policy::PolicyLog::default(),
            // About one step per base resource: grown by doubling, the
            // vector of 100,000 steps was copied into fresh memory 17 times.
            steps: Mutex::new(Vec::with_capacity(steps)),
            default_providers: tokio::sync::Mutex::new(()),
            default_providers_known: std::sync::RwLock::new(Vec::new()),
            packages: std::sync::RwLock::new(Vec::new()),
            renames: tokio::sync::Mutex::new(()),
            root: std::sync::OnceLock::new(),
            hooks: std::sync::OnceLock::new(),
            migrator: std::sync::OnceLock::new(),
            migrated: Default::default(),
            early_deletions: tokio::sync::Mutex::new(None),
            stack_outputs: Mutex::new(None),
        }
    }

    /// Ends a deployment whose operation is over. Its bookkeeping (the
    /// ledger's entry and the plan record of every resource, the base
    /// URNs) is freed on a blocking thread, so the operation's answer does
    /// not wait for 100,000 frees; its providers are released here, as
    /// before.
    pub fn retire(d: Arc<Deployment>) {
        let Ok(d) = Arc::try_unwrap(d) else {
            // Something still holds it: freed with its last holder.
            return;
        };
        let Deployment {
            registry,
            progress,
            olds,
            base,
            ..
        } = d;
        drop(registry);
        tokio::task::spawn_blocking(move || drop((progress, olds, base)));
    }

    /// The reference of the default provider of `package` at `version`,
    /// if this deployment has registered it.
    pub fn known_default_provider(
        &self,
        package: &str,
        version: Option<&str>,
    ) -> Option<ProviderReference> {
        let known = self
            .default_providers_known
            .read()
            .unwrap_or_else(|p| p.into_inner());
        known
            .iter()
            .find(|p| p.package == package && p.version.as_deref() == version)
            .map(|p| p.reference.clone())
    }

    /// The package named `package` the program registered, if it did.
    pub fn registered_package(&self, package: &str) -> Option<PackageDescriptor> {
        let packages = self.packages.read().unwrap_or_else(|p| p.into_inner());
        packages.iter().find(|p| p.package() == package).cloned()
    }

    pub fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn next_operation(&self) -> u64 {
        self.next_op.fetch_add(1, Ordering::Relaxed)
    }

    /// Fails fast when an earlier step failed and the operation does not
    /// continue on error, or when the user cancelled the operation.
    pub fn check_not_failed(&self, urn: &Urn) -> Result<(), EngineError> {
        self.check_not_cancelled(urn)?;
        if !self.opts.continue_on_error && self.progress().failure.is_some() {
            return Err(EngineError::Cancelled(urn.clone()));
        }
        Ok(())
    }

    /// Fails when the user cancelled the operation: nothing new starts.
    pub fn check_not_cancelled(&self, urn: &Urn) -> Result<(), EngineError> {
        if self.opts.cancel.is_cancelled() {
            return Err(EngineError::NotStarted(urn.clone()));
        }
        Ok(())
    }

    /// The operation's error once the user cancelled it, as in Pulumi:
    /// a cancelled operation ends as cancelled even when the steps under
    /// way were all it had left, so the exit status and the history say
    /// what the user did.
    pub fn interruption(&self) -> Option<EngineError> {
        self.opts
            .cancel
            .is_cancelled()
            .then(|| EngineError::Interrupted {
                stopped: self.abandoned.load(Ordering::SeqCst),
            })
    }

    /// A turn to call a provider for a step of `urn` (at most
    /// [`DeploymentOptions::parallel`] at once). A step whose turn comes
    /// after the user cancelled is not started: its Begin, if any, is
    /// ended by the caller's Failure entry, since nothing happened.
    pub async fn provider_turn(
        &self,
        urn: &Urn,
    ) -> Result<tokio::sync::SemaphorePermit<'_>, EngineError> {
        self.check_not_cancelled(urn)?;
        let permit = self
            .pool
            .acquire()
            .await
            .map_err(|_| EngineError::NotStarted(urn.clone()))?;
        self.check_not_cancelled(urn)?;
        Ok(permit)
    }

    /// Runs `work` unless the user stops the operation first: then the
    /// work is dropped where it stands ([`EngineError::Stopped`]). A step
    /// dropped between its Begin entry and its end entry stays a pending
    /// operation in the replayed state.
    pub async fn unless_stopped<T>(
        &self,
        work: impl Future<Output = Result<T, EngineError>>,
    ) -> Result<T, EngineError> {
        tokio::select! {
            biased;
            result = work => result,
            () = self.opts.cancel.stopped() => {
                self.abandoned.store(true, Ordering::SeqCst);
                Err(EngineError::Stopped)
            }
        }
    }

    /// Records a failure (the first one is the operation's error) and the
    /// resource it is of.
    pub fn fail(&self, err: &EngineError) {
        let mut p = self.progress();
        if p.failure.is_none() {
            p.failure = Some(err.clone());
        }
        if let Some(urn) = err.urn() {
            p.failed.insert(urn.clone());
        }
        // A step's failure is recorded by the step and again by its
        // registration: once is enough.
        if !p.failures.contains(err) {
            p.failures.push(err.clone());
        }
    }

    /// With `continue_on_error`, a registration that depends on one that
    /// failed (or was skipped) is skipped, naming it.
    pub fn check_dependencies_not_failed<'a>(
        &self,
        urn: &Urn,
        mut dependencies: impl Iterator<Item = &'a Urn>,
    ) -> Result<(), EngineError> {
        let p = self.progress();
        if p.failed.is_empty() {
            return Ok(());
        }
        match dependencies.find(|d| p.failed.contains(*d)) {
            Some(dependency) => Err(EngineError::DependencyFailed {
                urn: urn.clone(),
                dependency: dependency.clone(),
            }),
            None => Ok(()),
        }
    }

    pub fn record_step(&self, step: PlannedStep) {
        self.steps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(step);
    }

    /// The steps taken so far, leaving none.
    pub fn take_steps(&self) -> Vec<PlannedStep> {
        std::mem::take(&mut *self.steps.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Reports a step as started, with the states it goes from and to
    /// and its diff (the metadata of Pulumi's `resourcePreEvent`) when the
    /// sink wants them.
    pub fn started(&self, op: StepOp, urn: &Urn, start: crate::events::StepStart<'_>) {
        let start = match self.events.wants_step_states() {
            true => start,
            false => crate::events::StepStart::default(),
        };
        self.events.send(EngineEvent::StepStarted {
            op,
            urn: urn.clone(),
            old: start.old.map(|s| Arc::new(s.clone())),
            new: start.new.map(|s| Arc::new(s.clone())),
            diff: start.diff.cloned().unwrap_or_default(),
        });
    }

    /// Journals a step's Begin; the future waits until it is durable. The
    /// entry is handed over at the call, so the future is a few words (a
    /// step may wait in it while thousands of others do).
    pub fn begin(
        &self,
        op_id: u64,
        operation: Option<(OperationType, ResourceState)>,
    ) -> impl Future<Output = Result<(), EngineError>> + Send + 'static {
        let operation = operation.map(|(kind, resource)| PendingOperation { resource, kind });
        self.end(JournalEntry::begin(0, op_id, operation))
    }

    /// Journals the Begin of the delete of base resource `old_index`: what
    /// is pending is the base resource itself, so the entry names it by
    /// index instead of copying its state (a destroy begins every delete).
    pub fn begin_deleting(
        &self,
        op_id: u64,
        old_index: usize,
    ) -> impl Future<Output = Result<(), EngineError>> + Send + 'static {
        self.end(JournalEntry::begin_deleting(0, op_id, old_index))
    }

    /// Journals a step's end entry; the future waits until it is durable
    /// (the entry is handed over at the call, as for [`Deployment::begin`]).
    pub fn end(
        &self,
        entry: JournalEntry,
    ) -> impl Future<Output = Result<(), EngineError>> + Send + 'static {
        let durable = self.journal.append(entry);
        async move {
            durable.await?;
            Ok(())
        }
    }

    /// Journals the end entry of a step with no effect outside Converge
    /// (Same, a component's) without waiting for it to be durable: the
    /// program gets its answer at once, and the next durable entry or the
    /// operation's final flush covers it.
    pub fn end_unsynced(&self, entry: JournalEntry) -> Result<(), EngineError> {
        self.journal.append_unsynced(entry)?;
        Ok(())
    }

    /// Journals a failure of operation `op_id`; the step's error is what
    /// the caller reports, a journal error here is secondary.
    pub fn end_failed(&self, op_id: u64) -> impl Future<Output = ()> + Send + 'static {
        let durable = self.journal.append(JournalEntry::failure(0, op_id));
        async move {
            let _ = durable.await;
        }
    }
}

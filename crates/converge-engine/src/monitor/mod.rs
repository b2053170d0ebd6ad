//! The engine's side of a running program: the one door programs use.
//! In-process programs (YAML) call it directly; the gRPC resource monitor
//! (`grpc/`) translates the wire and calls nothing else. Register, read,
//! outputs, invoke, call, construct: one interface, one step generator
//! behind it, so a feature behaves the same whatever language the program
//! is written in.
//!
//! - `functions`: `invoke` (with the engine's `pulumi:pulumi:getResource`)
//!   and `call`, on the explicit or default provider.
//! - `construct`: remote components.

mod construct;
mod functions;
mod invoke_dependencies;

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use converge_model::{PropertyMap, Urn, STACK_TYPE};
use converge_plugin::parameterization::PackageDescriptor;
use converge_plugin::{
    CallResponse, ConstructResponse, DeploymentContext, InvokeResponse, PackageSchema,
};
use converge_state::journal::JournalEntry;

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::Severity;
use crate::goal::{
    CallGoal, ConstructGoal, InvokeGoal, ProgramContext, ReadGoal, RegisterResult, ResourceGoal,
};
use crate::step_generator;

pub use functions::GET_RESOURCE;
pub use invoke_dependencies::InvokeReadiness;

/// A handle a program uses to declare its resources. Cheap to clone; use it
/// from as many tasks as the program likes.
#[derive(Debug, Clone)]
pub struct Monitor {
    deployment: Arc<Deployment>,
}

impl Monitor {
    pub(crate) fn new(deployment: Arc<Deployment>) -> Self {
        Monitor { deployment }
    }

    /// `RegisterResource`: returns once the resource's step is done. A
    /// registration that fails fails the operation (see
    /// `step_generator::registered`); the root stack's URN is kept once known.
    ///
    /// A program may have 100,000 registrations waiting: each waits its
    /// turn among the steps in flight
    /// ([`crate::DeploymentOptions::steps_in_flight`]) holding only its
    /// boxed goal, and the work of one under way is boxed (see
    /// `step_generator::register`). The engine's own registrations (a
    /// default provider's) do not wait for a turn: the registrations that
    /// need them hold theirs.
    pub fn register_resource(
        &self,
        goal: ResourceGoal,
    ) -> impl Future<Output = Result<RegisterResult, EngineError>> + Send + '_ {
        let d = &self.deployment;
        let goal = Box::new(goal);
        async move {
            let _turn = d.window.acquire().await;
            step_generator::register(d, *goal).await
        }
    }

    /// `RegisterPackage`: the program will use `package` (a parameterized
    /// package, or a plugin at a version). A default provider of its name
    /// loads its base plugin and parameterizes it, once per package. The
    /// same package again changes nothing; another package of the same
    /// name is refused.
    pub fn register_package(&self, package: PackageDescriptor) -> Result<(), EngineError> {
        let mut packages = self
            .deployment
            .packages
            .write()
            .unwrap_or_else(|p| p.into_inner());
        match packages.iter().find(|p| p.package() == package.package()) {
            Some(known) if *known == package => Ok(()),
            Some(known) => Err(EngineError::PackageConflict {
                package: package.package().to_owned(),
                first: describe(known),
                second: describe(&package),
            }),
            None => {
                packages.push(package);
                Ok(())
            }
        }
    }

    /// Gives the engine the program's resource hooks to run (the gRPC
    /// monitor's, which calls the program back). Set once; later calls
    /// change nothing.
    pub fn set_hook_runner(&self, runner: Arc<dyn crate::hooks::HookRunner>) {
        let _ = self.deployment.hooks.set(runner);
    }

    /// Gives the engine the program's state migrations to call (the gRPC
    /// monitor's, which calls the program back). Set once.
    pub fn set_state_migrator(
        &self,
        migrator: Arc<dyn crate::step_generator::migrations::StateMigrator>,
    ) {
        let _ = self.deployment.migrator.set(migrator);
    }

    /// The program has registered everything and waits until the
    /// operation's steps are done (`SignalAndWaitForShutdown`): with hooks
    /// to serve, the deletions run now, so their hooks can be called.
    pub async fn program_done(&self) {
        crate::operations::program_done(&self.deployment).await;
    }

    /// Registers the stack resource, `<project>-<stack>` of type
    /// `pulumi:pulumi:Stack`: the root every program registers first and
    /// the parent of resources registered without one.
    pub async fn register_stack(&self) -> Result<RegisterResult, EngineError> {
        let goal = ResourceGoal {
            type_token: STACK_TYPE.to_owned(),
            name: format!("{}-{}", self.project(), self.stack()),
            custom: false,
            ..ResourceGoal::default()
        };
        self.register_resource(goal).await
    }

    /// The root stack resource, once registered.
    pub fn root_resource(&self) -> Option<Urn> {
        self.deployment.root.get().cloned()
    }

    /// A registration that fails — in its step, or before it (Check, Diff,
    /// provider resolution) — fails the operation, even if the program
    /// carries on.
    fn record<T>(&self, result: Result<T, EngineError>) -> Result<T, EngineError> {
        if let Err(e) = &result {
            self.deployment.fail(e);
        }
        result
    }

    /// `ReadResource`: reads an external object by ID.
    pub async fn read_resource(&self, goal: ReadGoal) -> Result<RegisterResult, EngineError> {
        let _turn = self.deployment.window.acquire().await;
        let result = step_generator::read(&self.deployment, goal).await;
        self.record(result)
    }

    /// `RegisterResourceOutputs`: a component's (or the stack's) outputs.
    /// The root stack's are kept until the operation ends, as Pulumi's
    /// engine keeps them: an operation that fails (the SDKs register the
    /// stack's outputs even after the program threw) then sets the
    /// outputs the program gave and deletes none.
    pub async fn register_resource_outputs(
        &self,
        urn: &Urn,
        outputs: PropertyMap,
    ) -> Result<(), EngineError> {
        let d = &self.deployment;
        let root_stack = {
            let p = d.progress();
            let registered = p
                .registered
                .get(urn)
                .ok_or_else(|| EngineError::OutputsOfUnregistered(urn.clone()))?;
            urn.is_stack() && registered.state.parent.is_none()
        };
        if root_stack {
            *d.stack_outputs.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((urn.clone(), outputs));
            return Ok(());
        }
        self.record(set_outputs(d, urn, outputs))
    }

    /// The canonical tokens of `package`'s schema, from the provider that
    /// would serve it at `version` (a semver text; one that does not parse
    /// counts as none). `None`: that provider has no schema. Does not
    /// fail the deployment: a program may fall back to the tokens it has.
    pub async fn package_schema(
        &self,
        package: &str,
        version: Option<&str>,
    ) -> Result<Option<Arc<PackageSchema>>, EngineError> {
        let version = version.and_then(|v| semver::Version::parse(v).ok());
        self.deployment
            .registry
            .schema(package, version.as_ref())
            .await
            .map_err(|source| EngineError::Schema {
                package: package.to_owned(),
                source,
            })
    }

    /// The stack this program deploys.
    pub fn stack(&self) -> &str {
        &self.deployment.opts.stack
    }

    pub fn project(&self) -> &str {
        &self.deployment.opts.project
    }

    /// True in a preview.
    pub fn is_preview(&self) -> bool {
        self.deployment.opts.preview
    }

    /// How many resource operations may run at once (`--parallel`).
    pub fn parallel(&self) -> usize {
        self.deployment.opts.parallel
    }

    /// True once the deployment has stopped taking registrations: a
    /// registration or step failed (unless the operation continues on
    /// error, where a failure is that resource's alone) or the user
    /// cancelled it; the program is then told the monitor is shutting
    /// down.
    pub fn has_failed(&self) -> bool {
        let d = &self.deployment;
        d.opts.cancel.is_cancelled()
            || (!d.opts.continue_on_error && d.progress().failure.is_some())
    }

    /// Whether the operation goes on after a registration fails: the
    /// program is then told that resource failed, and goes on.
    pub fn continues_on_error(&self) -> bool {
        self.deployment.opts.continue_on_error
    }

    /// The user's interruption of this deployment: a language host ends
    /// the program's process once the operation is stopped.
    pub fn cancellation(&self) -> &crate::cancel::Cancellation {
        &self.deployment.opts.cancel
    }

    /// Reports a message from or about the program as a diagnostic of the
    /// deployment.
    pub fn diagnostic(&self, severity: Severity, urn: Option<&Urn>, message: impl Into<String>) {
        self.deployment.events.diagnostic(severity, urn, message);
    }

    /// `Invoke`: `pulumi:pulumi:getResource` (a resource of this
    /// deployment, else of the base state), or a provider function on the
    /// explicit provider, else the default provider of the token's package
    /// (registered on first use, with the stack's configuration for it).
    /// Failures the provider reports are in the response; a failed invoke
    /// does not fail the deployment (the program decides).
    pub async fn invoke(&self, goal: InvokeGoal) -> Result<InvokeResponse, EngineError> {
        functions::invoke(&self.deployment, goal).await
    }

    /// Whether an invoke that depends on `urns` (its `dependsOn`) may run:
    /// waits while one of them is still registering, and answers
    /// [`InvokeReadiness::Pending`] while one of them, or a resource under
    /// one, does not exist yet (in a preview, a resource to be created).
    /// A URN this program never registered is an error.
    pub async fn invoke_readiness(&self, urns: &[Urn]) -> Result<InvokeReadiness, EngineError> {
        invoke_dependencies::readiness(&self.deployment, urns).await
    }

    /// `Call`: a component method on the explicit or default provider of
    /// the token's package, which may register resources through the
    /// program's monitor (`program.monitor_endpoint`).
    pub async fn call(
        &self,
        goal: CallGoal,
        program: &ProgramContext,
    ) -> Result<CallResponse, EngineError> {
        functions::call(&self.deployment, goal, self.context(program)).await
    }

    /// A remote component: the provider's `Construct`, which registers the
    /// component and its children through the program's monitor; the answer
    /// is the URN and outputs it reports. A failure fails the deployment.
    pub async fn construct(
        &self,
        goal: ConstructGoal,
        program: &ProgramContext,
    ) -> Result<ConstructResponse, EngineError> {
        let result = construct::construct(&self.deployment, goal, self.context(program)).await;
        self.record(result)
    }

    /// What a provider's `Construct` or `Call` is told of the deployment.
    fn context(&self, program: &ProgramContext) -> DeploymentContext {
        DeploymentContext {
            project: self.project().to_owned(),
            stack: self.stack().to_owned(),
            organization: program.organization.clone(),
            config: program.config.clone(),
            config_secret_keys: program.config_secret_keys.clone(),
            dry_run: self.is_preview(),
            parallel: self.parallel(),
            monitor_endpoint: program.monitor_endpoint.clone(),
        }
    }
}

/// A program: registers resources through the monitor.
#[async_trait]
pub trait Program: Send + Sync {
    /// Runs the program; an `Err` is the program's own failure message.
    async fn run(&self, monitor: Monitor) -> Result<(), String>;
}

/// The empty program (`destroy`).
#[derive(Debug, Default)]
pub struct EmptyProgram;

#[async_trait]
impl Program for EmptyProgram {
    async fn run(&self, _monitor: Monitor) -> Result<(), String> {
        Ok(())
    }
}

/// A registered package as an error message names it.
fn describe(p: &PackageDescriptor) -> String {
    let version = |v: Option<&semver::Version>| v.map(|v| format!("@{v}")).unwrap_or_default();
    let plugin = format!("plugin {}{}", p.plugin, version(p.plugin_version.as_ref()));
    match &p.parameterization {
        Some(x) => format!(
            "{}@{} of {plugin} with a {}-byte parameter",
            x.name,
            x.version,
            x.value.len()
        ),
        None => plugin,
    }
}

/// Records `outputs` as the registered resource `urn`'s.
pub(crate) fn set_outputs(
    d: &Deployment,
    urn: &Urn,
    outputs: PropertyMap,
) -> Result<(), EngineError> {
    let (op, state) = {
        let p = d.progress();
        let registered = p
            .registered
            .get(urn)
            .ok_or_else(|| EngineError::OutputsOfUnregistered(urn.clone()))?;
        let mut state = registered.state.clone();
        state.outputs = outputs;
        (registered.op, state)
    };
    let Some(op) = op else { return Ok(()) };
    // Outputs change nothing outside Converge: like a component's
    // registration, the answer does not wait for the entry to be
    // durable (a crash before it is loses what a re-run sets again).
    let entry = JournalEntry::outputs(0, d.next_operation(), state.clone()).with_remove_new(op);
    d.end_unsynced(entry)?;
    d.progress().registered.set_state(urn, Arc::new(state));
    Ok(())
}

/// At the operation's end, the root stack's outputs the program
/// registered: as given after an operation that succeeded; after one that
/// failed, over the outputs it had (which it keeps), so that a failure
/// never deletes an output.
pub(crate) fn finish_stack_outputs(d: &Deployment, failed: bool) -> Result<(), EngineError> {
    let Some((urn, mut outputs)) = d
        .stack_outputs
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    else {
        return Ok(());
    };
    if failed {
        let kept = d
            .progress()
            .registered
            .get(&urn)
            .map(|r| r.state.outputs.clone())
            .unwrap_or_default();
        for (k, v) in kept {
            outputs.entry(k).or_insert(v);
        }
    }
    set_outputs(d, &urn, outputs)
}

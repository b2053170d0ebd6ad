//! The step generator (seed 000): turns each registration into a step.
//!
//! Unlike Pulumi's serial generator, every registration is handled on its
//! own task: registrations the program makes concurrently are checked,
//! diffed and executed concurrently. Decisions depend only on the
//! registration, the base snapshot and the registrations it depends on
//! (which the program has already seen complete), so the steps are the
//! same whatever the timing.

pub(crate) mod aliases;
pub(crate) mod decide;
mod dependents;
#[cfg(test)]
mod footprint;
pub mod migrations;

use std::future::Future;
use std::sync::Arc;

use converge_model::{
    package_of, provider_package, provider_type, PropertyPath, ProviderReference, ResourceState,
    Urn, STACK_TYPE,
};
use converge_plugin::CheckRequest;

use crate::deployment::{DefaultProvider, Deployment};
use crate::error::EngineError;
use crate::events::{Severity, StepOp};
use crate::goal::{ReadGoal, RegisterResult, ResourceGoal, ResourceOptions};
use crate::ledger::{Recorded, Registered};
use crate::saved_plan;
use crate::steps::{self, create::CreateStep};

pub(crate) use decide::detailed as detailed_diff;
pub(crate) use dependents::delete_for_replacement;

/// The URN of a registration in this deployment's stack and project
/// ([`Urn::for_resource`]).
pub(crate) fn make_urn(
    d: &Deployment,
    type_token: &str,
    name: &str,
    parent: Option<&Urn>,
) -> Result<Urn, EngineError> {
    Ok(Urn::for_resource(
        &d.opts.stack,
        &d.opts.project,
        parent,
        type_token,
        name,
    )?)
}

/// The old state of a registration: by URN, else by one of its aliases.
fn find_old(d: &Deployment, urn: &Urn, aliases: &[Urn]) -> Result<Option<usize>, EngineError> {
    if let Some(i) = d.old_index_of(urn) {
        return Ok(Some(i));
    }
    let found: Vec<(Urn, usize)> = aliases
        .iter()
        .filter_map(|a| d.old_index_of(a).map(|i| (a.clone(), i)))
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [(_, i)] => Ok(Some(*i)),
        _ => Err(EngineError::AmbiguousAliases {
            urn: urn.clone(),
            found: found.into_iter().map(|(u, _)| u).collect(),
        }),
    }
}

/// A registration's custom timeouts must be durations: one that is not is
/// refused, naming its key, before anything happens.
pub(crate) fn check_timeouts(
    urn: &Urn,
    timeouts: Option<&converge_model::CustomTimeouts>,
) -> Result<(), EngineError> {
    match timeouts.map(|t| t.check()) {
        Some(Err(source)) => Err(EngineError::BadCustomTimeout {
            urn: urn.clone(),
            source,
        }),
        _ => Ok(()),
    }
}

/// Every parent and dependency must be a resource registered earlier in
/// this deployment. Those registered but not recorded — new resources left
/// out by `--target`/`--exclude` — are returned: only a resource that is
/// itself targeted may not depend on them.
fn check_references(
    d: &Deployment,
    urn: &Urn,
    refs: impl Iterator<Item = Urn>,
) -> Result<Vec<Urn>, EngineError> {
    let p = d.progress();
    let mut skipped = Vec::new();
    for dependency in refs {
        match p.registered.get(&dependency) {
            Some(r) if r.op.is_some() => {}
            Some(_) => skipped.push(dependency),
            None => {
                return Err(EngineError::UnknownDependency {
                    urn: urn.clone(),
                    dependency,
                })
            }
        }
    }
    Ok(skipped)
}

/// The state a registration asks for, before any provider call.
fn goal_state(urn: Urn, goal: &ResourceGoal, provider: Option<ProviderReference>) -> ResourceState {
    let mut s = ResourceState::new(urn, goal.custom);
    s.type_token = goal.type_token.clone();
    s.inputs = goal.inputs.clone();
    s.parent = goal.parent.clone();
    s.dependencies = goal.dependencies.clone();
    s.property_dependencies = goal.property_dependencies.clone();
    s.provider = provider;
    s.protect = goal.options.protect;
    s.ignore_changes = goal.options.ignore_changes.clone();
    s.replace_on_changes = goal.options.replace_on_changes.clone();
    s.retain_on_delete = goal.options.retain_on_delete;
    s.deleted_with = goal.options.deleted_with.clone();
    s.custom_timeouts = goal.options.custom_timeouts.clone().map(Box::new);
    s.additional_secret_outputs = goal.options.additional_secret_outputs.clone();
    s.hide_diff = goal.options.hide_diffs.clone();
    s.replace_with = goal.options.replace_with.clone();
    s.replacement_trigger = goal.options.replacement_trigger.clone();
    s.resource_hooks = crate::hooks::recorded(&goal.options.hooks);
    s
}

fn result_of(state: &ResourceState) -> RegisterResult {
    RegisterResult {
        urn: state.urn.clone(),
        id: state.id.clone(),
        outputs: state.outputs.clone(),
    }
}

/// Handles one `RegisterResource`. A program may have thousands of
/// registrations in flight, most of them waiting for their step's journal
/// entries, so what one holds while it waits is kept small:
/// - the preparation (the goal, the planned and old states, the provider
///   calls that decide the step) is a boxed future of its own, freed
///   before the step runs; the registration then holds the step alone;
/// - each sub-step is boxed, since a future is as large as its largest
///   await;
/// - the bodies are `async move` blocks, not `async fn`s, which keep their
///   arguments twice (once as given and once as the body's locals).
pub(crate) fn register(
    d: &Arc<Deployment>,
    goal: ResourceGoal,
) -> impl Future<Output = Result<RegisterResult, EngineError>> + Send + '_ {
    let is_root = goal.type_token == STACK_TYPE && goal.parent.is_none();
    let preparation = Box::pin(prepare(d, goal));
    async move {
        // Only the step is held while it runs (a match on the
        // preparation's result would keep the whole result's space).
        let step = match preparation.await {
            Ok(Prepared::Step(step)) => step,
            Ok(Prepared::Done(result)) => return registered(d, is_root, Ok(result)),
            Err(e) => return registered(d, is_root, Err(e)),
        };
        let result = step.await.map(|s| result_of(&s));
        registered(d, is_root, result)
    }
}

/// A registration's end: one that fails fails the operation, even if the
/// program carries on; the root stack's URN is kept once known.
fn registered(
    d: &Deployment,
    is_root: bool,
    result: Result<RegisterResult, EngineError>,
) -> Result<RegisterResult, EngineError> {
    match &result {
        Ok(r) if is_root => {
            let _ = d.root.set(r.urn.clone());
        }
        Ok(_) => {}
        Err(e) => d.fail(e),
    }
    result
}

/// What a registration's preparation leaves to do.
enum Prepared<'a> {
    /// Nothing: the answer is known (a component, a resource outside
    /// `--target`).
    Done(RegisterResult),
    /// The step decided on, to run once the preparation is freed.
    Step(decide::StepFuture<'a>),
}

/// Everything a registration does before its step: the URN and old
/// resource, the provider, Check and Diff, the decision.
#[allow(
    clippy::manual_async_fn,
    reason = "an async fn keeps its arguments twice"
)]
fn prepare(
    d: &Arc<Deployment>,
    mut goal: ResourceGoal,
) -> impl Future<Output = Result<Prepared<'_>, EngineError>> + Send + '_ {
    async move {
        let urn = make_urn(d, &goal.type_token, &goal.name, goal.parent.as_ref())?;
        d.check_not_failed(&urn)?;
        check_timeouts(&urn, goal.options.custom_timeouts.as_ref())?;
        provider_version_input(&urn, &mut goal)?;
        registered_package_input(d, &mut goal);
        if d.opts.continue_on_error {
            d.check_dependencies_not_failed(
                &urn,
                goal.parent
                    .iter()
                    .chain(&goal.dependencies)
                    .chain(goal.property_dependencies.values().flatten()),
            )?;
        }
        let skipped = check_references(
            d,
            &urn,
            goal.parent
                .iter()
                .chain(&goal.dependencies)
                .chain(goal.property_dependencies.values().flatten())
                .chain(&goal.options.deleted_with)
                .cloned(),
        )?;
        let aliases = aliases::resolve(d, &goal, &urn)?;
        let old_index = find_old(d, &urn, &aliases)?;
        // Before any provider call: the URN and the old resource are this
        // registration's alone, or it stops here.
        {
            let mut p = d.progress();
            p.reserve(&urn, old_index)?;
            p.record_aliases(urn.clone(), aliases);
        }
        if let (Some(i), false) = (old_index, goal.options.state_migrations.is_empty()) {
            Box::pin(migrations::run(d, &urn, i, &goal.options.state_migrations)).await?;
        }
        let is_provider = provider_package(&goal.type_token).is_some();
        let provider = if goal.custom && !is_provider {
            Some(Box::pin(resolve_provider(d, &goal)).await?)
        } else {
            None
        };
        let mut state = goal_state(urn.clone(), &goal, provider);
        // Found under another URN (an alias, a migration's rename): the
        // state records that URN as its alias, as Pulumi's does, for this
        // deployment only.
        if let Some(i) = old_index {
            let old_urn = &d.base.resources[i].urn;
            if *old_urn != urn {
                state.aliases = vec![old_urn.clone()];
            }
        }

        // Providers are always targeted: targeted resources need them.
        let targeted = d.selection.register(&state);
        if !is_provider && !targeted {
            // A skipped create answers the inputs as its outputs, as
            // Pulumi's does: the checked ones, with the provider's
            // defaults, so that a program reading them finds what a
            // create would have had.
            if old_index.is_none() && goal.custom {
                state.inputs = Box::pin(check(d, &state, Default::default())).await?;
            }
            return Box::pin(untargeted(d, old_index, state))
                .await
                .map(Prepared::Done);
        }
        if let Some(dependency) = skipped.into_iter().next() {
            let exists = d.olds.contains_key(&dependency);
            return Err(EngineError::DependencyNotTargeted {
                urn,
                dependency,
                exists,
            });
        }
        if !goal.custom {
            // Policy packs judge every registration, components and the
            // stack included, as Pulumi's step generator does.
            Box::pin(crate::policy::check_resource(d, &mut state, &goal)).await?;
            planned(d, &goal, &state, old_index)?;
            return Box::pin(component(d, old_index, state))
                .await
                .map(Prepared::Done);
        }
        // The old state is read where it is; the step gets its own copy.
        let old = old_index.map(|i| d.old_state(i));
        let old = old.as_deref();
        if let Some(import_id) = &goal.options.import_id {
            // Imported before (by this ID) and not external: a resource like
            // any other. (Some objects are imported by an ID other than the
            // one they have, so the recorded import ID counts first.)
            let already = old.is_some_and(|o| {
                !o.external && o.import_id.as_ref().or(o.id.as_ref()) == Some(import_id)
            });
            if !already {
                {
                    let mut planned_state = state.clone();
                    planned_state.import_id = Some(import_id.clone());
                    planned(d, &goal, &planned_state, old_index)?;
                }
                planned_kind(d, &state.urn, StepOp::Import)?;
                let step = steps::import::ImportStep {
                    old_index,
                    state,
                    import_id: import_id.clone(),
                    inputs: goal.options.import_inputs.clone(),
                };
                return Ok(Prepared::Step(Box::pin(steps::import::run(d, step))));
            }
            state.import_id = Some(import_id.clone());
        }
        if let Some(old) = old {
            apply_ignore_changes(d, old, &mut state);
        }
        let olds = old.map(|o| o.inputs.clone()).unwrap_or_default();
        state.inputs = Box::pin(check(d, &state, olds)).await?;
        // Policy packs: Remediate, then Analyze, on the checked inputs
        // (a provider's too: a pack may judge its configuration).
        Box::pin(crate::policy::check_resource(d, &mut state, &goal)).await?;
        planned(d, &goal, &state, old_index)?;

        let Some(old_index) = old_index else {
            planned_kind(d, &state.urn, StepOp::Create)?;
            return Ok(Prepared::Step(Box::pin(create_new(d, state))));
        };
        let old = d.old_state(old_index);
        let decision = Box::pin(decide::decide(d, &old, old_index, &state)).await?;
        let kind = match &decision {
            decide::Decision::Same { .. } => StepOp::Same,
            decide::Decision::Update(_) => StepOp::Update,
            decide::Decision::Replace { .. } => StepOp::Replace,
        };
        planned_kind(d, &state.urn, kind)?;
        Ok(Prepared::Step(decide::execute(
            d,
            old_index,
            state,
            decision,
            &goal.options,
        )))
    }
}

/// An explicit provider registered with the `version` option asks for
/// that version of its plugin: the version becomes its `version` input
/// before `CheckConfig`, as a default provider's does, so that the plugin
/// of that version is loaded (and two versions of a package side by side
/// each get their own).
fn provider_version_input(urn: &Urn, goal: &mut ResourceGoal) -> Result<(), EngineError> {
    let Some(version) = goal.version.as_deref() else {
        return Ok(());
    };
    if provider_package(&goal.type_token).is_none() {
        return Ok(());
    }
    if let Err(e) = semver::Version::parse(version) {
        return Err(EngineError::Provider {
            urn: urn.clone(),
            source: converge_plugin::RegistryError::BadVersion {
                urn: urn.to_string(),
                version: version.to_owned(),
                reason: e.to_string(),
            },
        });
    }
    goal.inputs
        .insert("version".to_owned(), version.to_owned().into());
    Ok(())
}

/// An explicit provider of a parameterized package the program registered
/// records it as a default provider does (its package version, and its
/// base plugin and parameterization under `__internal`), so that it loads
/// that plugin parameterized; inputs that already record one are kept.
fn registered_package_input(d: &Deployment, goal: &mut ResourceGoal) {
    let Some(package) = provider_package(&goal.type_token) else {
        return;
    };
    if goal
        .inputs
        .contains_key(converge_plugin::parameterization::INTERNAL_KEY)
    {
        return;
    }
    if let Some(p) = d
        .registered_package(package)
        .filter(|p| p.parameterization.is_some())
    {
        p.record(&mut goal.inputs);
    }
}

/// Records a registration's goal for the deployment's plan and, under
/// `up --plan`, checks it against the saved one.
fn planned(
    d: &Deployment,
    goal: &ResourceGoal,
    state: &ResourceState,
    old_index: Option<usize>,
) -> Result<(), EngineError> {
    let old = old_index.map(|i| d.old_state(i));
    let old = old.as_deref();
    let empty = converge_model::PropertyMap::new();
    let olds = old.map_or(&empty, |o| &o.inputs);
    if d.opts.record_plans {
        saved_plan::record::goal(d, goal, state, olds);
    }
    let op = if old.is_some() {
        StepOp::Update
    } else {
        StepOp::Create
    };
    saved_plan::enforce::registration(d, state, goal.options.delete_before_replace, old)
        .map_err(|e| steps::failed(d, op, &state.urn, e))
}

/// Under `up --plan`: the step about to be taken is one the plan allows.
fn planned_kind(d: &Deployment, urn: &Urn, op: StepOp) -> Result<(), EngineError> {
    saved_plan::enforce::step_kind(d, urn, op).map_err(|e| steps::failed(d, op, urn, e))
}

/// The create of a resource with no old state. (Its future holds the
/// step alone: thousands of creates may wait for their Begin entry.)
fn create_new(
    d: &Deployment,
    state: ResourceState,
) -> impl Future<Output = Result<Arc<ResourceState>, EngineError>> + Send + '_ {
    let step = CreateStep {
        op: StepOp::Create,
        state,
        remove_old: None,
        delete_old: None,
        old: None,
        diff: Default::default(),
    };
    steps::create::run(d, step)
}

/// A registration outside `--target` (or inside `--exclude`): the old
/// state carries over unchanged; a new resource is not created.
async fn untargeted(
    d: &Deployment,
    old_index: Option<usize>,
    state: ResourceState,
) -> Result<RegisterResult, EngineError> {
    match old_index {
        Some(i) => {
            let old = d.old_state(i).clone();
            // The old state moves into the new snapshot only if everything
            // it depends on is already there; otherwise it stays in place,
            // after its dependencies.
            let movable = {
                let p = d.progress();
                let provider_recorded = old.provider.as_ref().is_none_or(|reference| {
                    p.registered.get(&reference.urn).is_some_and(|r| {
                        r.op.is_some() && r.state.id.as_deref() == Some(reference.id.as_str())
                    })
                });
                provider_recorded
                    && old
                        .all_dependencies()
                        .all(|(_, dep)| p.registered.get(dep).is_some_and(|r| r.op.is_some()))
            };
            if !movable {
                d.progress().record(
                    old.urn.clone(),
                    Registered {
                        op: None,
                        state: Recorded::Base(i),
                    },
                );
                return Ok(result_of(&old));
            }
            let s = steps::same::run(d, i, old).await?;
            Ok(result_of(&s))
        }
        None => {
            let why = if d.selection.excluded(&state.urn) {
                "excluded: this new resource is not created"
            } else {
                "not targeted: this new resource is not created"
            };
            d.events.diagnostic(Severity::Info, Some(&state.urn), why);
            d.progress().record(
                state.urn.clone(),
                Registered {
                    op: None,
                    state: Recorded::Own(Arc::new(state.clone())),
                },
            );
            Ok(RegisterResult {
                urn: state.urn,
                id: None,
                outputs: state.inputs,
            })
        }
    }
}

/// A component: no provider; its inputs are recorded, its outputs come
/// from `RegisterResourceOutputs`.
async fn component(
    d: &Deployment,
    old_index: Option<usize>,
    mut state: ResourceState,
) -> Result<RegisterResult, EngineError> {
    let Some(i) = old_index else {
        planned_kind(d, &state.urn, StepOp::Create)?;
        let s = create_new(d, state).await?;
        return Ok(result_of(&s));
    };
    let old = d.old_state(i).clone();
    state.outputs = old.outputs.clone();
    state.created = old.created.clone();
    state.modified = old.modified.clone();
    // Only the inputs make a component's update, as a custom resource's
    // diff does: a new parent (through an alias) or protect flag is
    // recorded by the Same step.
    let diff = converge_model::diff_objects(&old.inputs, &state.inputs);
    let changed = !diff.is_empty();
    let kind = if changed {
        StepOp::Update
    } else {
        StepOp::Same
    };
    planned_kind(d, &state.urn, kind)?;
    let s = if changed {
        let diff = diff.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        steps::update::run(d, i, state, diff).await?
    } else {
        steps::same::run(d, i, state).await?
    };
    Ok(result_of(&s))
}

/// `ignoreChanges`: each ignored path keeps its old value.
pub(crate) fn apply_ignore_changes(d: &Deployment, old: &ResourceState, state: &mut ResourceState) {
    for text in state.ignore_changes.clone() {
        let path = match PropertyPath::parse(&text) {
            Ok(p) => p,
            Err(e) => {
                d.events.diagnostic(
                    Severity::Warning,
                    Some(&state.urn),
                    format!("ignoreChanges: {e}"),
                );
                continue;
            }
        };
        if let Err(e) = path.reset(&old.inputs, &mut state.inputs) {
            d.events.diagnostic(
                Severity::Warning,
                Some(&state.urn),
                format!("ignoreChanges {text}: {e}"),
            );
        }
    }
}

/// `Check` (`CheckConfig` for providers): the provider validates the
/// inputs and fills in defaults.
pub(crate) async fn check(
    d: &Deployment,
    state: &ResourceState,
    olds: converge_model::PropertyMap,
) -> Result<converge_model::PropertyMap, EngineError> {
    let urn = state.urn.clone();
    let response = if state.is_provider() {
        d.registry
            .check(&urn, olds, state.inputs.clone())
            .await
            .map_err(|source| EngineError::Provider {
                urn: urn.clone(),
                source,
            })?
    } else {
        let provider = steps::provider_of(d, state).await?;
        provider
            .check(CheckRequest {
                urn: urn.clone(),
                olds,
                news: state.inputs.clone(),
                random_seed: urn.as_str().as_bytes().to_vec(),
            })
            .await
            .map_err(|source| EngineError::Step {
                op: StepOp::Create,
                urn: urn.clone(),
                source,
            })?
    };
    if !response.failures.is_empty() {
        return Err(crate::check_failures::refuse(d, urn, response.failures));
    }
    Ok(response.inputs)
}

/// The provider reference of a custom resource: the explicit one, or the
/// default provider of its package (registered on first use).
pub(crate) async fn resolve_provider(
    d: &Arc<Deployment>,
    goal: &ResourceGoal,
) -> Result<ProviderReference, EngineError> {
    if let Some(text) = &goal.provider {
        let reference = ProviderReference::parse(text)?;
        let known = d
            .progress()
            .registered
            .get(&reference.urn)
            .is_some_and(|r| r.state.id.as_deref() == Some(reference.id.as_str()));
        if !known {
            return Err(EngineError::Provider {
                urn: reference.urn.clone(),
                source: converge_plugin::RegistryError::UnknownProvider(text.clone()),
            });
        }
        return Ok(reference);
    }
    default_provider(d, package_of(&goal.type_token), goal.version.as_deref()).await
}

/// The URN of the default provider of `package` at `version`:
/// `pulumi:providers:<package>::default`, or `default_<version>` with the
/// version's dots and signs as underscores.
pub(crate) fn default_provider_urn(
    stack: &str,
    project: &str,
    package: &str,
    version: Option<&str>,
) -> Result<Urn, converge_model::UrnError> {
    let name = match version {
        Some(v) => format!("default_{}", v.replace(['.', '-', '+'], "_")),
        None => "default".to_owned(),
    };
    Urn::new(stack, project, None, &provider_type(package), &name)
}

/// The default provider of `package` (at `version`): registered as a
/// provider resource on first use; concurrent users wait for that one
/// registration. A package the program registered (`RegisterPackage`) is
/// served as registered: a parameterized package at its own version, by
/// its base plugin given its parameterization (recorded in the provider's
/// inputs), so each parameterization has its own provider; a plain one at
/// its registered version unless the request names one.
pub(crate) async fn default_provider(
    d: &Arc<Deployment>,
    package: &str,
    version: Option<&str>,
) -> Result<ProviderReference, EngineError> {
    let registered = d
        .registered_package(package)
        .filter(|p| p.parameterization.is_some() || version.is_none());
    let registered_version = registered
        .as_ref()
        .and_then(|p| p.package_version())
        .map(ToString::to_string);
    let version = match &registered {
        Some(_) => registered_version.as_deref(),
        None => version,
    };
    if let Some(known) = d.known_default_provider(package, version) {
        return Ok(known);
    }
    let defaults = d.default_providers.lock().await;
    if let Some(known) = d.known_default_provider(package, version) {
        return Ok(known);
    }
    let urn = default_provider_urn(&d.opts.stack, &d.opts.project, package, version)?;
    let (type_token, name) = (urn.type_token().to_owned(), urn.name().to_owned());
    let mut inputs = d
        .opts
        .provider_config
        .get(package)
        .cloned()
        .unwrap_or_default();
    match &registered {
        Some(p) => p.record(&mut inputs),
        None => {
            if let Some(v) = version {
                inputs.insert("version".to_owned(), v.to_owned().into());
            }
        }
    }
    let provider_goal = ResourceGoal {
        type_token,
        name,
        custom: true,
        inputs,
        ..ResourceGoal::default()
    };
    let result = Box::pin(register(d, provider_goal)).await?;
    let reference = ProviderReference {
        urn,
        id: result.id.unwrap_or_default(),
    };
    d.default_providers_known
        .write()
        .unwrap_or_else(|p| p.into_inner())
        .push(DefaultProvider {
            package: package.to_owned(),
            version: version.map(str::to_owned),
            reference: reference.clone(),
        });
    drop(defaults);
    Ok(reference)
}

/// Handles one `ReadResource`.
pub(crate) async fn read(
    d: &Arc<Deployment>,
    goal: ReadGoal,
) -> Result<RegisterResult, EngineError> {
    let urn = make_urn(d, &goal.type_token, &goal.name, goal.parent.as_ref())?;
    d.check_not_failed(&urn)?;
    check_timeouts(&urn, goal.custom_timeouts.as_ref())?;
    let old_index = d.olds.get(&urn).copied();
    d.progress().reserve(&urn, old_index)?;
    let resource_goal = ResourceGoal {
        type_token: goal.type_token.clone(),
        name: goal.name.clone(),
        custom: true,
        parent: goal.parent.clone(),
        inputs: goal.inputs.clone(),
        provider: goal.provider.clone(),
        version: goal.version.clone(),
        dependencies: goal.dependencies.clone(),
        options: ResourceOptions {
            custom_timeouts: goal.custom_timeouts.clone(),
            ..ResourceOptions::default()
        },
        ..ResourceGoal::default()
    };
    let provider = resolve_provider(d, &resource_goal).await?;
    let mut state = goal_state(urn.clone(), &resource_goal, Some(provider));
    state.external = true;
    state.id = Some(goal.id);
    if let Some(i) = old_index {
        if !d.base.resources[i].external {
            // A managed resource becomes external: its object must not be
            // deleted; keep the state management records.
            d.events.diagnostic(
                Severity::Warning,
                Some(&urn),
                "a managed resource is now read as external",
            );
        }
    }
    let s = steps::read::run(d, old_index, state).await?;
    Ok(result_of(&s))
}

//! Running a program against the monitor: the stack first, then one task
//! per variable and resource, each starting as soon as every node it
//! references has resolved (so independent resources register at once),
//! then the stack's outputs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_engine::{Monitor, Program, ReadGoal, ResourceGoal, ResourceOptions, Severity};
use converge_model::{provider_package, CustomTimeouts, PropertyMap, PropertyValue, Urn};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::ast::Resource;
use super::eval::{article, strip, Info, ResourceOut, Scope, Slot};
use super::expr::Expr;
use super::tokens::{self, Tokens};
use super::typecheck;
use super::validate::Def;
use super::{Loaded, YamlError, YamlProgram};

/// A node's progress, as its dependents see it.
#[derive(Debug, Clone)]
enum State {
    Pending,
    Done(Slot),
    /// It (or something it needs) failed; the error is already recorded.
    Failed,
}

#[async_trait]
impl Program for YamlProgram {
    async fn run(&self, monitor: Monitor) -> Result<(), String> {
        run(Arc::clone(&self.inner), monitor).await
    }
}

/// What every node task shares.
struct Ctx {
    loaded: Arc<Loaded>,
    monitor: Monitor,
    stack: Urn,
    info: Info,
    errors: Mutex<Vec<YamlError>>,
    /// The canonical type and function tokens.
    tokens: Tokens,
    /// The URNs of the resources registered so far, by index: a resource
    /// depends on those its variables reference too, which are not in its
    /// own scope.
    urns: Mutex<HashMap<usize, Urn>>,
}

impl Ctx {
    fn fail(&self, e: YamlError) {
        self.errors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }

    fn scope<'a>(&'a self, slots: &'a HashMap<String, Slot>) -> Scope<'a> {
        Scope {
            file: &self.loaded.template.file,
            project_dir: &self.loaded.project_dir,
            work_dir: &self.loaded.work_dir,
            monitor: &self.monitor,
            config: &self.loaded.config,
            slots,
            info: &self.info,
            tokens: &self.tokens,
        }
    }

    fn name_of(&self, node: usize) -> &str {
        let t = &self.loaded.template;
        match self.loaded.graph.def_of(node) {
            Def::Variable(i) => &t.variables[i].key.name,
            Def::Resource(i) => &t.resources[i].key.name,
        }
    }
}

async fn run(loaded: Arc<Loaded>, monitor: Monitor) -> Result<(), String> {
    for warning in &loaded.template.warnings {
        monitor.diagnostic(Severity::Warning, None, warning.to_string());
    }
    let (tokens, mut errors) = tokens::resolve(&loaded, &monitor).await;
    errors.extend(typecheck::check(&loaded, &tokens));
    if !errors.is_empty() {
        return Err(super::sorted(errors).to_string());
    }
    let stack = monitor
        .register_stack()
        .await
        .map_err(|e| format!("registering the stack: {e}"))?
        .urn;
    let info = Info {
        stack: monitor.stack().to_owned(),
        project: monitor.project().to_owned(),
        cwd: loaded.work_dir.to_string_lossy().into_owned(),
        organization: loaded.organization.clone(),
        preview: monitor.is_preview(),
    };
    let ctx = Arc::new(Ctx {
        loaded,
        monitor,
        stack,
        info,
        errors: Mutex::new(Vec::new()),
        tokens,
        urns: Mutex::new(HashMap::new()),
    });
    let count = ctx.loaded.graph.deps.len();
    let senders: Vec<watch::Sender<State>> = (0..count)
        .map(|_| watch::channel(State::Pending).0)
        .collect();
    let mut tasks = JoinSet::new();
    for (node, tx) in senders.iter().enumerate() {
        let deps: Vec<(usize, watch::Receiver<State>)> = ctx.loaded.graph.deps[node]
            .iter()
            .map(|&d| (d, senders[d].subscribe()))
            .collect();
        tasks.spawn(node_task(Arc::clone(&ctx), node, deps, tx.clone()));
    }
    while let Some(joined) = tasks.join_next().await {
        if let Err(e) = joined {
            return Err(format!("a task of the YAML program failed: {e}"));
        }
    }
    let mut slots = HashMap::new();
    for (node, tx) in senders.iter().enumerate() {
        if let State::Done(slot) = &*tx.borrow() {
            slots.insert(ctx.name_of(node).to_owned(), slot.clone());
        }
    }
    failed(&ctx)?;
    let outputs = outputs(&ctx, &slots).await;
    failed(&ctx)?;
    ctx.monitor
        .register_resource_outputs(&ctx.stack, outputs)
        .await
        .map_err(|e| format!("registering the stack's outputs: {e}"))
}

/// The recorded errors, in file order, one per line.
fn failed(ctx: &Ctx) -> Result<(), String> {
    let mut errors = ctx.errors.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if errors.is_empty() {
        return Ok(());
    }
    errors.sort_by_key(|e| (e.line, e.column));
    Err(super::YamlErrors(errors).to_string())
}

async fn outputs(ctx: &Ctx, slots: &HashMap<String, Slot>) -> PropertyMap {
    let scope = ctx.scope(slots);
    let mut out = PropertyMap::new();
    for (key, e) in &ctx.loaded.template.outputs {
        match scope.eval(e).await {
            Ok(v) => {
                out.insert(key.name.clone(), v);
            }
            Err(e) => ctx.fail(e),
        }
    }
    out
}

async fn node_task(
    ctx: Arc<Ctx>,
    node: usize,
    deps: Vec<(usize, watch::Receiver<State>)>,
    tx: watch::Sender<State>,
) {
    let mut slots = HashMap::new();
    for (d, mut rx) in deps {
        let state = match rx.wait_for(|s| !matches!(s, State::Pending)).await {
            Ok(s) => s.clone(),
            Err(_) => State::Failed,
        };
        match state {
            State::Done(slot) => {
                slots.insert(ctx.name_of(d).to_owned(), slot);
            }
            State::Pending | State::Failed => {
                tx.send_replace(State::Failed);
                return;
            }
        }
    }
    let t = &ctx.loaded.template;
    let scope = ctx.scope(&slots);
    // Every node's task is spawned at once, and a task that has not run yet
    // holds its whole future: the registration's (the engine's step
    // inlined, kilobytes) is boxed, so it exists only while it runs.
    let result = match ctx.loaded.graph.def_of(node) {
        Def::Variable(i) => Box::pin(scope.eval(&t.variables[i].expr))
            .await
            .map(Slot::Variable),
        Def::Resource(i) => Box::pin(register(&ctx, &scope, i)).await.map(|r| {
            let mut urns = ctx.urns.lock().unwrap_or_else(|p| p.into_inner());
            urns.insert(i, r.urn.clone());
            Slot::Resource(Arc::new(r))
        }),
    };
    match result {
        Ok(slot) => {
            tx.send_replace(State::Done(slot));
        }
        Err(e) => {
            ctx.fail(e);
            tx.send_replace(State::Failed);
        }
    }
}

/// Registers (or reads) resource `i`.
async fn register(ctx: &Ctx, scope: &Scope<'_>, i: usize) -> Result<ResourceOut, YamlError> {
    let r = &ctx.loaded.template.resources[i];
    let type_token = ctx.tokens.resource(i, &r.type_token);
    let plan = &ctx.loaded.graph.plans[i];
    let t = &ctx.loaded.template;
    let o = r.opts();
    let urn_of = |j: usize| -> Result<Urn, YamlError> {
        let urns = ctx.urns.lock().unwrap_or_else(|p| p.into_inner());
        urns.get(&j)
            .cloned()
            .ok_or_else(|| scope.error(r.key.pos, "internal: a dependency is missing"))
    };
    let parent = match &o.parent {
        Some(a) => scope.resource(a)?.urn.clone(),
        None => ctx.stack.clone(),
    };
    let default_provider = plan
        .default_provider
        .map(|j| t.resources[j].key.name.as_str());
    let provider = provider(scope, r, default_provider)?;
    let version = Box::pin(opt_string(scope, &o.version, "version")).await?;
    let mut dependencies = Vec::new();
    for &j in &plan.dependencies {
        dependencies.push(urn_of(j)?);
    }
    let fail = |e: converge_engine::EngineError| {
        scope.error(r.key.pos, format!("resource '{}': {e}", r.key.name))
    };
    if let Some(get) = &r.get {
        let id = strip(&Box::pin(scope.eval(&get.id)).await?);
        let inputs = Box::pin(properties(scope, &get.state)).await?;
        let id = match id.value {
            PropertyValue::Unknown if ctx.info.preview => {
                // Nothing to read yet: the object is only known once the
                // ID is.
                let urn = Urn::for_resource(
                    &ctx.info.stack,
                    &ctx.info.project,
                    Some(&parent),
                    type_token,
                    &r.name,
                )
                .map_err(|e| scope.error(r.key.pos, e.to_string()))?;
                return Ok(ResourceOut {
                    urn,
                    id: None,
                    outputs: PropertyMap::new(),
                });
            }
            PropertyValue::String(s) => s,
            other => {
                return Err(scope.error(
                    get.id.pos,
                    format!("get: the id must be a string, not {}", article(&other)),
                ))
            }
        };
        let goal = ReadGoal {
            type_token: type_token.to_owned(),
            name: r.name.clone(),
            id,
            parent: Some(parent),
            inputs,
            provider,
            version,
            dependencies,
            custom_timeouts: Box::pin(custom_timeouts(scope, r)).await?,
        };
        let res = Box::pin(ctx.monitor.read_resource(goal))
            .await
            .map_err(fail)?;
        return Ok(ResourceOut {
            urn: res.urn,
            id: res.id,
            outputs: res.outputs,
        });
    }
    let inputs = Box::pin(properties(scope, &r.properties)).await?;
    let mut property_dependencies = BTreeMap::new();
    for (key, deps) in &plan.property_dependencies {
        if !deps.is_empty() {
            let urns = deps.iter().map(|&j| urn_of(j)).collect::<Result<_, _>>()?;
            property_dependencies.insert(key.clone(), urns);
        }
    }
    let goal = ResourceGoal {
        type_token: type_token.to_owned(),
        name: r.name.clone(),
        custom: true,
        parent: Some(parent),
        inputs,
        provider,
        version,
        dependencies,
        property_dependencies,
        options: Box::pin(options(scope, r)).await?,
    };
    let res = Box::pin(ctx.monitor.register_resource(goal))
        .await
        .map_err(fail)?;
    Ok(ResourceOut {
        urn: res.urn,
        id: res.id,
        outputs: res.outputs,
    })
}

/// The explicit provider (`provider`, or the one of `providers` for the
/// resource's package), else the package's `defaultProvider`.
fn provider(
    scope: &Scope<'_>,
    r: &Resource,
    default: Option<&str>,
) -> Result<Option<String>, YamlError> {
    if let Some(a) = &r.opts().provider {
        return Ok(Some(scope.resource(a)?.provider_reference()));
    }
    for a in &r.opts().providers {
        let p = scope.resource(a)?;
        let package = provider_package(p.urn.type_token());
        if package == Some(r.package()) {
            return Ok(Some(p.provider_reference()));
        }
    }
    let Some(name) = default else { return Ok(None) };
    match scope.slots.get(name) {
        Some(Slot::Resource(p)) => Ok(Some(p.provider_reference())),
        _ => Err(scope.error(r.key.pos, "internal: the default provider is missing")),
    }
}

async fn properties(
    scope: &Scope<'_>,
    entries: &[(super::syntax::Key, Expr)],
) -> Result<PropertyMap, YamlError> {
    let mut out = PropertyMap::new();
    for (key, e) in entries {
        out.insert(key.name.clone(), scope.eval(e).await?);
    }
    Ok(out)
}

/// Evaluates an option that must be known.
async fn known(scope: &Scope<'_>, e: &Expr, name: &str) -> Result<PropertyValue, YamlError> {
    let s = strip(&scope.eval(e).await?);
    if s.unknown {
        return Err(scope.error(
            e.pos,
            format!("options.{name} must be known before the resource is registered"),
        ));
    }
    Ok(s.value)
}

async fn opt_bool(scope: &Scope<'_>, e: &Option<Expr>, name: &str) -> Result<bool, YamlError> {
    let Some(e) = e else { return Ok(false) };
    match known(scope, e, name).await? {
        PropertyValue::Bool(b) => Ok(b),
        PropertyValue::Null => Ok(false),
        other => Err(scope.error(
            e.pos,
            format!("options.{name} must be a boolean, not {}", article(&other)),
        )),
    }
}

async fn opt_string(
    scope: &Scope<'_>,
    e: &Option<Expr>,
    name: &str,
) -> Result<Option<String>, YamlError> {
    let Some(e) = e else { return Ok(None) };
    match known(scope, e, name).await? {
        PropertyValue::String(s) => Ok(Some(s)),
        PropertyValue::Null => Ok(None),
        other => Err(scope.error(
            e.pos,
            format!("options.{name} must be a string, not {}", article(&other)),
        )),
    }
}

async fn opt_strings(
    scope: &Scope<'_>,
    e: &Option<Expr>,
    name: &str,
) -> Result<Vec<String>, YamlError> {
    let Some(e) = e else { return Ok(Vec::new()) };
    let items = match known(scope, e, name).await? {
        PropertyValue::Array(items) => items,
        PropertyValue::Null => Vec::new(),
        s @ PropertyValue::String(_) => vec![s],
        other => {
            return Err(scope.error(
                e.pos,
                format!(
                    "options.{name} must be a list of strings, not {}",
                    article(&other)
                ),
            ))
        }
    };
    items
        .into_iter()
        .map(|v| match v {
            PropertyValue::String(s) => Ok(s),
            other => Err(scope.error(
                e.pos,
                format!(
                    "options.{name} must be a list of strings, but it holds {}",
                    article(&other)
                ),
            )),
        })
        .collect()
}

async fn options(scope: &Scope<'_>, r: &Resource) -> Result<ResourceOptions, YamlError> {
    let o = r.opts();
    let aliases = match &o.aliases {
        Some(e) => Box::pin(super::aliases::resolve(scope, e)).await?,
        None => Vec::new(),
    };
    let custom_timeouts = custom_timeouts(scope, r).await?;
    let deleted_with = match &o.deleted_with {
        Some(a) => Some(scope.resource(a)?.urn.clone()),
        None => None,
    };
    let mut replace_with = Vec::new();
    for a in &o.replace_with {
        replace_with.push(scope.resource(a)?.urn.clone());
    }
    let replacement_trigger = match &o.replacement_trigger {
        // Unknown in a preview: the engine plans a replacement.
        Some(e) => match Box::pin(scope.eval(e)).await? {
            PropertyValue::Null => None,
            v => Some(v),
        },
        None => None,
    };
    // Converge downloads no plugin; the URL must still be a string.
    Box::pin(opt_string(
        scope,
        &o.plugin_download_url,
        "pluginDownloadURL",
    ))
    .await?;
    let delete_before_replace = match &o.delete_before_replace {
        Some(_) => Some(opt_bool(scope, &o.delete_before_replace, "deleteBeforeReplace").await?),
        None => None,
    };
    Ok(ResourceOptions {
        protect: opt_bool(scope, &o.protect, "protect").await?,
        delete_before_replace,
        ignore_changes: opt_strings(scope, &o.ignore_changes, "ignoreChanges").await?,
        replace_on_changes: opt_strings(scope, &o.replace_on_changes, "replaceOnChanges").await?,
        retain_on_delete: opt_bool(scope, &o.retain_on_delete, "retainOnDelete").await?,
        deleted_with,
        aliases,
        custom_timeouts,
        additional_secret_outputs: opt_strings(
            scope,
            &o.additional_secret_outputs,
            "additionalSecretOutputs",
        )
        .await?,
        import_id: opt_string(scope, &o.import, "import").await?,
        import_inputs: Default::default(),
        hide_diffs: opt_strings(scope, &o.hide_diffs, "hideDiffs").await?,
        replace_with,
        replacement_trigger,
        ..ResourceOptions::default()
    })
}

/// `options.customTimeouts`: an object of Go duration strings under
/// `create`, `update`, `delete` and `read`; anything else is refused at
/// the option's position, naming the key.
async fn custom_timeouts(
    scope: &Scope<'_>,
    r: &Resource,
) -> Result<Option<CustomTimeouts>, YamlError> {
    let Some(e) = &r.opts().custom_timeouts else {
        return Ok(None);
    };
    let map = match known(scope, e, "customTimeouts").await? {
        PropertyValue::Object(m) => m,
        other => {
            return Err(scope.error(
                e.pos,
                format!(
                    "options.customTimeouts must be an object, not {}",
                    article(&other)
                ),
            ))
        }
    };
    let mut timeouts = CustomTimeouts::default();
    for (k, v) in map {
        let Some(slot) = timeouts.slot(&k) else {
            return Err(scope.error(
                e.pos,
                format!(
                    "options.customTimeouts: unknown key '{k}' ({})",
                    CustomTimeouts::KEYS.join(", ")
                ),
            ));
        };
        *slot = match v {
            PropertyValue::Null => None,
            PropertyValue::String(s) => Some(s),
            other => {
                return Err(scope.error(
                    e.pos,
                    format!(
                        "options.customTimeouts.{k} must be a duration string like \"5m\", not {}",
                        article(&other)
                    ),
                ))
            }
        };
    }
    timeouts
        .check()
        .map_err(|err| scope.error(e.pos, format!("options.{err}")))?;
    Ok((!timeouts.is_empty()).then_some(timeouts))
}

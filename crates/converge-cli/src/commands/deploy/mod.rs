//! `converge preview | up | refresh | destroy`.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, StackRef, UpdateKind};
use converge_engine::driver::{drive, DriverOptions, OperationKind, Sources};
use converge_engine::pulumi_provider::StackReferences;
use converge_engine::{
    DeploymentOptions, LockedStack, OperationResult, Program, StackState, StepOp,
};
use converge_language::yaml::ConfigValue;
use converge_model::{PropertyMap, PropertyValue, UrnPattern};
use converge_state::{OperationType, Snapshot};

use converge_engine::saved_plan::refresh::refresh_plans;
use converge_engine::{PlanConstraint, PlanUse};

use crate::args::OperationArgs;
use crate::commands::execute::RenderOptions;
use crate::commands::open_stack::{self, Opened};
use crate::commands::plan_file;
use crate::commands::stack::{history, tags};
use crate::context::Context;
use crate::display::{say, DisplayOptions};
use crate::event_log::EventLog;
use crate::interrupts::{check_not_cancelled, Response};
use crate::passphrase::ReferencedSecrets;
use crate::program::{
    check_runtime, load_client_program, load_program, program_config, ProgramAhead,
};
use crate::project::Project;
use crate::providers::Providers;
use converge_engine::events::pulumi::PulumiEventOptions;

mod pending;
pub(crate) use pending::{report_interrupted, report_pending};
mod output;
pub(crate) use output::{go_duration, print_json, print_lines};
use output::{prelude_config, print_digest, print_output_changes, print_outputs};
mod protected;
mod terminal;
use terminal::Terminal;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Preview,
    Up,
    Refresh,
    Destroy,
}

impl Operation {
    fn verb(self) -> &'static str {
        match self {
            Operation::Preview => "Previewing update",
            Operation::Up => "Updating",
            Operation::Refresh => "Refreshing",
            Operation::Destroy => "Destroying",
        }
    }

    fn command(self) -> &'static str {
        match self {
            Operation::Preview => "preview",
            Operation::Up => "up",
            Operation::Refresh => "refresh",
            Operation::Destroy => "destroy",
        }
    }

    /// The header of the preview before the operation.
    fn preview_header(self) -> &'static str {
        match self {
            Operation::Preview | Operation::Up => "Previewing update",
            Operation::Refresh => "Previewing refresh",
            Operation::Destroy => "Previewing destroy",
        }
    }

    fn question(self) -> &'static str {
        match self {
            Operation::Up | Operation::Preview => "Do you want to perform this update?",
            Operation::Refresh => "Do you want to perform this refresh?",
            Operation::Destroy => "Do you want to perform this destroy?",
        }
    }

    /// What the driver runs.
    fn kind(self) -> OperationKind {
        match self {
            Operation::Preview | Operation::Up => OperationKind::Update,
            Operation::Refresh => OperationKind::Refresh,
            Operation::Destroy => OperationKind::Destroy,
        }
    }

    fn history_kind(self) -> UpdateKind {
        match self {
            Operation::Preview => UpdateKind::Preview,
            Operation::Up => UpdateKind::Update,
            Operation::Refresh => UpdateKind::Refresh,
            Operation::Destroy => UpdateKind::Destroy,
        }
    }
}

pub async fn run(ctx: &Context, op: Operation, args: OperationArgs) -> Result<()> {
    check_flags(op, &args)?;
    let event_log = match &args.event_log {
        Some(target) => Some(
            EventLog::open(
                target,
                PulumiEventOptions {
                    show_secrets: args.show_secrets,
                },
            )
            .await?,
        ),
        None => None,
    };
    // `--json` of an update, refresh or destroy streams the operation's
    // events to stdout, one a line, as Pulumi does (a preview prints its
    // digest, unless PULUMI_ENABLE_STREAMING_JSON_PREVIEW); secrets masked.
    let json_events = (args.json && streams_json(op)).then(|| {
        EventLog::stdout(PulumiEventOptions {
            show_secrets: false,
        })
    });
    let logs = Logs {
        event_log,
        json_events,
    };
    let result = run_logged(ctx, op, args, logs.clone()).await;
    for log in [logs.event_log, logs.json_events].into_iter().flatten() {
        log.close().await;
    }
    result
}

/// Where an operation's events go besides the display: `--event-log`,
/// and stdout with `--json` (see [`streams_json`]).
#[derive(Debug, Clone, Default)]
struct Logs {
    event_log: Option<EventLog>,
    json_events: Option<EventLog>,
}

/// Whether `--json` of `op` streams its events rather than printing a
/// digest: an update, refresh or destroy does; a preview does with
/// `PULUMI_ENABLE_STREAMING_JSON_PREVIEW` set truthy.
fn streams_json(op: Operation) -> bool {
    op != Operation::Preview
        || std::env::var("PULUMI_ENABLE_STREAMING_JSON_PREVIEW")
            .ok()
            .and_then(|v| crate::args::pulumi_spelling::parse_bool(&v))
            .unwrap_or(false)
}

async fn run_logged(ctx: &Context, op: Operation, args: OperationArgs, logs: Logs) -> Result<()> {
    winds_down(ctx, args.cancel_timeout);
    // A closed stdout (`converge up | head`) must not stop an operation
    // half way: while one runs, SIGPIPE is caught and the display's writes
    // fail quietly instead.
    #[cfg(unix)]
    let _sigpipe = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::pipe());
    // A YAML program is parsed, a Python program's interpreter started,
    // beside loading the project and opening the stack.
    let runs_program = matches!(op, Operation::Preview | Operation::Up) && args.client.is_none();
    let ahead = runs_program.then(|| ProgramAhead::start(&ctx.cwd));
    let mut project = ctx.project()?;
    // The project as its directory has it (`destroy --remove` removes
    // `Pulumi.<stack>.yaml`, never a --config-file).
    let local = project.clone();
    if let Some(file) = &args.config_file {
        project = project.with_stack_config_file(&ctx.cwd, file);
    }
    // `--config KEY=VALUE`: every pair checked before anything changes.
    let new_config = crate::commands::config::OperationConfig::parse(
        &project.name,
        &args.config,
        args.config_path,
    )?;
    let ahead = ahead.map(|ahead| ahead.with_project(&project));
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, args.stack.stack.as_deref())?;
    crate::passphrase::derive_ahead(&project.stack_config_file(&stack.stack));
    ctx.require_stack(backend.as_ref(), &stack).await?;
    // Written before the operation, as Pulumi writes it: the program and
    // the update's history see it, and it stays if the operation fails.
    new_config.save(&project.stack_config_file(&stack.stack))?;
    // Fail on an unsupported program before touching anything (an inline
    // program's runtime is the SDK's own).
    if runs_program {
        check_runtime(&project)?;
    }
    if op != Operation::Preview {
        if let Err(e) = tags::record_builtin(backend.as_ref(), &stack, &project).await {
            eprintln!("warning: the stack's tags could not be recorded: {e:#}");
        }
    }
    let references = StackReferences::new(
        backend.clone(),
        stack.clone(),
        Arc::new(ReferencedSecrets::new()),
    );
    // The organization's required policy packs, fetched before the lock:
    // the update says it runs them when it starts.
    let service_packs = crate::service_policy::prepare(backend.as_ref(), &stack).await?;
    check_not_cancelled(&ctx.interrupts)?;
    // A preview takes no lock, as Pulumi's does not: it runs on the state
    // as it is (an update's live journal replayed) and writes nothing, so
    // a preview in CI goes on while a deployment holds the stack.
    let state = StackState::new(backend.clone(), stack.clone());
    let mut locked = match op {
        Operation::Preview => state.view().await?,
        _ => state.lock(ctx.lock_info()).await?,
    };
    match op {
        Operation::Preview => {
            tracing::debug!(operation = op.command(), stack = %stack.stack, "the stack is read, unlocked");
        }
        _ => tracing::debug!(operation = op.command(), stack = %stack.stack, "the stack is locked"),
    }
    let providers = Providers::new(&project).with_stack_references(references);
    let facts = StackFacts::load(backend.as_ref(), &stack).await;
    let result = run_locked(
        ctx,
        op,
        &args,
        &project,
        &facts,
        &mut locked,
        &providers,
        ahead,
        logs,
        &service_packs,
    )
    .await;
    service_packs.finish(backend.as_ref(), &stack);
    providers.shutdown().await;
    open_stack::release(locked, result).await?;
    if op == Operation::Destroy && args.remove && !args.preview_only {
        remove_destroyed(ctx, &backend, &stack, &local, args.json).await?;
    }
    Ok(())
}

/// `destroy --remove`, after the destroy succeeded: the stack and its
/// configuration file go, as with `stack rm`; a stack that still has
/// resources (targets, exclusions, protected ones) stays, with a note.
async fn remove_destroyed(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    stack: &StackRef,
    project: &Project,
    json: bool,
) -> Result<()> {
    let opts = crate::commands::stack::RmOptions::default();
    match crate::commands::stack::remove_stack(ctx, backend, stack, Some(project), opts).await? {
        crate::commands::stack::Removal::Removed if !json => say(
            "The resources in the stack have been deleted, and the history and configuration \
             associated with the stack have been removed.",
        ),
        crate::commands::stack::Removal::Removed => {}
        crate::commands::stack::Removal::HasResources(n) => eprintln!(
            "note: stack {} still has {n} resource(s), so it was not removed \
             (`converge stack rm --force` removes it and forgets them)",
            stack.stack
        ),
    }
    Ok(())
}

/// What programs and policy packs are told of the stack besides its name.
pub(crate) struct StackFacts {
    /// The stack's organization: a name typed without one lives in the
    /// backend's (a state service's token's).
    pub organization: String,
    /// The stack's tags (`ConfigureStack` passes them to packs).
    pub tags: converge_backend::StackTags,
}

impl StackFacts {
    /// The facts of `stack`; tags that cannot be read are a warning.
    pub(crate) async fn load(backend: &dyn Backend, stack: &StackRef) -> StackFacts {
        StackFacts {
            organization: crate::context::stack_organization(backend, stack),
            tags: match backend.load_tags(stack).await {
                Ok(tags) => tags,
                Err(e) => {
                    eprintln!("warning: the stack's tags could not be read: {e}");
                    Default::default()
                }
            },
        }
    }

    /// The stack as packs are configured for it.
    pub(crate) fn identity<'a>(
        &'a self,
        stack: &'a str,
        project: &'a str,
    ) -> crate::policy_packs::StackIdentity<'a> {
        crate::policy_packs::StackIdentity {
            stack,
            project,
            organization: &self.organization,
            tags: &self.tags,
        }
    }
}

/// Everything under the stack lock: arguments → the operation driver
/// (`converge_engine::driver`) with this command as its front-end →
/// what the user sees.
#[allow(clippy::too_many_arguments)]
async fn run_locked(
    ctx: &Context,
    op: Operation,
    args: &OperationArgs,
    project: &Project,
    facts: &StackFacts,
    locked: &mut LockedStack,
    providers: &Providers,
    ahead: Option<ProgramAhead>,
    logs: Logs,
    service_packs: &crate::service_policy::ServicePacks,
) -> Result<()> {
    let stack_name = locked.stack().stack.clone();
    let Opened { settings, crypter } = open_stack::open(ctx, project, locked).await?;

    // `up --plan FILE`: the plan, checked against the state it was made on.
    let saved = match &args.plan {
        Some(path) => Some(Arc::new(
            plan_file::load(path, locked, crypter.as_ref()).await?,
        )),
        None => None,
    };
    // A refresh-only preview, or the apply of a refresh-only plan, is a
    // refresh.
    let refresh_only_preview = op == Operation::Preview && args.refresh_only;
    let op = if refresh_only_preview || saved.as_ref().is_some_and(|p| p.refresh_only) {
        Operation::Refresh
    } else {
        op
    };

    if op == Operation::Refresh {
        // Checked before anything changes; adopted before the rest are
        // kept or cleared.
        let imports = pending::parse(&args.import_pending_creates)?;
        if !imports.is_empty() {
            let n = pending::adopt(locked, &imports)?;
            eprintln!("note: {n} interrupted create(s) adopted with the IDs given; the refresh reads them");
        }
        let keep_creates = !args.clear_pending_creates;
        let cleared =
            locked.clear_pending_operations(|p| p.kind == OperationType::Creating && keep_creates);
        if cleared > 0 {
            eprintln!("note: {cleared} interrupted operation(s) will be cleared from the state");
        }
    }
    if locked.journaled() {
        eprintln!(
            "note: an update of stack {stack_name} is running, or stopped before it finished: \
             this preview shows the state it has recorded so far{}",
            match locked.base().pending_operations.len() {
                0 => String::new(),
                n => format!(", with {n} operation(s) under way or interrupted"),
            }
        );
    } else {
        report_pending(locked.base());
    }

    // The stack's configuration, decrypted once: the program's, and the
    // default providers' (`<package>:<key>`).
    let config = program_config(project, &stack_name, &settings, crypter.as_ref())?;
    let shown_config = Arc::new(prelude_config(&config, args.show_secrets));
    let mut deployment = deployment_options(ctx, project, locked.stack(), args, &config)?;
    if op == Operation::Destroy && args.exclude_protected {
        exclude_protected(locked.base(), &mut deployment)?;
    }
    // Policy packs: started and configured (their configuration validated)
    // before the operation touches anything.
    if matches!(op, Operation::Preview | Operation::Up) {
        let mut packs =
            crate::policy_packs::PackRequest::new(&args.policy_pack, &args.policy_pack_config)?;
        packs.required.clone_from(&service_packs.packs);
        let analyzers = crate::policy_packs::start(
            &packs,
            &facts.identity(&stack_name, &project.name),
            op == Operation::Preview,
        )
        .await?;
        deployment.analyzers = service_packs.record(analyzers);
    }
    let previewing = match op {
        Operation::Preview => true,
        Operation::Refresh | Operation::Destroy => args.preview_only || refresh_only_preview,
        Operation::Up => false,
    };
    // --refresh (or `options.refresh: always`): read every resource
    // first — previewed (changing nothing) before a preview, journaled only
    // once the operation is confirmed.
    let refresh_first =
        args.refresh.unwrap_or_else(|| project.refresh_always()) && op != Operation::Refresh;

    let program: Option<Box<dyn Program>> = match (op, &args.client) {
        (Operation::Preview | Operation::Up, Some(address)) => Some(load_client_program(
            project,
            address,
            &facts.organization,
            &config,
            ctx.debug,
        )?),
        (Operation::Preview | Operation::Up, None) => Some(load_program(
            project,
            &crate::program::StackInfo {
                name: &stack_name,
                organization: &facts.organization,
                debug: ctx.debug,
            },
            config,
            ahead.unwrap_or_default(),
        )?),
        (Operation::Refresh | Operation::Destroy, _) => None,
    };
    let interactive =
        !ctx.non_interactive && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();

    // Preview first, unless skipped; confirm unless --yes.
    // As in Pulumi, --skip-preview alone confirms.
    let needs_confirmation = !previewing && !args.yes && !args.skip_preview;
    if needs_confirmation && !interactive {
        bail!(
            "--yes or --skip-preview must be passed to proceed when running non-interactively \
             (or run `converge preview` to see the changes)"
        );
    }
    let mut record = history::update_record(op.history_kind(), args.message.as_deref(), &settings)?;
    record.environment.insert(
        "exec.kind".to_owned(),
        args.exec_kind.clone().unwrap_or_else(|| "cli".to_owned()),
    );
    if let Some(agent) = &args.exec_agent {
        record
            .environment
            .insert("exec.agent".to_owned(), agent.clone());
    }
    let deployment_targets = deployment.targets.as_ref().map_or(0, Vec::len);
    let deployment_excludes = deployment.excludes.len();
    let options = DriverOptions {
        kind: op.kind(),
        deployment,
        preview_only: previewing,
        skip_preview: args.skip_preview,
        refresh_first,
        // The plan is kept only to save it, print it or write the import
        // file from it.
        keep_preview_plans: args.save_plan.is_some() || args.json || args.import_file.is_some(),
        plan: saved.map(|plan| PlanConstraint {
            plan,
            usage: PlanUse::Enforce,
        }),
        record: Some(record),
    };
    let mut front = Terminal {
        ctx,
        args,
        op,
        json_events: logs.json_events,
        stack: &stack_name,
        providers,
        render: RenderOptions {
            display: DisplayOptions {
                diff: args.diff,
                preview: false,
                show_secrets: args.show_secrets,
                debug: ctx.debug,
                show_sames: args.show_sames,
                show_reads: args.show_reads,
                show_replacement_steps: args.show_replacement_steps,
                show_policy_remediations: args.show_policy_remediations,
            },
            json: args.json,
            suppress_outputs: args.suppress_outputs,
            event_log: logs.event_log,
            json_events: None,
            config: shown_config,
            suppress_progress: args.suppress_progress,
            details: needs_confirmation,
            join: Default::default(),
        },
        needs_confirmation,
        renderer: None,
        rendered: None,
        started: None,
        header_shown: None,
    };
    let loader = providers.loader();
    let sources = Sources {
        loader: &loader,
        program: program.as_deref(),
    };
    tracing::debug!(
        operation = op.command(),
        previewing,
        refresh_first,
        targets = deployment_targets,
        excludes = deployment_excludes,
        "the engine starts"
    );
    let driven = drive(locked, sources, options, &mut front).await?;
    tracing::debug!(
        operation = op.command(),
        preview = driven.preview.is_some(),
        operation_ran = driven.operation.is_some(),
        "the engine finished"
    );
    let rendered = front.rendered.take().unwrap_or_default();

    if let Some(preview) = driven.preview.filter(|_| previewing) {
        if let (Some(path), None) = (&args.save_plan, &preview.error) {
            let resource_plans = if refresh_only_preview {
                refresh_plans(locked.base(), &preview.snapshot)
            } else {
                preview.resource_plans.clone()
            };
            let plan = plan_file::NewPlan {
                resource_plans,
                refresh_only: refresh_only_preview,
                settings: &settings,
            };
            plan_file::save(path, locked, crypter.as_ref(), plan).await?;
        }
        if let (Some(path), None) = (&args.import_file, &preview.error) {
            let n = crate::commands::import::file_out::write(path, &preview)?;
            eprintln!(
                "wrote {n} resource(s) to the import file {}",
                path.display()
            );
        }
        if args.json && !streams_json(op) {
            print_digest(rendered.digest.as_ref())?;
        }
        if let Some(e) = preview.error {
            bail!("{e}");
        }
        if args.expect_no_changes && has_changes(&preview) {
            return Err(UnexpectedChanges::Proposed.into());
        }
        return Ok(());
    }

    let (Some(result), Some(finished)) = (driven.operation, driven.finished) else {
        bail!("the {} did not run", op.command());
    };
    if let Some(e) = finished.history_error {
        eprintln!("warning: the update history could not be recorded: {e}");
    }
    // `--json`: the events were streamed as they came.
    if !args.json {
        // A failed update's program never registered the stack's outputs.
        if op == Operation::Up && !args.suppress_outputs && result.error.is_none() {
            print_outputs(&result.snapshot, args.show_secrets);
        }
        print_lines(&rendered.summary);
        let took = front.started.map(|s| s.elapsed()).unwrap_or_default();
        say(format!("\nDuration: {}", go_duration(took)));
    }
    if let Some(e) = rendered.error(&result) {
        return Err(e);
    }
    if let Some(e) = result.error {
        return Err(anyhow::Error::new(e));
    }
    if args.expect_no_changes && has_changes(&result) {
        return Err(UnexpectedChanges::Occurred.into());
    }
    // As Pulumi says after a destroy: the stack itself is still there.
    if op == Operation::Destroy
        && !args.json
        && !args.remove
        && result.snapshot.resources.is_empty()
    {
        say(format!(
            "\nThe resources in the stack have been deleted; its history and configuration are \
             kept.\nTo remove the stack as well, run `converge stack rm {stack}`.",
            stack = stack_name
        ));
    }
    Ok(())
}

/// The four operations share their flags' definitions; each takes only
/// Pulumi's: a flag another operation has is refused, not ignored
/// (`args::refused_flags`, which also hides it from the command's help).
fn check_flags(op: Operation, args: &OperationArgs) -> Result<()> {
    let packs = crate::policy_packs::PackRequest::new(&args.policy_pack, &args.policy_pack_config)?;
    if !packs.is_empty() && matches!(op, Operation::Refresh | Operation::Destroy) {
        bail!(
            "--policy-pack is for preview and up: `converge {}` does not run policy packs",
            op.command()
        );
    }
    // A missing pack, a broken manifest or config file: refused before
    // anything runs.
    packs.load()?;
    match (op, args.run_program) {
        (Operation::Refresh | Operation::Destroy, Some(true)) => bail!(
            "--run-program is not supported yet: `converge {}` works from the stack's state \
             without running the program",
            op.command()
        ),
        (Operation::Preview | Operation::Up, Some(false)) => bail!(
            "`converge {}` always runs the program: --run-program=false is for refresh and destroy",
            op.command()
        ),
        _ => {}
    }
    let given = [
        ("replace", !args.replace.is_empty()),
        ("target-replace", !args.target_replace.is_empty()),
        ("refresh", args.refresh.is_some()),
        ("preview-only", args.preview_only),
        ("clear-pending-creates", args.clear_pending_creates),
        ("import-file", args.import_file.is_some()),
        ("skip-preview", args.skip_preview),
        ("show-policy-remediations", args.show_policy_remediations),
        ("yes", args.yes),
        ("save-plan", args.save_plan.is_some()),
        ("plan", args.plan.is_some()),
        ("refresh-only", args.refresh_only),
        ("exclude-protected", args.exclude_protected),
        ("config", !args.config.is_empty()),
        ("config-path", args.config_path),
        ("remove", args.remove),
        ("skip-pending-creates", args.skip_pending_creates),
        (
            "import-pending-creates",
            !args.import_pending_creates.is_empty(),
        ),
    ];
    let refused = crate::args::refused_flags(op.command());
    for (flag, set) in given {
        if set && refused.contains(&flag) {
            bail!(
                "`converge {}` has no --{flag} flag (see `converge {} --help`)",
                op.command(),
                op.command()
            );
        }
    }
    Ok(())
}

/// `destroy --exclude-protected`: the protected resources and what they
/// need are excluded; says so when nothing else is left to destroy.
fn exclude_protected(base: &Snapshot, deployment: &mut DeploymentOptions) -> Result<()> {
    let kept = protected::kept(base);
    for urn in &kept.urns {
        let pattern = UrnPattern::parse(urn.as_str())
            .with_context(|| format!("cannot exclude the protected resource {urn}"))?;
        deployment.excludes.push(pattern);
    }
    if kept.to_destroy == 0 && !kept.urns.is_empty() {
        eprintln!(
            "note: there are no unprotected resources to destroy; {} resource(s) stay in the \
             stack (protected, or needed by a protected resource)",
            kept.urns.len()
        );
    } else if !kept.urns.is_empty() {
        eprintln!(
            "note: --exclude-protected keeps {} resource(s): the protected ones and what they need",
            kept.urns.len()
        );
    }
    Ok(())
}

/// `--expect-no-changes` found changes (Pulumi's messages; exit code 255).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnexpectedChanges {
    /// A preview proposed changes.
    Proposed,
    /// An operation made changes.
    Occurred,
}

impl std::fmt::Display for UnexpectedChanges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UnexpectedChanges::Proposed => "no changes were expected but changes were proposed",
            UnexpectedChanges::Occurred => "no changes were expected but changes occurred",
        })
    }
}

impl std::error::Error for UnexpectedChanges {}

/// Whether an operation changed (or would change) anything: steps other
/// than unchanged resources and reads, as Pulumi counts them.
fn has_changes(result: &OperationResult) -> bool {
    result
        .plan
        .counts()
        .iter()
        .any(|(op, n)| *n > 0 && !matches!(op, StepOp::Same | StepOp::Read))
}

fn parse_patterns(list: &[String], flag: &str) -> Result<Vec<UrnPattern>> {
    list.iter()
        .map(|u| UrnPattern::parse(u).with_context(|| format!("--{flag} {u}")))
        .collect()
}

/// An operation winds down on Ctrl-C or SIGTERM (see [`crate::interrupts`]),
/// waiting `cancel_timeout` (or the default) for the steps under way.
pub(crate) fn winds_down(ctx: &Context, cancel_timeout: Option<std::time::Duration>) {
    ctx.interrupts.respond_with(Response::WindDown);
    if let Some(timeout) = cancel_timeout {
        ctx.interrupts.set_cancel_timeout(timeout);
    }
}

pub(crate) fn deployment_options(
    ctx: &Context,
    project: &Project,
    stack: &StackRef,
    args: &OperationArgs,
    config: &BTreeMap<String, ConfigValue>,
) -> Result<DeploymentOptions> {
    let mut o = DeploymentOptions::new(stack.stack.clone(), project.name.clone());
    // The CLI reads only the result snapshot; the persisted entries stay
    // in the backend, not a second time in memory.
    o.keep_journal = false;
    if let Some(n) = args.parallel {
        if n == 0 {
            bail!("--parallel must be at least 1");
        }
        o.parallel = n;
    }
    let target_replace = parse_patterns(&args.target_replace, "target-replace")?;
    if !args.target.is_empty() || !target_replace.is_empty() {
        let mut targets = parse_patterns(&args.target, "target")?;
        targets.extend(target_replace.iter().cloned());
        o.targets = Some(targets);
    }
    o.target_dependents = args.target_dependents;
    o.excludes = parse_patterns(&args.exclude, "exclude")?;
    o.exclude_dependents = args.exclude_dependents;
    o.replace = parse_patterns(&args.replace, "replace")?;
    o.replace.extend(target_replace);
    o.continue_on_error = args.continue_on_error;
    o.cancel = ctx.interrupts.cancellation().clone();
    o.provider_config = provider_config(&project.name, config);
    Ok(o)
}

/// Default providers' configuration: the config keys `<package>:<key>` of
/// packages other than the project; secret values stay secret.
fn provider_config(
    project: &str,
    config: &BTreeMap<String, ConfigValue>,
) -> BTreeMap<String, PropertyMap> {
    let mut out = BTreeMap::<String, PropertyMap>::new();
    for (key, value) in config {
        let Some((package, name)) = key.split_once(':') else {
            continue;
        };
        if package == project {
            continue;
        }
        let plain = PropertyValue::from(value.value.clone());
        let v = if value.secret {
            PropertyValue::secret(plain)
        } else {
            plain
        };
        out.entry(package.to_owned())
            .or_default()
            .insert(name.to_owned(), v);
    }
    out
}

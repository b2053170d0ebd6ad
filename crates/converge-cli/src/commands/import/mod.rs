//! `converge import TYPE NAME ID` and `converge import --file FILE`:
//! adopt existing objects into the stack without the user's program.
//!
//! The engine runs an update whose program is the stack as it is plus the
//! imports (`converge_engine::import`), targeted at the imports alone, so
//! nothing else changes; each import's inputs are what its provider read
//! (`--properties` restricts them). It locks, journals and verifies like
//! every operation (`StackState`). The packs the organization requires
//! judge each import's inputs and then the stack. `--out` writes program
//! text for the imported resources in the project's language (`codegen`).

mod codegen;
pub mod file_out;
mod sdk_version;
pub mod spec;

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, UpdateKind};
use converge_engine::driver::OperationKind;
use converge_engine::import::ImportProgram;
use converge_engine::pulumi_provider::StackReferences;
use converge_engine::{DeploymentOptions, LockedStack, StackState};
use converge_plugin::policy::Analyzer;
use converge_state::Snapshot;

use crate::args::{ImportArgs, OperationArgs};
use crate::commands::confirm::confirm;
use crate::commands::deploy::{
    deployment_options, go_duration, print_json, print_lines, report_interrupted, report_pending,
    winds_down, StackFacts,
};
use crate::commands::execute::{execute, ExecuteParams, RenderOptions};
use crate::commands::open_stack::{self, Opened};
use crate::context::Context;
use crate::display::{say, DisplayOptions};
use crate::interrupts::check_not_cancelled;
use crate::passphrase::ReferencedSecrets;
use crate::program::program_config;
use crate::project::Project;
use crate::providers::Providers;

pub async fn run(ctx: &Context, args: ImportArgs) -> Result<()> {
    if let Some(converter) = &args.from {
        bail!(
            "--from {converter}: in Pulumi this runs a converter plugin that reads another \
             tool's state into a bulk import file; Converge runs no converters. Write \
             Pulumi's bulk import JSON (`resources`, each with `type`, `name` and `id`) \
             and pass it with --file"
        );
    }
    if args.file.is_none() && args.type_token.is_none() {
        bail!("give the resource to import as TYPE NAME ID, or a bulk import file with --file");
    }
    if args.file.is_some() && (args.name.is_some() || args.id.is_some()) {
        bail!("--file imports the resources of the file: give no TYPE NAME ID with it");
    }
    if !args.generate_code && args.out.is_some() {
        bail!("--generate-code=false writes no code: give no --out with it");
    }
    winds_down(ctx, args.cancel_timeout);
    #[cfg(unix)]
    let _sigpipe = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::pipe());
    let mut project = ctx.project()?;
    if let Some(file) = &args.config_file {
        project = project.with_stack_config_file(&ctx.cwd, file);
    }
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, args.stack.stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let references = StackReferences::new(
        backend.clone(),
        stack.clone(),
        Arc::new(ReferencedSecrets::new()),
    );
    // The organization's required policy packs judge what is adopted, as
    // they judge an update (the service refuses an import without them).
    let service_packs = crate::service_policy::prepare(backend.as_ref(), &stack).await?;
    let facts = StackFacts::load(backend.as_ref(), &stack).await;
    check_not_cancelled(&ctx.interrupts)?;
    let mut locked = StackState::new(backend.clone(), stack.clone())
        .lock(ctx.lock_info())
        .await?;
    let providers = Providers::new(&project).with_stack_references(references);
    let packs = Packs {
        service: &service_packs,
        facts: &facts,
    };
    let result = run_locked(ctx, &args, &project, &mut locked, &providers, packs).await;
    service_packs.finish(backend.as_ref(), &stack);
    providers.shutdown().await;
    open_stack::release(locked, result).await
}

/// The policy packs an import runs: the ones the organization requires.
#[derive(Clone, Copy)]
struct Packs<'a> {
    service: &'a crate::service_policy::ServicePacks,
    facts: &'a StackFacts,
}

impl Packs<'_> {
    /// Started and configured before anything is read.
    async fn start(&self, stack: &str, project: &str) -> Result<Vec<Arc<dyn Analyzer>>> {
        if self.service.packs.is_empty() {
            return Ok(Vec::new());
        }
        let mut request = crate::policy_packs::PackRequest::new(&[], &[])?;
        request.required.clone_from(&self.service.packs);
        let analyzers =
            crate::policy_packs::start(&request, &self.facts.identity(stack, project), false)
                .await?;
        Ok(self.service.record(analyzers))
    }
}

/// The flags `converge import` shares with `up`.
fn operation_args(args: &ImportArgs) -> OperationArgs {
    OperationArgs {
        stack: args.stack.clone(),
        yes: args.yes,
        skip_preview: args.skip_preview,
        parallel: args.parallel,
        diff: args.diff,
        json: args.json,
        message: args.message.clone(),
        show_secrets: args.show_secrets,
        cancel_timeout: args.cancel_timeout,
        ..OperationArgs::default()
    }
}

async fn run_locked(
    ctx: &Context,
    args: &ImportArgs,
    project: &Project,
    locked: &mut LockedStack,
    providers: &Providers,
    packs: Packs<'_>,
) -> Result<()> {
    let stack_name = locked.stack().stack.clone();
    let Opened { settings, crypter } = open_stack::open(ctx, project, locked).await?;
    report_pending(locked.base());

    let mut imports = match &args.file {
        Some(path) => spec::from_file(
            path,
            locked.base(),
            &stack_name,
            &project.name,
            args.protect,
        )?,
        None => spec::from_args(args, locked.base())?,
    };
    sdk_version::fill(project, &mut imports.specs);
    if let Some(out) = &args.out {
        codegen::check(project, out, &imports.specs)?;
    }
    let program = ImportProgram::new(
        locked.base().clone(),
        &stack_name,
        &project.name,
        imports.specs.clone(),
    )?;
    let op_args = operation_args(args);
    let config = program_config(project, &stack_name, &settings, crypter.as_ref())?;
    let mut options = deployment_options(ctx, project, locked.stack(), &op_args, &config)?;
    options.targets = Some(program.targets());
    options.analyzers = packs.start(&stack_name, &project.name).await?;
    let display = DisplayOptions {
        diff: args.diff,
        preview: false,
        show_secrets: args.show_secrets,
        debug: ctx.debug,
        ..DisplayOptions::default()
    };
    let interactive =
        !ctx.non_interactive && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let needs_confirmation = !args.preview_only && !args.yes;
    if needs_confirmation && !interactive {
        bail!(
            "--yes must be passed to proceed when running non-interactively \
             (or pass --preview-only to see what would be imported)"
        );
    }
    if args.preview_only || !args.skip_preview {
        if !args.json {
            say(format!("Previewing import ({stack_name}):"));
        }
        let executed = execute(
            OperationKind::Preview,
            ExecuteParams {
                base: locked.shared_base(),
                providers,
                options: DeploymentOptions {
                    preview: true,
                    ..options.clone()
                },
                program: Some(&program),
                sink: Arc::new(converge_engine::DiscardSink),
                render: RenderOptions {
                    display: DisplayOptions {
                        preview: true,
                        ..display
                    },
                    json: args.json,
                    suppress_outputs: args.suppress_outputs,
                    event_log: None,
                    json_events: None,
                    config: Default::default(),
                    suppress_progress: args.suppress_progress,
                    details: false,
                    join: Default::default(),
                },
            },
        )
        .await;
        print_lines(&executed.rendered.summary);
        if let Some(e) = executed.error() {
            return Err(e);
        }
        let preview = executed.result;
        if let Some(e) = preview.error {
            return Err(anyhow::Error::new(e));
        }
        if args.preview_only {
            if args.json {
                print_json(&preview, args.show_secrets)?;
            }
            return write_code(args, project, &program, &imports, &preview.snapshot);
        }
    }
    if needs_confirmation {
        confirm("Do you want to perform this import?").await?;
    }
    check_not_cancelled(&ctx.interrupts)?;
    if !args.json {
        say(format!("Importing ({stack_name}):"));
    }
    let record = crate::commands::stack::history::update_record(
        UpdateKind::ResourceImport,
        args.message.as_deref(),
        &settings,
    )?;
    let started = std::time::Instant::now();
    let journal = locked.start().await?;
    let executed = execute(
        OperationKind::Update,
        ExecuteParams {
            base: locked.shared_base(),
            providers,
            options,
            program: Some(&program),
            sink: journal.clone(),
            render: RenderOptions {
                display,
                json: args.json,
                suppress_outputs: args.suppress_outputs,
                event_log: None,
                json_events: None,
                config: Default::default(),
                suppress_progress: args.suppress_progress,
                details: false,
                join: Default::default(),
            },
        },
    )
    .await;
    report_interrupted(locked.base(), &executed.result);
    let finished = locked
        .finish(journal, &executed.result, Some(record))
        .await
        .context("the import ran, but its final state could not be saved; it will be recovered from the journal on the next run")?;
    if let Some(e) = finished.history_error {
        eprintln!("warning: the update history could not be recorded: {e}");
    }
    if args.json {
        print_json(&executed.result, args.show_secrets)?;
    } else {
        print_lines(&executed.rendered.summary);
        say(format!("\nDuration: {}", go_duration(started.elapsed())));
    }
    if let Some(e) = executed.error() {
        return Err(e);
    }
    let result = executed.result;
    if let Some(e) = result.error {
        return Err(anyhow::Error::new(e));
    }
    write_code(args, project, &program, &imports, &result.snapshot)
}

/// The imported resources as program text: written to `--out`, or, as
/// Pulumi does, printed for the user to copy into the program (unless
/// `--generate-code=false` or `--json`; code that cannot be written in
/// the project's language is then a warning, the import being done).
fn write_code(
    args: &ImportArgs,
    project: &Project,
    program: &ImportProgram,
    imports: &spec::Imports,
    snapshot: &Snapshot,
) -> Result<()> {
    let Some(path) = &args.out else {
        if !args.generate_code || args.json {
            return Ok(());
        }
        match codegen::generate(project, None, program, imports, snapshot) {
            Ok(text) => {
                say(
                    "\nAdd this code to the program; without it, the next update would try to delete \
                     what was imported:\n",
                );
                say(text.trim_end());
            }
            Err(e) => eprintln!("warning: no code for the imported resources: {e:#}"),
        }
        return Ok(());
    };
    let text = codegen::generate(project, Some(path), program, imports, snapshot)?;
    crate::atomic_write::Output::named(
        path,
        std::path::Path::new(""),
        crate::atomic_write::Dash::Refused,
        "--out",
    )?
    .write(text.as_bytes())?;
    if !args.json {
        say(format!(
            "\nWrote the imported resources' code to {}",
            path.display()
        ));
    }
    Ok(())
}

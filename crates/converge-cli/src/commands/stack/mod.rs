//! `converge stack init | ls | select | rm | export | import | output |
//! history | rename | tag | unselect | graph`.

use std::io::IsTerminal;

use anyhow::{bail, Context as _, Result};
use std::sync::Arc;

use converge_backend::{Backend, RemoveOptions, StackRef};
use converge_engine::stack_state::{CurrentState, JournalStatus, ReadOptions, Recovery};
use converge_engine::StackState;
use converge_state::checkpoint::StackCheckpoint;

use crate::args::StackCommand;
use crate::context::Context;
use crate::project::Project;
use crate::secrets::ProviderChoice;

mod graph;
pub mod history;
mod import_check;
mod ls;
pub mod output;
mod plaintext;
mod rename;
mod secrets_provider;
pub mod summary;
pub mod tags;
mod transfer;

pub async fn run(ctx: &Context, cmd: StackCommand) -> Result<()> {
    match cmd {
        StackCommand::Init {
            name,
            stack,
            secrets_provider,
            no_select,
            copy_config_from,
        } => {
            let opts = InitOptions {
                secrets_provider: secrets_provider.as_deref(),
                select: !no_select,
                copy_config_from: copy_config_from.as_deref(),
            };
            init(ctx, name.or(stack.stack), opts).await
        }
        StackCommand::ChangeSecretsProvider { provider, stack } => {
            secrets_provider::change(ctx, stack.stack, &provider).await
        }
        StackCommand::Ls {
            all,
            json,
            organization,
            project,
            tag,
        } => {
            let opts = ls::LsOptions {
                all,
                json,
                organization,
                project,
                tag,
            };
            ls::run(ctx, opts).await
        }
        StackCommand::Select {
            name,
            stack,
            create,
            secrets_provider,
        } => {
            select(
                ctx,
                name.or(stack.stack),
                create,
                secrets_provider.as_deref(),
            )
            .await
        }
        StackCommand::Rm {
            name,
            stack,
            force,
            preserve_config,
            yes,
        } => {
            rm(
                ctx,
                name.or(stack.stack),
                RmOptions {
                    force,
                    preserve_config,
                    yes,
                },
            )
            .await
        }
        StackCommand::Export {
            stack,
            file,
            show_secrets,
            version,
        } => {
            let opts = transfer::ExportOptions {
                file,
                show_secrets,
                version,
            };
            transfer::export(ctx, stack.stack, opts).await
        }
        StackCommand::Import { stack, file, force } => {
            transfer::import(ctx, stack.stack, transfer::ImportOptions { file, force }).await
        }
        StackCommand::History(args) => history::run(ctx, args).await,
        StackCommand::Graph(args) => graph::run(ctx, args).await,
        StackCommand::Unselect => unselect(ctx),
        StackCommand::Rename { new_name, stack } => {
            rename::run(ctx, &new_name, stack.stack.as_deref()).await
        }
        StackCommand::Tag(args) => tags::run(ctx, args).await,
        StackCommand::Output {
            name,
            stack,
            json,
            shell,
            show_secrets,
        } => {
            output::run(
                ctx,
                stack.stack,
                output::OutputOptions {
                    name,
                    json,
                    shell,
                    show_secrets,
                },
            )
            .await
        }
    }
}

/// The stack's current state, secrets kept as ciphertext: the checkpoint
/// with any update's journal replayed. A journal whose writer is provably
/// gone is compacted into the checkpoint on the way.
pub async fn current_checkpoint(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    stack: &StackRef,
) -> Result<StackCheckpoint> {
    Ok(current_state(ctx, backend, stack).await?.checkpoint)
}

/// [`current_checkpoint`] with what was found of an update's journal.
pub async fn current_state(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    stack: &StackRef,
) -> Result<CurrentState> {
    let state = StackState::new(backend.clone(), stack.clone());
    let current = state
        .read(&ReadOptions {
            compact_as: Some(ctx.lock_info()),
        })
        .await?;
    if let JournalStatus::Recovered(Recovery::Replayed { entries, pending }) = current.journal {
        eprintln!(
            "note: recovered an interrupted update of stack {}: {entries} journal entries \
             replayed, {pending} operation(s) were in flight",
            stack.stack
        );
    }
    Ok(current)
}

/// Creates a stack with an empty first checkpoint, as Pulumi does.
pub(super) async fn create_stack(backend: &Arc<dyn Backend>, stack: &StackRef) -> Result<()> {
    StackState::new(backend.clone(), stack.clone())
        .create()
        .await?;
    Ok(())
}

/// `stack init`'s options besides the name.
struct InitOptions<'a> {
    secrets_provider: Option<&'a str>,
    /// Select the new stack (not with `--no-select`).
    select: bool,
    /// `--copy-config-from`: the stack whose configuration the new one
    /// starts with.
    copy_config_from: Option<&'a str>,
}

async fn init(ctx: &Context, name: Option<String>, opts: InitOptions<'_>) -> Result<()> {
    let project = ctx.project()?;
    let name = match name {
        Some(n) => n,
        None => bail!("which stack? run `converge stack init NAME`"),
    };
    let choice = opts
        .secrets_provider
        .map(ProviderChoice::parse)
        .transpose()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.stack_in_project(&project, &name)?;
    // The stack to copy from must exist before the new one is made.
    let copy_from = match opts.copy_config_from {
        Some(from) => {
            let from = ctx.stack_in_project(&project, from)?;
            ctx.require_stack(backend.as_ref(), &from)
                .await
                .context("--copy-config-from names no stack of this project")?;
            Some(from)
        }
        None => None,
    };
    let settings = project.stack_config_file(&stack.stack);
    secrets_provider::create_stack_with(ctx, &backend, &stack, &settings, choice.as_ref()).await?;
    if let Err(e) = tags::record_builtin(backend.as_ref(), &stack, &project).await {
        eprintln!("warning: the stack's tags could not be recorded: {e:#}");
    }
    if let Some(from) = &copy_from {
        crate::commands::config::copy_all(ctx, &project, &backend, from, &stack.stack)
            .await
            .with_context(|| {
                format!(
                    "stack {} was created, but the configuration of {} could not be copied \
                     into it (`converge config cp --dest {}` tries again)",
                    stack.stack, from.stack, stack.stack
                )
            })?;
    }
    if opts.select {
        ctx.home
            .select_stack(&project.name, &project.dir, Some(&stack.stack))?;
    }
    println!("Created stack '{}'", stack.stack);
    Ok(())
}

async fn select(
    ctx: &Context,
    name: Option<String>,
    create: bool,
    secrets_provider: Option<&str>,
) -> Result<()> {
    let project = ctx.project()?;
    let Some(name) = name else {
        bail!("which stack? run `converge stack select NAME` (`converge stack ls` lists them)");
    };
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.stack_in_project(&project, &name)?;
    if !backend.stack_exists(&stack).await? {
        if create {
            let choice = secrets_provider.map(ProviderChoice::parse).transpose()?;
            let settings = project.stack_config_file(&stack.stack);
            secrets_provider::create_stack_with(ctx, &backend, &stack, &settings, choice.as_ref())
                .await?;
            if let Err(e) = tags::record_builtin(backend.as_ref(), &stack, &project).await {
                eprintln!("warning: the stack's tags could not be recorded: {e:#}");
            }
            println!("Created stack '{}'", stack.stack);
        } else {
            ctx.require_stack(backend.as_ref(), &stack).await?;
        }
    }
    ctx.home
        .select_stack(&project.name, &project.dir, Some(&stack.stack))
}

/// `stack unselect`: the project's workspace names no stack any more.
fn unselect(ctx: &Context) -> Result<()> {
    let project = ctx.project()?;
    match ctx.home.selected_stack(&project.name, &project.dir)? {
        Some(previous) => {
            ctx.home.select_stack(&project.name, &project.dir, None)?;
            println!("Stack '{previous}' is no longer selected");
        }
        None => println!("No stack is selected"),
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RmOptions {
    pub force: bool,
    pub preserve_config: bool,
    pub yes: bool,
}

/// The stack `stack rm` removes, and the project directory whose
/// configuration file and selection go with it: none outside a project,
/// where the name must be qualified (`org/project/stack`), nor for another
/// project's stack named in full.
fn rm_target(ctx: &Context, name: Option<&str>) -> Result<(StackRef, Option<Project>)> {
    let found = Project::find(&ctx.cwd)?;
    let stack = match (&found, name) {
        (Some(project), Some(name)) => StackRef::parse(name, &project.name)?,
        (Some(project), None) => ctx.resolve_stack(project, None)?,
        (None, Some(name)) => StackRef::parse(name, "").map_err(|e| {
            anyhow::anyhow!(
                "{e}: outside a project directory, name the stack in full \
                 (organization/PROJECT/STACK)"
            )
        })?,
        (None, None) => {
            return Err(ctx.project().err().unwrap_or_else(|| {
                anyhow::anyhow!("which stack? run `converge stack rm ORG/PROJECT/STACK`")
            }))
        }
    };
    let local = found.filter(|p| p.name == stack.project);
    Ok((stack, local))
}

async fn rm(ctx: &Context, name: Option<String>, opts: RmOptions) -> Result<()> {
    let (stack, local) = rm_target(ctx, name.as_deref())?;
    let backend = match &local {
        Some(project) => ctx.backend(Some(project))?,
        None => ctx.backend(Project::find(&ctx.cwd)?.as_ref())?,
    };
    ctx.require_stack(backend.as_ref(), &stack).await?;
    if !opts.yes {
        if ctx.non_interactive || !std::io::stdin().is_terminal() {
            bail!(
                "removing stack {} needs confirmation: pass --yes",
                stack.stack
            );
        }
        let line = crate::prompt::ask(&format!(
            "This will permanently remove the '{}' stack!\nPlease confirm by typing its name: ",
            stack.stack
        ))?;
        if line.trim() != stack.stack {
            bail!(
                "confirmation did not match; stack {} was not removed",
                stack.stack
            );
        }
    }
    let backend: Arc<dyn Backend> = Arc::from(backend);
    match remove_stack(ctx, &backend, &stack, local.as_ref(), opts).await? {
        Removal::Removed => {
            println!("Stack '{}' has been removed!", stack.stack);
            Ok(())
        }
        Removal::HasResources(0) => bail!(
            "stack {} still has its stack resource: run `converge destroy` first, \
             or pass --force to remove the stack anyway",
            stack.stack
        ),
        Removal::HasResources(count) => bail!(
            "stack {} still has {count} resource(s): destroy them first, \
             or pass --force to remove the stack and forget them",
            stack.stack
        ),
    }
}

/// What [`remove_stack`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    Removed,
    /// Not removed: the stack's state is not empty (and no `force`);
    /// this many of its resources are the program's (not the stack
    /// resource, not a default provider).
    HasResources(usize),
}

/// Removes `stack` under its lock — unless it still has resources and
/// `opts.force` is false — then its configuration file (unless
/// preserved) and selection in `local`, its project directory. `stack rm`
/// and `destroy --remove`.
pub(crate) async fn remove_stack(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    stack: &StackRef,
    local: Option<&Project>,
    opts: RmOptions,
) -> Result<Removal> {
    crate::service_policy::declare_state_edit(backend.as_ref(), stack);
    let locked = StackState::new(backend.clone(), stack.clone())
        .lock(ctx.lock_info())
        .await?;
    let result = async {
        let resources = &locked.base().resources;
        if !resources.is_empty() && !opts.force {
            let programs = resources
                .iter()
                .filter(|r| !r.urn.is_stack() && !r.urn.is_default_provider())
                .count();
            return Ok(Removal::HasResources(programs));
        }
        backend
            .remove_stack(stack, &RemoveOptions::default())
            .await?;
        Ok::<_, anyhow::Error>(Removal::Removed)
    }
    .await;
    locked.release().await?;
    let removal = result?;
    if let (Removal::Removed, Some(project)) = (removal, local) {
        forget_locally(ctx, project, stack, opts.preserve_config)?;
    }
    Ok(removal)
}

/// A removed stack's configuration file (unless kept) and selection in
/// its project directory.
fn forget_locally(
    ctx: &Context,
    project: &Project,
    stack: &StackRef,
    preserve_config: bool,
) -> Result<()> {
    if !preserve_config {
        let file = project.stack_config_file(&stack.stack);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot remove {}", file.display())),
        }
    }
    if ctx
        .home
        .selected_stack(&project.name, &project.dir)?
        .as_deref()
        == Some(&stack.stack)
    {
        ctx.home.select_stack(&project.name, &project.dir, None)?;
    }
    Ok(())
}

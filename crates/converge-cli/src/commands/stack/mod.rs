//! `converge stack init | ls | select | rm | export | import | output |
//! history | rename | tag`.

use std::io::{IsTerminal, Read, Write};

use anyhow::{bail, Context as _, Result};
use std::sync::Arc;

use converge_backend::{Backend, RemoveOptions, StackRef};
use converge_engine::stack_state::{CurrentState, JournalStatus, ReadOptions, Recovery};
use converge_engine::StackState;
use converge_state::checkpoint::{self, StackCheckpoint};
use converge_state::secrets::{CloudProviderState, SecretsMode};
use converge_state::{integrity, SecretsProviders, Snapshot};

use crate::args::StackCommand;
use crate::atomic_write::write_atomically;
use crate::context::{now_rfc3339, Context};
use crate::passphrase::provider_salt;
use crate::secrets::stack::{open_recorded, same_provider, settings_provider};
use crate::secrets::{stack_secrets, ProviderChoice};
use crate::stack_settings::StackSettings;

pub mod history;
mod ls;
pub mod output;
mod rename;
mod secrets_provider;
pub mod tags;

pub async fn run(ctx: &Context, cmd: StackCommand) -> Result<()> {
    match cmd {
        StackCommand::Init {
            name,
            stack,
            secrets_provider,
        } => init(ctx, name.or(stack.stack), secrets_provider.as_deref()).await,
        StackCommand::ChangeSecretsProvider { provider, stack } => {
            secrets_provider::change(ctx, stack.stack, &provider).await
        }
        StackCommand::Ls { all, json } => ls::run(ctx, all, json).await,
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
        StackCommand::Export { stack, file } => export(ctx, stack.stack, file).await,
        StackCommand::Import { stack, file, force } => import(ctx, stack.stack, file, force).await,
        StackCommand::History(args) => history::run(ctx, args).await,
        StackCommand::Rename { new_name, stack } => {
            rename::run(ctx, &new_name, stack.stack.as_deref()).await
        }
        StackCommand::Tag(args) => tags::run(ctx, args).await,
        StackCommand::Output {
            name,
            stack,
            json,
            show_secrets,
        } => {
            output::run(
                ctx,
                stack.stack,
                output::OutputOptions {
                    name,
                    json,
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

async fn init(ctx: &Context, name: Option<String>, secrets_provider: Option<&str>) -> Result<()> {
    let project = ctx.project()?;
    let name = match name {
        Some(n) => n,
        None => bail!("which stack? run `converge stack init NAME`"),
    };
    let choice = secrets_provider.map(ProviderChoice::parse).transpose()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = StackRef::parse(&name, &project.name)?;
    let settings = project.stack_config_file(&stack.stack);
    secrets_provider::create_stack_with(ctx, &backend, &stack, &settings, choice.as_ref()).await?;
    if let Err(e) = tags::record_builtin(backend.as_ref(), &stack, &project).await {
        eprintln!("warning: the stack's tags could not be recorded: {e:#}");
    }
    ctx.home
        .select_stack(&project.name, &project.dir, Some(&stack.stack))?;
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
    let stack = StackRef::parse(&name, &project.name)?;
    if !backend.stack_exists(&stack).await? {
        if create {
            match secrets_provider.map(ProviderChoice::parse).transpose()? {
                Some(choice) => {
                    let settings = project.stack_config_file(&stack.stack);
                    secrets_provider::create_stack_with(
                        ctx,
                        &backend,
                        &stack,
                        &settings,
                        Some(&choice),
                    )
                    .await?
                }
                None => create_stack(&backend, &stack).await?,
            }
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

#[derive(Debug, Clone, Copy)]
struct RmOptions {
    force: bool,
    preserve_config: bool,
    yes: bool,
}

async fn rm(ctx: &Context, name: Option<String>, opts: RmOptions) -> Result<()> {
    let project = ctx.project()?;
    let backend = ctx.backend(Some(&project))?;
    let stack = ctx.resolve_stack(&project, name.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    if !opts.yes {
        if ctx.non_interactive || !std::io::stdin().is_terminal() {
            bail!(
                "removing stack {} needs confirmation: pass --yes",
                stack.stack
            );
        }
        print!(
            "This will permanently remove the '{}' stack!\nPlease confirm by typing its name: ",
            stack.stack
        );
        std::io::stdout().flush()?;
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if line.trim() != stack.stack {
            bail!(
                "confirmation did not match; stack {} was not removed",
                stack.stack
            );
        }
    }
    let backend: Arc<dyn Backend> = Arc::from(backend);
    let locked = StackState::new(backend.clone(), stack.clone())
        .lock(ctx.lock_info())
        .await?;
    let result = async {
        let count = locked.base().resources.len();
        if count > 0 && !opts.force {
            bail!(
                "stack {} still has {count} resource(s): destroy them first, \
                 or pass --force to remove the stack and forget them",
                stack.stack
            );
        }
        backend
            .remove_stack(&stack, &RemoveOptions::default())
            .await?;
        Ok(())
    }
    .await;
    locked.release().await?;
    result?;
    if !opts.preserve_config {
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
    println!("Stack '{}' has been removed!", stack.stack);
    Ok(())
}

async fn export(
    ctx: &Context,
    name: Option<String>,
    file: Option<std::path::PathBuf>,
) -> Result<()> {
    let project = ctx.project()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, name.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let snapshot = match current_checkpoint(ctx, &backend, &stack).await?.latest {
        Some(s) => s,
        None => {
            let mut s = Snapshot::empty(now_rfc3339());
            let settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
            s.secrets_providers = settings_provider(&settings)?;
            s
        }
    };
    let bytes = checkpoint::write_deployment(&snapshot, SecretsMode::Opaque)?;
    match file {
        Some(f) => write_atomically(&ctx.cwd.join(f), &bytes),
        None => {
            std::io::stdout().write_all(&bytes)?;
            Ok(())
        }
    }
}

async fn import(
    ctx: &Context,
    name: Option<String>,
    file: Option<std::path::PathBuf>,
    force: bool,
) -> Result<()> {
    let project = ctx.project()?;
    let backend = ctx.backend(Some(&project))?;
    let stack = ctx.resolve_stack(&project, name.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let (bytes, source) = match file {
        Some(f) => {
            let path = ctx.cwd.join(&f);
            let b =
                std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
            (b, path.display().to_string())
        }
        None => {
            let mut b = Vec::new();
            std::io::stdin()
                .read_to_end(&mut b)
                .context("cannot read the deployment from stdin")?;
            (b, "stdin".to_owned())
        }
    };
    let mut snapshot = checkpoint::read_deployment(&bytes, SecretsMode::Opaque)
        .with_context(|| format!("cannot import {source}"))?;
    if let Err(e) = integrity::verify(&snapshot) {
        if !force {
            bail!(
                "the deployment in {source} fails integrity verification: {e}; \
                 fix it, or pass --force to import it anyway"
            );
        }
        eprintln!("warning: importing a deployment that fails integrity verification: {e}");
    }
    let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
    reconcile_secrets(ctx, &mut settings, &mut snapshot).await?;
    if !snapshot.pending_operations.is_empty() {
        eprintln!(
            "warning: the imported deployment has {} pending operation(s): \
             the objects they name may or may not exist",
            snapshot.pending_operations.len()
        );
    }

    let mut locked = StackState::new(Arc::from(backend), stack.clone())
        .lock(ctx.lock_info())
        .await?;
    locked.replace_base(snapshot);
    let result = locked.commit_changes().await;
    locked.release().await?;
    result?;
    println!("Import complete.");
    Ok(())
}

/// Makes the imported snapshot's secrets readable with the stack's own
/// secrets provider: a stack whose settings name none adopts the
/// snapshot's; when the two differ and the snapshot holds secrets, they are
/// re-encrypted (in memory) from the snapshot's provider to the stack's.
async fn reconcile_secrets(
    ctx: &Context,
    settings: &mut StackSettings,
    snapshot: &mut Snapshot,
) -> Result<()> {
    let imported = snapshot.secrets_providers.clone();
    let has_secrets = snapshot.resources.iter().any(|r| {
        r.inputs.values().any(|v| v.contains_secrets())
            || r.outputs.values().any(|v| v.contains_secrets())
    });
    let Some(stack_provider) = settings_provider(settings)? else {
        if let Some(imported) = &imported {
            adopt_provider(settings, imported)?;
        }
        return Ok(());
    };
    match &imported {
        Some(imported) if same_provider(imported, &stack_provider) => {}
        Some(imported) if has_secrets => {
            let opts = ctx.passphrase_options();
            let from = open_recorded(imported, opts, "the imported deployment").await?;
            let to = stack_secrets(settings, None, opts, false).await?;
            let plain = checkpoint::write_deployment(snapshot, SecretsMode::Opaque)?;
            let decrypted =
                checkpoint::read_deployment(&plain, SecretsMode::Crypter(from.crypter.as_ref()))
                    .context("cannot decrypt the imported deployment's secrets")?;
            let reencrypted = checkpoint::write_deployment(
                &decrypted,
                SecretsMode::Crypter(to.crypter.as_ref()),
            )?;
            *snapshot = checkpoint::read_deployment(&reencrypted, SecretsMode::Opaque)?;
            snapshot.secrets_providers = Some(to.provider);
        }
        Some(_) => snapshot.secrets_providers = Some(stack_provider),
        None if !has_secrets => snapshot.secrets_providers = Some(stack_provider),
        None => {}
    }
    Ok(())
}

/// Writes the imported snapshot's secrets provider into a settings file
/// that names none.
fn adopt_provider(settings: &mut StackSettings, imported: &SecretsProviders) -> Result<()> {
    if imported.kind == converge_state::secrets::cloud::PROVIDER_TYPE {
        let state = CloudProviderState::from_provider(imported)
            .context("the imported deployment's secrets provider")?;
        settings.set_cloud_provider(&state.url, &state.encrypted_key_base64());
    } else if let Some(salt) = provider_salt(imported) {
        settings.set_encryption_salt(&salt);
    } else {
        return Ok(());
    }
    settings.save()
}

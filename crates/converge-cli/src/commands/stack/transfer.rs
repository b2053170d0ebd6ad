//! `converge stack export | import`: a stack's deployment out to JSON and
//! back in. An import is checked before anything is written: keys that
//! look misspelled and types their URNs contradict (`import_check.rs`),
//! integrity, and that every resource belongs to the target stack and
//! project (an export of another stack would make the next update delete
//! that stack's objects and create them anew) — all overridable with
//! `--force`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, ListHistoryOptions, StackRef};
use converge_engine::StackState;
use converge_state::checkpoint::{self, to_pretty_json};
use converge_state::json_limits;
use converge_state::secrets::{CloudProviderState, SecretsMode};
use converge_state::{integrity, SecretsProviders, Snapshot};
use serde_json::Value;

use super::{current_checkpoint, import_check, plaintext};
use crate::atomic_write::{Dash, Output};
use crate::context::{now_rfc3339, Context};
use crate::input_file::read_file;
use crate::passphrase::provider_salt;
use crate::secrets::stack::{open_recorded, same_provider, settings_provider};
use crate::secrets::stack_secrets;
use crate::stack_settings::StackSettings;

/// What `stack export` was asked for.
#[derive(Debug)]
pub(super) struct ExportOptions {
    pub file: Option<PathBuf>,
    /// Secrets decrypted, as `plaintext`, with the stack's provider.
    pub show_secrets: bool,
    /// The deployment of this update version (from the history), not the
    /// current one.
    pub version: Option<u64>,
}

/// What `stack import` was asked for.
#[derive(Debug)]
pub(super) struct ImportOptions {
    pub file: Option<PathBuf>,
    /// Import a deployment that fails verification or is another stack's.
    pub force: bool,
}

pub(super) async fn export(ctx: &Context, name: Option<String>, opts: ExportOptions) -> Result<()> {
    let project = ctx.project()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, name.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
    let latest = match opts.version {
        Some(version) => version_checkpoint(backend.as_ref(), &stack, version).await?,
        None => current_checkpoint(ctx, &backend, &stack).await?.latest,
    };
    let snapshot = match latest {
        Some(s) => s,
        None => {
            let mut s = Snapshot::empty(now_rfc3339());
            s.secrets_providers = settings_provider(&settings)?;
            s
        }
    };
    let mut bytes = checkpoint::write_deployment(&snapshot, SecretsMode::Opaque)?;
    if opts.show_secrets {
        let secrets = stack_secrets(
            &mut settings,
            snapshot.secrets_providers.as_ref(),
            ctx.passphrase_options(),
            false,
        )
        .await?;
        let mut json: Value = json_limits::from_slice(&bytes)?;
        plaintext::reveal(&mut json, secrets.crypter.as_ref())
            .with_context(|| format!("cannot decrypt the secrets of stack {}", stack.stack))?;
        bytes = to_pretty_json(&json).into_bytes();
    }
    let output = match opts.file {
        Some(f) => Output::named(&f, &ctx.cwd, Dash::Stdout, "--file")?,
        None => Output::Stdout,
    };
    output.write(&bytes)
}

/// The deployment that update `version` of `stack` left: its history
/// record's checkpoint copy. A record without a version (Pulumi's DIY
/// records have 0) counts by its place, the oldest being 1.
async fn version_checkpoint(
    backend: &dyn Backend,
    stack: &StackRef,
    version: u64,
) -> Result<Option<Snapshot>> {
    let entries = backend
        .list_history(stack, &ListHistoryOptions { limit: None })
        .await?;
    let count = entries.len();
    let found = entries.iter().enumerate().find(|(newest_first, e)| {
        let recorded = serde_json::from_slice::<Value>(&e.record)
            .ok()
            .and_then(|r| r.get("version")?.as_u64())
            .filter(|v| *v > 0);
        recorded.unwrap_or((count - newest_first) as u64) == version
    });
    let Some((_, entry)) = found else {
        bail!(
            "stack {} has no update version {version}{}",
            stack.stack,
            match count {
                0 => " (it has no update history)".to_owned(),
                _ => " (`converge stack history` lists its updates)".to_owned(),
            }
        );
    };
    let Some(bytes) = backend
        .load_history_checkpoint(stack, entry.recorded_at_unix_nanos)
        .await?
    else {
        bail!(
            "the backend {} keeps no checkpoint of update version {version} of stack {}: \
             only the file and bucket backends keep one per update",
            backend.url(),
            stack.stack
        );
    };
    let checkpoint =
        checkpoint::read_checkpoint(&bytes, SecretsMode::Opaque).with_context(|| {
            format!(
                "the checkpoint of update version {version} of stack {} cannot be read",
                stack.stack
            )
        })?;
    Ok(checkpoint.latest)
}

pub(super) async fn import(ctx: &Context, name: Option<String>, opts: ImportOptions) -> Result<()> {
    let project = ctx.project()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, name.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let (mut bytes, source) = match opts.file {
        Some(f) if f.as_os_str() == "-" => (
            crate::prompt::read_stdin("the deployment from stdin")?,
            "stdin".to_owned(),
        ),
        Some(f) => {
            let path = ctx.cwd.join(&f);
            let b = read_file(&path, "the deployment")?;
            (b, path.display().to_string())
        }
        None => (
            crate::prompt::read_stdin("the deployment from stdin")?,
            "stdin".to_owned(),
        ),
    };
    // Past a limit, or not JSON: `read_deployment` below says what and
    // where, before anything is written.
    json_limits::check(&bytes).map_err(|e| anyhow::anyhow!("cannot import {source}: {e}"))?;
    let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
    let parsed = json_limits::from_slice::<Value>(&bytes).ok();
    if let Some(json) = &parsed {
        report_slips(import_check::check(json), &source, opts.force)?;
    }
    let (plain, encrypted) = parsed.as_ref().map_or((0, 0), plaintext::count);
    let sealed_with = match parsed {
        Some(mut json) if plain > 0 => {
            if encrypted > 0 {
                bail!(
                    "cannot import {source}: it holds both plaintext and encrypted secrets; \
                     export the stack either with --show-secrets or without it"
                );
            }
            // A `--show-secrets` export: sealed with the stack's provider.
            let recorded = current_checkpoint(ctx, &backend, &stack)
                .await?
                .latest
                .and_then(|s| s.secrets_providers);
            let secrets = stack_secrets(
                &mut settings,
                recorded.as_ref(),
                ctx.passphrase_options(),
                true,
            )
            .await?;
            plaintext::seal(&mut json, secrets.crypter.as_ref())?;
            bytes = serde_json::to_vec(&json)?;
            Some(secrets.provider)
        }
        _ => None,
    };
    let mut snapshot = checkpoint::read_deployment(&bytes, SecretsMode::Opaque)
        .with_context(|| format!("cannot import {source}"))?;
    if let Some(provider) = sealed_with {
        snapshot.secrets_providers = Some(provider);
    }
    check_ownership(&snapshot, &stack, &source, opts.force)?;
    if let Err(e) = integrity::verify(&snapshot) {
        if !opts.force {
            bail!(
                "the deployment in {source} fails integrity verification: {e}; \
                 fix it, or pass --force to import it anyway"
            );
        }
        eprintln!("warning: importing a deployment that fails integrity verification: {e}");
    }
    reconcile_secrets(ctx, &mut settings, &mut snapshot).await?;
    if !snapshot.pending_operations.is_empty() {
        eprintln!(
            "warning: the imported deployment has {} pending operation(s): \
             the objects they name may or may not exist",
            snapshot.pending_operations.len()
        );
    }

    crate::service_policy::declare_state_edit(backend.as_ref(), &stack);
    let state = StackState::new(backend, stack.clone());
    let mut locked = if opts.force {
        // `--force` puts the deployment in place of a state that cannot
        // be read (a damaged checkpoint or journal): the way back to an
        // earlier version that `stack export --version N` wrote.
        let (locked, unreadable) = state.lock_replacing(ctx.lock_info()).await?;
        if let Some(e) = unreadable {
            eprintln!(
                "warning: the stack's current state cannot be read ({e}); the imported \
                 deployment replaces it"
            );
        }
        locked
    } else {
        state.lock(ctx.lock_info()).await?
    };
    locked.replace_base(snapshot);
    let result = crate::commands::state::held(locked.commit_changes().await);
    locked.release().await?;
    result?;
    println!("Import complete.");
    Ok(())
}

/// Refuses a file with misspelled keys or mismatched types (warnings with
/// `force`), naming each; warns about the keys kept as they are.
fn report_slips(findings: import_check::Findings, source: &str, force: bool) -> Result<()> {
    for kept in &findings.kept {
        eprintln!("warning: {source}: {kept}");
    }
    if findings.slips.is_empty() {
        return Ok(());
    }
    if force {
        for slip in &findings.slips {
            eprintln!("warning: {source}: {slip}");
        }
        return Ok(());
    }
    bail!(
        "cannot import {source}:\n  {}\nfix them, or pass --force to import the file as it is",
        findings.slips.join("\n  ")
    )
}

/// Refuses a deployment holding resources of another stack or project
/// (their URNs name it): each is named with both stacks. With `force`
/// they are warnings and the deployment is imported as it is.
fn check_ownership(snapshot: &Snapshot, stack: &StackRef, source: &str, force: bool) -> Result<()> {
    let mut problems = Vec::new();
    for r in &snapshot.resources {
        if r.urn.stack() != stack.stack {
            problems.push(format!(
                "resource '{}' is from a different stack ({} != {})",
                r.urn,
                r.urn.stack(),
                stack.stack
            ));
        }
        if r.urn.project() != stack.project {
            problems.push(format!(
                "resource '{}' is from a different project ({} != {})",
                r.urn,
                r.urn.project(),
                stack.project
            ));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    if force {
        for p in &problems {
            eprintln!("warning: {p}");
        }
        eprintln!(
            "warning: imported anyway (--force): an update of stack {} will take these \
             resources for ones its program no longer declares, and delete their objects",
            stack.stack
        );
        return Ok(());
    }
    bail!(
        "{}\nthe deployment in {source} belongs to another stack: importing it into stack {} \
         would make its next update replace that stack's objects; export the stack's own \
         deployment instead, or pass --force to import it anyway",
        problems.join("\n"),
        stack.stack
    )
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

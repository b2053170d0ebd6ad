//! `converge stack change-secrets-provider`: a stack's secrets moved to
//! another provider. Under the stack's lock: the old provider opened (every
//! secret of the config and the state must decrypt), the new one made (a
//! new passphrase salt or a new data key from the key service), the config
//! re-encrypted in memory, the state re-encrypted through the journal
//! (`LockedStack::change_secrets`), and only then the settings file
//! written. Any error before the state is committed leaves the state and
//! the settings file as they were, byte for byte.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, StackRef};
use converge_engine::{LockedStack, StackState};
use serde_norway::Mapping;

use crate::atomic_write::write_atomically;
use crate::config_value::{contains_secure, reencrypt};
use crate::context::Context;
use crate::passphrase::{can_prompt, in_environment, read_new_passphrase, NewPassphrase};
use crate::secrets::stack::{new_cloud, NewProvider};
use crate::secrets::{stack_secrets, ProviderChoice};
use crate::stack_settings::StackSettings;
use converge_state::secrets::PassphraseCrypter;

/// Refuses to give a settings file that already has a secrets provider
/// another one (`stack init --secrets-provider` on an existing file).
fn refuse_other_provider(settings: &StackSettings, url: &str) -> Result<()> {
    let current = settings
        .secrets_provider()
        .filter(|p| !matches!(*p, "passphrase" | "default"));
    let has_key = settings.encryption_salt().is_some() || settings.encrypted_key().is_some();
    if has_key && current != Some(url) {
        bail!(
            "{} already has a secrets provider ({}): use `converge stack \
             change-secrets-provider {url}` to move the stack's secrets to another one",
            settings.path.display(),
            current.unwrap_or("passphrase")
        );
    }
    Ok(())
}

/// Creates `stack` with the secrets provider `choice` (`stack init`,
/// `stack select --create`). A key service's data key is made before the
/// stack, so a key that cannot be used leaves nothing behind; a settings
/// file that already has one for the same key (a checked-in file) keeps it,
/// since its secure values need it. Passphrase encryption is set up now
/// when a passphrase is at hand or can be asked for, as Pulumi does;
/// otherwise by the first secret.
pub(super) async fn create_stack_with(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    stack: &StackRef,
    settings_path: &Path,
    choice: Option<&ProviderChoice>,
) -> Result<()> {
    let mut settings = StackSettings::load(settings_path)?;
    let cloud = match choice {
        Some(ProviderChoice::Cloud(url)) => {
            refuse_other_provider(&settings, url)?;
            if settings.encrypted_key().is_some() {
                None
            } else {
                Some(new_cloud(url).await?.1)
            }
        }
        Some(ProviderChoice::Passphrase) => {
            if let Some(url) = settings
                .secrets_provider()
                .filter(|p| !matches!(*p, "passphrase" | "default"))
            {
                bail!(
                    "{} names the secrets provider {url}: use `converge stack \
                     change-secrets-provider passphrase` to move the stack to a passphrase",
                    settings.path.display()
                );
            }
            None
        }
        None => None,
    };
    // The first passphrase is asked for before the stack is made, and its
    // salt written after, so that neither a cancelled prompt nor a stack
    // that exists already leaves anything behind.
    let opts = ctx.passphrase_options();
    // A checked-in file may name a key service without a data key yet.
    let names_cloud = settings
        .secrets_provider()
        .is_some_and(|p| !matches!(p, "passphrase" | "default"));
    let needs_salt = cloud.is_none()
        && !names_cloud
        && settings.encryption_salt().is_none()
        && settings.encrypted_key().is_none()
        && (in_environment() || can_prompt(opts));
    let salt = if needs_salt && !backend.stack_exists(stack).await? {
        let passphrase = read_new_passphrase(opts, NewPassphrase::First)?;
        let (_, salt) = PassphraseCrypter::generate(&passphrase)
            .context("cannot set up passphrase encryption")?;
        Some(salt)
    } else {
        None
    };
    super::create_stack(backend, stack).await?;
    if let Some(cloud) = cloud {
        settings.set_cloud_provider(&cloud.url, &cloud.encrypted_key_base64());
        return settings.save();
    }
    if let Some(salt) = salt {
        settings.set_encryption_salt(&salt);
        settings.save()?;
    } else if names_cloud && settings.encrypted_key().is_none() && in_environment() {
        // Its data key, made as the first secret would make it.
        stack_secrets(&mut settings, None, opts, true).await?;
    }
    Ok(())
}

pub(super) async fn change(ctx: &Context, name: Option<String>, provider: &str) -> Result<()> {
    let choice = ProviderChoice::parse(provider)?;
    let project = ctx.project()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, name.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let path = project.stack_config_file(&stack.stack);
    let original = read_if_exists(&path)?;

    crate::service_policy::declare_state_edit(backend.as_ref(), &stack);
    let mut locked = StackState::new(backend, stack.clone())
        .lock(ctx.lock_info())
        .await?;
    let result = change_locked(ctx, &path, &mut locked, &choice).await;
    let released = locked.release().await;
    if let Err(e) = result {
        // Opening the old provider may have written a salt or key the
        // state recorded back into the file: put the file back as it was.
        restore(&path, original.as_deref())?;
        return Err(e);
    }
    released?;
    println!(
        "Changed the secrets provider of stack '{}' to {}",
        stack.stack,
        match &choice {
            ProviderChoice::Passphrase => "passphrase",
            ProviderChoice::Cloud(url) => url.as_str(),
        }
    );
    Ok(())
}

async fn change_locked(
    ctx: &Context,
    path: &Path,
    locked: &mut LockedStack,
    choice: &ProviderChoice,
) -> Result<()> {
    let opts = ctx.passphrase_options();
    let mut settings = StackSettings::load(path)?;
    let recorded = locked.base().secrets_providers.clone();
    let config = settings.config();
    let has_provider = recorded.is_some()
        || settings.encryption_salt().is_some()
        || settings.encrypted_key().is_some();
    let old = if has_provider {
        Some(stack_secrets(&mut settings, recorded.as_ref(), opts, false).await?)
    } else if config.values().any(contains_secure) {
        bail!(
            "{} holds secure values but names no secrets provider to decrypt them with",
            path.display()
        );
    } else {
        None
    };
    let new = NewProvider::make(choice, opts).await?;
    let old_crypter = old
        .map(|o| o.crypter)
        .unwrap_or_else(|| new.secrets.crypter.clone());

    let mut reencrypted = Mapping::new();
    for (key, value) in config {
        let value = if contains_secure(&value) {
            reencrypt(&value, old_crypter.as_ref(), new.secrets.crypter.as_ref()).with_context(
                || {
                    format!(
                        "cannot re-encrypt the secure value {} of {}",
                        key.as_str().unwrap_or("?"),
                        path.display()
                    )
                },
            )?
        } else {
            value
        };
        reencrypted.insert(key, value);
    }
    locked
        .change_secrets(
            old_crypter,
            new.secrets.crypter.clone(),
            new.secrets.provider.clone(),
        )
        .await
        .context("cannot decrypt the stack's state with its current secrets provider")?;
    let mut settings = StackSettings::load(path)?;
    new.apply_to(&mut settings);
    settings.set_config(reencrypted);
    crate::commands::state::held(locked.commit_changes().await)?;
    settings.save().with_context(|| {
        format!(
            "the stack's state now uses the new secrets provider (`converge stack export` \
             shows it under secrets_providers), but {} could not be written: set its \
             secretsprovider, encryptedkey and encryptionsalt to match",
            path.display()
        )
    })
}

fn read_if_exists(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Puts the settings file back as `original` (absent when `None`), when it
/// changed.
fn restore(path: &Path, original: Option<&[u8]>) -> Result<()> {
    if read_if_exists(path)?.as_deref() == original {
        return Ok(());
    }
    match original {
        Some(bytes) => write_atomically(path, bytes),
        None => {
            std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))
        }
    }
}

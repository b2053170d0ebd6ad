//! `converge config cp [KEY] --dest STACK [--path]`: copies one key (or a
//! value inside one, with `--path`), or without a key the whole
//! configuration, from the selected stack to another stack of the
//! project. The destination keeps its other keys. Secure values are
//! decrypted with the source stack's key and encrypted with the
//! destination's — its salt, the one its state records, or a new one.

use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, StackRef};
use serde_norway::Value;

use super::{display_key, lookup, set_path, state_provider, ConfigKey};
use crate::config_value::{contains_secure, reencrypt};
use crate::context::Context;
use crate::project::Project;
use crate::secrets::stack_secrets;
use crate::stack_settings::StackSettings;

/// What to copy, and where.
pub struct Copy<'a> {
    /// The stack copied from, and its settings.
    pub source: &'a StackRef,
    pub source_settings: StackSettings,
    /// The destination stack, as the user named it.
    pub dest: &'a str,
    /// One key, or everything.
    pub key: Option<ConfigKey>,
}

pub async fn copy(
    ctx: &Context,
    project: &Project,
    backend: &Arc<dyn Backend>,
    c: Copy<'_>,
) -> Result<()> {
    let dest = ctx.resolve_stack(project, Some(c.dest))?;
    if dest.stack == c.source.stack {
        bail!("current stack and destination stack are the same");
    }
    ctx.require_stack(backend.as_ref(), &dest).await?;
    let mut from = c.source_settings;
    let mut to = StackSettings::load(&project.stack_config_file(&dest.stack))?;

    let config = from.config();
    let copied: Vec<(ConfigKey, Value)> = match c.key {
        Some(key) => {
            let shown = display_key(&project.name, &key.top);
            let value = lookup(&config, &key, &shown, &c.source.stack)?.clone();
            vec![(key, value)]
        }
        None => config
            .iter()
            .filter_map(|(k, v)| {
                let key = ConfigKey {
                    top: k.as_str()?.to_owned(),
                    path: Vec::new(),
                };
                Some((key, v.clone()))
            })
            .collect(),
    };
    if copied.is_empty() {
        return Ok(());
    }

    let copied = if copied.iter().any(|(_, v)| contains_secure(v)) {
        let opts = ctx.passphrase_options();
        let from_state = state_provider(ctx, backend, c.source).await?;
        let from_crypter = stack_secrets(&mut from, from_state.as_ref(), opts, false)
            .await
            .with_context(|| format!("the source stack {}", c.source))?
            .crypter;
        let to_state = state_provider(ctx, backend, &dest).await?;
        let to_crypter = stack_secrets(&mut to, to_state.as_ref(), opts, true)
            .await
            .with_context(|| format!("the destination stack {dest}"))?
            .crypter;
        copied
            .into_iter()
            .map(|(k, v)| {
                let value = reencrypt(&v, from_crypter.as_ref(), to_crypter.as_ref())
                    .with_context(|| {
                        crate::config_value::undecryptable(&from.path, &project.name, &k.top)
                    })?;
                Ok((k, value))
            })
            .collect::<Result<Vec<_>>>()
            .context("cannot re-encrypt the secrets for the destination stack")?
    } else {
        copied
    };

    let mut dest_config = to.config();
    for (key, value) in copied {
        let slot = dest_config
            .entry(key.top.as_str().into())
            .or_insert(Value::Null);
        set_path(slot, &key.path, value, &key.top)?;
    }
    to.set_config(dest_config);
    to.save()
}

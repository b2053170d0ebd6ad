//! `converge config [set|set-all|get|rm|rm-all|cp|refresh]`: a stack's configuration in
//! `Pulumi.<stack>.yaml`, with secrets encrypted by the stack's passphrase,
//! and the project's defaults from `Pulumi.yaml` where the stack sets
//! nothing.

mod bulk;
mod copy;
pub(crate) mod list;

use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, StackRef};
use converge_model::{PathElement, PropertyPath};
use converge_state::SecretsProviders;
use serde_norway::{Mapping, Value};

use crate::args::{ConfigArgs, ConfigCommand};
use crate::commands::stack::current_checkpoint;
use crate::config_value::{contains_secure, secure};
use crate::context::Context;
use crate::secrets::stack_secrets;
use crate::stack_settings::StackSettings;

use list::{print_value, ListOptions};

/// A config key as the user wrote it, resolved: the top-level key with its
/// namespace (`project:key`), and the path below it (`--path` only).
#[derive(Debug, PartialEq)]
struct ConfigKey {
    top: String,
    path: Vec<PathElement>,
}

fn parse_key(project: &str, key: &str, use_path: bool) -> Result<ConfigKey> {
    let (top, rest) = if use_path {
        match key.find(['.', '[']) {
            Some(i) => (&key[..i], &key[i..]),
            None => (key, ""),
        }
    } else {
        (key, "")
    };
    if top.is_empty() {
        bail!("invalid configuration key {key:?}: the key is empty");
    }
    let top = if top.contains(':') {
        let (ns, name) = top.split_once(':').unwrap_or_default();
        if ns.is_empty() || name.is_empty() || name.contains(':') {
            bail!("invalid configuration key {key:?}: expected <namespace>:<name> or <name>");
        }
        top.to_owned()
    } else {
        format!("{project}:{top}")
    };
    let path = if rest.is_empty() {
        Vec::new()
    } else {
        let rest = rest.strip_prefix('.').unwrap_or(rest);
        let parsed = PropertyPath::parse(rest)
            .with_context(|| format!("invalid configuration path {key:?}"))?;
        let elements = parsed.elements().to_vec();
        if elements.iter().any(|e| matches!(e, PathElement::Wildcard)) {
            bail!("invalid configuration path {key:?}: wildcards are not allowed here");
        }
        elements
    };
    Ok(ConfigKey {
        top: top.to_owned(),
        path,
    })
}

/// The key as shown to the user: without the project's own namespace.
fn display_key(project: &str, key: &str) -> String {
    key.strip_prefix(&format!("{project}:"))
        .unwrap_or(key)
        .to_owned()
}

/// A value set inside an object or array with `--path`, typed as Pulumi
/// types it: `true` and `false` are booleans, what parses as a 64-bit
/// integer is an integer, anything else stays a string.
fn typed(value: String) -> Value {
    match value.as_str() {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        s => match s.parse::<i64>() {
            Ok(i) => Value::Number(i.into()),
            Err(_) => Value::String(value),
        },
    }
}

/// `config set --type TYPE`: `value` as that type, or why it is not one.
fn typed_as(ty: &str, value: String) -> Result<Value> {
    let refuse = || anyhow::anyhow!("--type {ty}: {value:?} is not of type {ty}");
    Ok(match ty {
        "bool" => Value::Bool(crate::args::pulumi_spelling::parse_bool(&value).ok_or_else(refuse)?),
        "int" => Value::Number(value.parse::<i64>().map_err(|_| refuse())?.into()),
        "float" => {
            let f = value.parse::<f64>().map_err(|_| refuse())?;
            if !f.is_finite() {
                return Err(refuse());
            }
            Value::Number(f.into())
        }
        _ => Value::String(value),
    })
}

/// The value of `key` (a path inside a top-level value) in a stack's
/// config, or Pulumi's error naming the key (as `shown`) and the stack.
fn lookup<'a>(config: &'a Mapping, key: &ConfigKey, shown: &str, stack: &str) -> Result<&'a Value> {
    config
        .get(key.top.as_str())
        .and_then(|v| get_path(v, &key.path))
        .with_context(|| format!("configuration key '{shown}' not found for stack '{stack}'"))
}

fn get_path<'a>(v: &'a Value, path: &[PathElement]) -> Option<&'a Value> {
    let Some((first, rest)) = path.split_first() else {
        return Some(v);
    };
    let next = match (first, v) {
        (PathElement::Key(k), Value::Mapping(m)) => m.get(k.as_str())?,
        (PathElement::Index(i), Value::Sequence(s)) => s.get(*i)?,
        _ => return None,
    };
    get_path(next, rest)
}

fn set_path(v: &mut Value, path: &[PathElement], new: Value, key: &str) -> Result<()> {
    let Some((first, rest)) = path.split_first() else {
        *v = new;
        return Ok(());
    };
    match first {
        PathElement::Key(k) => {
            if !v.is_mapping() {
                if !v.is_null() {
                    bail!("cannot set {key:?}: {k:?} is inside a value that is not an object");
                }
                *v = Value::Mapping(Mapping::new());
            }
            let Value::Mapping(m) = v else { unreachable!() };
            let slot = m.entry(k.as_str().into()).or_insert(Value::Null);
            set_path(slot, rest, new, key)
        }
        PathElement::Index(i) => {
            if !v.is_sequence() {
                if !v.is_null() {
                    bail!("cannot set {key:?}: index {i} is inside a value that is not a list");
                }
                *v = Value::Sequence(Vec::new());
            }
            let Value::Sequence(s) = v else {
                unreachable!()
            };
            if *i == s.len() {
                s.push(Value::Null);
            } else if *i > s.len() {
                bail!(
                    "cannot set {key:?}: index {i} is past the end of a list of {} element(s)",
                    s.len()
                );
            }
            set_path(&mut s[*i], rest, new, key)
        }
        PathElement::Wildcard => bail!("cannot set {key:?}: wildcards are not allowed"),
    }
}

fn remove_path(v: &mut Value, path: &[PathElement]) -> bool {
    match path {
        [] => false,
        [PathElement::Key(k)] => v
            .as_mapping_mut()
            .is_some_and(|m| m.remove(k.as_str()).is_some()),
        [PathElement::Index(i)] => match v.as_sequence_mut() {
            Some(s) if *i < s.len() => {
                s.remove(*i);
                true
            }
            _ => false,
        },
        [first, rest @ ..] => {
            let next = match (first, v) {
                (PathElement::Key(k), Value::Mapping(m)) => m.get_mut(k.as_str()),
                (PathElement::Index(i), Value::Sequence(s)) => s.get_mut(*i),
                _ => None,
            };
            next.is_some_and(|n| remove_path(n, rest))
        }
    }
}

pub async fn run(ctx: &Context, args: ConfigArgs) -> Result<()> {
    // The project as its directory has it: `config cp` writes the other
    // stack's own file, never a --config-file.
    let local = ctx.project()?;
    let project = match &args.config_file {
        Some(file) => local.clone().with_stack_config_file(&ctx.cwd, file),
        None => local.clone(),
    };
    let backend: Arc<dyn Backend> = ctx.backend(Some(&project))?.into();
    let stack = ctx.resolve_stack(&project, args.stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
    let opts = ctx.passphrase_options();

    match args.command {
        None => {
            let recorded = match args.show_secrets {
                true => recorded_provider(ctx, &backend, &stack, &settings).await?,
                false => None,
            };
            list::list(
                &project,
                &mut settings,
                recorded.as_ref(),
                ListOptions {
                    passphrase: opts,
                    show_secrets: args.show_secrets,
                    json: args.json,
                },
            )
            .await
        }
        Some(ConfigCommand::Set {
            key,
            value,
            secret,
            plaintext: _,
            path,
            value_type,
        }) => {
            if secret && value_type.as_deref().is_some_and(|t| t != "string") {
                bail!(
                    "--type {} cannot be combined with --secret: a secret is stored as a string",
                    value_type.unwrap_or_default()
                );
            }
            let key = parse_key(&project.name, &key, path)?;
            let value = match value {
                Some(v) => v,
                None => {
                    let bytes = crate::prompt::read_stdin("the value from stdin")?;
                    let s = String::from_utf8(bytes)
                        .context("the value on stdin is not valid UTF-8")?;
                    s.strip_suffix('\n').unwrap_or(&s).to_owned()
                }
            };
            let new = if secret {
                let crypter = encrypting_crypter(ctx, &backend, &stack, &mut settings).await?;
                secure(crypter.encrypt(&value)?)
            } else if let Some(ty) = &value_type {
                typed_as(ty, value)?
            } else if key.path.is_empty() {
                Value::String(value)
            } else {
                typed(value)
            };
            let mut config = settings.config();
            assign(&mut config, &key, new)?;
            settings.set_config(config);
            settings.save()
        }
        Some(ConfigCommand::Get { key, path, json }) => {
            let shown = key.clone();
            let key = parse_key(&project.name, &key, path)?;
            // The project's defaults count, as in Pulumi.
            let config = project.config.apply(&settings.config());
            let value = lookup(
                &config,
                &key,
                &display_key(&project.name, &shown),
                &stack.stack,
            )?;
            // `get` shows a secret's value, as Pulumi's does.
            let crypter = if contains_secure(value) {
                let recorded = recorded_provider(ctx, &backend, &stack, &settings).await?;
                Some(
                    stack_secrets(&mut settings, recorded.as_ref(), opts, false)
                        .await?
                        .crypter,
                )
            } else {
                None
            };
            print_value(value, crypter.as_deref(), json).with_context(|| {
                crate::config_value::undecryptable(&settings.path, &project.name, &shown)
            })
        }
        Some(ConfigCommand::Rm { key, path }) => {
            let key = parse_key(&project.name, &key, path)?;
            let mut config = settings.config();
            unassign(&mut config, &key);
            settings.set_config(config);
            settings.save()
        }
        Some(ConfigCommand::SetAll {
            plaintext,
            secret,
            path,
            json,
        }) => {
            let values = match json {
                Some(text) => bulk::from_json(&project.name, &text)?,
                None => bulk::from_flags(&project.name, &plaintext, &secret, path)?,
            };
            let crypter = if values.iter().any(|v| v.secret) {
                Some(encrypting_crypter(ctx, &backend, &stack, &mut settings).await?)
            } else {
                None
            };
            let mut config = settings.config();
            for v in values {
                let value = v.encoded(crypter.as_deref())?;
                assign(&mut config, &v.key, value)?;
            }
            settings.set_config(config);
            settings.save()
        }
        Some(ConfigCommand::RmAll { keys, path }) => {
            let mut config = settings.config();
            for key in &keys {
                unassign(&mut config, &parse_key(&project.name, key, path)?);
            }
            settings.set_config(config);
            settings.save()
        }
        Some(ConfigCommand::Refresh { force }) => {
            let recorded = recorded_provider(ctx, &backend, &stack, &settings).await?;
            bulk::refresh(backend.as_ref(), &stack, &mut settings, recorded, force).await
        }
        Some(ConfigCommand::Cp { key, dest, path }) => {
            let key = key
                .map(|k| parse_key(&project.name, &k, path))
                .transpose()?;
            let copy = copy::Copy {
                source: &stack,
                source_settings: settings,
                dest: &dest,
                key,
            };
            copy::copy(ctx, &local, &backend, copy).await
        }
    }
}

/// `preview`/`up --config KEY=VALUE` (and `--config-path`): values to
/// write into the stack's configuration file before the operation, as
/// `config set` writes them (plaintext; typed inside an object or array).
#[derive(Debug, Default)]
pub(crate) struct OperationConfig(Vec<(ConfigKey, Value)>);

impl OperationConfig {
    /// The pairs, parsed (each must be `KEY=VALUE`) before anything changes.
    pub(crate) fn parse(project: &str, pairs: &[String], path: bool) -> Result<OperationConfig> {
        let mut out = Vec::new();
        for pair in pairs {
            let Some((key, value)) = pair.split_once('=') else {
                bail!("--config {pair:?}: expected KEY=VALUE");
            };
            let key =
                parse_key(project, key, path).with_context(|| format!("--config {pair:?}"))?;
            let value = if key.path.is_empty() {
                Value::String(value.to_owned())
            } else {
                typed(value.to_owned())
            };
            out.push((key, value));
        }
        Ok(OperationConfig(out))
    }

    /// Writes the values into the stack's configuration file `file` (its
    /// other keys kept); nothing when there are none.
    pub(crate) fn save(&self, file: &std::path::Path) -> Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        let mut settings = StackSettings::load(file)?;
        let mut config = settings.config();
        for (key, value) in &self.0 {
            assign(&mut config, key, value.clone())?;
        }
        settings.set_config(config);
        settings.save()
    }
}

/// `stack init --copy-config-from`: every key of `source`'s configuration
/// into `dest`'s, secrets re-encrypted for `dest` (`config cp`'s code).
pub(crate) async fn copy_all(
    ctx: &Context,
    project: &crate::project::Project,
    backend: &Arc<dyn Backend>,
    source: &StackRef,
    dest: &str,
) -> Result<()> {
    let source_settings = StackSettings::load(&project.stack_config_file(&source.stack))?;
    let copy = copy::Copy {
        source,
        source_settings,
        dest,
        key: None,
    };
    copy::copy(ctx, project, backend, copy).await
}

/// The crypter that encrypts a new secret of the stack. A stack file
/// without a salt (a fresh checkout) takes the one the stack's state
/// records, so that its secrets and the state's share one key.
async fn encrypting_crypter(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    stack: &StackRef,
    settings: &mut StackSettings,
) -> Result<Arc<dyn converge_state::secrets::Crypter>> {
    let recorded = recorded_provider(ctx, backend, stack, settings).await?;
    let secrets =
        stack_secrets(settings, recorded.as_ref(), ctx.passphrase_options(), true).await?;
    Ok(secrets.crypter)
}

/// Sets `key` (a path inside a top-level value) in `config`.
fn assign(config: &mut Mapping, key: &ConfigKey, value: Value) -> Result<()> {
    let slot = config.entry(key.top.as_str().into()).or_insert(Value::Null);
    set_path(slot, &key.path, value, &key.top)
}

/// Removes `key` from `config`; a key it does not hold is no error.
fn unassign(config: &mut Mapping, key: &ConfigKey) {
    if key.path.is_empty() {
        config.remove(key.top.as_str());
    } else if let Some(v) = config.get_mut(key.top.as_str()) {
        remove_path(v, &key.path);
    }
}

/// The secrets provider the stack's state records, for a settings file
/// that holds no key of its own (a fresh checkout): `None` when the file
/// has its salt or data key.
async fn recorded_provider(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    stack: &StackRef,
    settings: &StackSettings,
) -> Result<Option<SecretsProviders>> {
    match settings.encryption_salt().or(settings.encrypted_key()) {
        Some(_) => Ok(None),
        None => state_provider(ctx, backend, stack).await,
    }
}

/// The secrets provider the stack's state records, if any.
async fn state_provider(
    ctx: &Context,
    backend: &Arc<dyn Backend>,
    stack: &StackRef,
) -> Result<Option<SecretsProviders>> {
    let checkpoint = current_checkpoint(ctx, backend, stack).await?;
    Ok(checkpoint.latest.and_then(|s| s.secrets_providers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_get_the_project_namespace() {
        let k = parse_key("web", "name", false).unwrap();
        assert_eq!(k.top, "web:name");
        let k = parse_key("web", "aws:region", false).unwrap();
        assert_eq!(k.top, "aws:region");
        let k = parse_key("web", "a.b", false).unwrap();
        assert_eq!(k.top, "web:a.b");
        assert!(parse_key("web", ":x", false).is_err());
    }

    #[test]
    fn path_keys_split_at_the_first_separator() {
        let k = parse_key("web", "tags.env[0]", true).unwrap();
        assert_eq!(k.top, "web:tags");
        assert_eq!(
            k.path,
            vec![PathElement::Key("env".into()), PathElement::Index(0)]
        );
        let k = parse_key("web", "aws:tags[\"a.b\"]", true).unwrap();
        assert_eq!(k.top, "aws:tags");
        assert_eq!(k.path, vec![PathElement::Key("a.b".into())]);
    }

    #[test]
    fn path_values_are_typed_like_pulumi() {
        assert_eq!(typed("1".into()), Value::Number(1.into()));
        assert_eq!(typed("-42".into()), Value::Number((-42).into()));
        assert_eq!(typed("true".into()), Value::Bool(true));
        assert_eq!(typed("false".into()), Value::Bool(false));
        for s in ["1.5", "True", "yes", "", "x1", "99999999999999999999"] {
            assert_eq!(typed(s.into()), Value::String(s.into()));
        }
    }

    #[test]
    fn set_get_remove_by_path() {
        let mut v = Value::Null;
        let path = vec![PathElement::Key("a".into()), PathElement::Index(0)];
        set_path(&mut v, &path, "x".into(), "k").unwrap();
        assert_eq!(get_path(&v, &path), Some(&Value::from("x")));
        assert!(set_path(
            &mut v,
            &[PathElement::Key("a".into()), PathElement::Index(5)],
            "y".into(),
            "k"
        )
        .is_err());
        assert!(remove_path(&mut v, &path));
        assert_eq!(get_path(&v, &path), None);
    }
}

//! `converge config [set|get|rm]`: a stack's configuration in
//! `Pulumi.<stack>.yaml`, with secrets encrypted by the stack's passphrase.

use std::io::Read;

use anyhow::{bail, Context as _, Result};
use converge_model::{PathElement, PropertyPath};
use converge_state::secrets::Crypter;
use serde_norway::{Mapping, Value};

use crate::args::{ConfigArgs, ConfigCommand};
use crate::context::Context;
use crate::passphrase::stack_crypter;
use crate::stack_settings::StackSettings;

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

fn secure(ciphertext: String) -> Value {
    let mut m = Mapping::new();
    m.insert("secure".into(), ciphertext.into());
    Value::Mapping(m)
}

fn secure_ciphertext(v: &Value) -> Option<&str> {
    let m = v.as_mapping()?;
    if m.len() == 1 {
        m.get("secure")?.as_str()
    } else {
        None
    }
}

pub(crate) fn contains_secure(v: &Value) -> bool {
    if secure_ciphertext(v).is_some() {
        return true;
    }
    match v {
        Value::Mapping(m) => m.values().any(contains_secure),
        Value::Sequence(s) => s.iter().any(contains_secure),
        _ => false,
    }
}

/// The plaintext JSON form of a config value, secrets decrypted by
/// `crypter` or shown as `[secret]` when there is none.
pub(crate) fn to_json(v: &Value, crypter: Option<&dyn Crypter>) -> Result<serde_json::Value> {
    if let Some(ct) = secure_ciphertext(v) {
        return Ok(match crypter {
            Some(c) => serde_json::Value::String(c.decrypt(ct)?),
            None => serde_json::Value::String("[secret]".into()),
        });
    }
    Ok(match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Number(n) => serde_json::to_value(n)?,
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Sequence(items) => serde_json::Value::Array(
            items
                .iter()
                .map(|i| to_json(i, crypter))
                .collect::<Result<_>>()?,
        ),
        Value::Mapping(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m {
                let k = match k {
                    Value::String(s) => s.clone(),
                    other => serde_norway::to_string(other)?.trim_end().to_owned(),
                };
                out.insert(k, to_json(v, crypter)?);
            }
            serde_json::Value::Object(out)
        }
        Value::Tagged(t) => to_json(&t.value, crypter)?,
    })
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

/// How a plain value prints: strings raw, everything else as JSON.
fn render_plain(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
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
    let project = ctx.project()?;
    let backend = ctx.backend(Some(&project))?;
    let stack = ctx.resolve_stack(&project, args.stack.stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
    let opts = ctx.passphrase_options();

    match args.command {
        None => list(
            &project.name,
            &mut settings,
            ctx,
            args.show_secrets,
            args.json,
        ),
        Some(ConfigCommand::Set {
            key,
            value,
            secret,
            plaintext: _,
            path,
        }) => {
            let key = parse_key(&project.name, &key, path)?;
            let value = match value {
                Some(v) => v,
                None => {
                    let mut s = String::new();
                    std::io::stdin()
                        .read_to_string(&mut s)
                        .context("cannot read the value from stdin")?;
                    s.strip_suffix('\n').unwrap_or(&s).to_owned()
                }
            };
            let new = if secret {
                let crypter = stack_crypter(&mut settings, None, opts, true)?;
                secure(crypter.encrypt(&value)?)
            } else if key.path.is_empty() {
                Value::String(value)
            } else {
                typed(value)
            };
            let mut config = settings.config();
            let slot = config.entry(key.top.as_str().into()).or_insert(Value::Null);
            set_path(slot, &key.path, new, &key.top)?;
            settings.set_config(config);
            settings.save()
        }
        Some(ConfigCommand::Get { key, path, json }) => {
            let shown = key.clone();
            let key = parse_key(&project.name, &key, path)?;
            let config = settings.config();
            let value = config
                .get(key.top.as_str())
                .and_then(|v| get_path(v, &key.path))
                .with_context(|| {
                    format!(
                        "configuration key {shown:?} not found for stack {}",
                        stack.stack
                    )
                })?;
            let is_secret = contains_secure(value);
            let crypter = if is_secret {
                Some(stack_crypter(&mut settings, None, opts, false)?)
            } else {
                None
            };
            let plain = to_json(value, crypter.as_ref().map(|c| c as &dyn Crypter))?;
            if json {
                let out = serde_json::json!({ "value": render_plain(&plain), "secret": is_secret });
                println!("{}", serde_json::to_string_pretty(&out)?);
            } else {
                println!("{}", render_plain(&plain));
            }
            Ok(())
        }
        Some(ConfigCommand::Rm { key, path }) => {
            let key = parse_key(&project.name, &key, path)?;
            let mut config = settings.config();
            if key.path.is_empty() {
                config.remove(key.top.as_str());
            } else if let Some(v) = config.get_mut(key.top.as_str()) {
                remove_path(v, &key.path);
            }
            settings.set_config(config);
            settings.save()
        }
    }
}

fn list(
    project: &str,
    settings: &mut StackSettings,
    ctx: &Context,
    show_secrets: bool,
    json: bool,
) -> Result<()> {
    let config = settings.config();
    let any_secret = config.values().any(contains_secure);
    let crypter = if any_secret && show_secrets {
        Some(stack_crypter(
            settings,
            None,
            ctx.passphrase_options(),
            false,
        )?)
    } else {
        None
    };
    let crypter = crypter.as_ref().map(|c| c as &dyn Crypter);
    if json {
        let mut out = serde_json::Map::new();
        for (k, v) in &config {
            let k = k.as_str().unwrap_or_default().to_owned();
            let secret = contains_secure(v);
            let mut entry = serde_json::Map::new();
            if !secret || crypter.is_some() {
                entry.insert("value".into(), render_plain(&to_json(v, crypter)?).into());
            }
            entry.insert("secret".into(), secret.into());
            out.insert(k, entry.into());
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let rows: Vec<(String, String)> = config
        .iter()
        .map(|(k, v)| {
            Ok((
                display_key(project, k.as_str().unwrap_or_default()),
                render_plain(&to_json(v, crypter)?),
            ))
        })
        .collect::<Result<_>>()?;
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(3);
    println!("{:<width$}  VALUE", "KEY");
    for (k, v) in rows {
        println!("{k:<width$}  {v}");
    }
    Ok(())
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

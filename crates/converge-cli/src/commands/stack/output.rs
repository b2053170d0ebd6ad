//! `converge stack output`: the root stack resource's outputs.

use anyhow::{bail, Context as _, Result};
use converge_model::{PropertyMap, PropertyValue, STACK_TYPE};
use converge_state::checkpoint;
use converge_state::secrets::{SecretsMode, BLINDED};

use crate::context::Context;
use crate::secrets::stack_secrets;
use crate::stack_settings::StackSettings;

#[derive(Debug)]
pub struct OutputOptions {
    pub name: Option<String>,
    pub json: bool,
    /// `NAME=VALUE` lines a POSIX shell can evaluate.
    pub shell: bool,
    pub show_secrets: bool,
}

pub async fn run(ctx: &Context, stack: Option<String>, opts: OutputOptions) -> Result<()> {
    let project = ctx.project()?;
    let backend: std::sync::Arc<dyn converge_backend::Backend> =
        std::sync::Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let opaque = super::current_checkpoint(ctx, &backend, &stack).await?;
    let outputs = stack_outputs(opaque.latest.as_ref());
    let any_secret = outputs.values().any(PropertyValue::contains_secrets);
    let outputs = if opts.show_secrets && any_secret {
        let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
        let recorded = opaque
            .latest
            .as_ref()
            .and_then(|s| s.secrets_providers.as_ref());
        let secrets =
            stack_secrets(&mut settings, recorded, ctx.passphrase_options(), false).await?;
        let bytes = checkpoint::write_checkpoint(&opaque, SecretsMode::Opaque)?;
        let cp =
            checkpoint::read_checkpoint(&bytes, SecretsMode::Crypter(secrets.crypter.as_ref()))
                .with_context(|| format!("cannot decrypt the secrets of stack {}", stack.stack))?;
        stack_outputs(cp.latest.as_ref())
    } else {
        outputs
    };
    print_outputs(&outputs, &opts)
}

/// The root stack resource's outputs (empty when there is none).
pub fn stack_outputs(snapshot: Option<&converge_state::Snapshot>) -> PropertyMap {
    snapshot
        .and_then(|s| {
            s.resources
                .iter()
                .find(|r| r.type_token == STACK_TYPE && !r.delete)
        })
        .map(|r| r.outputs.clone())
        .unwrap_or_default()
}

fn print_outputs(outputs: &PropertyMap, opts: &OutputOptions) -> Result<()> {
    let reveal = opts.show_secrets;
    if let Some(name) = &opts.name {
        let Some(v) = outputs.get(name) else {
            bail!("current stack does not have output property {name:?}");
        };
        let shown = display_json(v, reveal);
        if opts.shell {
            println!("{name}={}", shell_quote(&plain(&shown)));
            return Ok(());
        }
        if opts.json {
            println!("{}", serde_json::to_string_pretty(&shown)?);
        } else {
            println!("{}", plain(&shown));
        }
        return Ok(());
    }
    if opts.json {
        let map: serde_json::Map<String, serde_json::Value> = outputs
            .iter()
            .map(|(k, v)| (k.clone(), display_json(v, reveal)))
            .collect();
        println!("{}", serde_json::to_string_pretty(&map)?);
        return Ok(());
    }
    if opts.shell {
        for (k, v) in outputs {
            println!("{k}={}", shell_quote(&plain(&display_json(v, reveal))));
        }
        return Ok(());
    }
    println!("Current stack outputs ({}):", outputs.len());
    if outputs.is_empty() {
        println!("    No output values currently in this stack");
        return Ok(());
    }
    let width = outputs.keys().map(String::len).max().unwrap_or(0).max(6);
    println!("    {:<width$}  VALUE", "OUTPUT");
    for (k, v) in outputs {
        println!("    {k:<width$}  {}", plain(&display_json(v, reveal)));
    }
    Ok(())
}

/// `text` as one word of a POSIX shell: as it is when it has nothing the
/// shell would read, else single-quoted (a `'` written `'\''`).
fn shell_quote(text: &str) -> String {
    let bare = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if bare {
        return text.to_owned();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn plain(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A property value as a user sees it: plain JSON, secrets blinded unless
/// revealed, unknowns as `[unknown]`.
pub fn display_json(v: &PropertyValue, reveal: bool) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        PropertyValue::Null => J::Null,
        PropertyValue::Bool(b) => J::Bool(*b),
        PropertyValue::Number(n) => number_json(*n),
        PropertyValue::String(s) => J::String(s.clone()),
        PropertyValue::Array(items) => {
            J::Array(items.iter().map(|i| display_json(i, reveal)).collect())
        }
        PropertyValue::Object(m) => J::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), display_json(v, reveal)))
                .collect(),
        ),
        PropertyValue::Secret(inner) => {
            if reveal {
                display_json(inner, reveal)
            } else {
                J::String(BLINDED.to_owned())
            }
        }
        PropertyValue::Unknown => J::String("[unknown]".to_owned()),
        PropertyValue::Output(o) => {
            if o.secret && !reveal {
                return J::String(BLINDED.to_owned());
            }
            match &o.element {
                Some(e) => display_json(e, reveal),
                None => J::String("[unknown]".to_owned()),
            }
        }
        PropertyValue::Asset(a) => {
            let mut m = serde_json::Map::new();
            if let Some(t) = &a.text {
                m.insert("text".into(), J::String(t.clone()));
            }
            if let Some(p) = &a.path {
                m.insert("path".into(), J::String(p.clone()));
            }
            if let Some(u) = &a.uri {
                m.insert("uri".into(), J::String(u.clone()));
            }
            m.insert("hash".into(), J::String(a.hash.clone()));
            J::Object(m)
        }
        PropertyValue::Archive(a) => {
            let mut m = serde_json::Map::new();
            if let Some(p) = &a.path {
                m.insert("path".into(), J::String(p.clone()));
            }
            if let Some(u) = &a.uri {
                m.insert("uri".into(), J::String(u.clone()));
            }
            if let Some(assets) = &a.assets {
                m.insert(
                    "assets".into(),
                    J::Array(assets.keys().map(|k| J::String(k.clone())).collect()),
                );
            }
            m.insert("hash".into(), J::String(a.hash.clone()));
            J::Object(m)
        }
        PropertyValue::ResourceReference(r) => J::String(r.urn.to_string()),
    }
}

fn number_json(n: f64) -> serde_json::Value {
    if n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 {
        serde_json::Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(serde_json::Value::Null, serde_json::Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_the_shell_would_read_them() {
        assert_eq!(shell_quote("bucket-1.example/x"), "bucket-1.example/x");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's $HOME"), r"'it'\''s $HOME'");
    }

    #[test]
    fn secrets_are_blinded_unless_revealed() {
        let v = PropertyValue::secret(PropertyValue::from("hunter2"));
        assert_eq!(display_json(&v, false), serde_json::json!("[secret]"));
        assert_eq!(display_json(&v, true), serde_json::json!("hunter2"));
        assert_eq!(
            display_json(&PropertyValue::Number(3.0), false),
            serde_json::json!(3)
        );
        assert_eq!(
            display_json(&PropertyValue::Number(1.5), false),
            serde_json::json!(1.5)
        );
    }
}

//! `config set-all` and `config rm-all` (several keys in one write of the
//! settings file, as the Automation API sets a whole map at once) and
//! `config refresh` (the configuration of the stack's last update).

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, ListHistoryOptions, StackRef};
use converge_state::secrets::Crypter;
use converge_state::SecretsProviders;
use serde_norway::{Mapping, Value};

use super::{parse_key, typed, ConfigKey};
use crate::config_value::secure;
use crate::stack_settings::StackSettings;

/// One value `set-all` sets.
#[derive(Debug)]
pub(super) struct BulkValue {
    pub key: ConfigKey,
    /// The text of a scalar (or, for a secret object, its JSON text).
    text: String,
    /// An object or array given as JSON (`objectValue`).
    object: Option<serde_json::Value>,
    pub secret: bool,
}

impl BulkValue {
    /// The value as the settings file keeps it: a secret encrypted, a
    /// value inside an object or array typed as `config set --path` types it.
    pub fn encoded(&self, crypter: Option<&dyn Crypter>) -> Result<Value> {
        if self.secret {
            let crypter = crypter.context("no crypter for a secret value")?;
            return Ok(secure(crypter.encrypt(&self.text)?));
        }
        if let Some(object) = &self.object {
            return serde_norway::to_value(object).context("cannot store an objectValue");
        }
        Ok(if self.key.path.is_empty() {
            Value::String(self.text.clone())
        } else {
            typed(self.text.clone())
        })
    }
}

/// `--plaintext KEY=VALUE` and `--secret KEY=VALUE` flags.
pub(super) fn from_flags(
    project: &str,
    plaintext: &[String],
    secret: &[String],
    path: bool,
) -> Result<Vec<BulkValue>> {
    let pairs = plaintext
        .iter()
        .map(|p| (p, false))
        .chain(secret.iter().map(|s| (s, true)));
    let mut out = Vec::new();
    for (pair, secret) in pairs {
        let flag = if secret { "--secret" } else { "--plaintext" };
        let Some((key, value)) = pair.split_once('=') else {
            bail!("{flag} {pair:?}: expected KEY=VALUE");
        };
        out.push(BulkValue {
            key: parse_key(project, key, path)?,
            text: value.to_owned(),
            object: None,
            secret,
        });
    }
    if out.is_empty() {
        bail!("nothing to set: pass --plaintext KEY=VALUE, --secret KEY=VALUE or --json");
    }
    Ok(out)
}

/// `--json`: `{"KEY": {"value": "…", "objectValue": …, "secret": bool}}`.
pub(super) fn from_json(project: &str, text: &str) -> Result<Vec<BulkValue>> {
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(text).context("--json: not a JSON object of configuration values")?;
    let mut out = Vec::new();
    for (key, entry) in map {
        let Some(entry) = entry.as_object() else {
            bail!("--json: the value of {key:?} is not an object with `value` or `objectValue`");
        };
        let secret = match entry.get("secret") {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(b)) => *b,
            Some(_) => bail!("--json: `secret` of {key:?} is not true or false"),
        };
        let object = entry.get("objectValue").filter(|v| !v.is_null()).cloned();
        let text = match (entry.get("value"), &object) {
            (Some(serde_json::Value::String(s)), _) => s.clone(),
            (_, Some(object)) => object.to_string(),
            _ => bail!("--json: {key:?} has neither a string `value` nor an `objectValue`"),
        };
        out.push(BulkValue {
            key: parse_key(project, &key, false)?,
            text,
            object: object.filter(|_| !secret),
            secret,
        });
    }
    Ok(out)
}

/// `config refresh`: the settings file's configuration becomes the one
/// the stack's last update ran with (secrets as that update stored them),
/// and a file that holds no key of its own (a fresh checkout) gets the
/// one the state `recorded`, as Pulumi restores it, so that those secrets
/// can be read. Without `force`, the old file is kept beside it as `.bak`.
pub(super) async fn refresh(
    backend: &dyn Backend,
    stack: &StackRef,
    settings: &mut StackSettings,
    recorded: Option<SecretsProviders>,
    force: bool,
) -> Result<()> {
    let latest = backend
        .list_history(stack, &ListHistoryOptions { limit: Some(1) })
        .await?;
    let Some(entry) = latest.first() else {
        bail!("stack {stack} has no update to take its configuration from");
    };
    let record: serde_json::Value =
        serde_json::from_slice(&entry.record).context("the last update's record is not JSON")?;
    let mut config = Mapping::new();
    if let Some(map) = record.get("config").and_then(|c| c.as_object()) {
        for (k, v) in map {
            config.insert(Value::String(k.clone()), serde_norway::to_value(v)?);
        }
    }
    if !force && settings.path.exists() {
        let mut backup = settings.path.clone().into_os_string();
        backup.push(".bak");
        std::fs::copy(&settings.path, &backup)
            .with_context(|| format!("cannot keep a backup of {}", settings.path.display()))?;
    }
    settings.set_config(config);
    if let Some(provider) = &recorded {
        crate::secrets::restore_recorded(settings, provider)?;
    }
    settings.save()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_split_at_the_first_equals_sign() {
        let v = from_flags("p", &["a=b=c".into()], &["s=x".into()], false).unwrap();
        assert_eq!(v[0].key.top, "p:a");
        assert_eq!(v[0].text, "b=c");
        assert!(!v[0].secret && v[1].secret);
        assert!(from_flags("p", &["nokey".into()], &[], false).is_err());
        assert!(from_flags("p", &[], &[], false).is_err());
    }

    #[test]
    fn json_takes_values_and_objects() {
        let v = from_json(
            "p",
            r#"{"a": {"value": "1"}, "o": {"value": "{}", "objectValue": {"x": [1]}, "secret": false}, "aws:s": {"value": "k", "secret": true}}"#,
        )
        .unwrap();
        assert_eq!(v.len(), 3);
        let o = v.iter().find(|v| v.key.top == "p:o").unwrap();
        assert_eq!(
            o.encoded(None).unwrap(),
            serde_norway::from_str::<Value>("x: [1]").unwrap()
        );
        assert!(v.iter().any(|v| v.key.top == "aws:s" && v.secret));
        assert!(from_json("p", r#"{"a": 1}"#).is_err());
        assert!(from_json("p", r#"{"a": {"secret": true}}"#).is_err());
        assert!(from_json("p", "[").is_err());
    }
}

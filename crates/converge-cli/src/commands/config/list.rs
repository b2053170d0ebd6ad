//! `converge config` (the list, with the project's defaults) and the value
//! `config get` prints: as text, or as JSON in Pulumi's shape —
//! `{"value": …, "objectValue": …, "secret": …}`.

use anyhow::Result;
use converge_state::secrets::Crypter;
use converge_state::SecretsProviders;
use serde::Serialize;
use serde_norway::Value;

use super::display_key;
use crate::config_value::{check_secure_values, contains_secure, is_object, to_json, to_text};
use crate::passphrase::PassphraseOptions;
use crate::project::Project;
use crate::secrets::stack_secrets;
use crate::stack_settings::StackSettings;

/// How `converge config` lists.
#[derive(Debug, Clone, Copy)]
pub struct ListOptions {
    pub passphrase: PassphraseOptions,
    /// Decrypt secrets instead of showing `[secret]` (or, in JSON,
    /// leaving their values out).
    pub show_secrets: bool,
    pub json: bool,
}

/// One value in `--json` output, as Pulumi writes it: `value` is the text
/// (objects and arrays as JSON text), `objectValue` the parsed object or
/// array; a secret's are left out unless it was decrypted.
#[derive(Debug, Serialize)]
pub(crate) struct ValueJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(rename = "objectValue", skip_serializing_if = "Option::is_none")]
    object_value: Option<serde_json::Value>,
    secret: bool,
}

impl ValueJson {
    /// A secret value that could not be decrypted: its value is `text`.
    pub(crate) fn undecryptable(text: &str) -> ValueJson {
        ValueJson {
            value: Some(text.to_owned()),
            object_value: None,
            secret: true,
        }
    }

    pub(crate) fn of(v: &Value, crypter: Option<&dyn Crypter>) -> Result<ValueJson> {
        let secret = contains_secure(v);
        if secret && crypter.is_none() {
            return Ok(ValueJson {
                value: None,
                object_value: None,
                secret,
            });
        }
        Ok(ValueJson {
            value: Some(to_text(v, crypter)?),
            object_value: if is_object(v) {
                Some(to_json(v, crypter)?)
            } else {
                None
            },
            secret,
        })
    }
}

/// Lists the stack's configuration with the project's defaults for the
/// keys it does not set, sorted by key.
/// `recorded` is the secrets provider the stack's state records, for a
/// settings file that names none (a fresh checkout).
pub async fn list(
    project: &Project,
    settings: &mut StackSettings,
    recorded: Option<&SecretsProviders>,
    opts: ListOptions,
) -> Result<()> {
    let config = project.config.apply(&settings.config());
    let crypter = if opts.show_secrets && config.values().any(contains_secure) {
        Some(
            stack_secrets(settings, recorded, opts.passphrase, false)
                .await?
                .crypter,
        )
    } else {
        None
    };
    let crypter = crypter.as_deref();
    if let Some(crypter) = crypter {
        check_secure_values(&settings.path, &project.name, &settings.config(), crypter)?;
    }
    if opts.json {
        let mut out = serde_json::Map::new();
        for (k, v) in &config {
            let key = k.as_str().unwrap_or_default().to_owned();
            out.insert(key, serde_json::to_value(ValueJson::of(v, crypter)?)?);
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let rows: Vec<(String, String)> = config
        .iter()
        .map(|(k, v)| {
            Ok((
                display_key(&project.name, k.as_str().unwrap_or_default()),
                to_text(v, crypter)?,
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

/// Prints one value for `config get`: its text, or with `json` Pulumi's
/// JSON shape.
pub fn print_value(v: &Value, crypter: Option<&dyn Crypter>, json: bool) -> Result<()> {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&ValueJson::of(v, crypter)?)?
        );
    } else {
        println!("{}", to_text(v, crypter)?);
    }
    Ok(())
}

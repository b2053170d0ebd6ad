//! A deployment's secrets in plaintext, as Pulumi's `stack export
//! --show-secrets` writes them — each top-level secret object's
//! `ciphertext` replaced by `plaintext`, the JSON text of its value — and
//! sealed again when such a file is imported. Works on the deployment's
//! JSON: the state crate reads and writes only encrypted top-level
//! secrets.

use anyhow::Result;
use converge_state::checkpoint::values::{SECRET_SIG, SIG_KEY};
use converge_state::secrets::Crypter;
use serde_json::{Map, Value};

/// Calls `f` on every top-level secret object in `value` (not on those
/// nested in a secret's text).
fn each_secret(
    value: &mut Value,
    f: &mut dyn FnMut(&mut Map<String, Value>) -> Result<()>,
) -> Result<()> {
    match value {
        Value::Object(map) => {
            if map.get(SIG_KEY).and_then(Value::as_str) == Some(SECRET_SIG) {
                return f(map);
            }
            map.values_mut().try_for_each(|v| each_secret(v, f))
        }
        Value::Array(items) => items.iter_mut().try_for_each(|v| each_secret(v, f)),
        _ => Ok(()),
    }
}

/// Decrypts every `ciphertext` into `plaintext`.
pub(super) fn reveal(deployment: &mut Value, crypter: &dyn Crypter) -> Result<()> {
    each_secret(deployment, &mut |secret| {
        if let Some(Value::String(ciphertext)) = secret.get("ciphertext") {
            let text = crypter.decrypt(ciphertext)?;
            secret.shift_remove("ciphertext");
            secret.insert("plaintext".to_owned(), Value::String(text));
        }
        Ok(())
    })
}

/// Encrypts every `plaintext` into `ciphertext`.
pub(super) fn seal(deployment: &mut Value, crypter: &dyn Crypter) -> Result<()> {
    each_secret(deployment, &mut |secret| {
        if let Some(Value::String(text)) = secret.get("plaintext") {
            let ciphertext = crypter.encrypt(text)?;
            secret.shift_remove("plaintext");
            secret.insert("ciphertext".to_owned(), Value::String(ciphertext));
        }
        Ok(())
    })
}

/// How many top-level secrets hold `plaintext`, and how many `ciphertext`.
pub(super) fn count(value: &Value) -> (usize, usize) {
    match value {
        Value::Object(map) if map.get(SIG_KEY).and_then(Value::as_str) == Some(SECRET_SIG) => (
            usize::from(map.contains_key("plaintext")),
            usize::from(map.contains_key("ciphertext")),
        ),
        Value::Object(map) => sum(map.values()),
        Value::Array(items) => sum(items.iter()),
        _ => (0, 0),
    }
}

fn sum<'a>(values: impl Iterator<Item = &'a Value>) -> (usize, usize) {
    values
        .map(count)
        .fold((0, 0), |(p, c), (p2, c2)| (p + p2, c + c2))
}

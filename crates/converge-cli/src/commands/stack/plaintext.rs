//! A deployment's secrets in plaintext, as Pulumi's `stack export
//! --show-secrets` writes them — each top-level secret object's
//! `ciphertext` replaced by `plaintext`, the JSON text of its value — and
//! sealed again when such a file is imported. Works on the deployment's
//! JSON: the state crate reads and writes only encrypted top-level
//! secrets.

use anyhow::Result;
use converge_state::checkpoint::values::{SECRET_SIG, SIG_KEY};
use converge_state::secrets::{Crypter, CryptoError};
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
    swap(deployment, "ciphertext", "plaintext", &|c| {
        crypter.decrypt(c)
    })
}

/// Encrypts every `plaintext` into `ciphertext`.
pub(super) fn seal(deployment: &mut Value, crypter: &dyn Crypter) -> Result<()> {
    swap(deployment, "plaintext", "ciphertext", &|p| {
        crypter.encrypt(p)
    })
}

/// Replaces every secret's `from` text by `to`, its image under `f`.
fn swap(
    deployment: &mut Value,
    from: &str,
    to: &str,
    f: &dyn Fn(&str) -> Result<String, CryptoError>,
) -> Result<()> {
    each_secret(deployment, &mut |secret| {
        if let Some(Value::String(text)) = secret.get(from) {
            let swapped = f(text)?;
            secret.shift_remove(from);
            secret.insert(to.to_owned(), Value::String(swapped));
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

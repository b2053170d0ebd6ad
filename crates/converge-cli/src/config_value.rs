//! One configuration value as `Pulumi.<stack>.yaml` holds it: a plain
//! scalar, a secure value (`{secure: <ciphertext>}`), or an object or
//! array whose leaves may be secure.

use anyhow::{Context as _, Result};
use converge_state::secrets::Crypter;
use serde_norway::{Mapping, Value};

/// A secure value holding `ciphertext`.
pub fn secure(ciphertext: String) -> Value {
    let mut m = Mapping::new();
    m.insert("secure".into(), ciphertext.into());
    Value::Mapping(m)
}

/// The ciphertext of a secure value.
pub fn secure_ciphertext(v: &Value) -> Option<&str> {
    let m = v.as_mapping()?;
    if m.len() == 1 {
        m.get("secure")?.as_str()
    } else {
        None
    }
}

/// Whether the value is secure or holds a secure value: Pulumi's
/// `Secure()`.
pub fn contains_secure(v: &Value) -> bool {
    if secure_ciphertext(v).is_some() {
        return true;
    }
    match v {
        Value::Mapping(m) => m.values().any(contains_secure),
        Value::Sequence(s) => s.iter().any(contains_secure),
        _ => false,
    }
}

/// Whether the value is an object or array (Pulumi's `Object()`): what
/// programs receive as JSON and `--json` shows as `objectValue`.
pub fn is_object(v: &Value) -> bool {
    secure_ciphertext(v).is_none() && matches!(v, Value::Mapping(_) | Value::Sequence(_))
}

/// The value as Pulumi records it in an update's history (`config.Map`
/// JSON), never decrypted: a plain scalar as its text, a secure value as
/// `{"secure": "<ciphertext>"}`, an object or array as JSON with its
/// secure leaves so.
pub fn to_record_json(v: &Value) -> Result<serde_json::Value> {
    if matches!(v, Value::Mapping(_) | Value::Sequence(_) | Value::Tagged(_)) {
        return Ok(serde_json::to_value(v)?);
    }
    Ok(serde_json::Value::String(to_text(v, None)?))
}

/// The plaintext JSON form of a config value, secrets decrypted by
/// `crypter` or shown as `[secret]` when there is none.
pub fn to_json(v: &Value, crypter: Option<&dyn Crypter>) -> Result<serde_json::Value> {
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
                out.insert(key_text(k)?, to_json(v, crypter)?);
            }
            serde_json::Value::Object(out)
        }
        Value::Tagged(t) => to_json(&t.value, crypter)?,
    })
}

/// The value as Pulumi hands it over — to programs, to `config get` and in
/// `--json`'s `value` — secrets decrypted by `crypter` (else `[secret]`):
/// objects and arrays as JSON text, scalars as their text.
pub fn to_text(v: &Value, crypter: Option<&dyn Crypter>) -> Result<String> {
    Ok(match to_json(v, crypter)? {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    })
}

/// The value's content as Pulumi types it when checking a stack value
/// against the project's declaration: objects and arrays as JSON, every
/// scalar (secure ones decrypted) as a string.
pub fn content(v: &Value, crypter: Option<&dyn Crypter>) -> Result<serde_json::Value> {
    if is_object(v) {
        to_json(v, crypter)
    } else {
        Ok(serde_json::Value::String(to_text(v, crypter)?))
    }
}

/// Why a secure value of `key` in `file` cannot be read: where it is and
/// how to set it again. The decryption's own error follows it.
pub fn undecryptable(file: &std::path::Path, project: &str, key: &str) -> String {
    let shown = key.strip_prefix(&format!("{project}:")).unwrap_or(key);
    format!(
        "{}: configuration key `{shown}` holds a secure value the stack's secrets provider \
         cannot decrypt (set it again with `converge config set --secret {shown} VALUE`)",
        file.display()
    )
}

/// Decrypts each secure value of `config` (the stack's own
/// configuration, `project:key` → value), naming the file and key of the
/// first that cannot be: a damaged or foreign ciphertext is reported
/// where it is, not as a bare decryption error.
pub fn check_secure_values(
    file: &std::path::Path,
    project: &str,
    config: &Mapping,
    crypter: &dyn Crypter,
) -> Result<()> {
    for (key, value) in config {
        if contains_secure(value) {
            to_json(value, Some(crypter))
                .with_context(|| undecryptable(file, project, key.as_str().unwrap_or_default()))?;
        }
    }
    Ok(())
}

/// The value with each secure leaf decrypted by `from` and encrypted by
/// `to`: a value copied to a stack with other secrets.
pub fn reencrypt(v: &Value, from: &dyn Crypter, to: &dyn Crypter) -> Result<Value> {
    if let Some(ct) = secure_ciphertext(v) {
        return Ok(secure(to.encrypt(&from.decrypt(ct)?)?));
    }
    Ok(match v {
        Value::Sequence(items) => Value::Sequence(
            items
                .iter()
                .map(|i| reencrypt(i, from, to))
                .collect::<Result<_>>()?,
        ),
        Value::Mapping(m) => {
            let mut out = Mapping::new();
            for (k, v) in m {
                out.insert(k.clone(), reencrypt(v, from, to)?);
            }
            Value::Mapping(out)
        }
        other => other.clone(),
    })
}

fn key_text(k: &Value) -> Result<String> {
    Ok(match k {
        Value::String(s) => s.clone(),
        other => serde_norway::to_string(other)?.trim_end().to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use converge_state::secrets::CryptoError;

    fn yaml(s: &str) -> Value {
        serde_norway::from_str(s).unwrap()
    }

    #[test]
    fn content_types_scalars_as_strings_and_objects_as_json() {
        assert_eq!(content(&yaml("42"), None).unwrap(), serde_json::json!("42"));
        assert_eq!(
            content(&yaml("true"), None).unwrap(),
            serde_json::json!("true")
        );
        assert_eq!(
            content(&yaml("[1, a]"), None).unwrap(),
            serde_json::json!([1, "a"])
        );
        assert_eq!(to_text(&yaml("{a: [1]}"), None).unwrap(), r#"{"a":[1]}"#);
        assert_eq!(
            to_text(&yaml("{a: {secure: x}}"), None).unwrap(),
            r#"{"a":"[secret]"}"#
        );
        assert!(!is_object(&yaml("{secure: x}")));
        assert!(contains_secure(&yaml("[{secure: x}]")));
    }

    /// A stand-in for a stack's key: "encrypts" by tagging.
    #[derive(Debug)]
    struct Tag(&'static str);

    impl Crypter for Tag {
        fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError> {
            Ok(format!("{}:{plaintext}", self.0))
        }
        fn decrypt(&self, ciphertext: &str) -> Result<String, CryptoError> {
            ciphertext
                .strip_prefix(&format!("{}:", self.0))
                .map(str::to_owned)
                .ok_or(CryptoError::Decrypt)
        }
    }

    #[test]
    fn reencrypt_moves_secrets_to_another_key() {
        let (a, b) = (Tag("a"), Tag("b"));
        let v = Value::Sequence(vec![secure(a.encrypt("s3cr3t").unwrap()), "plain".into()]);
        let moved = reencrypt(&v, &a, &b).unwrap();
        assert!(contains_secure(&moved));
        assert_eq!(
            to_json(&moved, Some(&b)).unwrap(),
            serde_json::json!(["s3cr3t", "plain"])
        );
        assert!(to_json(&moved, Some(&a)).is_err());
    }
}

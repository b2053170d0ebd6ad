//! `Pulumi.<stack>.yaml`: a stack's configuration and secrets settings, read
//! and written in Pulumi's format. A key that looks like a misspelling of
//! one Converge reads is refused; other keys Converge does not know are
//! warned about (`unknown_keys`) and kept.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use converge_yaml::YamlErrorKind;
use serde_norway::{Mapping, Value};

use crate::atomic_write::write_atomically;

/// Pulumi's order of the well-known top-level keys; others follow.
const KEY_ORDER: [&str; 5] = [
    "secretsprovider",
    "encryptedkey",
    "encryptionsalt",
    "environment",
    "config",
];

#[derive(Debug, Clone)]
pub struct StackSettings {
    pub path: PathBuf,
    doc: Mapping,
}

impl StackSettings {
    /// Loads the file; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Result<StackSettings> {
        // Bounded: size, nesting and aliases (an alias bomb is refused here).
        let doc = match converge_yaml::load::<Value>(path) {
            Ok(Value::Mapping(m)) => m,
            Ok(Value::Null) => Mapping::new(),
            Ok(_) => bail!("{} must be a YAML mapping", path.display()),
            Err(e) => match &e.kind {
                YamlErrorKind::Read(io) if io.kind() == std::io::ErrorKind::NotFound => {
                    Mapping::new()
                }
                _ => return Err(e.into()),
            },
        };
        if let Some(c) = doc.get("config") {
            if !c.is_mapping() && !c.is_null() {
                bail!(
                    "{}: `config` must be a mapping of keys to values",
                    path.display()
                );
            }
        }
        let unknown: Vec<String> = doc
            .keys()
            .filter(|k| !k.as_str().is_some_and(|k| KEY_ORDER.contains(&k)))
            .map(key_text)
            .collect();
        // A misspelled key would run the stack without what it holds (its
        // whole configuration, its salt): refused. Any other unknown key
        // is warned about and kept.
        let misspelled: Vec<String> = unknown
            .iter()
            .filter_map(|k| {
                crate::unknown_keys::closest(k, KEY_ORDER).map(|m| format!("`{k}` (`{m}`?)"))
            })
            .collect();
        if !misspelled.is_empty() {
            bail!(
                "{}: unknown key {}: Converge would go on without what it holds; rename it to \
                 the key meant",
                path.display(),
                misspelled.join(", ")
            );
        }
        crate::unknown_keys::warn(path, &unknown, &KEY_ORDER);
        Ok(StackSettings {
            path: path.to_path_buf(),
            doc,
        })
    }

    pub fn save(&self) -> Result<()> {
        let mut ordered = Mapping::new();
        for key in KEY_ORDER {
            if let Some(v) = self.doc.get(key) {
                ordered.insert(key.into(), v.clone());
            }
        }
        for (k, v) in &self.doc {
            if !k.as_str().is_some_and(|k| KEY_ORDER.contains(&k)) {
                ordered.insert(k.clone(), v.clone());
            }
        }
        let text = serde_norway::to_string(&Value::Mapping(ordered))?;
        write_atomically(&self.path, text.as_bytes())
    }

    /// The secrets provider named in the file (`passphrase` when absent).
    pub fn secrets_provider(&self) -> Option<&str> {
        self.doc.get("secretsprovider").and_then(Value::as_str)
    }

    pub fn encryption_salt(&self) -> Option<&str> {
        self.doc.get("encryptionsalt").and_then(Value::as_str)
    }

    pub fn set_encryption_salt(&mut self, salt: &str) {
        self.doc.insert("encryptionsalt".into(), salt.into());
    }

    /// The `cloud` provider's data key as the key service encrypted it
    /// (base64).
    pub fn encrypted_key(&self) -> Option<&str> {
        self.doc.get("encryptedkey").and_then(Value::as_str)
    }

    /// Makes the file name a `cloud` secrets provider (its URL and
    /// encrypted data key) and forgets any passphrase salt.
    pub fn set_cloud_provider(&mut self, url: &str, encrypted_key: &str) {
        self.doc.remove("encryptionsalt");
        self.doc.insert("secretsprovider".into(), url.into());
        self.doc.insert("encryptedkey".into(), encrypted_key.into());
    }

    /// Forgets the secrets provider: its name, salt and encrypted key.
    pub fn clear_secrets_provider(&mut self) {
        for key in ["secretsprovider", "encryptedkey", "encryptionsalt"] {
            self.doc.remove(key);
        }
    }

    /// The config mapping (`"project:key": value`), empty when absent.
    pub fn config(&self) -> Mapping {
        self.doc
            .get("config")
            .and_then(Value::as_mapping)
            .cloned()
            .unwrap_or_default()
    }

    /// Replaces the config mapping, sorted by key as Pulumi writes it.
    pub fn set_config(&mut self, config: Mapping) {
        let mut entries: Vec<(Value, Value)> = config.into_iter().collect();
        entries.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
        if entries.is_empty() {
            self.doc.remove("config");
        } else {
            self.doc.insert(
                "config".into(),
                Value::Mapping(entries.into_iter().collect()),
            );
        }
    }
}

/// A key as the user wrote it: a string as it is, another scalar as YAML.
fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_norway::to_string(other)
            .map(|t| t.trim_end().to_owned())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_unknown_keys_and_orders_known_ones() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("Pulumi.dev.yaml");
        std::fs::write(
            &p,
            "config:\n  p:b: x\n  p:a: y\nfuture: 1\nencryptionsalt: v1:abc\n",
        )
        .unwrap();
        let mut s = StackSettings::load(&p).unwrap();
        assert_eq!(s.encryption_salt(), Some("v1:abc"));
        let c = s.config();
        s.set_config(c);
        s.save().unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(
            text,
            "encryptionsalt: v1:abc\nconfig:\n  p:a: y\n  p:b: x\nfuture: 1\n"
        );
    }
}

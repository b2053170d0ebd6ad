//! Each policy's enforcement level and settings: the schema's defaults,
//! then the pack's own configuration, then a `--policy-pack-config` file
//! (Pulumi's JSON shape: policy name → a level, or an object with an
//! optional `enforcementLevel` and the settings; `all` → the level of
//! every policy the file does not name). The result is validated against
//! each policy's JSON schema before the pack is configured, so a bad
//! setting stops the operation before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{EnforcementLevel, PackInfo};

/// One policy's configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PolicyConfig {
    pub enforcement_level: Option<EnforcementLevel>,
    pub properties: Map<String, Value>,
}

/// A `--policy-pack-config` file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PackConfig {
    /// The file's `all`: every policy's level unless the policy is named.
    pub all: Option<EnforcementLevel>,
    pub policies: BTreeMap<String, PolicyConfig>,
    /// Where it was read from, for errors.
    pub source: Option<PathBuf>,
}

/// Why a pack's configuration is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("policy pack config {path}: {message}")]
    File { path: PathBuf, message: String },
    #[error("policy pack config {source_name}: {key}: {message}")]
    Entry {
        source_name: String,
        key: String,
        message: String,
    },
    #[error("policy pack {pack}: the config names policy {policy:?}, which the pack does not have (its policies: {known})")]
    UnknownPolicy {
        pack: String,
        policy: String,
        known: String,
    },
    #[error("policy pack {pack}: policy {policy:?} has a bad schema: {message}")]
    BadSchema {
        pack: String,
        policy: String,
        message: String,
    },
    #[error(
        "policy pack {pack}: the config of policy {policy:?} does not fit its schema: {problems}"
    )]
    Invalid {
        pack: String,
        policy: String,
        problems: String,
    },
}

impl PackConfig {
    /// Reads a `--policy-pack-config` file.
    pub fn read(path: &Path) -> Result<PackConfig, ConfigError> {
        let file_error = |message: String| ConfigError::File {
            path: path.to_path_buf(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| file_error(e.to_string()))?;
        // An empty file is no configuration, as Pulumi reads one.
        let value: Value = if text.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(&text).map_err(|e| file_error(format!("not valid JSON: {e}")))?
        };
        let mut config = PackConfig::from_json(&value, &path.display().to_string())?;
        config.source = Some(path.to_path_buf());
        Ok(config)
    }

    /// Pulumi's shape, from JSON (`source` names it in errors).
    pub fn from_json(value: &Value, source: &str) -> Result<PackConfig, ConfigError> {
        let entry = |key: &str, message: String| ConfigError::Entry {
            source_name: source.to_owned(),
            key: key.to_owned(),
            message,
        };
        let Value::Object(map) = value else {
            return Err(entry(
                "(top level)",
                "must be an object of policy names".to_owned(),
            ));
        };
        let mut config = PackConfig::default();
        for (key, v) in map {
            let policy = policy_config(v).map_err(|m| entry(key, m))?;
            if key == "all" {
                if !policy.properties.is_empty() {
                    return Err(entry(key, "takes an enforcement level only".to_owned()));
                }
                config.all = policy.enforcement_level;
            } else {
                config.policies.insert(key.clone(), policy);
            }
        }
        Ok(config)
    }
}

/// One entry: a level, or an object with an optional `enforcementLevel`.
pub(crate) fn policy_config(v: &Value) -> Result<PolicyConfig, String> {
    let level = |text: &str| {
        EnforcementLevel::parse(text).ok_or_else(|| {
            format!(
                "{text:?} is not an enforcement level (advisory, mandatory, remediate, disabled)"
            )
        })
    };
    match v {
        Value::String(s) => Ok(PolicyConfig {
            enforcement_level: Some(level(s)?),
            properties: Map::new(),
        }),
        Value::Object(o) => {
            let mut properties = o.clone();
            let enforcement_level = match properties.remove("enforcementLevel") {
                None => None,
                Some(Value::String(s)) => Some(level(&s)?),
                Some(other) => return Err(format!("enforcementLevel {other} is not a string")),
            };
            Ok(PolicyConfig {
                enforcement_level,
                properties,
            })
        }
        other => Err(format!(
            "must be an enforcement level or an object, not {other}"
        )),
    }
}

/// Every policy's configuration for `info`'s pack: its level (the file's
/// entry, the file's `all`, the pack's configuration, the policy's own)
/// and settings (the schema's defaults, the pack's, the file's), each
/// validated against the policy's schema.
pub fn resolve(
    info: &PackInfo,
    file: Option<&PackConfig>,
) -> Result<BTreeMap<String, PolicyConfig>, ConfigError> {
    let pack = info.label();
    if let Some(file) = file {
        for name in file.policies.keys() {
            if !info.policies.iter().any(|p| &p.name == name) {
                return Err(ConfigError::UnknownPolicy {
                    pack,
                    policy: name.clone(),
                    known: info
                        .policies
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
    }
    let pack_all = info.initial_config.get("all");
    let mut out = BTreeMap::new();
    for policy in &info.policies {
        let initial = info.initial_config.get(&policy.name);
        let given = file.and_then(|f| f.policies.get(&policy.name));
        let level = given
            .and_then(|g| g.enforcement_level)
            .or(file.and_then(|f| f.all))
            .or(initial.and_then(|c| c.enforcement_level))
            .or(pack_all.and_then(|c| c.enforcement_level))
            .unwrap_or(policy.enforcement_level);
        let mut properties = Map::new();
        if let Some(schema) = &policy.config_schema {
            for (k, v) in &schema.properties {
                if let Some(default) = v.get("default") {
                    properties.insert(k.clone(), default.clone());
                }
            }
        }
        for source in [initial, given].into_iter().flatten() {
            for (k, v) in &source.properties {
                properties.insert(k.clone(), v.clone());
            }
        }
        if let Some(schema) = &policy.config_schema {
            validate(&pack, &policy.name, schema, &properties)?;
        }
        out.insert(
            policy.name.clone(),
            PolicyConfig {
                enforcement_level: Some(level),
                properties,
            },
        );
    }
    Ok(out)
}

fn validate(
    pack: &str,
    policy: &str,
    schema: &super::PolicySchema,
    properties: &Map<String, Value>,
) -> Result<(), ConfigError> {
    let schema_value = serde_json::json!({
        "type": "object",
        "properties": Value::Object(schema.properties.clone()),
        "required": schema.required,
    });
    let validator =
        jsonschema::validator_for(&schema_value).map_err(|e| ConfigError::BadSchema {
            pack: pack.to_owned(),
            policy: policy.to_owned(),
            message: e.to_string(),
        })?;
    let instance = Value::Object(properties.clone());
    let problems: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ConfigError::Invalid {
            pack: pack.to_owned(),
            policy: policy.to_owned(),
            problems: problems.join("; "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{PolicyInfo, PolicySchema};

    fn pack() -> PackInfo {
        let schema: Map<String, Value> = serde_json::from_str(
            r#"{"maxLength": {"type": "integer", "minimum": 1, "default": 8}}"#,
        )
        .unwrap();
        PackInfo {
            name: "p".into(),
            version: "1.0.0".into(),
            policies: vec![
                PolicyInfo {
                    name: "max-length".into(),
                    description: String::new(),
                    enforcement_level: EnforcementLevel::Advisory,
                    config_schema: Some(PolicySchema {
                        properties: schema,
                        required: vec![],
                    }),
                    stack: false,
                },
                PolicyInfo {
                    name: "other".into(),
                    description: String::new(),
                    enforcement_level: EnforcementLevel::Mandatory,
                    config_schema: None,
                    stack: true,
                },
            ],
            initial_config: BTreeMap::new(),
        }
    }

    #[test]
    fn defaults_then_the_file_and_levels_in_order() {
        let none = resolve(&pack(), None).unwrap();
        assert_eq!(none["max-length"].properties["maxLength"], 8);
        assert_eq!(
            none["other"].enforcement_level,
            Some(EnforcementLevel::Mandatory)
        );
        let file = PackConfig::from_json(
            &serde_json::json!({"all": "disabled", "max-length": {"enforcementLevel": "mandatory", "maxLength": 3}}),
            "f",
        )
        .unwrap();
        let r = resolve(&pack(), Some(&file)).unwrap();
        assert_eq!(r["max-length"].properties["maxLength"], 3);
        assert_eq!(
            r["max-length"].enforcement_level,
            Some(EnforcementLevel::Mandatory)
        );
        assert_eq!(
            r["other"].enforcement_level,
            Some(EnforcementLevel::Disabled)
        );
    }

    #[test]
    fn an_empty_config_file_is_no_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.json");
        std::fs::write(&path, "\n").unwrap();
        let config = PackConfig::read(&path).unwrap();
        assert!(config.policies.is_empty());
        std::fs::write(&path, "{").unwrap();
        assert!(PackConfig::read(&path).is_err());
    }

    #[test]
    fn a_config_that_breaks_the_schema_or_names_no_policy_is_refused() {
        let bad =
            PackConfig::from_json(&serde_json::json!({"max-length": {"maxLength": "x"}}), "f")
                .unwrap();
        let e = resolve(&pack(), Some(&bad)).unwrap_err();
        assert!(
            matches!(&e, ConfigError::Invalid { policy, .. } if policy == "max-length"),
            "{e}"
        );
        let unknown = PackConfig::from_json(&serde_json::json!({"nope": "advisory"}), "f").unwrap();
        assert!(matches!(
            resolve(&pack(), Some(&unknown)),
            Err(ConfigError::UnknownPolicy { .. })
        ));
        let level = PackConfig::from_json(&serde_json::json!({"other": "loud"}), "f").unwrap_err();
        assert!(
            level.to_string().contains("not an enforcement level"),
            "{level}"
        );
    }
}

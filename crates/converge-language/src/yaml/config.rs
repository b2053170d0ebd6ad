//! Configuration: declarations (`config:` and the older `configuration:`,
//! with `type`, `default`, `secret`), typed against the stack's values.
//! Secret values (declared secret, or secret in the stack) are wrapped as
//! secrets, so they taint whatever they flow into.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use converge_model::PropertyValue;

use super::eval::json_to_value;
use super::syntax::{Key, Node, NodeKind};
use super::{did_you_mean, Pos, YamlError, YamlOptions};

/// A declared configuration value.
#[derive(Debug, Clone)]
pub(crate) struct ConfigDecl {
    pub key: Key,
    pub file: String,
    pub ty: Option<(ConfigType, Pos)>,
    pub default: Option<Node>,
    pub secret: bool,
    /// The declaration itself has errors (already reported).
    pub invalid: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ConfigType {
    String,
    Number,
    Integer,
    Boolean,
    List(Box<ConfigType>),
    Object,
}

impl fmt::Display for ConfigType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigType::String => f.write_str("String"),
            ConfigType::Number => f.write_str("Number"),
            ConfigType::Integer => f.write_str("Integer"),
            ConfigType::Boolean => f.write_str("Boolean"),
            ConfigType::List(t) => write!(f, "List<{t}>"),
            ConfigType::Object => f.write_str("Object"),
        }
    }
}

impl ConfigType {
    /// Scalars have no properties to access.
    pub fn is_scalar(&self) -> bool {
        matches!(
            self,
            ConfigType::String | ConfigType::Number | ConfigType::Integer | ConfigType::Boolean
        )
    }
}

/// A configuration value the program can use.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub value: PropertyValue,
    pub ty: ConfigType,
}

const DECL_KEYS: &[&str] = &["type", "default", "value", "secret", "description", "items"];
const TYPES: &[&str] = &[
    "String", "Number", "Integer", "Boolean", "List", "Object", "array",
];

/// The config declarations of a file's `config:` and `configuration:`.
pub(crate) fn declarations(
    file: &str,
    root: &Node,
    errors: &mut Vec<YamlError>,
) -> Vec<ConfigDecl> {
    let mut decls = Vec::new();
    for section in ["configuration", "config"] {
        let Some(node) = super::ast::lookup(root, section) else {
            continue;
        };
        let entries = match &node.kind {
            NodeKind::Map(entries) => entries.as_slice(),
            NodeKind::Null => &[],
            _ => {
                errors.push(YamlError::at(
                    file,
                    node.pos,
                    format!("{section} must be a mapping"),
                ));
                continue;
            }
        };
        for (key, value) in entries {
            decls.push(declaration(file, key, value, errors));
        }
    }
    decls
}

fn declaration(file: &str, key: &Key, node: &Node, errors: &mut Vec<YamlError>) -> ConfigDecl {
    let mut decl = ConfigDecl {
        key: key.clone(),
        file: file.to_owned(),
        ty: None,
        default: None,
        secret: false,
        invalid: false,
    };
    let before = errors.len();
    let Some(entries) = node.as_map() else {
        // A literal is the value's default.
        decl.default = Some(node.clone());
        return decl;
    };
    let mut items = None;
    for (k, v) in entries {
        match k.name.as_str() {
            "type" => match v.as_str().map(parse_type) {
                Some(Some(t)) => decl.ty = Some((t, v.pos)),
                Some(None) => {
                    let name = v.as_str().unwrap_or_default();
                    let hint = did_you_mean(name, TYPES.iter().copied());
                    errors.push(YamlError::at(
                        file,
                        v.pos,
                        format!("unknown config type '{name}'{hint}"),
                    ));
                }
                None => errors.push(YamlError::at(file, v.pos, "a config type must be a string")),
            },
            "default" | "value" => decl.default = Some(v.clone()),
            "secret" => match v.kind {
                NodeKind::Bool(b) => decl.secret = b,
                _ => errors.push(YamlError::at(file, v.pos, "secret must be true or false")),
            },
            "items" => {
                items = super::ast::lookup(v, "type")
                    .and_then(Node::as_str)
                    .and_then(parse_type)
            }
            "description" => {}
            other => {
                let hint = did_you_mean(other, DECL_KEYS.iter().copied());
                errors.push(YamlError::at(
                    file,
                    k.pos,
                    format!("unknown property '{other}' of config '{}'{hint}", key.name),
                ));
            }
        }
    }
    if let (Some((ConfigType::List(t), _)), Some(item)) = (&mut decl.ty, items) {
        **t = item;
    }
    decl.invalid = errors.len() > before;
    decl
}

/// `String`, `number`, `List<Integer>`, `array`, … (any case).
fn parse_type(s: &str) -> Option<ConfigType> {
    let lower = s.trim().to_ascii_lowercase();
    if let Some(inner) = lower
        .strip_prefix("list<")
        .and_then(|r| r.strip_suffix('>'))
    {
        return parse_type(inner).map(|t| ConfigType::List(Box::new(t)));
    }
    Some(match lower.as_str() {
        "string" => ConfigType::String,
        "number" => ConfigType::Number,
        "int" | "integer" => ConfigType::Integer,
        "bool" | "boolean" => ConfigType::Boolean,
        "object" => ConfigType::Object,
        "array" | "list" => ConfigType::List(Box::new(ConfigType::String)),
        _ => return None,
    })
}

/// Resolves every declaration against the stack's values; undeclared
/// stack values of the project (and other namespaces) are strings under
/// their keys.
pub(crate) fn resolve(
    decls: &[ConfigDecl],
    options: &YamlOptions,
    errors: &mut Vec<YamlError>,
) -> BTreeMap<String, Resolved> {
    let mut out = BTreeMap::new();
    let mut used = BTreeSet::new();
    let mut seen: BTreeMap<&str, &ConfigDecl> = BTreeMap::new();
    for decl in decls {
        let name = decl.key.name.as_str();
        if let Some(first) = seen.get(name) {
            errors.push(YamlError::at(
                &decl.file,
                decl.key.pos,
                format!(
                    "config '{name}' is declared twice (first in {}:{}:{})",
                    first.file, first.key.pos.line, first.key.pos.column
                ),
            ));
            continue;
        }
        seen.insert(name, decl);
        let candidates = if name.contains(':') {
            vec![name.to_owned()]
        } else {
            vec![format!("{}:{name}", options.project), name.to_owned()]
        };
        let raw = candidates
            .iter()
            .find_map(|k| options.config.get(k).map(|v| (k, v)));
        if let Some((k, _)) = raw {
            used.insert(k.clone());
        }
        if decl.invalid {
            // Reported already; keep the name defined so that its uses do
            // not add errors of their own.
            let placeholder = Resolved {
                value: PropertyValue::Null,
                ty: ConfigType::Object,
            };
            out.insert(name.to_owned(), placeholder);
            continue;
        }
        match resolve_one(decl, raw.map(|(_, v)| v)) {
            Ok(r) => {
                out.insert(name.to_owned(), r);
            }
            Err((pos, message)) => {
                errors.push(YamlError::at(&decl.file, pos, message));
                // As for an invalid declaration: its uses add no errors.
                let placeholder = Resolved {
                    value: PropertyValue::Null,
                    ty: ConfigType::Object,
                };
                out.insert(name.to_owned(), placeholder);
            }
        }
    }
    let prefix = format!("{}:", options.project);
    for (key, v) in &options.config {
        if used.contains(key) {
            continue;
        }
        let value = PropertyValue::String(v.value.clone());
        let value = if v.secret {
            PropertyValue::secret(value)
        } else {
            value
        };
        let resolved = Resolved {
            value,
            ty: ConfigType::String,
        };
        if let Some(bare) = key.strip_prefix(&prefix) {
            if !seen.contains_key(bare) {
                out.entry(bare.to_owned())
                    .or_insert_with(|| resolved.clone());
            }
        }
        if !seen.contains_key(key.as_str()) {
            out.entry(key.clone()).or_insert(resolved);
        }
    }
    out
}

fn resolve_one(
    decl: &ConfigDecl,
    raw: Option<&super::ConfigValue>,
) -> Result<Resolved, (Pos, String)> {
    let name = &decl.key.name;
    let default = decl.default.as_ref().map(literal);
    let ty = match (&decl.ty, &default) {
        (Some((t, _)), _) => t.clone(),
        (None, Some(d)) => infer(d),
        (None, None) => ConfigType::String,
    };
    if let (Some(d), Some(node)) = (&default, &decl.default) {
        if !conforms(d, &ty) {
            return Err((
                node.pos,
                format!(
                    "the default of config '{name}' is {}, not {}",
                    node.kind_name(),
                    with_article(&ty)
                ),
            ));
        }
    }
    let (value, secret) = match (raw, default) {
        (Some(raw), _) => {
            let value = parse_value(&raw.value, &ty).ok_or_else(|| {
                // A secret's value never appears in an error.
                let shown = if raw.secret || decl.secret {
                    "a secret value".to_owned()
                } else {
                    format!("{:?}", raw.value)
                };
                (
                    decl.key.pos,
                    format!(
                        "config '{name}' must be {}, but the stack sets it to {shown}",
                        with_article(&ty)
                    ),
                )
            })?;
            (value, raw.secret)
        }
        (None, Some(d)) => (d, false),
        (None, None) => {
            return Err((
                decl.key.pos,
                format!("config '{name}' has no value in the stack and no default"),
            ))
        }
    };
    let value = if secret || decl.secret {
        PropertyValue::secret(value)
    } else {
        value
    };
    Ok(Resolved { value, ty })
}

/// A YAML literal as a value, strings verbatim.
pub(crate) fn literal(node: &Node) -> PropertyValue {
    match &node.kind {
        NodeKind::Null => PropertyValue::Null,
        NodeKind::Bool(b) => PropertyValue::Bool(*b),
        NodeKind::Number(n) => PropertyValue::Number(*n),
        NodeKind::Str(t) => PropertyValue::String(t.value.clone()),
        NodeKind::Seq(items) => PropertyValue::Array(items.iter().map(literal).collect()),
        NodeKind::Map(entries) => PropertyValue::Object(
            entries
                .iter()
                .map(|(k, v)| (k.name.clone(), literal(v)))
                .collect(),
        ),
    }
}

fn infer(v: &PropertyValue) -> ConfigType {
    match v {
        PropertyValue::Bool(_) => ConfigType::Boolean,
        PropertyValue::Number(_) => ConfigType::Number,
        PropertyValue::Array(items) => {
            ConfigType::List(Box::new(items.first().map_or(ConfigType::String, infer)))
        }
        PropertyValue::Object(_) => ConfigType::Object,
        _ => ConfigType::String,
    }
}

fn conforms(v: &PropertyValue, ty: &ConfigType) -> bool {
    match (ty, v) {
        (ConfigType::String, PropertyValue::String(_))
        | (ConfigType::Number, PropertyValue::Number(_))
        | (ConfigType::Boolean, PropertyValue::Bool(_))
        | (ConfigType::Object, PropertyValue::Object(_)) => true,
        (ConfigType::Integer, PropertyValue::Number(n)) => n.fract() == 0.0,
        (ConfigType::List(t), PropertyValue::Array(items)) => items.iter().all(|i| conforms(i, t)),
        _ => false,
    }
}

/// The stack's text as a value of type `ty`.
fn parse_value(raw: &str, ty: &ConfigType) -> Option<PropertyValue> {
    let value = match ty {
        ConfigType::String => PropertyValue::String(raw.to_owned()),
        ConfigType::Number => PropertyValue::Number(raw.trim().parse().ok()?),
        ConfigType::Integer => PropertyValue::Number(raw.trim().parse::<i64>().ok()? as f64),
        ConfigType::Boolean => PropertyValue::Bool(match raw.trim() {
            "true" | "True" | "TRUE" => true,
            "false" | "False" | "FALSE" => false,
            _ => return None,
        }),
        ConfigType::List(_) | ConfigType::Object => json_to_value(&serde_json::from_str(raw).ok()?),
    };
    conforms(&value, ty).then_some(value)
}

/// `a String`, `an Integer`.
fn with_article(ty: &ConfigType) -> String {
    let name = ty.to_string();
    match name.chars().next() {
        Some('A' | 'E' | 'I' | 'O' | 'U' | 'a' | 'e' | 'i' | 'o' | 'u') => format!("an {name}"),
        _ => format!("a {name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::eval::number_text;

    #[test]
    fn types_parse_in_any_case_and_values_follow_them() {
        assert_eq!(
            parse_type("List<Number>"),
            Some(ConfigType::List(Box::new(ConfigType::Number)))
        );
        assert_eq!(parse_type("boolean"), Some(ConfigType::Boolean));
        assert_eq!(parse_type("Strin"), None);
        assert_eq!(
            parse_value("[1, 2]", &ConfigType::List(Box::new(ConfigType::Number))),
            Some(PropertyValue::Array(vec![1.0.into(), 2.0.into()]))
        );
        assert_eq!(parse_value("x", &ConfigType::Number), None);
        assert_eq!(parse_value("2.5", &ConfigType::Integer), None);
        assert_eq!(number_text(3.0), "3");
    }
}

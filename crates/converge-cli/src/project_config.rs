//! Project-level configuration: the `config:` block of `Pulumi.yaml`, read
//! as Pulumi reads it for every runtime. The project's own keys (bare, or
//! namespaced by the project) are declarations — `type` (`string`,
//! `integer`, `boolean`, `array` with `items`, `object`), `default`,
//! `secret`, `description` — or a plain default; other namespaces' keys
//! (`aws:region: us-west-2`, `pkg:key: {value: …}`) are values. A stack
//! gets every default and value for the keys it does not set itself;
//! before a deployment its own values are checked against the
//! declarations, and a declared key with neither a stack value nor a
//! default is missing.

use std::fmt;

use anyhow::{bail, Context as _, Result};
use converge_state::secrets::Crypter;
use serde_norway::{Mapping, Value};

use crate::config_value::{contains_secure, content, to_json};

/// The type names a declaration may use (Pulumi's project schema).
const TYPES: [&str; 5] = ["string", "integer", "boolean", "array", "object"];
/// The attributes of a declaration.
const ATTRIBUTES: [&str; 6] = ["default", "description", "items", "secret", "type", "value"];

/// A declared configuration type.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigType {
    String,
    Integer,
    Boolean,
    Object,
    Array(Box<ConfigType>),
}

impl fmt::Display for ConfigType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigType::String => f.write_str("string"),
            ConfigType::Integer => f.write_str("integer"),
            ConfigType::Boolean => f.write_str("boolean"),
            ConfigType::Object => f.write_str("object"),
            ConfigType::Array(items) => write!(f, "array<{items}>"),
        }
    }
}

impl ConfigType {
    /// Whether `v` — a stack value's content (a string, or JSON for
    /// objects and arrays) or a default — is of this type, by Pulumi's
    /// rules: an integer may be a whole number or a string that parses as
    /// one, a boolean may be the string `true` or `false`.
    pub fn admits(&self, v: &serde_json::Value) -> bool {
        use serde_json::Value as J;
        match (self, v) {
            (ConfigType::String, J::String(_))
            | (ConfigType::Boolean, J::Bool(_))
            | (ConfigType::Object, J::Object(_)) => true,
            (ConfigType::Integer, J::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            (ConfigType::Integer, J::String(s)) => s.parse::<i64>().is_ok(),
            (ConfigType::Boolean, J::String(s)) => s == "true" || s == "false",
            (ConfigType::Array(item), J::Array(items)) => items.iter().all(|i| item.admits(i)),
            _ => false,
        }
    }
}

/// One entry of the project's `config:` block.
#[derive(Debug, Clone)]
pub struct Declaration {
    /// The key as written in `Pulumi.yaml`; errors name it so.
    pub name: String,
    /// The key with its namespace (`<project>:name` for a bare key).
    pub key: String,
    /// The declared type, checked against stack values. `None`: untyped,
    /// or (YAML runtime) a type name of Pulumi YAML's own, which the YAML
    /// runtime checks itself.
    pub ty: Option<ConfigType>,
    /// `default`, `value` or the plain value: what a stack that does not
    /// set the key gets.
    pub default: Option<Value>,
    /// Stack values must be encrypted.
    pub secret: bool,
    /// The project's own key (others are values for other packages).
    own: bool,
}

/// How to read a project's `config:` block.
#[derive(Debug, Clone, Copy)]
pub struct ParseOptions<'a> {
    /// The project's name: the namespace of bare keys.
    pub project: &'a str,
    /// The project runs on the YAML runtime, whose type names (`String`,
    /// `Number`, `List<…>`) are left for it to check.
    pub yaml_runtime: bool,
}

/// The declarations of a project's `config:` block, by key.
#[derive(Debug, Clone, Default)]
pub struct ProjectConfig {
    /// The project's name: the namespace of bare keys.
    project: String,
    decls: Vec<Declaration>,
}

impl ProjectConfig {
    /// Reads a `config:` block, refusing what Pulumi refuses.
    pub fn parse(section: &Mapping, opts: ParseOptions<'_>) -> Result<ProjectConfig> {
        let mut decls = Vec::new();
        for (name, node) in section {
            let Some(name) = name.as_str() else {
                bail!("config keys must be strings, not {name:?}");
            };
            decls.push(declaration(name, node, opts)?);
        }
        decls.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ProjectConfig {
            project: opts.project.to_owned(),
            decls,
        })
    }

    /// The stack's configuration with bare keys (`name: x`, as a
    /// hand-written stack file may have them) in the project's namespace,
    /// as Pulumi reads them; a namespaced key of the same name wins.
    fn namespaced(&self, stack_config: &Mapping) -> Mapping {
        let mut out = Mapping::new();
        for (k, v) in stack_config {
            match k.as_str() {
                Some(bare) if !bare.contains(':') && !self.project.is_empty() => {
                    let key = format!("{}:{bare}", self.project);
                    if !stack_config.contains_key(key.as_str()) {
                        out.insert(key.into(), v.clone());
                    }
                }
                _ => {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
        out
    }

    #[cfg(test)]
    pub fn declarations(&self) -> &[Declaration] {
        &self.decls
    }

    /// Whether the project declares `key` (namespaced) secret.
    pub fn declared_secret(&self, key: &str) -> bool {
        self.decls.iter().any(|d| d.secret && d.key == key)
    }

    /// The stack's configuration with the project's defaults and values
    /// for the keys it does not set, sorted by key: what `config` lists
    /// and `config get` reads. Nothing is checked.
    pub fn apply(&self, stack_config: &Mapping) -> Mapping {
        let stack_config = &self.namespaced(stack_config);
        let mut entries: Vec<(Value, Value)> = stack_config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for d in &self.decls {
            let Some(default) = &d.default else { continue };
            if stack_config.get(d.key.as_str()).is_none() {
                entries.push((d.key.as_str().into(), stack_value(default)));
            }
        }
        entries.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
        entries.into_iter().collect()
    }

    /// The stack's keys of the project's namespace that the project does
    /// not declare but that are one slip away from a declared key the
    /// stack gives no value (`lenght` beside `length`): each a warning
    /// naming the key meant, since the declared key took its default.
    pub fn slips(&self, stack_config: &Mapping) -> Vec<String> {
        let stack_config = &self.namespaced(stack_config);
        let prefix = format!("{}:", self.project);
        let unset: Vec<&Declaration> = self
            .decls
            .iter()
            .filter(|d| d.own && stack_config.get(d.key.as_str()).is_none())
            .collect();
        let mut out = Vec::new();
        for key in stack_config.keys().filter_map(Value::as_str) {
            let Some(bare) = key.strip_prefix(&prefix) else {
                continue;
            };
            if self.decls.iter().any(|d| d.key == key) {
                continue;
            }
            let names = unset.iter().map(|d| d.name.as_str());
            if let Some(meant) = crate::unknown_keys::closest(bare, names) {
                out.push(format!(
                    "warning: the stack sets config '{bare}', which the project does not \
                     declare; did you mean '{meant}'? (the stack gives '{meant}' no value)"
                ));
            }
        }
        out
    }

    /// Checks the stack's own values against the declarations, as Pulumi
    /// does before a deployment: a declared-secret key must be encrypted,
    /// a typed key must hold a value of its type, and a project key with
    /// no default must be set. Secure values are decrypted by `crypter`
    /// to check their type; no error shows a value.
    pub fn check(&self, stack: &str, stack_config: &Mapping, crypter: &dyn Crypter) -> Result<()> {
        let stack_config = &self.namespaced(stack_config);
        let mut missing = Vec::new();
        for d in self.decls.iter().filter(|d| d.own) {
            let Some(value) = stack_config.get(d.key.as_str()) else {
                if d.default.is_none() {
                    missing.push(d.name.as_str());
                }
                continue;
            };
            if d.secret && !contains_secure(value) {
                bail!(
                    "Stack '{stack}' with configuration key '{}' must be encrypted as it's \
                     secret: set it with `converge config set --secret {} <value>`",
                    d.name,
                    d.name
                );
            }
            if let Some(ty) = &d.ty {
                let content = content(value, Some(crypter))
                    .with_context(|| format!("cannot read configuration key '{}'", d.name))?;
                if !ty.admits(&content) {
                    bail!(
                        "Stack '{stack}' with configuration key '{}' must be of type '{ty}'",
                        d.name
                    );
                }
            }
        }
        match missing.as_slice() {
            [] => Ok(()),
            [one] => bail!(
                "Stack '{stack}' is missing configuration value '{one}': set it with \
                 `converge config set {one} <value>`"
            ),
            many => bail!(
                "Stack '{stack}' is missing configuration values {}: set them with \
                 `converge config set <key> <value>`",
                and_list(many)
            ),
        }
    }
}

/// `'a'`, `'a' and 'b'`, `'a', 'b' and 'c'`.
fn and_list(keys: &[&str]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("'{k}'")).collect();
    match quoted.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// A default as a stack value: scalars as their text (Pulumi keeps
/// top-level values as strings), objects and arrays as they are.
fn stack_value(default: &Value) -> Value {
    match default {
        Value::Bool(b) => Value::String(b.to_string()),
        Value::Number(n) => Value::String(n.to_string()),
        Value::Tagged(t) => stack_value(&t.value),
        other => other.clone(),
    }
}

fn declaration(name: &str, node: &Value, opts: ParseOptions<'_>) -> Result<Declaration> {
    let (key, own) = match name.split_once(':') {
        None => (format!("{}:{name}", opts.project), true),
        Some((ns, rest)) => {
            if ns.is_empty() || rest.is_empty() || rest.contains(':') {
                bail!(
                    "could not parse {name:?} as a configuration key: keys are <name> or \
                     <namespace>:<name>"
                );
            }
            (name.to_owned(), ns == opts.project)
        }
    };
    let mut decl = Declaration {
        name: name.to_owned(),
        key,
        ty: None,
        default: None,
        secret: false,
        own,
    };
    let attrs = match node {
        Value::Mapping(m) => m,
        Value::Null => {
            bail!("config '{name}' has neither a value nor a declaration (`type`, `default`, …)")
        }
        // A plain value: the project key's default, or another package's value.
        plain => {
            decl.default = Some(plain.clone());
            return Ok(decl);
        }
    };
    let mut ty_name = None;
    let mut items = None;
    let mut value = None;
    for (attr, v) in attrs {
        match attr.as_str().unwrap_or_default() {
            "type" => match v.as_str() {
                Some(t) => ty_name = Some(t),
                None => bail!("config '{name}': `type` must be a string"),
            },
            "items" => items = Some(v),
            "default" => decl.default = Some(v.clone()),
            "value" => value = Some(v.clone()),
            "secret" => match v.as_bool() {
                Some(b) => decl.secret = b,
                None => bail!("config '{name}': `secret` must be true or false"),
            },
            "description" => {}
            other => bail!(
                "config '{name}': unknown attribute {other:?}; the allowed attributes are {}",
                ATTRIBUTES.join(", ")
            ),
        }
    }
    if decl.default.is_some() && value.is_some() {
        bail!("project config '{name}' cannot have both a 'default' and 'value' attribute");
    }
    if !own {
        if ty_name.is_some() {
            bail!("Configuration key '{name}' is not namespaced by the project and should not define a type");
        }
        if decl.default.is_some() {
            bail!(
                "Configuration key '{name}' is not namespaced by the project and should not \
                 define a default value. Did you mean to use the 'value' attribute instead of \
                 'default'?"
            );
        }
        if value.is_none() {
            bail!("Configuration key '{name}' is namespaced and must provide an attribute 'value'");
        }
    }
    if value.is_some() {
        decl.default = value;
    }
    if let Some(t) = ty_name {
        decl.ty = config_type(name, t, items, opts)?;
    }
    if let (Some(ty), Some(default)) = (&decl.ty, &decl.default) {
        if !ty.admits(&to_json(default, None)?) {
            bail!(
                "The default value specified for configuration key '{name}' is not of the \
                 expected type '{ty}'"
            );
        }
    }
    Ok(decl)
}

/// A declaration's type with its `items`.
fn config_type(
    name: &str,
    ty: &str,
    items: Option<&Value>,
    opts: ParseOptions<'_>,
) -> Result<Option<ConfigType>> {
    Ok(Some(match ty {
        "string" => ConfigType::String,
        "integer" => ConfigType::Integer,
        "boolean" => ConfigType::Boolean,
        "object" => ConfigType::Object,
        "array" => {
            let Some(items) = items else {
                bail!(
                    "The configuration key '{name}' declares an array but does not specify the \
                     underlying type via the 'items' attribute"
                );
            };
            ConfigType::Array(Box::new(items_type(name, items)?))
        }
        // Pulumi YAML's own names (`String`, `List<Number>`, …): the YAML
        // runtime checks values of these itself.
        _ if opts.yaml_runtime => return Ok(None),
        other => bail!(
            "config '{name}': unknown type {other:?}; the type must be one of {}",
            TYPES.join(", ")
        ),
    }))
}

/// The type of an array's items: `{type: …, items: …}`.
fn items_type(name: &str, items: &Value) -> Result<ConfigType> {
    let Some(m) = items.as_mapping() else {
        bail!("config '{name}': `items` must be a mapping with a `type`");
    };
    let ty = m.get("type").and_then(Value::as_str);
    Ok(match ty {
        Some("string") => ConfigType::String,
        Some("integer") => ConfigType::Integer,
        Some("boolean") => ConfigType::Boolean,
        Some("object") => ConfigType::Object,
        Some("array") => match m.get("items") {
            Some(inner) => ConfigType::Array(Box::new(items_type(name, inner)?)),
            None => bail!(
                "The configuration key '{name}' declares an array but does not specify the \
                 underlying type via the 'items' attribute"
            ),
        },
        Some(other) => bail!(
            "config '{name}': unknown item type {other:?}; the type must be one of {}",
            TYPES.join(", ")
        ),
        None => bail!("config '{name}': `items` needs a `type`"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use converge_state::secrets::CryptoError;

    /// "Decrypts" by dropping a prefix.
    #[derive(Debug)]
    struct Plain;

    impl Crypter for Plain {
        fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError> {
            Ok(format!("ct:{plaintext}"))
        }
        fn decrypt(&self, ciphertext: &str) -> Result<String, CryptoError> {
            Ok(ciphertext.trim_start_matches("ct:").to_owned())
        }
    }

    fn parse(yaml: &str) -> Result<ProjectConfig> {
        let section: Mapping = serde_norway::from_str(yaml).unwrap();
        ProjectConfig::parse(
            &section,
            ParseOptions {
                project: "web",
                yaml_runtime: false,
            },
        )
    }

    fn error(yaml: &str) -> String {
        format!("{:#}", parse(yaml).unwrap_err())
    }

    fn stack(yaml: &str) -> Mapping {
        serde_norway::from_str(yaml).unwrap()
    }

    fn check(config: &ProjectConfig, stack_yaml: &str) -> Result<()> {
        config.check("dev", &stack(stack_yaml), &Plain)
    }

    const PROJECT: &str = "
name: {type: string, default: hello}
replicas: {type: integer, default: 3, description: how many}
enabled: {type: boolean}
tags: {type: array, items: {type: string}}
dbPassword: {type: string, secret: true}
aws:region: us-west-2
pkg:settings: {value: {a: 1}}
plain: 7
";

    #[test]
    fn defaults_and_values_fill_what_the_stack_does_not_set() {
        let c = parse(PROJECT).unwrap();
        let merged = c.apply(&stack("web:name: bonjour\n"));
        let text = serde_norway::to_string(&merged).unwrap();
        assert_eq!(
            text,
            "aws:region: us-west-2\npkg:settings:\n  a: 1\nweb:name: bonjour\nweb:plain: '7'\n\
             web:replicas: '3'\n"
        );
        assert!(c.declared_secret("web:dbPassword"));
        // A bare stack key is the project's.
        let merged = c.apply(&stack("name: bare\nreplicas: '5'\nweb:replicas: '6'\n"));
        assert_eq!(merged.get("web:name"), Some(&Value::from("bare")));
        assert_eq!(merged.get("web:replicas"), Some(&Value::from("6")));
        assert!(merged.get("name").is_none());
        check(&c, "enabled: 'false'\ntags: []\ndbPassword: {secure: x}\n").unwrap();
        assert!(!c.declared_secret("web:name"));
    }

    #[test]
    fn stack_values_are_checked_against_their_declarations() {
        let c = parse(PROJECT).unwrap();
        let full = "web:enabled: 'true'\nweb:tags: [a, b]\nweb:dbPassword: {secure: 'ct:x'}\n";
        check(&c, full).unwrap();
        check(&c, &format!("{full}web:replicas: '12'\nweb:name: 42\n")).unwrap();

        let e = check(&c, &format!("{full}web:replicas: many\n")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Stack 'dev' with configuration key 'replicas' must be of type 'integer'"
        );
        let e = check(
            &c,
            "web:enabled: yes\nweb:tags: []\nweb:dbPassword: {secure: x}\n",
        );
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("'enabled' must be of type 'boolean'"));
        let e = check(
            &c,
            "web:enabled: 'true'\nweb:tags: [[a]]\nweb:dbPassword: {secure: x}\n",
        );
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("'tags' must be of type 'array<string>'"));
        let e = check(
            &c,
            "web:enabled: 'true'\nweb:tags: []\nweb:dbPassword: s3cr3t\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("'dbPassword' must be encrypted as it's secret"),
            "{e}"
        );
        assert!(e.contains("--secret") && !e.contains("s3cr3t"), "{e}");
        // A secure value is decrypted to check its type.
        let c = parse("port: {type: integer, secret: true}\n").unwrap();
        check(&c, "web:port: {secure: 'ct:80'}\n").unwrap();
        let e = check(&c, "web:port: {secure: 'ct:eighty'}\n").unwrap_err();
        assert!(!e.to_string().contains("eighty"), "{e}");
    }

    #[test]
    fn missing_keys_are_named_together() {
        let c = parse(PROJECT).unwrap();
        let e = check(&c, "web:enabled: 'true'\n").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("Stack 'dev' is missing configuration values 'dbPassword' and 'tags'"),
            "{e}"
        );
        let e = check(&c, "web:enabled: 'true'\nweb:tags: []\n").unwrap_err();
        assert!(e
            .to_string()
            .starts_with("Stack 'dev' is missing configuration value 'dbPassword'"));
        assert_eq!(and_list(&["a", "b", "c"]), "'a', 'b' and 'c'");
    }

    #[test]
    fn bad_declarations_are_refused_as_pulumi_refuses_them() {
        assert!(
            error("aws:region: {type: string, value: x}\n").contains("should not define a type")
        );
        assert!(
            error("aws:region: {default: x}\n").contains("'value' attribute instead of 'default'")
        );
        assert!(error("aws:region: {secret: true}\n").contains("must provide an attribute 'value'"));
        assert!(error("a: {default: 1, value: 2}\n").contains("both a 'default' and 'value'"));
        assert!(error("a: {type: array}\n").contains("'items' attribute"));
        assert!(error("a: {type: integer, default: x}\n")
            .contains("default value specified for configuration key 'a' is not of the expected type 'integer'"));
        assert!(error("a: {type: Number}\n").contains("unknown type \"Number\""));
        assert!(error("a: {tpye: string}\n").contains("unknown attribute \"tpye\""));
        assert!(error("a:b:c: 1\n").contains("could not parse"));
        assert!(error("a:\n").contains("neither a value nor a declaration"));
        // The YAML runtime's own type names are left to it.
        let section: Mapping = serde_norway::from_str("a: {type: List<Number>}\n").unwrap();
        let c = ProjectConfig::parse(
            &section,
            ParseOptions {
                project: "web",
                yaml_runtime: true,
            },
        )
        .unwrap();
        assert_eq!(c.declarations()[0].ty, None);
        // Nested arrays.
        let c = parse(
            "m: {type: array, items: {type: array, items: {type: integer}}, default: [[1]]}\n",
        )
        .unwrap();
        assert_eq!(
            c.declarations()[0].ty.as_ref().unwrap().to_string(),
            "array<array<integer>>"
        );
    }
}

//! What Converge reads of a Pulumi package schema: the canonical tokens
//! of its resources and functions, and the rule that maps the short forms
//! programs may write onto them.
//!
//! **The token rule.** A token is `package:module:Name`. A program may
//! write:
//!
//! - the canonical token itself (`random:index/randomPet:RandomPet`);
//! - `package:Name`, which means `package:index:Name`;
//! - `package:module:Name` for the canonical `package:module/name:Name`,
//!   whose module path ends in a segment that is the member's name with
//!   its first letter lowered (`random:index:RandomPet`,
//!   `aws:s3:Bucket` for `aws:s3/bucket:Bucket`; functions are named in
//!   lower camel case already: `command:local:run`).
//!
//! The module path's last segment is compared without regard to case, so
//! a name with an acronym (`SSHKey`, module `index/sshKey`) still matches;
//! the name itself is compared exactly.
//! Only tokens the schema declares are answered; a token that matches
//! none gets the schema's closest tokens as suggestions.
//!
//! Beside the tokens, a schema's [`Shapes`] (`shapes`): the names and
//! types of each member's properties, for checking programs' property
//! names before they run.

use std::collections::BTreeSet;

use serde::Deserialize;

mod shapes;

pub use shapes::{FunctionSpec, Properties, ResourceSpec, Shapes, TypeSpec, RESOURCE_OUTPUTS};

/// A resource type or a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    Resource,
    Function,
}

impl MemberKind {
    /// "resource type" / "function", for messages.
    pub fn noun(self) -> &'static str {
        match self {
            MemberKind::Resource => "resource type",
            MemberKind::Function => "function",
        }
    }
}

/// The canonical tokens a package schema declares, and what it says of
/// their properties.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackageSchema {
    pub name: String,
    pub version: Option<String>,
    pub resources: BTreeSet<String>,
    pub functions: BTreeSet<String>,
    /// The members' properties; empty when the schema says nothing of
    /// them, or says it in a shape this reader does not follow (the
    /// tokens are still read then).
    pub shapes: Shapes,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    #[error("the schema is not valid JSON: {0}")]
    Json(String),
    #[error("the schema is not a JSON object with a name")]
    Shape,
}

/// A token that names nothing the schema declares.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("package {package} has no {} '{token}'{}", kind.noun(), hint(suggestions))]
pub struct UnknownToken {
    pub package: String,
    pub kind: MemberKind,
    pub token: String,
    /// The closest declared tokens, closest first (at most three).
    pub suggestions: Vec<String>,
}

fn hint(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!("; did you mean '{one}'?"),
        many => {
            let quoted: Vec<String> = many.iter().map(|s| format!("'{s}'")).collect();
            format!("; did you mean one of {}?", quoted.join(", "))
        }
    }
}

impl PackageSchema {
    /// Reads the name, version, the keys of `resources` and `functions`,
    /// and their properties.
    pub fn from_json(schema: &serde_json::Value) -> Result<PackageSchema, SchemaError> {
        match shapes::RawSchema::deserialize(schema) {
            Ok(raw) => Ok(PackageSchema::from_raw(raw)),
            Err(_) => PackageSchema::tokens_of(schema),
        }
    }

    /// [`Self::from_json`] of a schema's JSON text (`GetSchema`'s answer),
    /// read in one pass.
    pub fn from_text(text: &str) -> Result<PackageSchema, SchemaError> {
        match serde_json::from_str::<shapes::RawSchema>(text) {
            Ok(raw) => Ok(PackageSchema::from_raw(raw)),
            Err(_) => {
                let value: serde_json::Value =
                    serde_json::from_str(text).map_err(|e| SchemaError::Json(e.to_string()))?;
                PackageSchema::tokens_of(&value)
            }
        }
    }

    fn from_raw(mut raw: shapes::RawSchema) -> PackageSchema {
        let shapes = raw.take_shapes();
        PackageSchema {
            name: raw.name,
            version: raw.version,
            resources: raw.resources.into_keys().collect(),
            functions: raw.functions.into_keys().collect(),
            shapes,
        }
    }

    /// The tokens alone, of a schema whose properties are not read.
    fn tokens_of(schema: &serde_json::Value) -> Result<PackageSchema, SchemaError> {
        let name = schema
            .get("name")
            .and_then(serde_json::Value::as_str)
            .ok_or(SchemaError::Shape)?;
        let keys = |section: &str| -> BTreeSet<String> {
            schema
                .get(section)
                .and_then(serde_json::Value::as_object)
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default()
        };
        Ok(PackageSchema {
            name: name.to_owned(),
            version: schema
                .get("version")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
            resources: keys("resources"),
            functions: keys("functions"),
            shapes: Shapes::default(),
        })
    }

    /// What the schema says of resource type `token`'s properties.
    pub fn resource_spec(&self, token: &str) -> Option<&ResourceSpec> {
        self.shapes.resources.get(token)
    }

    /// What the schema says of function `token`'s arguments and result.
    pub fn function_spec(&self, token: &str) -> Option<&FunctionSpec> {
        self.shapes.functions.get(token)
    }

    fn members(&self, kind: MemberKind) -> &BTreeSet<String> {
        match kind {
            MemberKind::Resource => &self.resources,
            MemberKind::Function => &self.functions,
        }
    }

    /// The canonical token `written` stands for (see the module's rule).
    pub fn resolve(&self, kind: MemberKind, written: &str) -> Result<&str, UnknownToken> {
        let members = self.members(kind);
        if let Some(t) = members.get(written) {
            return Ok(t);
        }
        if let Some((module, name)) = short_form(written) {
            let found = members.iter().find(|canonical| {
                split(canonical).is_some_and(|(m, n)| n == name && module_matches(m, module, n))
            });
            if let Some(t) = found {
                return Ok(t);
            }
        }
        Err(UnknownToken {
            package: self.name.clone(),
            kind,
            token: written.to_owned(),
            suggestions: closest(written, members),
        })
    }
}

/// `(module, name)` of `package:name` (module `index`) or
/// `package:module:name`.
fn short_form(token: &str) -> Option<(&str, &str)> {
    let parts: Vec<&str> = token.split(':').collect();
    match parts.as_slice() {
        [_, name] => Some(("index", name)),
        [_, module, name] => Some((module, name)),
        _ => None,
    }
}

/// `(module, name)` of a canonical `package:module:name`.
fn split(token: &str) -> Option<(&str, &str)> {
    let mut parts = token.splitn(3, ':');
    let _package = parts.next()?;
    Some((parts.next()?, parts.next()?))
}

/// True if the canonical module path `canonical` is the written `module`,
/// or `module/<name, first letter lowered>`.
fn module_matches(canonical: &str, module: &str, name: &str) -> bool {
    if canonical == module {
        return true;
    }
    match canonical.rsplit_once('/') {
        Some((prefix, last)) => prefix == module && last.eq_ignore_ascii_case(name),
        None => false,
    }
}

/// The declared tokens closest to `written` by edit distance (measured
/// against both the canonical token and its short forms): those tied at
/// the smallest distance, if that is small enough (a third of the name,
/// at least two edits) to be a likely typo.
fn closest(written: &str, members: &BTreeSet<String>) -> Vec<String> {
    let mut scored: Vec<(usize, &String)> = members
        .iter()
        .map(|canonical| {
            let mut d = strsim::osa_distance(written, canonical);
            if let Some((module, name)) = split(canonical) {
                let package = canonical.split(':').next().unwrap_or_default();
                let module = module.split('/').next().unwrap_or(module);
                let short = format!("{package}:{module}:{name}");
                d = d.min(strsim::osa_distance(written, &short));
                if module == "index" {
                    d = d.min(strsim::osa_distance(written, &format!("{package}:{name}")));
                }
            }
            (d, canonical)
        })
        .collect();
    scored.sort();
    let name_len = written
        .rsplit(':')
        .next()
        .unwrap_or(written)
        .chars()
        .count();
    let limit = (name_len / 3).max(2);
    let Some(&(best, _)) = scored.first() else {
        return Vec::new();
    };
    scored
        .into_iter()
        .take_while(|(d, _)| *d == best && best <= limit)
        .take(3)
        .map(|(_, t)| t.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random() -> PackageSchema {
        PackageSchema::from_json(&serde_json::json!({
            "name": "random",
            "resources": {
                "random:index/randomPet:RandomPet": {},
                "random:index/randomPassword:RandomPassword": {},
                "random:index/randomString:RandomString": {},
                "random:index/randomUuid:RandomUuid": {},
                "random:index/sshKey:SSHKey": {},
            },
            "functions": {"random:index/randomPick:randomPick": {}},
        }))
        .unwrap()
    }

    #[test]
    fn short_forms_resolve_to_the_canonical_token() {
        let s = random();
        let pet = "random:index/randomPet:RandomPet";
        for written in [pet, "random:RandomPet", "random:index:RandomPet"] {
            assert_eq!(s.resolve(MemberKind::Resource, written), Ok(pet));
        }
        // The module's last segment is compared regardless of case; the
        // name is not.
        assert_eq!(
            s.resolve(MemberKind::Resource, "random:SSHKey"),
            Ok("random:index/sshKey:SSHKey")
        );
        assert!(s
            .resolve(MemberKind::Resource, "random:RandomUUID")
            .is_err());
        let pick = "random:index/randomPick:randomPick";
        for written in [pick, "random:randomPick", "random:index:randomPick"] {
            assert_eq!(s.resolve(MemberKind::Function, written), Ok(pick));
        }
    }

    /// A namespaced package (`namespace` in its schema) names its SDKs
    /// (`@a-namespace/namespaced`, `a_namespace_namespaced`); its tokens
    /// and its plugin keep the package's plain name.
    #[test]
    fn a_namespaced_package_keeps_its_plain_name_and_tokens() {
        let text = serde_json::json!({
            "name": "namespaced",
            "namespace": "a-namespace",
            "version": "16.0.0",
            "resources": {"namespaced:index:Resource": {
                "inputProperties": {"value": {"type": "boolean"}},
            }},
        })
        .to_string();
        let s = PackageSchema::from_text(&text).unwrap();
        assert_eq!(s.name, "namespaced");
        assert_eq!(
            s.resolve(MemberKind::Resource, "namespaced:Resource"),
            Ok("namespaced:index:Resource")
        );
    }

    #[test]
    fn modules_other_than_index_resolve() {
        let s = PackageSchema::from_json(&serde_json::json!({
            "name": "command",
            "resources": {"command:local:Command": {}, "command:remote/copy:Copy": {}},
            "functions": {"command:local:run": {}},
        }))
        .unwrap();
        assert_eq!(
            s.resolve(MemberKind::Resource, "command:local:Command"),
            Ok("command:local:Command")
        );
        assert_eq!(
            s.resolve(MemberKind::Resource, "command:remote:Copy"),
            Ok("command:remote/copy:Copy")
        );
        assert_eq!(
            s.resolve(MemberKind::Function, "command:local:run"),
            Ok("command:local:run")
        );
        // A function is not a resource, nor the other way round.
        assert!(s
            .resolve(MemberKind::Resource, "command:local:run")
            .is_err());
        assert!(s.resolve(MemberKind::Resource, "command:Command").is_err());
    }

    #[test]
    fn unknown_tokens_suggest_the_closest() {
        let s = random();
        let e = s
            .resolve(MemberKind::Resource, "random:RandomPett")
            .unwrap_err();
        assert_eq!(e.suggestions, vec!["random:index/randomPet:RandomPet"]);
        assert_eq!(
            e.to_string(),
            "package random has no resource type 'random:RandomPett'; \
             did you mean 'random:index/randomPet:RandomPet'?"
        );
        let e = s
            .resolve(MemberKind::Resource, "random:Network")
            .unwrap_err();
        assert!(e.suggestions.is_empty(), "{e}");
    }

    #[test]
    fn text_that_is_no_schema_is_an_error() {
        assert!(matches!(
            PackageSchema::from_text("nope"),
            Err(SchemaError::Json(_))
        ));
        assert_eq!(PackageSchema::from_text("{}"), Err(SchemaError::Shape));
    }
}

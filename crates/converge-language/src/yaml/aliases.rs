//! `options.aliases`: each entry a former URN, or an object naming what
//! was different — `name`, `type`, `parent` (a resource, or its URN),
//! `noParent`, `stack`, `project` — as Pulumi YAML takes them; what is not
//! given is as it is now.

use converge_engine::{Alias, AliasParent, AliasSpec};
use converge_model::{PropertyMap, PropertyValue, Urn};

use super::eval::{article, strip, Scope};
use super::expr::{Expr, ExprKind};
use super::{Pos, YamlError};

const FIELDS: [&str; 6] = ["name", "type", "parent", "noParent", "stack", "project"];

/// The problems a literal aliases list shows before anything runs: a
/// field Pulumi YAML does not know, and literals of the wrong kind.
pub(super) fn check(e: &Expr) -> Vec<(Pos, String)> {
    let mut problems = Vec::new();
    let ExprKind::List(items) = &e.kind else {
        return problems;
    };
    for item in items {
        let ExprKind::Object(entries) = &item.kind else {
            continue;
        };
        for (key, value) in entries {
            if !FIELDS.contains(&key.name.as_str()) {
                let hint = super::suggest(&key.name, FIELDS)
                    .map(|s| format!(" (did you mean '{s}'?)"))
                    .unwrap_or_default();
                problems.push((
                    key.pos,
                    format!(
                        "an alias has no field '{}'{hint}; its fields are {}",
                        key.name,
                        FIELDS.join(", ")
                    ),
                ));
                continue;
            }
            let expected = if key.name == "noParent" {
                "a boolean"
            } else if key.name == "parent" {
                continue;
            } else {
                "a string"
            };
            if let Some(kind) = value.literal_kind() {
                if kind != expected && kind != "null" {
                    problems.push((
                        value.pos,
                        format!("an alias's '{}' must be {expected}, not {kind}", key.name),
                    ));
                }
            }
        }
    }
    problems
}

/// The aliases the option's value gives.
pub(super) async fn resolve(scope: &Scope<'_>, e: &Expr) -> Result<Vec<Alias>, YamlError> {
    let value = strip(&scope.eval(e).await?);
    if value.unknown {
        return Err(scope.error(
            e.pos,
            "options.aliases must be known before the resource is registered",
        ));
    }
    let items = match value.value {
        PropertyValue::Array(items) => items,
        PropertyValue::Null => Vec::new(),
        other => {
            return Err(scope.error(
                e.pos,
                format!("options.aliases must be a list, not {}", article(&other)),
            ))
        }
    };
    items
        .into_iter()
        .map(|item| match item {
            PropertyValue::String(text) => Urn::parse(&text)
                .map(Alias::Urn)
                .map_err(|err| scope.error(e.pos, format!("options.aliases: {err}"))),
            PropertyValue::Object(fields) => spec(&fields)
                .map(Alias::Spec)
                .map_err(|m| scope.error(e.pos, format!("options.aliases: {m}"))),
            other => Err(scope.error(
                e.pos,
                format!(
                    "options.aliases must hold URNs or alias objects, not {}",
                    article(&other)
                ),
            )),
        })
        .collect()
}

fn spec(fields: &PropertyMap) -> Result<AliasSpec, String> {
    let text = |key: &str| -> Result<Option<String>, String> {
        match fields.get(key) {
            None | Some(PropertyValue::Null) => Ok(None),
            Some(PropertyValue::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "an alias's '{key}' must be a string, not {}",
                article(other)
            )),
        }
    };
    if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "an alias has no field '{unknown}'; its fields are {}",
            FIELDS.join(", ")
        ));
    }
    let no_parent = match fields.get("noParent") {
        None | Some(PropertyValue::Null) => false,
        Some(PropertyValue::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "an alias's 'noParent' must be a boolean, not {}",
                article(other)
            ))
        }
    };
    let parent = match fields.get("parent") {
        None | Some(PropertyValue::Null) => None,
        Some(PropertyValue::ResourceReference(r)) => Some(r.urn.clone()),
        Some(PropertyValue::String(s)) => {
            Some(Urn::parse(s).map_err(|e| format!("an alias's 'parent': {e}"))?)
        }
        Some(other) => {
            return Err(format!(
                "an alias's 'parent' must be a resource or its URN, not {}",
                article(other)
            ))
        }
    };
    let parent = match (parent, no_parent) {
        (Some(_), true) => return Err("an alias takes 'parent' or 'noParent', not both".to_owned()),
        (Some(urn), false) => AliasParent::Urn(urn),
        (None, true) => AliasParent::None,
        (None, false) => AliasParent::Current,
    };
    Ok(AliasSpec {
        name: text("name")?,
        type_token: text("type")?,
        stack: text("stack")?,
        project: text("project")?,
        parent,
    })
}

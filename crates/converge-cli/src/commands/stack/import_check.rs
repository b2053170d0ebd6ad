//! The slips of a hand-edited `stack import` file, found before it is
//! read: a key that looks like a misspelling of one Converge reads
//! (`resource` for `resources`, `protected` for `protect`) would otherwise
//! be kept as an opaque field or ignored, and what it meant lost — an
//! emptied stack, an unprotected resource, a dependency dropped — and a
//! resource whose `type` is not the type its URN names. A key unlike any
//! known one (a field of a newer Pulumi) is kept as it is, with a warning.

use converge_state::checkpoint::{DEPLOYMENT_KEYS, FILE_KEYS, OPERATION_KEYS, RESOURCE_KEYS};
use serde_json::{Map, Value};

use crate::unknown_keys::misspelled;

/// What the check found.
#[derive(Debug, Default)]
pub(super) struct Findings {
    /// Misspelled keys and mismatched types: refused unless `--force`.
    pub slips: Vec<String>,
    /// Keys of resources Converge does not know, kept in the state.
    pub kept: Vec<String>,
}

/// Checks a parsed `stack export` file.
pub(super) fn check(file: &Value) -> Findings {
    let mut f = Findings::default();
    let Some(top) = file.as_object() else {
        return f;
    };
    keys(top, FILE_KEYS, "the file", &mut f, KeepUnknown::Silently);
    let Some(deployment) = top.get("deployment").and_then(Value::as_object) else {
        return f;
    };
    keys(
        deployment,
        DEPLOYMENT_KEYS,
        "`deployment`",
        &mut f,
        KeepUnknown::Silently,
    );
    for r in list(deployment, "resources") {
        resource(r, &mut f);
    }
    for op in list(deployment, "pending_operations") {
        let Some(op) = op.as_object() else { continue };
        keys(
            op,
            OPERATION_KEYS,
            "a pending operation",
            &mut f,
            KeepUnknown::Silently,
        );
        if let Some(r) = op.get("resource") {
            resource(r, &mut f);
        }
    }
    f
}

/// Whether a key unlike any known one is reported as kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeepUnknown {
    Silently,
    WithWarning,
}

fn list<'a>(object: &'a Map<String, Value>, key: &str) -> &'a [Value] {
    object
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn resource(r: &Value, f: &mut Findings) {
    let Some(r) = r.as_object() else { return };
    let urn = r.get("urn").and_then(Value::as_str).unwrap_or("?");
    let place = format!("resource {urn}");
    keys(r, RESOURCE_KEYS, &place, f, KeepUnknown::WithWarning);
    if let (Some(named), Some(written)) = (urn_type(urn), r.get("type").and_then(Value::as_str)) {
        if named != written {
            f.slips.push(format!(
                "{place}: its `type` is `{written}`, but its URN names the type `{named}`"
            ));
        }
    }
}

fn keys(
    object: &Map<String, Value>,
    known: &[&str],
    place: &str,
    f: &mut Findings,
    keep: KeepUnknown,
) {
    let slips = misspelled(object, known);
    for (key, meant) in &slips {
        f.slips.push(format!(
            "{place}: unknown key `{key}`; did you mean `{meant}`?"
        ));
    }
    if keep == KeepUnknown::WithWarning {
        let strangers = object
            .keys()
            .filter(|k| !known.contains(&k.as_str()) && !slips.iter().any(|(s, _)| s == *k));
        for key in strangers {
            f.kept.push(format!(
                "{place}: key `{key}` is not one Converge reads; it is kept in the state as it is"
            ));
        }
    }
}

/// The type a URN names (`urn:pulumi:STACK::PROJECT::[PARENT$]TYPE::NAME`).
fn urn_type(urn: &str) -> Option<&str> {
    let rest = urn.strip_prefix("urn:pulumi:")?;
    let qualified = rest.split("::").nth(2)?;
    qualified.rsplit('$').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(resources: Value) -> Value {
        serde_json::json!({"version": 3, "deployment": {"resources": resources}})
    }

    #[test]
    fn misspelled_keys_are_slips_and_strangers_are_kept() {
        let f = check(&serde_json::json!({"version": 3, "deployment": {"resource": []}}));
        assert_eq!(
            f.slips,
            ["`deployment`: unknown key `resource`; did you mean `resources`?"]
        );
        let urn = "urn:pulumi:dev::p::random:index/randomPet:RandomPet::a";
        let f = check(&file(serde_json::json!([{
            "urn": urn, "type": "random:index/randomPet:RandomPet",
            "Protect": true, "dependencys": [], "futureField": 1,
        }])));
        assert_eq!(
            f.slips,
            [
                format!("resource {urn}: unknown key `Protect`; did you mean `protect`?"),
                format!("resource {urn}: unknown key `dependencys`; did you mean `dependencies`?"),
            ]
        );
        assert_eq!(f.kept.len(), 1, "{:?}", f.kept);
    }

    #[test]
    fn a_type_its_urn_does_not_name_is_a_slip() {
        let urn = "urn:pulumi:dev::p::my:index:Parent$random:index/randomPet:RandomPet::a::b";
        assert_eq!(urn_type(urn), Some("random:index/randomPet:RandomPet"));
        let f = check(&file(serde_json::json!([
            {"urn": urn, "type": "random:index/randomPet:RandomPet"},
            {"urn": urn, "type": "random:index/randomPet:RandomPt"},
        ])));
        assert_eq!(f.slips.len(), 1, "{:?}", f.slips);
        assert!(f.slips[0].contains("`random:index/randomPet:RandomPt`"));
    }
}

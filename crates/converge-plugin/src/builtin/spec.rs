//! What the built-in providers share: property tables (one per resource,
//! used for Check, Diff and the schema), value accessors and the generic
//! Check and Diff over a table.

use std::collections::BTreeMap;

use converge_model::{diff_objects, PropertyMap, PropertyPath, PropertyValue};
use serde_json::{json, Map, Value};

use crate::provider::{CheckFailure, CheckResponse, DiffChanges, DiffResponse};

/// The type of a property, as the schema names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Bool,
    Int,
    Str,
    StrMap,
    StrList,
    AnyList,
    Archive,
    AssetMap,
    /// A string enum: its type token and `(value, description)`s.
    Enum(&'static str, &'static [(&'static str, &'static str)]),
}

/// A default applied by Check.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Dflt {
    Bool(bool),
    Int(i64),
    Str(&'static str),
}

/// One property of a resource or function.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prop {
    pub name: &'static str,
    pub ty: Ty,
    pub doc: &'static str,
    /// For inputs: required in Check; for outputs: always present.
    pub required: bool,
    pub default: Option<Dflt>,
    pub secret: bool,
    /// A change of this input makes the provider's Diff ask for replacement.
    pub replace: bool,
    /// The schema marks the property `replaceOnChanges` (SDKs then add the
    /// resource option themselves).
    pub replace_on_changes: bool,
}

impl Prop {
    pub const fn new(name: &'static str, ty: Ty, doc: &'static str) -> Self {
        Prop {
            name,
            ty,
            doc,
            required: false,
            default: None,
            secret: false,
            replace: false,
            replace_on_changes: false,
        }
    }
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }
    pub const fn default(mut self, d: Dflt) -> Self {
        self.default = Some(d);
        self
    }
    pub const fn secret(mut self) -> Self {
        self.secret = true;
        self
    }
    pub const fn replace(mut self) -> Self {
        self.replace = true;
        self
    }
    pub const fn replace_on_changes(mut self) -> Self {
        self.replace_on_changes = true;
        self
    }
}

/// A resource (or function): its token, inputs and output-only properties.
#[derive(Debug)]
pub(crate) struct Spec {
    pub token: &'static str,
    pub doc: &'static str,
    pub inputs: &'static [Prop],
    pub outputs: &'static [Prop],
}

impl Spec {
    pub fn input(&self, name: &str) -> Option<&Prop> {
        self.inputs.iter().find(|p| p.name == name)
    }
}

// ---- values ---------------------------------------------------------------

/// The value inside secrets and known outputs; `None` if unknown.
pub(crate) fn peel(mut v: &PropertyValue) -> Option<&PropertyValue> {
    loop {
        match v {
            PropertyValue::Secret(inner) => v = inner,
            PropertyValue::Output(o) => v = o.element.as_deref()?,
            PropertyValue::Unknown => return None,
            _ => return Some(v),
        }
    }
}

/// The known, non-null value of `key`.
pub(crate) fn get<'a>(m: &'a PropertyMap, key: &str) -> Option<&'a PropertyValue> {
    m.get(key)
        .and_then(peel)
        .filter(|v| !matches!(v, PropertyValue::Null))
}

pub(crate) fn get_str<'a>(m: &'a PropertyMap, key: &str) -> Option<&'a str> {
    get(m, key).and_then(PropertyValue::as_str)
}

pub(crate) fn get_bool(m: &PropertyMap, key: &str) -> Option<bool> {
    match get(m, key) {
        Some(PropertyValue::Bool(b)) => Some(*b),
        _ => None,
    }
}

pub(crate) fn get_int(m: &PropertyMap, key: &str) -> Option<i64> {
    match get(m, key) {
        Some(PropertyValue::Number(n)) => as_int(*n),
        _ => None,
    }
}

fn as_int(n: f64) -> Option<i64> {
    (n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15).then_some(n as i64)
}

/// A list of strings (elements that are not known strings are skipped).
pub(crate) fn get_str_list(m: &PropertyMap, key: &str) -> Option<Vec<String>> {
    match get(m, key) {
        Some(PropertyValue::Array(items)) => Some(
            items
                .iter()
                .filter_map(|v| peel(v).and_then(PropertyValue::as_str))
                .map(str::to_owned)
                .collect(),
        ),
        _ => None,
    }
}

/// A map of strings (entries that are not known strings are skipped).
pub(crate) fn get_str_map(m: &PropertyMap, key: &str) -> BTreeMap<String, String> {
    match get(m, key) {
        Some(PropertyValue::Object(o)) => o
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), peel(v)?.as_str()?.to_owned())))
            .collect(),
        _ => BTreeMap::new(),
    }
}

pub(crate) fn int(n: i64) -> PropertyValue {
    PropertyValue::Number(n as f64)
}

/// True if any value in `m` is (or holds) an unknown.
pub(crate) fn any_unknown(m: &PropertyMap) -> bool {
    m.values().any(PropertyValue::contains_unknowns)
}

/// `v` without secret wrappers or known-output wrappers (an unknown output
/// becomes [`PropertyValue::Unknown`]).
pub(crate) fn plain(v: &PropertyValue) -> PropertyValue {
    match v {
        PropertyValue::Secret(inner) => plain(inner),
        PropertyValue::Output(o) => o.element.as_deref().map_or(PropertyValue::Unknown, plain),
        PropertyValue::Array(items) => PropertyValue::Array(items.iter().map(plain).collect()),
        PropertyValue::Object(m) => PropertyValue::Object(plain_map(m)),
        other => other.clone(),
    }
}

pub(crate) fn plain_map(m: &PropertyMap) -> PropertyMap {
    m.iter().map(|(k, v)| (k.clone(), plain(v))).collect()
}

/// Every string that is secret somewhere in `m` (to redact from messages).
pub(crate) fn secret_strings(m: &PropertyMap) -> Vec<String> {
    fn walk(v: &PropertyValue, secret: bool, out: &mut Vec<String>) {
        match v {
            PropertyValue::Secret(inner) => walk(inner, true, out),
            PropertyValue::Output(o) => {
                if let Some(e) = &o.element {
                    walk(e, secret || o.secret, out);
                }
            }
            PropertyValue::String(s) if secret && !s.is_empty() => out.push(s.clone()),
            PropertyValue::Array(items) => items.iter().for_each(|i| walk(i, secret, out)),
            PropertyValue::Object(m) => m.values().for_each(|i| walk(i, secret, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    m.values().for_each(|v| walk(v, false, &mut out));
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out.dedup();
    out
}

/// `text` with every secret replaced by `[secret]`.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .fold(text.to_owned(), |t, s| t.replace(s.as_str(), "[secret]"))
}

// ---- check -----------------------------------------------------------------

fn type_error(ty: Ty, v: &PropertyValue) -> Option<String> {
    let v = match peel(v) {
        None | Some(PropertyValue::Null) => return None,
        Some(v) => v,
    };
    fn all_strings<'a>(mut items: impl Iterator<Item = &'a PropertyValue>) -> bool {
        items.all(|i| matches!(peel(i), None | Some(PropertyValue::String(_))))
    }
    let ok = match (ty, v) {
        (Ty::Bool, PropertyValue::Bool(_)) => true,
        (Ty::Int, PropertyValue::Number(n)) => as_int(*n).is_some(),
        (Ty::Str, PropertyValue::String(_)) => true,
        (Ty::Enum(_, values), PropertyValue::String(s)) => {
            if !values.iter().any(|(v, _)| v == s) {
                let allowed: Vec<&str> = values.iter().map(|(v, _)| *v).collect();
                return Some(format!("must be one of {}", allowed.join(", ")));
            }
            true
        }
        (Ty::StrMap, PropertyValue::Object(m)) => all_strings(m.values()),
        (Ty::StrList, PropertyValue::Array(a)) => all_strings(a.iter()),
        (Ty::AnyList, PropertyValue::Array(_)) => true,
        (Ty::Archive, PropertyValue::Archive(_)) => true,
        (Ty::AssetMap, PropertyValue::Object(_)) => true,
        _ => false,
    };
    (!ok).then(|| format!("expected {}, got {}", ty_name(ty), v.kind_name()))
}

fn ty_name(ty: Ty) -> &'static str {
    match ty {
        Ty::Bool => "a bool",
        Ty::Int => "an integer",
        Ty::Str | Ty::Enum(..) => "a string",
        Ty::StrMap => "a map of strings",
        Ty::StrList => "a list of strings",
        Ty::AnyList => "a list",
        Ty::Archive => "an archive",
        Ty::AssetMap => "a map of assets",
    }
}

pub(crate) fn failure(property: &str, reason: impl Into<String>) -> CheckFailure {
    CheckFailure {
        property: property.to_owned(),
        reason: reason.into(),
    }
}

/// Check against a table: known properties of the right types, required
/// ones present, defaults applied, nulls and `__`-prefixed keys dropped.
pub(crate) fn check(spec: &Spec, news: &PropertyMap) -> CheckResponse {
    let mut inputs = PropertyMap::new();
    let mut failures = Vec::new();
    for (key, value) in news {
        if key.starts_with("__") || matches!(value, PropertyValue::Null) {
            continue;
        }
        match spec.input(key) {
            None => failures.push(failure(key, format!("unknown property of {}", spec.token))),
            Some(p) => {
                if let Some(reason) = type_error(p.ty, value) {
                    failures.push(failure(key, reason));
                }
                inputs.insert(key.clone(), value.clone());
            }
        }
    }
    for p in spec.inputs {
        if inputs.contains_key(p.name) {
            continue;
        }
        match p.default {
            Some(Dflt::Bool(b)) => {
                inputs.insert(p.name.into(), b.into());
            }
            Some(Dflt::Int(n)) => {
                inputs.insert(p.name.into(), int(n));
            }
            Some(Dflt::Str(s)) => {
                inputs.insert(p.name.into(), s.into());
            }
            None if p.required => failures.push(failure(
                p.name,
                format!("missing required property '{}'", p.name),
            )),
            None => {}
        }
    }
    CheckResponse { inputs, failures }
}

// ---- diff ------------------------------------------------------------------

/// Diffs the new inputs against the old state (`olds`: old outputs, which
/// hold every input with its defaults), over the spec's inputs only,
/// secrets compared by content. A change under a key for which `replace`
/// answers true requires replacement; `ignore` paths are skipped.
pub(crate) fn diff(
    spec: &Spec,
    olds: &PropertyMap,
    news: &PropertyMap,
    ignore: &[String],
    replace: impl Fn(&str) -> bool,
) -> DiffResponse {
    if same_inputs(spec, olds, news) {
        // Nothing to diff (most resources of most updates): the same as
        // the diff below finds for equal inputs, without copying them.
        return DiffResponse {
            changes: DiffChanges::None,
            replace_keys: Vec::new(),
            stable_keys: news
                .keys()
                .filter(|k| spec.input(k).is_some())
                .cloned()
                .collect(),
            changed_keys: Vec::new(),
            detailed_diff: Some(BTreeMap::new()),
            delete_before_replace: false,
            upgraded_outputs: None,
        };
    }
    full_diff(spec, olds, news, ignore, replace)
}

/// [`diff`] without its shortcut for equal inputs.
fn full_diff(
    spec: &Spec,
    olds: &PropertyMap,
    news: &PropertyMap,
    ignore: &[String],
    replace: impl Fn(&str) -> bool,
) -> DiffResponse {
    let restrict = |m: &PropertyMap| -> PropertyMap {
        m.iter()
            .filter(|(k, _)| spec.input(k).is_some())
            .map(|(k, v)| (k.clone(), plain(v)))
            .collect()
    };
    let (old, new) = (restrict(olds), restrict(news));
    let ignored: Vec<PropertyPath> = ignore
        .iter()
        .filter_map(|p| PropertyPath::parse(p).ok())
        .collect();
    let mut detailed = BTreeMap::new();
    let mut changed = Vec::new();
    let mut replace_keys = Vec::new();
    for (path, mut d) in diff_objects(&old, &new) {
        if ignored.iter().any(|i| i.contains(&path)) {
            continue;
        }
        let top = match path.elements().first() {
            Some(converge_model::PathElement::Key(k)) => k.clone(),
            _ => continue,
        };
        if replace(&top) {
            d.kind = d.kind.with_replace();
            if !replace_keys.contains(&top) {
                replace_keys.push(top.clone());
            }
        }
        if !changed.contains(&top) {
            changed.push(top);
        }
        detailed.insert(path.to_string(), d);
    }
    let stable_keys = new
        .keys()
        .filter(|k| !changed.contains(k))
        .cloned()
        .collect();
    DiffResponse {
        changes: if detailed.is_empty() {
            DiffChanges::None
        } else {
            DiffChanges::Some
        },
        replace_keys,
        stable_keys,
        changed_keys: changed,
        detailed_diff: Some(detailed),
        delete_before_replace: false,
        upgraded_outputs: None,
    }
}

/// Whether `olds` and `news` hold the same inputs of `spec`, wrappers and
/// all: then their diff is empty. (Inputs that differ only in ways the
/// diff ignores, a secret wrapper or a null against a missing key, are
/// left to the diff.)
fn same_inputs(spec: &Spec, olds: &PropertyMap, news: &PropertyMap) -> bool {
    let inputs = |m: &PropertyMap| m.keys().filter(|k| spec.input(k).is_some()).count();
    news.iter()
        .filter(|(k, _)| spec.input(k).is_some())
        .all(|(k, v)| olds.get(k) == Some(v))
        && inputs(olds) == inputs(news)
}

/// Outputs for `Update` of a resource whose changes all force replacement
/// (so never reached with a real change): the old state with the new inputs.
pub(crate) fn merge_inputs(spec: &Spec, olds: &PropertyMap, news: &PropertyMap) -> PropertyMap {
    let mut out: PropertyMap = olds
        .iter()
        .filter(|(k, _)| spec.input(k).is_none())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.extend(news.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

// ---- schema ------------------------------------------------------------------

fn ty_json(ty: Ty) -> Value {
    match ty {
        Ty::Bool => json!({"type": "boolean"}),
        Ty::Int => json!({"type": "integer"}),
        Ty::Str => json!({"type": "string"}),
        Ty::StrMap => json!({"type": "object", "additionalProperties": {"type": "string"}}),
        Ty::StrList => json!({"type": "array", "items": {"type": "string"}}),
        Ty::AnyList => json!({"type": "array", "items": {"$ref": "pulumi.json#/Any"}}),
        Ty::Archive => json!({"$ref": "pulumi.json#/Archive"}),
        Ty::AssetMap => {
            json!({"type": "object", "additionalProperties": {"$ref": "pulumi.json#/Asset"}})
        }
        Ty::Enum(token, _) => json!({"$ref": format!("#/types/{token}")}),
    }
}

fn prop_json(p: &Prop) -> Value {
    let mut v = ty_json(p.ty);
    let o = v.as_object_mut().expect("ty_json makes objects");
    o.insert("description".into(), p.doc.into());
    match p.default {
        Some(Dflt::Bool(b)) => {
            o.insert("default".into(), b.into());
        }
        Some(Dflt::Int(n)) => {
            o.insert("default".into(), n.into());
        }
        Some(Dflt::Str(s)) => {
            o.insert("default".into(), s.into());
        }
        None => {}
    }
    if p.secret {
        o.insert("secret".into(), true.into());
    }
    if p.replace_on_changes {
        o.insert("replaceOnChanges".into(), true.into());
    }
    if p.replace {
        o.insert("willReplaceOnChanges".into(), true.into());
    }
    v
}

fn props_json<'a>(props: impl Iterator<Item = &'a Prop>) -> Value {
    Value::Object(props.map(|p| (p.name.to_owned(), prop_json(p))).collect())
}

/// A resource's schema entry: outputs are every input plus the output-only
/// properties; inputs with a default are always present in the state.
pub(crate) fn resource_json(spec: &Spec) -> Value {
    let all = || spec.inputs.iter().chain(spec.outputs);
    let required: Vec<&str> = all()
        .filter(|p| p.required || p.default.is_some())
        .map(|p| p.name)
        .collect();
    let required_inputs: Vec<&str> = spec
        .inputs
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    json!({
        "description": spec.doc,
        "properties": props_json(all()),
        "required": required,
        "inputProperties": props_json(spec.inputs.iter()),
        "requiredInputs": required_inputs,
    })
}

/// A function's schema entry.
pub(crate) fn function_json(spec: &Spec) -> Value {
    let all = || spec.inputs.iter().chain(spec.outputs);
    let required_inputs: Vec<&str> = spec
        .inputs
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    let required_outputs: Vec<&str> = all().filter(|p| p.required).map(|p| p.name).collect();
    json!({
        "description": spec.doc,
        "inputs": {
            "type": "object",
            "properties": props_json(spec.inputs.iter()),
            "required": required_inputs,
        },
        "outputs": {
            "type": "object",
            "properties": props_json(all()),
            "required": required_outputs,
        },
    })
}

/// Enum types used by `specs`, as schema `types` entries.
fn enum_types(specs: &[&Spec]) -> Map<String, Value> {
    let mut types = Map::new();
    for p in specs.iter().flat_map(|s| s.inputs.iter().chain(s.outputs)) {
        if let Ty::Enum(token, values) = p.ty {
            let values: Vec<Value> = values
                .iter()
                .map(|(v, d)| json!({"value": v, "description": d}))
                .collect();
            types.insert(
                token.to_owned(),
                json!({"type": "string", "enum": values, "description": p.doc}),
            );
        }
    }
    types
}

/// A whole package schema.
pub(crate) fn package_json(
    name: &str,
    version: &str,
    description: &str,
    resources: &[&Spec],
    functions: &[&Spec],
) -> Value {
    let all: Vec<&Spec> = resources.iter().chain(functions).copied().collect();
    let resources: Map<String, Value> = resources
        .iter()
        .map(|s| (s.token.to_owned(), resource_json(s)))
        .collect();
    let functions: Map<String, Value> = functions
        .iter()
        .map(|s| (s.token.to_owned(), function_json(s)))
        .collect();
    json!({
        "name": name,
        "version": version,
        "description": description,
        "publisher": "Converge",
        "provider": {"description": format!("The built-in {name} provider.")},
        "config": {},
        "types": enum_types(&all),
        "resources": resources,
        "functions": functions,
    })
}

#[cfg(test)]
mod tests {
    use converge_model::{OutputValue, PropertyMap, PropertyValue};

    use super::*;

    const INPUTS: &[Prop] = &[
        Prop::new("min", Ty::Int, "").required(),
        Prop::new("keepers", Ty::StrMap, "").replace(),
    ];

    fn spec() -> Spec {
        Spec {
            token: "test:index:Thing",
            doc: "",
            inputs: INPUTS,
            outputs: &[],
        }
    }

    fn map(entries: &[(&str, PropertyValue)]) -> PropertyMap {
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    /// The shortcut for equal inputs answers what the full diff answers,
    /// and is not taken where the full diff has something to say.
    #[test]
    fn equal_inputs_diff_as_the_full_diff_does() {
        let keepers = PropertyValue::Object(map(&[("gen", "g0".into())]));
        let secret = PropertyValue::Secret(Box::new("s".into()));
        let unknown = PropertyValue::Output(Box::new(OutputValue {
            element: None,
            secret: false,
            dependencies: Vec::new(),
        }));
        let state = map(&[
            ("min", 1.0.into()),
            ("keepers", keepers.clone()),
            ("result", 7.0.into()),
        ]);
        let cases = [
            // Equal inputs; the output `result` is not an input.
            (
                state.clone(),
                map(&[("min", 1.0.into()), ("keepers", keepers.clone())]),
            ),
            // A changed keeper, a secret against a plain value, an unknown,
            // a null against a missing key, an input the old state lacks.
            (
                state.clone(),
                map(&[("min", 1.0.into()), ("keepers", map_value("g1"))]),
            ),
            (
                state.clone(),
                map(&[("min", 1.0.into()), ("keepers", secret.clone())]),
            ),
            (
                state.clone(),
                map(&[("min", unknown.clone()), ("keepers", keepers.clone())]),
            ),
            (
                map(&[("min", 1.0.into()), ("keepers", PropertyValue::Null)]),
                map(&[("min", 1.0.into())]),
            ),
            (
                map(&[("min", 1.0.into())]),
                map(&[("min", 1.0.into()), ("keepers", keepers)]),
            ),
            (
                map(&[("min", f64::NAN.into())]),
                map(&[("min", f64::NAN.into())]),
            ),
        ];
        for (olds, news) in cases {
            let ignore = ["keepers.other".to_owned()];
            let replace = |k: &str| k == "keepers";
            assert_eq!(
                diff(&spec(), &olds, &news, &ignore, replace),
                full_diff(&spec(), &olds, &news, &ignore, replace),
                "olds {olds:?}, news {news:?}"
            );
        }
        assert!(same_inputs(&spec(), &state, &state));
    }

    fn map_value(generation: &str) -> PropertyValue {
        PropertyValue::Object(map(&[("gen", generation.into())]))
    }
}

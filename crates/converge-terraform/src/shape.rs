//! Pulumi's shape of a resource's properties (camelCase names, secrets
//! and output values as wrappers) ↔ Terraform's (the schema's attribute
//! names, plain values), guided by the schema.
//!
//! Going to Terraform, secrets are unwrapped and the top-level attributes
//! that held one are remembered ([`SecretAttrs`]); coming back, those
//! attributes and every `sensitive` attribute are wrapped as secrets
//! again. Object-typed values have their attribute names mapped; map keys
//! are the user's and never change.

use std::collections::BTreeSet;

use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::terraform::values::{
    decode_json, decode_msgpack, encode_msgpack, CtyType, ValueError,
};

use crate::names::{pulumi_name, tf_name_guess};
use crate::schema::{Block, Member, Nesting};

/// The top-level attributes (Terraform names) whose value held a secret.
pub type SecretAttrs = BTreeSet<String>;

/// A property the schema does not allow, as a check failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeFailure {
    /// The Pulumi property name.
    pub property: String,
    pub reason: String,
}

/// What a configuration is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigKind {
    /// A resource's or data source's arguments: computed-only attributes
    /// may not be set.
    Arguments,
    /// A provider's configuration from stack config: values of collection
    /// and object types may arrive as JSON text.
    ProviderConfig,
}

/// A Pulumi property map as a Terraform configuration object of `block`.
/// Every property must name an attribute or block of the schema.
pub fn config_to_tf(
    block: &Block,
    props: &PropertyMap,
    kind: ConfigKind,
) -> Result<(PropertyMap, SecretAttrs), Vec<ShapeFailure>> {
    let mut out = PropertyMap::new();
    let mut secrets = SecretAttrs::new();
    let mut failures = Vec::new();
    for (name, value) in props {
        let Some(member) = block.member(name) else {
            let settable = block.settable_pulumi_names();
            let closest = settable
                .iter()
                .map(|n| (strsim::jaro_winkler(n, name), n))
                .filter(|(score, _)| *score > 0.8)
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, n)| format!("did you mean {n:?}? "))
                .unwrap_or_default();
            failures.push(ShapeFailure {
                property: name.clone(),
                reason: format!(
                    "unknown property {name:?}; {closest}the properties a program may set are {}",
                    settable.join(", ")
                ),
            });
            continue;
        };
        if let Member::Attribute(_, a) = member {
            if kind == ConfigKind::Arguments
                && a.computed_only()
                && !matches!(bare(value), PropertyValue::Null)
            {
                failures.push(ShapeFailure {
                    property: name.clone(),
                    reason: format!(
                        "{name} is computed by the provider and cannot be set (it is an output)"
                    ),
                });
                continue;
            }
        }
        let mut secret = false;
        let v = match member {
            Member::Attribute(_, a) => {
                let v = match (kind, &a.ty, bare(value)) {
                    (
                        ConfigKind::ProviderConfig,
                        CtyType::List(_)
                        | CtyType::Set(_)
                        | CtyType::Map(_)
                        | CtyType::Object { .. }
                        | CtyType::Tuple(_),
                        PropertyValue::String(text),
                    ) => decode_json(text.as_bytes(), &a.ty).unwrap_or_else(|_| value.clone()),
                    _ => value.clone(),
                };
                value_to_tf(&a.ty, &v, &mut secret)
            }
            Member::Block(_, nb) => block_to_tf(nb.nesting, &nb.block, value, &mut secret),
        };
        if secret {
            secrets.insert(member.tf_name().to_owned());
        }
        out.insert(member.tf_name().to_owned(), v);
    }
    if failures.is_empty() {
        Ok((out, secrets))
    } else {
        Err(failures)
    }
}

/// A configuration object converted to `block`'s types, as Terraform
/// Core converts configuration before a provider sees it: `42` where a
/// string is expected is `"42"`, `"true"` where a bool is expected is
/// `true`. A value no conversion fits is an error naming the attribute.
pub fn conform(block: &Block, config: &PropertyMap) -> Result<PropertyMap, ValueError> {
    let ty = block.implied_type();
    let bytes = encode_msgpack(&PropertyValue::Object(config.clone()), &ty)?;
    match decode_msgpack(&bytes, &ty)? {
        PropertyValue::Object(m) => Ok(m),
        _ => Ok(PropertyMap::new()),
    }
}

/// `props` with every property of a `sensitive` attribute marked secret
/// (as Pulumi's bridged SDKs mark them), so a value given in plain text
/// is still encrypted in state and hidden in display.
pub fn mark_sensitive(block: &Block, props: &PropertyMap) -> PropertyMap {
    props
        .iter()
        .map(|(name, value)| {
            let sensitive =
                matches!(block.member(name), Some(Member::Attribute(_, a)) if a.sensitive);
            let wrap = sensitive
                && !holds_secret(value)
                && !matches!(value, PropertyValue::Null | PropertyValue::Unknown);
            let v = if wrap {
                PropertyValue::secret(value.clone())
            } else {
                value.clone()
            };
            (name.clone(), v)
        })
        .collect()
}

/// Recorded outputs (Pulumi names) as a Terraform state object of
/// `block`. Properties the schema does not know (state from an older
/// schema version) keep their values under the Terraform name
/// [`tf_name_guess`] gives them. `__meta` is not a property.
pub fn state_to_tf(block: &Block, outputs: &PropertyMap) -> (PropertyMap, SecretAttrs) {
    let mut out = PropertyMap::new();
    let mut secrets = SecretAttrs::new();
    for (name, value) in outputs {
        if name == crate::meta::META_KEY {
            continue;
        }
        let mut secret = false;
        let (tf, v) = match block.member(name) {
            Some(Member::Attribute(n, a)) => (n.to_owned(), value_to_tf(&a.ty, value, &mut secret)),
            Some(Member::Block(n, nb)) => (
                n.to_owned(),
                block_to_tf(nb.nesting, &nb.block, value, &mut secret),
            ),
            None => (
                tf_name_guess(name),
                value_to_tf(&CtyType::Dynamic, value, &mut secret),
            ),
        };
        if secret {
            secrets.insert(tf.clone());
        }
        out.insert(tf, v);
    }
    (out, secrets)
}

/// A Terraform object of `block` in Pulumi's shape: attributes in
/// `secrets` and sensitive ones wrapped as secrets.
pub fn tf_to_pulumi(block: &Block, tf: &PropertyMap, secrets: &SecretAttrs) -> PropertyMap {
    let mut out = PropertyMap::new();
    for (name, value) in tf {
        let (v, sensitive) = match block.member(name) {
            Some(Member::Attribute(_, a)) => (value_to_pulumi(&a.ty, value), a.sensitive),
            Some(Member::Block(_, nb)) => (block_to_pulumi(nb.nesting, &nb.block, value), false),
            None => (value.clone(), false),
        };
        let secret = (sensitive || secrets.contains(name))
            && !matches!(v, PropertyValue::Null | PropertyValue::Secret(_));
        out.insert(
            pulumi_name(name),
            if secret { PropertyValue::secret(v) } else { v },
        );
    }
    out
}

/// The value inside secret and output wrappers.
pub(crate) fn bare(v: &PropertyValue) -> &PropertyValue {
    v.unwrapped()
}

fn holds_secret(v: &PropertyValue) -> bool {
    v.is_secret()
}

/// `value` of type `ty` in Terraform's shape, secrets unwrapped (`secret`
/// set when one was found).
fn value_to_tf(ty: &CtyType, value: &PropertyValue, secret: &mut bool) -> PropertyValue {
    if holds_secret(value) {
        *secret = true;
    }
    let v = bare(value);
    match (ty, v) {
        (CtyType::Object { attributes, .. }, PropertyValue::Object(m)) => PropertyValue::Object(
            m.iter()
                .map(|(k, item)| {
                    let (name, item_ty) = attributes
                        .get_key_value(k.as_str())
                        .or_else(|| attributes.iter().find(|(n, _)| pulumi_name(n) == *k))
                        .map(|(n, t)| (n.clone(), t))
                        .unwrap_or((k.clone(), &CtyType::Dynamic));
                    (name, value_to_tf(item_ty, item, secret))
                })
                .collect(),
        ),
        (CtyType::Map(e), PropertyValue::Object(m)) => PropertyValue::Object(
            m.iter()
                .map(|(k, item)| (k.clone(), value_to_tf(e, item, secret)))
                .collect(),
        ),
        (CtyType::List(e) | CtyType::Set(e), PropertyValue::Array(a)) => {
            PropertyValue::Array(a.iter().map(|item| value_to_tf(e, item, secret)).collect())
        }
        (CtyType::Tuple(ts), PropertyValue::Array(a)) => PropertyValue::Array(
            a.iter()
                .enumerate()
                .map(|(i, item)| value_to_tf(ts.get(i).unwrap_or(&CtyType::Dynamic), item, secret))
                .collect(),
        ),
        (_, PropertyValue::Object(m)) => PropertyValue::Object(
            m.iter()
                .map(|(k, item)| (k.clone(), value_to_tf(&CtyType::Dynamic, item, secret)))
                .collect(),
        ),
        (_, PropertyValue::Array(a)) => PropertyValue::Array(
            a.iter()
                .map(|item| value_to_tf(&CtyType::Dynamic, item, secret))
                .collect(),
        ),
        (_, other) => other.clone(),
    }
}

fn block_to_tf(
    nesting: Nesting,
    block: &Block,
    value: &PropertyValue,
    secret: &mut bool,
) -> PropertyValue {
    if holds_secret(value) {
        *secret = true;
    }
    let object = |v: &PropertyValue, secret: &mut bool| match bare(v) {
        PropertyValue::Object(m) => {
            // A nested block's object: its members renamed (unknown ones kept).
            let (o, s) = state_to_tf(block, m);
            if !s.is_empty() {
                *secret = true;
            }
            PropertyValue::Object(o)
        }
        other => other.clone(),
    };
    match (nesting, bare(value)) {
        (Nesting::Single | Nesting::Group, v) => object(v, secret),
        (Nesting::List | Nesting::Set, PropertyValue::Array(a)) => {
            PropertyValue::Array(a.iter().map(|v| object(v, secret)).collect())
        }
        (Nesting::Map, PropertyValue::Object(m)) => PropertyValue::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), object(v, secret)))
                .collect(),
        ),
        (_, other) => other.clone(),
    }
}

fn value_to_pulumi(ty: &CtyType, value: &PropertyValue) -> PropertyValue {
    match (ty, value) {
        (CtyType::Object { attributes, .. }, PropertyValue::Object(m)) => PropertyValue::Object(
            m.iter()
                .map(|(k, item)| {
                    let item_ty = attributes.get(k).unwrap_or(&CtyType::Dynamic);
                    (pulumi_name(k), value_to_pulumi(item_ty, item))
                })
                .collect(),
        ),
        (CtyType::Map(e), PropertyValue::Object(m)) => PropertyValue::Object(
            m.iter()
                .map(|(k, item)| (k.clone(), value_to_pulumi(e, item)))
                .collect(),
        ),
        (CtyType::List(e) | CtyType::Set(e), PropertyValue::Array(a)) => {
            PropertyValue::Array(a.iter().map(|item| value_to_pulumi(e, item)).collect())
        }
        (CtyType::Tuple(ts), PropertyValue::Array(a)) => PropertyValue::Array(
            a.iter()
                .enumerate()
                .map(|(i, item)| value_to_pulumi(ts.get(i).unwrap_or(&CtyType::Dynamic), item))
                .collect(),
        ),
        (_, other) => other.clone(),
    }
}

fn block_to_pulumi(nesting: Nesting, block: &Block, value: &PropertyValue) -> PropertyValue {
    let object = |v: &PropertyValue| match v {
        PropertyValue::Object(m) => {
            PropertyValue::Object(tf_to_pulumi(block, m, &SecretAttrs::new()))
        }
        other => other.clone(),
    };
    match (nesting, value) {
        (Nesting::Single | Nesting::Group, v) => object(v),
        (Nesting::List | Nesting::Set, PropertyValue::Array(a)) => {
            PropertyValue::Array(a.iter().map(object).collect())
        }
        (Nesting::Map, PropertyValue::Object(m)) => {
            PropertyValue::Object(m.iter().map(|(k, v)| (k.clone(), object(v))).collect())
        }
        (_, other) => other.clone(),
    }
}

/// A Terraform state object as the raw JSON `UpgradeResourceState` takes
/// (`RawState.json`): integral numbers as integers.
pub fn raw_state_json(state: &PropertyMap) -> Vec<u8> {
    fn to_json(v: &PropertyValue) -> serde_json::Value {
        use serde_json::Value as J;
        match bare(v) {
            PropertyValue::Null | PropertyValue::Unknown => J::Null,
            PropertyValue::Bool(b) => J::Bool(*b),
            PropertyValue::Number(n) => {
                if n.fract() == 0.0 && n.abs() < 9.0e15 {
                    J::from(*n as i64)
                } else {
                    serde_json::Number::from_f64(*n).map_or(J::Null, J::Number)
                }
            }
            PropertyValue::String(s) => J::String(s.clone()),
            PropertyValue::Array(a) => J::Array(a.iter().map(to_json).collect()),
            PropertyValue::Object(m) => {
                J::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect())
            }
            _ => J::Null,
        }
    }
    let object =
        serde_json::Value::Object(state.iter().map(|(k, v)| (k.clone(), to_json(v))).collect());
    serde_json::to_vec(&object).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::schema::Attribute;

    fn attr(ty: CtyType, optional: bool, computed: bool, sensitive: bool) -> Attribute {
        Attribute {
            ty,
            required: !optional && !computed,
            optional,
            computed,
            sensitive,
        }
    }

    fn s(v: &str) -> PropertyValue {
        PropertyValue::from(v)
    }

    fn block() -> Block {
        let mut b = Block::default();
        b.attributes.insert(
            "secret_value".into(),
            attr(CtyType::String, true, false, true),
        );
        b.attributes.insert(
            "tags".into(),
            attr(CtyType::Map(Box::new(CtyType::String)), true, false, false),
        );
        b.attributes.insert(
            "endpoint_config".into(),
            attr(
                CtyType::Object {
                    attributes: BTreeMap::from([("port_number".into(), CtyType::Number)]),
                    optional: Default::default(),
                },
                true,
                false,
                false,
            ),
        );
        b.attributes.insert(
            "result_id".into(),
            attr(CtyType::String, false, true, false),
        );
        b.attributes
            .insert("label".into(), attr(CtyType::String, true, false, false));
        b
    }

    #[test]
    fn names_map_for_attributes_and_object_types_but_never_for_map_keys() {
        let props: PropertyMap = [
            (
                "tags".into(),
                PropertyValue::Object([("Team_Name".into(), s("core"))].into()),
            ),
            (
                "endpointConfig".into(),
                PropertyValue::Object([("portNumber".into(), PropertyValue::Number(80.0))].into()),
            ),
        ]
        .into();
        let (tf, secrets) = config_to_tf(&block(), &props, ConfigKind::Arguments).unwrap();
        assert!(secrets.is_empty());
        assert_eq!(
            tf["tags"],
            PropertyValue::Object([("Team_Name".into(), s("core"))].into())
        );
        assert_eq!(
            tf["endpoint_config"],
            PropertyValue::Object([("port_number".into(), PropertyValue::Number(80.0))].into())
        );
        let back = tf_to_pulumi(&block(), &tf, &secrets);
        assert_eq!(back, props);
    }

    #[test]
    fn secrets_are_unwrapped_remembered_and_rewrapped_with_sensitive_attributes() {
        let props: PropertyMap = [
            ("label".into(), PropertyValue::secret(s("hush"))),
            ("secretValue".into(), s("plain-but-sensitive")),
        ]
        .into();
        let (tf, secrets) = config_to_tf(&block(), &props, ConfigKind::Arguments).unwrap();
        assert_eq!(tf["label"], s("hush"));
        assert_eq!(secrets, SecretAttrs::from(["label".to_owned()]));
        let back = tf_to_pulumi(&block(), &tf, &secrets);
        assert_eq!(back["label"], PropertyValue::secret(s("hush")));
        assert_eq!(
            back["secretValue"],
            PropertyValue::secret(s("plain-but-sensitive"))
        );
    }

    #[test]
    fn unknown_and_computed_only_properties_are_check_failures() {
        let props: PropertyMap = [("lable".into(), s("x")), ("resultId".into(), s("y"))].into();
        let failures = config_to_tf(&block(), &props, ConfigKind::Arguments).unwrap_err();
        assert_eq!(failures.len(), 2);
        assert!(failures[0]
            .reason
            .contains("unknown property \"lable\"; did you mean \"label\"?"));
        assert!(failures[1]
            .reason
            .contains("resultId is computed by the provider"));
    }

    #[test]
    fn provider_config_takes_collections_as_json_text() {
        let props: PropertyMap = [("tags".into(), s(r#"{"a":"b"}"#))].into();
        let (tf, _) = config_to_tf(&block(), &props, ConfigKind::ProviderConfig).unwrap();
        assert_eq!(
            tf["tags"],
            PropertyValue::Object([("a".into(), s("b"))].into())
        );
    }

    #[test]
    fn state_from_an_older_schema_keeps_unknown_attributes_under_their_terraform_names() {
        let outputs: PropertyMap = [
            ("oldContent".into(), s("v1")),
            ("label".into(), s("l")),
            (crate::meta::META_KEY.into(), s("{}")),
        ]
        .into();
        let (tf, _) = state_to_tf(&block(), &outputs);
        assert_eq!(tf.keys().collect::<Vec<_>>(), ["label", "old_content"]);
        let raw: serde_json::Value = serde_json::from_slice(&raw_state_json(&tf)).unwrap();
        assert_eq!(raw, serde_json::json!({"label": "l", "old_content": "v1"}));
    }
}

//! cty types as Terraform writes them in schemas: JSON text.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use converge_model::PropertyValue;
use serde_json::{json, Value};

use super::{not_cty, ValueError, ValuePath};

/// A cty type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CtyType {
    /// `"string"`.
    String,
    /// `"number"`: arbitrary precision in cty, `f64` in Converge.
    Number,
    /// `"bool"`.
    Bool,
    /// `"dynamic"`: any type, chosen per value and sent with the value.
    Dynamic,
    /// `["list", T]`.
    List(Box<CtyType>),
    /// `["set", T]`.
    Set(Box<CtyType>),
    /// `["map", T]`: string keys.
    Map(Box<CtyType>),
    /// `["object", {name: T, …}]` or, with optional attributes,
    /// `["object", {…}, [name, …]]`.
    Object {
        /// The attributes and their types.
        attributes: BTreeMap<String, CtyType>,
        /// The attributes marked optional (a type-constraint detail carried
        /// through; every attribute is present in values).
        optional: BTreeSet<String>,
    },
    /// `["tuple", [T, …]]`.
    Tuple(Vec<CtyType>),
}

impl CtyType {
    /// Parses a schema's type JSON (`Schema.Attribute.type`).
    pub fn from_json(bytes: &[u8]) -> Result<CtyType, ValueError> {
        let invalid = |reason: String| ValueError::InvalidType {
            json: String::from_utf8_lossy(bytes).into_owned(),
            reason,
        };
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| invalid(format!("not JSON: {e}")))?;
        CtyType::from_json_value(&value).map_err(invalid)
    }

    /// Parses a type already read as JSON; the error says what is wrong.
    pub fn from_json_value(value: &Value) -> Result<CtyType, String> {
        match value {
            Value::String(name) => match name.as_str() {
                "string" => Ok(CtyType::String),
                "number" => Ok(CtyType::Number),
                "bool" => Ok(CtyType::Bool),
                "dynamic" => Ok(CtyType::Dynamic),
                other => Err(format!(
                    "unknown primitive type {other:?} (expected string, number, bool or dynamic)"
                )),
            },
            Value::Array(items) => {
                let Some(Value::String(kind)) = items.first() else {
                    return Err("a structural type is an array starting with its kind".into());
                };
                let args = &items[1..];
                match (kind.as_str(), args) {
                    ("list", [element]) => Ok(CtyType::List(Box::new(Self::from_json_value(element)?))),
                    ("set", [element]) => Ok(CtyType::Set(Box::new(Self::from_json_value(element)?))),
                    ("map", [element]) => Ok(CtyType::Map(Box::new(Self::from_json_value(element)?))),
                    ("object", [Value::Object(attrs)]) => Self::object(attrs, None),
                    ("object", [Value::Object(attrs), Value::Array(optional)]) => {
                        Self::object(attrs, Some(optional))
                    }
                    ("tuple", [Value::Array(elements)]) => elements
                        .iter()
                        .map(Self::from_json_value)
                        .collect::<Result<_, _>>()
                        .map(CtyType::Tuple),
                    ("list" | "set" | "map", _) => Err(format!("{kind} takes one element type")),
                    ("object", _) => Err(
                        "object takes an object of attribute types and optionally an array of optional attribute names"
                            .into(),
                    ),
                    ("tuple", _) => Err("tuple takes an array of element types".into()),
                    (other, _) => Err(format!(
                        "unknown type kind {other:?} (expected list, set, map, object or tuple)"
                    )),
                }
            }
            _ => Err("a type is a string or an array".into()),
        }
    }

    fn object(
        attrs: &serde_json::Map<String, Value>,
        optional: Option<&Vec<Value>>,
    ) -> Result<CtyType, String> {
        let attributes = attrs
            .iter()
            .map(|(name, ty)| {
                Self::from_json_value(ty)
                    .map(|ty| (name.clone(), ty))
                    .map_err(|e| format!("attribute {name:?}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let mut names = BTreeSet::new();
        for name in optional.into_iter().flatten() {
            match name {
                Value::String(name) if attrs.contains_key(name) => {
                    names.insert(name.clone());
                }
                Value::String(name) => {
                    return Err(format!("optional attribute {name:?} is not an attribute"))
                }
                _ => return Err("optional attribute names are strings".into()),
            }
        }
        Ok(CtyType::Object {
            attributes,
            optional: names,
        })
    }

    /// The type as JSON, in the form [`CtyType::from_json`] reads.
    pub fn to_json(&self) -> Value {
        match self {
            CtyType::String => json!("string"),
            CtyType::Number => json!("number"),
            CtyType::Bool => json!("bool"),
            CtyType::Dynamic => json!("dynamic"),
            CtyType::List(element) => json!(["list", element.to_json()]),
            CtyType::Set(element) => json!(["set", element.to_json()]),
            CtyType::Map(element) => json!(["map", element.to_json()]),
            CtyType::Object {
                attributes,
                optional,
            } => {
                let attrs: serde_json::Map<String, Value> = attributes
                    .iter()
                    .map(|(name, ty)| (name.clone(), ty.to_json()))
                    .collect();
                if optional.is_empty() {
                    json!(["object", attrs])
                } else {
                    json!(["object", attrs, optional])
                }
            }
            CtyType::Tuple(elements) => {
                json!([
                    "tuple",
                    elements.iter().map(CtyType::to_json).collect::<Vec<_>>()
                ])
            }
        }
    }

    /// The type a value of type `"dynamic"` is sent as: its own shape, with
    /// arrays as tuples, objects as objects, and null or unknown (which need
    /// no type) as dynamic.
    pub fn implied_by(value: &PropertyValue) -> Result<CtyType, ValueError> {
        implied(value, &ValuePath::default())
    }
}

fn implied(value: &PropertyValue, path: &ValuePath) -> Result<CtyType, ValueError> {
    Ok(match value {
        PropertyValue::Null | PropertyValue::Unknown => CtyType::Dynamic,
        PropertyValue::Bool(_) => CtyType::Bool,
        PropertyValue::Number(_) => CtyType::Number,
        PropertyValue::String(_) => CtyType::String,
        PropertyValue::Array(items) => CtyType::Tuple(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| implied(item, &path.index(i)))
                .collect::<Result<_, _>>()?,
        ),
        PropertyValue::Object(map) => CtyType::Object {
            attributes: map
                .iter()
                .map(|(name, item)| Ok((name.clone(), implied(item, &path.attribute(name))?)))
                .collect::<Result<_, ValueError>>()?,
            optional: BTreeSet::new(),
        },
        other => return Err(not_cty(path, other)),
    })
}

impl fmt::Display for CtyType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<CtyType, ValueError> {
        CtyType::from_json(text.as_bytes())
    }

    #[test]
    fn parses_every_kind_and_prints_it_back() {
        for text in [
            r#""string""#,
            r#""number""#,
            r#""bool""#,
            r#""dynamic""#,
            r#"["list","string"]"#,
            r#"["set",["map","number"]]"#,
            r#"["object",{"a":"bool","b":["tuple",["string","dynamic"]]}]"#,
            r#"["object",{"a":"bool","b":"string"},["b"]]"#,
            r#"["tuple",[]]"#,
        ] {
            let ty = parse(text).unwrap();
            assert_eq!(ty.to_json().to_string(), text);
        }
        assert_eq!(
            parse(r#"["list",["object",{"x":"number"}]]"#).unwrap(),
            CtyType::List(Box::new(CtyType::Object {
                attributes: BTreeMap::from([("x".into(), CtyType::Number)]),
                optional: BTreeSet::new(),
            }))
        );
    }

    #[test]
    fn rejects_what_is_not_a_type_and_says_why() {
        for (text, why) in [
            ("nope", "not JSON"),
            (r#""integer""#, "unknown primitive type \"integer\""),
            (r#"["list"]"#, "list takes one element type"),
            (
                r#"["list","string","number"]"#,
                "list takes one element type",
            ),
            (r#"["bag","string"]"#, "unknown type kind \"bag\""),
            (
                r#"["object",{"a":"str"}]"#,
                "attribute \"a\": unknown primitive",
            ),
            (
                r#"["object",{"a":"bool"},["b"]]"#,
                "optional attribute \"b\" is not",
            ),
            (r#"["tuple","string"]"#, "tuple takes an array"),
            ("3", "a type is a string or an array"),
            ("[]", "starting with its kind"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.starts_with("invalid cty type"), "{err}");
        }
    }

    #[test]
    fn implied_types_follow_the_value() {
        let value = PropertyValue::Object(
            [
                (
                    "a".to_owned(),
                    PropertyValue::Array(vec![
                        PropertyValue::Number(1.0),
                        PropertyValue::string("x"),
                    ]),
                ),
                ("b".to_owned(), PropertyValue::Null),
            ]
            .into(),
        );
        assert_eq!(
            CtyType::implied_by(&value).unwrap().to_string(),
            r#"["object",{"a":["tuple",["number","string"]],"b":"dynamic"}]"#
        );
        let secret = PropertyValue::Array(vec![PropertyValue::secret(PropertyValue::Bool(true))]);
        let err = CtyType::implied_by(&secret).unwrap_err().to_string();
        assert!(
            err.starts_with("at [0]: secret values cannot be sent"),
            "{err}"
        );
    }
}

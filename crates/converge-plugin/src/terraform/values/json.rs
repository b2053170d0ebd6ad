//! The JSON form of cty values (`DynamicValue.json`), decoding only: a
//! provider sends it in a few replies; Converge always sends msgpack.

use converge_model::{PropertyMap, PropertyValue};
use serde_json::Value;

use super::{CtyType, ValueError, ValuePath};

/// Decodes JSON of type `ty`. JSON has no unknowns; a value of type
/// `"dynamic"` is `{"value": …, "type": …}`.
pub fn decode_json(bytes: &[u8], ty: &CtyType) -> Result<PropertyValue, ValueError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| ValueError::Malformed {
        format: "JSON",
        reason: e.to_string(),
    })?;
    from_json(&value, ty, &ValuePath::default())
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn from_json(value: &Value, ty: &CtyType, path: &ValuePath) -> Result<PropertyValue, ValueError> {
    let mismatch = |found: &str| ValueError::Mismatch {
        path: path.clone(),
        expected: ty.to_string(),
        found: found.to_owned(),
    };
    Ok(match (ty, value) {
        (_, Value::Null) => PropertyValue::Null,
        (CtyType::String, Value::String(s)) => PropertyValue::String(s.clone()),
        (CtyType::Number, Value::Number(n)) => match n.as_f64() {
            Some(n) => PropertyValue::Number(n),
            None => return Err(mismatch("a number out of range")),
        },
        (CtyType::Number, Value::String(s)) => match s.parse() {
            Ok(n) => PropertyValue::Number(n),
            Err(_) => return Err(mismatch("a string that is not a number")),
        },
        (CtyType::Bool, Value::Bool(b)) => PropertyValue::Bool(*b),
        (CtyType::List(element) | CtyType::Set(element), Value::Array(items)) => {
            PropertyValue::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| from_json(item, element, &path.index(i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        (CtyType::Tuple(elements), Value::Array(items)) => {
            if elements.len() != items.len() {
                return Err(ValueError::TupleLength {
                    path: path.clone(),
                    expected: elements.len(),
                    found: items.len(),
                });
            }
            PropertyValue::Array(
                items
                    .iter()
                    .zip(elements)
                    .enumerate()
                    .map(|(i, (item, element))| from_json(item, element, &path.index(i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        (CtyType::Map(element), Value::Object(entries)) => PropertyValue::Object(
            entries
                .iter()
                .map(|(key, item)| Ok((key.clone(), from_json(item, element, &path.key(key))?)))
                .collect::<Result<_, ValueError>>()?,
        ),
        (CtyType::Object { attributes, .. }, Value::Object(entries)) => {
            let mut out = PropertyMap::new();
            for (name, item) in entries {
                let Some(attr_ty) = attributes.get(name) else {
                    return Err(ValueError::UnknownAttribute {
                        path: path.clone(),
                        name: name.clone(),
                        known: attributes
                            .keys()
                            .map(|n| format!("{n:?}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                };
                out.insert(
                    name.clone(),
                    from_json(item, attr_ty, &path.attribute(name))?,
                );
            }
            for name in attributes.keys() {
                out.entry(name.clone()).or_insert(PropertyValue::Null);
            }
            PropertyValue::Object(out)
        }
        (CtyType::Dynamic, Value::Object(wrapper)) => {
            let (Some(inner), Some(type_json)) = (wrapper.get("value"), wrapper.get("type")) else {
                return Err(mismatch("an object without \"value\" and \"type\""));
            };
            let concrete =
                CtyType::from_json_value(type_json).map_err(|reason| ValueError::InvalidType {
                    json: type_json.to_string(),
                    reason,
                })?;
            from_json(inner, &concrete, path)?
        }
        _ => return Err(mismatch(json_kind(value))),
    })
}

//! The msgpack form of cty values (`DynamicValue.msgpack`).

use converge_model::{PropertyMap, PropertyValue};
use rmpv::Value;

use super::{not_cty, CtyType, ValueError, ValuePath};

/// cty's extension type for an unknown value.
const UNKNOWN_EXT: i8 = 0;
/// Newer cty's extension type for an unknown value with refinements (which
/// Converge does not keep).
const REFINED_UNKNOWN_EXT: i8 = 12;
/// Nesting beyond this is refused rather than risking the stack.
const MAX_DEPTH: usize = 512;

/// Encodes `value` as msgpack of type `ty`.
pub fn encode_msgpack(value: &PropertyValue, ty: &CtyType) -> Result<Vec<u8>, ValueError> {
    let wire = to_wire(value, ty, &ValuePath::default())?;
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &wire).map_err(|e| ValueError::Malformed {
        format: "msgpack",
        reason: e.to_string(),
    })?;
    Ok(out)
}

/// Decodes msgpack of type `ty`.
pub fn decode_msgpack(bytes: &[u8], ty: &CtyType) -> Result<PropertyValue, ValueError> {
    let mut rest = bytes;
    let wire = rmpv::decode::read_value_with_max_depth(&mut rest, MAX_DEPTH).map_err(|e| {
        ValueError::Malformed {
            format: "msgpack",
            reason: e.to_string(),
        }
    })?;
    if !rest.is_empty() {
        return Err(ValueError::Malformed {
            format: "msgpack",
            reason: format!("{} byte(s) after the value", rest.len()),
        });
    }
    from_wire(&wire, ty, &ValuePath::default())
}

fn mismatch(path: &ValuePath, ty: &CtyType, found: impl Into<String>) -> ValueError {
    ValueError::Mismatch {
        path: path.clone(),
        expected: ty.to_string(),
        found: found.into(),
    }
}

fn to_wire(value: &PropertyValue, ty: &CtyType, path: &ValuePath) -> Result<Value, ValueError> {
    let found = || mismatch(path, ty, value.kind_name());
    Ok(match (ty, value) {
        (_, PropertyValue::Null) => Value::Nil,
        (_, PropertyValue::Unknown) => Value::Ext(UNKNOWN_EXT, vec![0]),
        (
            _,
            PropertyValue::Secret(_)
            | PropertyValue::Output(_)
            | PropertyValue::Asset(_)
            | PropertyValue::Archive(_)
            | PropertyValue::ResourceReference(_),
        ) => return Err(not_cty(path, value)),
        (CtyType::String, PropertyValue::String(s)) => Value::from(s.as_str()),
        (CtyType::String, PropertyValue::Bool(b)) => Value::from(b.to_string()),
        (CtyType::String, PropertyValue::Number(n)) => Value::from(n.to_string()),
        (CtyType::Number, PropertyValue::Number(n)) => {
            number(*n).ok_or_else(|| mismatch(path, ty, "a number that is not finite"))?
        }
        (CtyType::Number, PropertyValue::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .and_then(number)
            .ok_or_else(|| mismatch(path, ty, "a string that is not a number"))?,
        (CtyType::Bool, PropertyValue::Bool(b)) => Value::Boolean(*b),
        (CtyType::Bool, PropertyValue::String(s)) => match s.as_str() {
            "true" => Value::Boolean(true),
            "false" => Value::Boolean(false),
            _ => return Err(mismatch(path, ty, "a string other than true or false")),
        },
        (CtyType::List(element) | CtyType::Set(element), PropertyValue::Array(items)) => {
            Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| to_wire(item, element, &path.index(i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        (CtyType::Tuple(elements), PropertyValue::Array(items)) => {
            if elements.len() != items.len() {
                return Err(ValueError::TupleLength {
                    path: path.clone(),
                    expected: elements.len(),
                    found: items.len(),
                });
            }
            Value::Array(
                items
                    .iter()
                    .zip(elements)
                    .enumerate()
                    .map(|(i, (item, element))| to_wire(item, element, &path.index(i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        (CtyType::Map(element), PropertyValue::Object(map)) => Value::Map(
            map.iter()
                .map(|(key, item)| {
                    Ok((
                        Value::from(key.as_str()),
                        to_wire(item, element, &path.key(key))?,
                    ))
                })
                .collect::<Result<_, ValueError>>()?,
        ),
        (CtyType::Object { attributes, .. }, PropertyValue::Object(map)) => {
            if let Some(name) = map.keys().find(|name| !attributes.contains_key(*name)) {
                return Err(ValueError::UnknownAttribute {
                    path: path.clone(),
                    name: name.clone(),
                    known: known(attributes.keys()),
                });
            }
            // Every attribute, in name order (the BTreeMap's), as cty writes them.
            Value::Map(
                attributes
                    .iter()
                    .map(|(name, attr_ty)| {
                        let wire = match map.get(name) {
                            Some(item) => to_wire(item, attr_ty, &path.attribute(name))?,
                            None => Value::Nil,
                        };
                        Ok((Value::from(name.as_str()), wire))
                    })
                    .collect::<Result<_, ValueError>>()?,
            )
        }
        (CtyType::Dynamic, _) => {
            let concrete = CtyType::implied_by(value)?;
            let type_json = concrete.to_json().to_string().into_bytes();
            Value::Array(vec![
                Value::Binary(type_json),
                to_wire(value, &concrete, path)?,
            ])
        }
        _ => return Err(found()),
    })
}

/// A finite number as cty writes it: an integer when integral and in range.
fn number(n: f64) -> Option<Value> {
    if !n.is_finite() {
        return None;
    }
    // 2^63: the first integral f64 beyond i64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if n.fract() == 0.0 && (-LIMIT..LIMIT).contains(&n) {
        #[allow(clippy::cast_possible_truncation)] // integral and in range
        return Some(Value::from(n as i64));
    }
    Some(Value::F64(n))
}

fn known<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<String> = names.map(|n| format!("{n:?}")).collect();
    if names.is_empty() {
        "no attributes".to_owned()
    } else {
        names.join(", ")
    }
}

fn wire_kind(value: &Value) -> String {
    match value {
        Value::Nil => "nil".into(),
        Value::Boolean(_) => "a bool".into(),
        Value::Integer(_) => "an integer".into(),
        Value::F32(_) | Value::F64(_) => "a float".into(),
        Value::String(_) => "a string".into(),
        Value::Binary(_) => "binary data".into(),
        Value::Array(_) => "an array".into(),
        Value::Map(_) => "a map".into(),
        Value::Ext(code, _) => format!("extension type {code}"),
    }
}

fn from_wire(value: &Value, ty: &CtyType, path: &ValuePath) -> Result<PropertyValue, ValueError> {
    let found = || mismatch(path, ty, wire_kind(value));
    Ok(match (ty, value) {
        (_, Value::Nil) => PropertyValue::Null,
        (_, Value::Ext(UNKNOWN_EXT | REFINED_UNKNOWN_EXT, _)) => PropertyValue::Unknown,
        (CtyType::String, Value::String(s)) => match s.as_str() {
            Some(s) => PropertyValue::String(s.to_owned()),
            None => return Err(mismatch(path, ty, "a string that is not UTF-8")),
        },
        (CtyType::Number, Value::Integer(i)) => match i.as_f64() {
            Some(n) => PropertyValue::Number(n),
            None => return Err(found()),
        },
        (CtyType::Number, Value::F64(n)) => PropertyValue::Number(*n),
        (CtyType::Number, Value::F32(n)) => PropertyValue::Number(f64::from(*n)),
        (CtyType::Number, Value::String(s)) => match s.as_str().and_then(|s| s.parse().ok()) {
            Some(n) => PropertyValue::Number(n),
            None => return Err(mismatch(path, ty, "a string that is not a number")),
        },
        (CtyType::Bool, Value::Boolean(b)) => PropertyValue::Bool(*b),
        (CtyType::List(element) | CtyType::Set(element), Value::Array(items)) => {
            PropertyValue::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| from_wire(item, element, &path.index(i)))
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
                    .map(|(i, (item, element))| from_wire(item, element, &path.index(i)))
                    .collect::<Result<_, _>>()?,
            )
        }
        (CtyType::Map(element), Value::Map(entries)) => {
            let mut out = PropertyMap::new();
            for (key, item) in entries {
                let key = map_key(key, path, ty)?;
                let item = from_wire(item, element, &path.key(&key))?;
                out.insert(key, item);
            }
            PropertyValue::Object(out)
        }
        (CtyType::Object { attributes, .. }, Value::Map(entries)) => {
            let mut out = PropertyMap::new();
            for (key, item) in entries {
                let name = map_key(key, path, ty)?;
                let Some(attr_ty) = attributes.get(&name) else {
                    return Err(ValueError::UnknownAttribute {
                        path: path.clone(),
                        name,
                        known: known(attributes.keys()),
                    });
                };
                let item = from_wire(item, attr_ty, &path.attribute(&name))?;
                out.insert(name, item);
            }
            // An attribute left out is null.
            for name in attributes.keys() {
                out.entry(name.clone()).or_insert(PropertyValue::Null);
            }
            PropertyValue::Object(out)
        }
        (CtyType::Dynamic, Value::Array(pair)) if pair.len() == 2 => {
            let type_json = match &pair[0] {
                Value::Binary(bytes) => bytes.as_slice(),
                Value::String(s) => s.as_bytes(),
                other => {
                    return Err(mismatch(
                        path,
                        ty,
                        format!("a pair whose type is {}", wire_kind(other)),
                    ))
                }
            };
            let concrete = CtyType::from_json(type_json)?;
            from_wire(&pair[1], &concrete, path)?
        }
        _ => return Err(found()),
    })
}

fn map_key(key: &Value, path: &ValuePath, ty: &CtyType) -> Result<String, ValueError> {
    match key {
        Value::String(s) => s
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| mismatch(path, ty, "a key that is not UTF-8")),
        other => Err(mismatch(
            path,
            ty,
            format!("a key that is {}", wire_kind(other)),
        )),
    }
}

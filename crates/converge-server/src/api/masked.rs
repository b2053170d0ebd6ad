//! Property values as the API and the console show them: JSON with every
//! secret replaced by `"[secret]"`. The service reads state with secrets
//! opaque, so a secret is ciphertext here; neither it nor any plaintext is
//! ever shown.

use converge_model::{Archive, ArchiveMember, Asset, PropertyMap, PropertyValue};
use serde_json::{json, Map, Value};

/// What a secret shows as.
pub const SECRET: &str = "[secret]";
/// What a value not known yet shows as.
pub const UNKNOWN: &str = "[unknown]";

/// `value` as JSON, secrets masked. Integral numbers show as integers.
pub fn value(v: &PropertyValue) -> Value {
    match v {
        PropertyValue::Null => Value::Null,
        PropertyValue::Bool(b) => Value::Bool(*b),
        PropertyValue::Number(n) => number(*n),
        PropertyValue::String(s) => Value::String(s.clone()),
        PropertyValue::Array(items) => Value::Array(items.iter().map(value).collect()),
        PropertyValue::Object(map) => Value::Object(object(map, &[])),
        PropertyValue::Asset(a) => json!({ "asset": asset(a) }),
        PropertyValue::Archive(a) => json!({ "archive": archive(a) }),
        PropertyValue::ResourceReference(r) => {
            let id = r.id.as_deref().map(value);
            json!({ "urn": r.urn.as_str(), "id": id })
        }
        PropertyValue::Unknown => Value::String(UNKNOWN.to_owned()),
        PropertyValue::Secret(_) => Value::String(SECRET.to_owned()),
        PropertyValue::Output(o) if o.secret => Value::String(SECRET.to_owned()),
        PropertyValue::Output(o) => match &o.element {
            Some(e) => value(e),
            None => Value::String(UNKNOWN.to_owned()),
        },
    }
}

/// A property map as a JSON object, secrets masked, and also every key
/// named in `secret_keys` (a resource's `additionalSecretOutputs`).
pub fn object(map: &PropertyMap, secret_keys: &[String]) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| {
            let shown = if secret_keys.iter().any(|s| s == k) {
                Value::String(SECRET.to_owned())
            } else {
                value(v)
            };
            (k.clone(), shown)
        })
        .collect()
}

fn number(n: f64) -> Value {
    // 2^53: beyond it an f64 no longer holds every integer.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if n.fract() == 0.0 && n.abs() <= EXACT {
        // In range and integral: the conversion is exact.
        #[allow(clippy::cast_possible_truncation)]
        return Value::from(n as i64);
    }
    serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
}

/// An asset without its text (a text asset may be large; its hash names it).
fn asset(a: &Asset) -> Value {
    let mut m = Map::new();
    m.insert("hash".to_owned(), Value::String(a.hash.clone()));
    if let Some(p) = &a.path {
        m.insert("path".to_owned(), Value::String(p.clone()));
    }
    if let Some(u) = &a.uri {
        m.insert("uri".to_owned(), Value::String(u.clone()));
    }
    if let Some(t) = &a.text {
        m.insert("textBytes".to_owned(), Value::from(t.len()));
    }
    Value::Object(m)
}

fn archive(a: &Archive) -> Value {
    let mut m = Map::new();
    m.insert("hash".to_owned(), Value::String(a.hash.clone()));
    if let Some(p) = &a.path {
        m.insert("path".to_owned(), Value::String(p.clone()));
    }
    if let Some(u) = &a.uri {
        m.insert("uri".to_owned(), Value::String(u.clone()));
    }
    if let Some(members) = &a.assets {
        let members: Map<String, Value> = members
            .iter()
            .map(|(k, member)| {
                let v = match member {
                    ArchiveMember::Asset(a) => json!({ "asset": asset(a) }),
                    ArchiveMember::Archive(a) => json!({ "archive": archive(a) }),
                };
                (k.clone(), v)
            })
            .collect();
        m.insert("assets".to_owned(), Value::Object(members));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use converge_model::OutputValue;

    #[test]
    fn secrets_anywhere_are_masked_and_numbers_read_naturally() {
        let mut inner = PropertyMap::new();
        inner.insert(
            "password".to_owned(),
            PropertyValue::secret(PropertyValue::string("ciphertext-xyz")),
        );
        inner.insert("length".to_owned(), PropertyValue::Number(16.0));
        inner.insert("ratio".to_owned(), PropertyValue::Number(0.5));
        let mut map = PropertyMap::new();
        map.insert("nested".to_owned(), PropertyValue::Object(inner));
        map.insert(
            "list".to_owned(),
            PropertyValue::Array(vec![PropertyValue::Output(Box::new(OutputValue {
                element: Some(Box::new(PropertyValue::string("hidden"))),
                secret: true,
                dependencies: vec![],
            }))]),
        );
        map.insert("plain".to_owned(), PropertyValue::string("visible"));
        map.insert("extra".to_owned(), PropertyValue::string("also hidden"));
        let shown = Value::Object(object(&map, &["extra".to_owned()]));
        assert_eq!(
            shown,
            json!({
                "extra": "[secret]",
                "list": ["[secret]"],
                "nested": { "length": 16, "password": "[secret]", "ratio": 0.5 },
                "plain": "visible",
            })
        );
        let text = shown.to_string();
        assert!(!text.contains("ciphertext") && !text.contains("hidden"));
    }
}

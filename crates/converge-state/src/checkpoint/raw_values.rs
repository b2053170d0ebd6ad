//! Property maps decoded straight from their JSON text.
//!
//! A checkpoint's `inputs` and `outputs` are most of its bytes. Reading
//! them into `serde_json::Value` trees first and then into
//! [`PropertyValue`]s builds every value twice; this module builds the
//! `PropertyValue`s as the parser goes. It reads exactly what
//! [`super::values::property_map_from_json`] reads, with the same errors:
//! plain values are decoded here, and each object carrying [`SIG_KEY`]
//! (a secret, asset, archive, resource reference or output value: small,
//! and rare next to plain values) is collected as JSON and handed to the
//! codec of [`super::values`].
//!
//! Go writes object keys sorted, so the signature key, which sorts before
//! every letter, comes first in practice; an object whose signature key
//! comes later is still read right, by turning the entries read before it
//! back into JSON.

use std::cell::RefCell;
use std::fmt;

use converge_model::{PropertyMap, PropertyValue, UNKNOWN_STRING};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::property_path::{join_paths, render_path, Step};
use super::values::{
    property_value_from_json_within, property_value_to_json, PropertyValueError,
    PropertyValueErrorKind, SIG_KEY,
};
use crate::json_limits::MAX_VALUE_DEPTH;
use crate::secrets::SecretsMode;

/// Reads a property map from the JSON text of an object.
pub(crate) fn property_map_from_raw(
    raw: &RawValue,
    mode: SecretsMode<'_>,
) -> Result<PropertyMap, PropertyValueError> {
    let failure = RefCell::new(None);
    let reader = Reader {
        mode,
        failure: &failure,
    };
    // The text is part of a document `json_limits::check` passed: its depth
    // is bounded, and serde_json's own limit (128) is off.
    let mut de = serde_json::Deserializer::from_str(raw.get());
    de.disable_recursion_limit();
    match (MapSeed { reader }).deserialize(&mut de) {
        Ok(map) => Ok(map),
        // A value the codec refused, or (the text being valid JSON) a
        // property map that is not an object.
        Err(e) => Err(failure.take().unwrap_or_else(|| PropertyValueError {
            path: String::new(),
            kind: PropertyValueErrorKind::Malformed {
                what: "property map",
                detail: e.to_string(),
            },
        })),
    }
}

/// What every seed shares: the secrets mode, and where the first error of
/// the codec is kept (serde's errors carry only text).
#[derive(Clone, Copy)]
struct Reader<'a, 'm> {
    mode: SecretsMode<'m>,
    failure: &'a RefCell<Option<PropertyValueError>>,
}

impl Reader<'_, '_> {
    /// Keeps `error` and returns the serde error that unwinds to the top.
    fn fail<E: de::Error>(&self, error: PropertyValueError) -> E {
        *self.failure.borrow_mut() = Some(error);
        E::custom("a property value cannot be read")
    }

    /// Prefixes the kept error's path with `step`, as the error unwinds
    /// through the value that holds it. A value nested too deep keeps no
    /// path: thousands of steps, each prefixed in turn, would be a message
    /// no one reads, built in time quadratic in the depth.
    fn at<E>(&self, step: Step<'_>, error: E) -> E {
        if let Some(kept) = self.failure.borrow_mut().as_mut() {
            if !matches!(kept.kind, PropertyValueErrorKind::TooDeep) {
                kept.path = join_paths(&render_path(&[step]), &kept.path);
            }
        }
        error
    }

    /// An array or object inside `enclosing` others: refused past
    /// [`MAX_VALUE_DEPTH`].
    fn enter<E: de::Error>(&self, enclosing: usize) -> Result<(), E> {
        match enclosing + 1 > MAX_VALUE_DEPTH {
            true => Err(self.fail(PropertyValueError {
                path: String::new(),
                kind: PropertyValueErrorKind::TooDeep,
            })),
            false => Ok(()),
        }
    }

    /// A special object (one with the signature key) inside `enclosing`
    /// arrays and objects, through the codec.
    fn special<E: de::Error>(
        &self,
        object: Map<String, Value>,
        enclosing: usize,
    ) -> Result<PropertyValue, E> {
        property_value_from_json_within(&Value::Object(object), self.mode, enclosing)
            .map_err(|e| self.fail(e))
    }
}

/// The top-level map: its keys are plain property names, the signature key
/// included (as the codec reads a top-level map).
struct MapSeed<'a, 'm> {
    reader: Reader<'a, 'm>,
}

impl<'de> DeserializeSeed<'de> for MapSeed<'_, '_> {
    type Value = PropertyMap;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<PropertyMap, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MapSeed<'_, '_> {
    type Value = PropertyMap;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a property map (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<PropertyMap, A::Error> {
        match entries(self.reader, access, Signatures::Plain, 0)? {
            Entries::Map(map) => Ok(map),
            Entries::Special(_) => unreachable!("a plain map has no special objects"),
        }
    }
}

/// Whether an object's signature key makes it a special object.
#[derive(PartialEq)]
enum Signatures {
    /// A top-level map: the signature key is a property name like another.
    Plain,
    Special,
}

/// An object's entries, read.
enum Entries {
    Map(PropertyMap),
    /// A special object, read by the codec.
    Special(PropertyValue),
}

/// `depth`: how many arrays and objects of the property value enclose the
/// entries' values (0 for a property map's own).
fn entries<'de, A: MapAccess<'de>>(
    reader: Reader<'_, '_>,
    mut access: A,
    signatures: Signatures,
    depth: usize,
) -> Result<Entries, A::Error> {
    let mut map = PropertyMap::new();
    while let Some(key) = access.next_key::<String>()? {
        if key == SIG_KEY && signatures == Signatures::Special {
            // A special object: the codec reads it whole, as JSON.
            let mut object = Map::new();
            for (k, v) in map.iter() {
                let json = property_value_to_json(v, reader.mode).map_err(|e| reader.fail(e))?;
                object.insert(k.clone(), json);
            }
            object.insert(key, access.next_value::<Value>()?);
            while let Some((k, v)) = access.next_entry::<String, Value>()? {
                object.insert(k, v);
            }
            return reader.special(object, depth - 1).map(Entries::Special);
        }
        let value = access
            .next_value_seed(ValueSeed { reader, depth })
            .map_err(|e| reader.at(Step::Key(&key), e))?;
        map.insert(key, value);
    }
    Ok(Entries::Map(map))
}

/// Any property value, inside `depth` arrays and objects of the property
/// value it belongs to.
struct ValueSeed<'a, 'm> {
    reader: Reader<'a, 'm>,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = PropertyValue;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<PropertyValue, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_> {
    type Value = PropertyValue;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a property value")
    }

    fn visit_unit<E>(self) -> Result<PropertyValue, E> {
        Ok(PropertyValue::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<PropertyValue, E> {
        Ok(PropertyValue::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<PropertyValue, E> {
        Ok(PropertyValue::Number(n as f64))
    }

    fn visit_u64<E>(self, n: u64) -> Result<PropertyValue, E> {
        Ok(PropertyValue::Number(n as f64))
    }

    fn visit_f64<E>(self, n: f64) -> Result<PropertyValue, E> {
        Ok(PropertyValue::Number(n))
    }

    fn visit_str<E>(self, s: &str) -> Result<PropertyValue, E> {
        Ok(match s {
            UNKNOWN_STRING => PropertyValue::Unknown,
            _ => PropertyValue::String(s.to_owned()),
        })
    }

    fn visit_string<E>(self, s: String) -> Result<PropertyValue, E> {
        Ok(match s.as_str() {
            UNKNOWN_STRING => PropertyValue::Unknown,
            _ => PropertyValue::String(s),
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut access: A) -> Result<PropertyValue, A::Error> {
        self.reader.enter(self.depth)?;
        let mut items = Vec::with_capacity(access.size_hint().unwrap_or(0));
        loop {
            let next = access
                .next_element_seed(ValueSeed {
                    reader: self.reader,
                    depth: self.depth + 1,
                })
                .map_err(|e| self.reader.at(Step::Index(items.len()), e))?;
            match next {
                Some(item) => items.push(item),
                None => return Ok(PropertyValue::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, access: A) -> Result<PropertyValue, A::Error> {
        self.reader.enter(self.depth)?;
        Ok(
            match entries(self.reader, access, Signatures::Special, self.depth + 1)? {
                Entries::Map(map) => PropertyValue::Object(map),
                Entries::Special(value) => value,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::values::property_map_from_json;

    fn both(text: &str) -> (String, String) {
        let raw: Box<RawValue> = serde_json::from_str(text).unwrap();
        let object: Map<String, Value> = serde_json::from_str(text).unwrap();
        let streamed = property_map_from_raw(&raw, SecretsMode::Opaque);
        let via_value = property_map_from_json(&object, SecretsMode::Opaque);
        let show = |r: Result<PropertyMap, PropertyValueError>| match r {
            Ok(map) => format!("{map:?}"),
            Err(e) => format!("error: {e}"),
        };
        (show(streamed), show(via_value))
    }

    #[test]
    fn reads_what_the_value_codec_reads() {
        for text in [
            r#"{}"#,
            r#"{"a":null,"b":true,"c":-3,"d":18446744073709551615,"e":1.5e300,"f":"x","g":[1,[2,{}]]}"#,
            r#"{"u":"04da6b54-80e4-46f7-96ec-b56ff0331ba9","n":{"deep":{"er":["04da6b54-80e4-46f7-96ec-b56ff0331ba9"]}}}"#,
            r#"{"s":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","ciphertext":"v1:abc"}}"#,
            // The signature key after another key.
            r#"{"s":{"ciphertext":"v1:abc","4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270"}}"#,
            r#"{"a":{"4dabf18193072939515e22adb298388d":"c44067f5952c0a294b673a41bacd8c17","hash":"h","text":"hi"}}"#,
            r#"{"r":{"4dabf18193072939515e22adb298388d":"5cf8f73096256a8f31e491e813e4eb8e","urn":"urn:pulumi:dev::p::t:m:R::n","id":"i"}}"#,
            r#"{"o":{"4dabf18193072939515e22adb298388d":"d0e6a833031e9bbcd3f4e8bde6ca49a4","value":[1,"x"],"secret":false}}"#,
            // The signature key of a top-level property is a plain name.
            r#"{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270"}"#,
            // Last of two equal keys wins.
            r#"{"k":1,"k":2}"#,
            // Errors, with their paths.
            r#"{"list":[0,{"x":{"4dabf18193072939515e22adb298388d":"nope"}}]}"#,
            r#"{"t":{"a.b":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"1"}}}"#,
            r#"{"r":{"4dabf18193072939515e22adb298388d":"5cf8f73096256a8f31e491e813e4eb8e","urn":"not a urn"}}"#,
            r#"{"x":{"y":1,"4dabf18193072939515e22adb298388d":7}}"#,
        ] {
            let (streamed, via_value) = both(text);
            assert_eq!(streamed, via_value, "{text}");
        }
    }

    /// `{"v": …}` with `v` nested `depth` levels deep.
    fn nested_map(depth: usize) -> String {
        let mut text = String::from("{\"v\":");
        for i in 0..depth {
            text.push_str(if i % 2 == 0 { "{\"k\":" } else { "[" });
        }
        text.push_str("\"leaf\"");
        for i in (0..depth).rev() {
            text.push(if i % 2 == 0 { '}' } else { ']' });
        }
        text.push('}');
        text
    }

    #[test]
    fn values_nest_up_to_the_limit_on_both_paths() {
        // Values this deep need the stack the `converge` binary gives its
        // threads (a test thread has 2 MB).
        let run = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(|| {
                for (depth, ok) in [(MAX_VALUE_DEPTH, true), (MAX_VALUE_DEPTH + 1, false)] {
                    let text = nested_map(depth);
                    let raw: Box<RawValue> =
                        crate::json_limits::from_slice(text.as_bytes()).unwrap();
                    let object: Map<String, Value> =
                        crate::json_limits::from_slice(text.as_bytes()).unwrap();
                    let streamed = property_map_from_raw(&raw, SecretsMode::Opaque);
                    let via_value = property_map_from_json(&object, SecretsMode::Opaque);
                    match (streamed, via_value) {
                        (Ok(a), Ok(b)) if ok => assert_eq!(a, b),
                        (Err(a), Err(b)) if !ok => {
                            assert!(matches!(a.kind, PropertyValueErrorKind::TooDeep), "{a}");
                            assert!(matches!(b.kind, PropertyValueErrorKind::TooDeep), "{b}");
                            assert!(b.path.is_empty(), "{}", b.path.len());
                            assert!(a.to_string().contains("more than 9994 levels"), "{a}");
                            // No path thousands of steps long.
                            assert!(a.path.is_empty(), "{}", a.path.len());
                        }
                        (a, b) => panic!("depth {depth}: {:?} / {:?}", a.is_ok(), b.is_ok()),
                    }
                }
            })
            .unwrap();
        run.join().unwrap();
    }

    #[test]
    fn a_property_map_must_be_an_object() {
        let raw: Box<RawValue> = serde_json::from_str("[1]").unwrap();
        let e = property_map_from_raw(&raw, SecretsMode::Opaque).unwrap_err();
        assert!(e.to_string().contains("malformed property map"), "{e}");
    }
}

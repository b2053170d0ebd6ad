//! A resource's property maps written straight from its values into the
//! serializer of the state text, with no `serde_json::Value` tree of each
//! map in between: at 100,000 resources those trees were 150 MB of fresh
//! memory per checkpoint written, most of its encoding time.
//!
//! Plain values (null, booleans, numbers, strings, unknowns, arrays and
//! objects) are written as they are walked. The special objects (secrets,
//! assets, archives, resource references, output values) go through the
//! values codec, which sorts their keys and encrypts secrets; they are
//! few. A value that cannot be written (a number that is not finite, a
//! secret that cannot be encrypted) stops the serializer; the structured
//! error, with the value's path, is kept in the [`WriteFailure`] the
//! writer shares, since a serializer's own errors carry only text.

use std::cell::RefCell;
use std::fmt;

use converge_model::{PropertyMap, PropertyValue, Urn, UNKNOWN_STRING};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use super::property_path::{join_paths, render_path, Step};
use super::values::{property_value_to_json, PropertyValueErrorKind, MAX_EXACT_INTEGER};
use super::CheckpointError;
use crate::secrets::SecretsMode;

/// The first value a serialization could not write, with where it is.
#[derive(Debug, Default)]
pub(crate) struct WriteFailure(RefCell<Option<CheckpointError>>);

impl WriteFailure {
    /// The error to report for a serializer that failed with `error` while
    /// writing `what`: the recorded failure if there is one.
    pub(crate) fn to_error(&self, error: serde_json::Error, what: &str) -> CheckpointError {
        self.0
            .borrow_mut()
            .take()
            .unwrap_or_else(|| CheckpointError::RawJson {
                field: what.to_owned(),
                source: error,
            })
    }

    /// Records `error` (if it is the first) and returns the error that
    /// stops the serializer.
    pub(crate) fn fail<E: serde::ser::Error>(&self, error: CheckpointError) -> E {
        let stop = E::custom(&error);
        let mut slot = self.0.borrow_mut();
        if slot.is_none() {
            *slot = Some(error);
        }
        stop
    }
}

/// How the DTOs of one write encode property maps: the secrets mode, and
/// where a failure is kept.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PropsWriter<'a> {
    pub mode: SecretsMode<'a>,
    pub failure: &'a WriteFailure,
}

impl<'a> PropsWriter<'a> {
    /// `map`, the `field` (`inputs`, `outputs`) of the resource `urn`.
    pub(crate) fn props(
        self,
        map: &'a PropertyMap,
        urn: &'a Urn,
        field: &'static str,
    ) -> LiveProps<'a> {
        LiveProps {
            writer: self,
            map,
            urn,
            field,
        }
    }
}

/// A property map that serializes as its state JSON.
pub(crate) struct LiveProps<'a> {
    writer: PropsWriter<'a>,
    pub(crate) map: &'a PropertyMap,
    urn: &'a Urn,
    field: &'static str,
}

impl fmt::Debug for LiveProps<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveProps")
            .field("urn", &self.urn.as_str())
            .field("field", &self.field)
            .field("keys", &self.map.len())
            .finish()
    }
}

impl Serialize for LiveProps<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write_map(self, self.map, None, s)
    }
}

/// Where a value is: its step from its parent, and the parent's place.
struct At<'a> {
    step: Step<'a>,
    parent: Option<&'a At<'a>>,
}

impl At<'_> {
    fn render(&self) -> String {
        let mut steps = Vec::new();
        let mut at = Some(self);
        while let Some(here) = at {
            steps.push(here.step);
            at = here.parent;
        }
        steps.reverse();
        render_path(&steps)
    }
}

struct ValueOut<'v, 'a> {
    props: &'v LiveProps<'a>,
    value: &'v PropertyValue,
    at: At<'v>,
}

fn write_map<S: Serializer>(
    props: &LiveProps<'_>,
    map: &PropertyMap,
    parent: Option<&At<'_>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut out = s.serialize_map(Some(map.len()))?;
    for (key, value) in map {
        out.serialize_entry(
            key,
            &ValueOut {
                props,
                value,
                at: At {
                    step: Step::Key(key),
                    parent,
                },
            },
        )?;
    }
    out.end()
}

impl Serialize for ValueOut<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.value {
            PropertyValue::Null => s.serialize_unit(),
            PropertyValue::Bool(b) => s.serialize_bool(*b),
            // As the codec writes numbers: whole ones without a fraction
            // (and -0 as 0), the others as Go formats a double.
            PropertyValue::Number(n) if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER => {
                s.serialize_i64(*n as i64)
            }
            PropertyValue::Number(n) if n.is_finite() => s.serialize_f64(*n),
            PropertyValue::Number(n) => Err(self.fail("", PropertyValueErrorKind::NonFinite(*n))),
            PropertyValue::String(text) => s.serialize_str(text),
            PropertyValue::Unknown => s.serialize_str(UNKNOWN_STRING),
            PropertyValue::Array(items) => {
                let mut out = s.serialize_seq(Some(items.len()))?;
                for (i, item) in items.iter().enumerate() {
                    out.serialize_element(&ValueOut {
                        props: self.props,
                        value: item,
                        at: At {
                            step: Step::Index(i),
                            parent: Some(&self.at),
                        },
                    })?;
                }
                out.end()
            }
            PropertyValue::Object(map) => write_map(self.props, map, Some(&self.at), s),
            special => match property_value_to_json(special, self.props.writer.mode) {
                Ok(json) => json.serialize(s),
                Err(e) => Err(self.fail(&e.path, e.kind)),
            },
        }
    }
}

impl ValueOut<'_, '_> {
    /// Records the failure at `rest` (a path relative to this value) and
    /// returns the error that stops the serializer.
    fn fail<E: serde::ser::Error>(&self, rest: &str, kind: PropertyValueErrorKind) -> E {
        let props = self.props;
        let property = join_paths(props.field, &join_paths(&self.at.render(), rest));
        props.writer.failure.fail(CheckpointError::Property {
            urn: props.urn.to_string(),
            property,
            source: kind,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::json_text::to_pretty_bytes;
    use crate::checkpoint::values::property_map_to_json;
    use converge_model::{Asset, OutputValue};

    fn sample() -> PropertyMap {
        let mut nested = PropertyMap::new();
        nested.insert("z".to_owned(), PropertyValue::Number(-0.0));
        nested.insert("a.b".to_owned(), PropertyValue::Number(1.5e-7));
        let mut map = PropertyMap::new();
        map.insert("n".to_owned(), PropertyValue::Number(42.0));
        map.insert("f".to_owned(), PropertyValue::Number(0.1));
        map.insert("big".to_owned(), PropertyValue::Number(1e21));
        map.insert("s".to_owned(), PropertyValue::from("text"));
        map.insert("u".to_owned(), PropertyValue::Unknown);
        map.insert("nil".to_owned(), PropertyValue::Null);
        map.insert("yes".to_owned(), PropertyValue::Bool(true));
        map.insert(
            "list".to_owned(),
            PropertyValue::Array(vec![
                PropertyValue::Object(nested.clone()),
                PropertyValue::Array(Vec::new()),
            ]),
        );
        map.insert("obj".to_owned(), PropertyValue::Object(nested));
        map.insert(
            "asset".to_owned(),
            PropertyValue::Asset(Box::new(Asset {
                hash: "h".to_owned(),
                text: Some("hello".to_owned()),
                ..Asset::default()
            })),
        );
        map.insert(
            "secret".to_owned(),
            PropertyValue::Secret(Box::new(PropertyValue::from("ciphertext"))),
        );
        map.insert(
            "output".to_owned(),
            PropertyValue::Output(Box::new(OutputValue {
                element: Some(Box::new(PropertyValue::Number(3.0))),
                ..OutputValue::default()
            })),
        );
        map
    }

    const URN: &str = "urn:pulumi:dev::p::pkg:index:Thing::a";

    /// `map` as the `field` of the resource [`URN`], written with secrets
    /// kept as ciphertext, and the failure it recorded if any.
    fn write_opaque(
        map: &PropertyMap,
        field: &'static str,
    ) -> (serde_json::Result<Vec<u8>>, WriteFailure) {
        let urn = Urn::parse(URN).unwrap();
        let failure = WriteFailure::default();
        let writer = PropsWriter {
            mode: SecretsMode::Opaque,
            failure: &failure,
        };
        let written = to_pretty_bytes(&writer.props(map, &urn, field), Vec::new());
        (written, failure)
    }

    #[test]
    fn live_props_are_the_codecs_text() {
        let map = sample();
        let (live, _) = write_opaque(&map, "inputs");
        let live = live.unwrap();
        let json = property_map_to_json(&map, SecretsMode::Opaque).unwrap();
        assert_eq!(
            String::from_utf8(live).unwrap(),
            String::from_utf8(to_pretty_bytes(&json, Vec::new()).unwrap()).unwrap()
        );
    }

    #[test]
    fn a_value_that_cannot_be_written_is_reported_with_its_path() {
        let mut inner = PropertyMap::new();
        inner.insert("ok".to_owned(), PropertyValue::Number(1.0));
        inner.insert("bad".to_owned(), PropertyValue::Number(f64::NAN));
        let mut map = PropertyMap::new();
        map.insert(
            "tags".to_owned(),
            PropertyValue::Array(vec![PropertyValue::Object(inner)]),
        );
        // Opaque mode cannot write a secret that is not its ciphertext.
        map.insert(
            "x".to_owned(),
            PropertyValue::Secret(Box::new(PropertyValue::Number(1.0))),
        );
        let (written, failure) = write_opaque(&map, "outputs");
        match failure.to_error(written.unwrap_err(), "the state") {
            CheckpointError::Property {
                urn: at,
                property,
                source: PropertyValueErrorKind::NonFinite(_),
            } => {
                assert_eq!(at, URN);
                assert_eq!(property, "outputs.tags[0].bad");
            }
            other => panic!("unexpected error: {other:?}"),
        }
    }
}

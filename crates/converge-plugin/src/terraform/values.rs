//! Terraform's `DynamicValue` ↔ Converge's [`PropertyValue`], by cty type.
//!
//! A Terraform provider's schema gives every attribute a cty type as JSON
//! text (`"string"`, `["list","number"]`, `["object",{"a":"bool"}]`, …);
//! [`CtyType::from_json`] parses it. Values travel as msgpack of that type
//! ([`encode_msgpack`], [`decode_msgpack`]) and, in a few replies, as JSON
//! ([`decode_json`]); [`decode_dynamic_value`] picks the one that is set.
//!
//! The wire rules (cty's): null is msgpack nil at any type; an unknown value
//! is msgpack extension type 0 (newer cty's refined unknowns, extension type
//! 12, decode as unknown too); numbers are integers when integral and in
//! range, floats otherwise (and decode from a decimal string, cty's form for
//! numbers beyond float precision); object attributes are all present, in
//! name order; a value of type `"dynamic"` is a two-element array of its
//! concrete type's JSON text (as bytes) and the value of that type.
//!
//! Encoding converts primitives as cty does (a number or bool where a string
//! is expected becomes its text; a numeric or `"true"`/`"false"` string
//! becomes a number or bool).
//!
//! **Secrets are not a msgpack concept.** The codec refuses
//! [`PropertyValue::Secret`] (and outputs, assets, archives and resource
//! references, which have no cty form). The Terraform provider adapter
//! unwraps secrets before encoding, remembering their paths, and rewraps
//! the same paths (and the schema's `sensitive` attributes) in what it
//! decodes. Errors name paths and types, never values.

mod cty_type;
mod json;
mod msgpack;

use std::fmt;

use converge_model::PropertyValue;
use converge_proto::tfplugin6::DynamicValue;

pub use cty_type::CtyType;
pub use json::decode_json;
pub use msgpack::{decode_msgpack, encode_msgpack};

/// Why a type or value could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// A schema's type JSON is not a cty type.
    #[error("invalid cty type {json}: {reason}")]
    InvalidType {
        /// The type JSON as received.
        json: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A value does not have the shape its type requires.
    #[error("{path}: expected {expected}, found {found}")]
    Mismatch {
        /// Where in the value.
        path: ValuePath,
        /// The cty type expected there.
        expected: String,
        /// What was found instead (a kind, never the value).
        found: String,
    },
    /// An object value has an attribute its object type does not.
    #[error("{path}: unexpected attribute {name:?}; the type has {known}")]
    UnknownAttribute {
        /// Where the object is.
        path: ValuePath,
        /// The attribute's name.
        name: String,
        /// The names the type has.
        known: String,
    },
    /// A tuple value of the wrong length.
    #[error("{path}: expected a tuple of {expected} element(s), found {found}")]
    TupleLength {
        /// Where the tuple is.
        path: ValuePath,
        /// The length the type requires.
        expected: usize,
        /// The length found.
        found: usize,
    },
    /// A value with no cty form, such as a secret the caller did not unwrap.
    #[error("{path}: {kind} values cannot be sent to a Terraform provider{hint}")]
    NotCty {
        /// Where in the value.
        path: ValuePath,
        /// The kind of value.
        kind: &'static str,
        /// What to do about it, if anything.
        hint: &'static str,
    },
    /// The bytes are not a msgpack or JSON document.
    #[error("malformed {format} value: {reason}")]
    Malformed {
        /// `msgpack` or `JSON`.
        format: &'static str,
        /// The parser's complaint.
        reason: String,
    },
}

/// Where in a value an error is: attribute names and element keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValuePath(Vec<PathStep>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum PathStep {
    Attribute(String),
    Index(usize),
    Key(String),
}

impl ValuePath {
    fn attribute(&self, name: &str) -> ValuePath {
        self.with(PathStep::Attribute(name.to_owned()))
    }

    fn index(&self, index: usize) -> ValuePath {
        self.with(PathStep::Index(index))
    }

    fn key(&self, key: &str) -> ValuePath {
        self.with(PathStep::Key(key.to_owned()))
    }

    fn with(&self, step: PathStep) -> ValuePath {
        let mut steps = self.0.clone();
        steps.push(step);
        ValuePath(steps)
    }
}

impl fmt::Display for ValuePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("the value");
        }
        f.write_str("at ")?;
        for (i, step) in self.0.iter().enumerate() {
            match step {
                PathStep::Attribute(name) if i == 0 => write!(f, "{name}")?,
                PathStep::Attribute(name) => write!(f, ".{name}")?,
                PathStep::Index(index) => write!(f, "[{index}]")?,
                PathStep::Key(key) => write!(f, "[{key:?}]")?,
            }
        }
        Ok(())
    }
}

/// Decodes a `DynamicValue` of type `ty`: its msgpack, else its JSON; one
/// with neither set is null.
pub fn decode_dynamic_value(
    value: &DynamicValue,
    ty: &CtyType,
) -> Result<PropertyValue, ValueError> {
    if !value.msgpack.is_empty() {
        decode_msgpack(&value.msgpack, ty)
    } else if !value.json.is_empty() {
        decode_json(&value.json, ty)
    } else {
        Ok(PropertyValue::Null)
    }
}

/// Encodes `value` of type `ty` as a msgpack `DynamicValue`.
pub fn encode_dynamic_value(
    value: &PropertyValue,
    ty: &CtyType,
) -> Result<DynamicValue, ValueError> {
    Ok(DynamicValue {
        msgpack: encode_msgpack(value, ty)?,
        json: Vec::new(),
    })
}

/// The error for a model value with no cty form.
fn not_cty(path: &ValuePath, value: &PropertyValue) -> ValueError {
    let (kind, hint) = match value {
        PropertyValue::Secret(_) => (
            "secret",
            "; the adapter must unwrap secrets before encoding (a bug in Converge)",
        ),
        PropertyValue::Output(_) => (
            "output",
            "; the adapter must unwrap output values before encoding (a bug in Converge)",
        ),
        other => (other.kind_name(), ""),
    };
    ValueError::NotCty {
        path: path.clone(),
        kind,
        hint,
    }
}

#[cfg(test)]
mod tests;

//! Property values: the data exchanged between programs, the engine and
//! providers (seed 001, "Data Exchange Types").

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::Urn;

/// An object's properties, ordered by key so that every rendering is stable.
pub use crate::property_map::PropertyMap;

/// The sentinel string that stands for an unknown value on the wire and in
/// legacy state.
pub const UNKNOWN_STRING: &str = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/// A property value: a superset of JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum PropertyValue {
    Null,
    Bool(bool),
    /// An IEEE-754 double, as on the wire.
    Number(f64),
    String(String),
    Array(Vec<PropertyValue>),
    Object(PropertyMap),
    // The rarer variants are boxed: a value is 32 bytes instead of 104,
    // and every map of a snapshot holds many values.
    Asset(Box<Asset>),
    Archive(Box<Archive>),
    ResourceReference(Box<ResourceReference>),
    /// A value whose type and content are not known yet (previews).
    Unknown,
    /// A sensitive value; the wrapper travels with the value.
    Secret(Box<PropertyValue>),
    /// A first-class output value: known or unknown, maybe secret, with the
    /// resources it depends on.
    Output(Box<OutputValue>),
}

impl PropertyValue {
    pub fn string(s: impl Into<String>) -> Self {
        PropertyValue::String(s.into())
    }

    pub fn secret(v: PropertyValue) -> Self {
        PropertyValue::Secret(Box::new(v))
    }

    /// A short name for the kind of value, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            PropertyValue::Null => "null",
            PropertyValue::Bool(_) => "bool",
            PropertyValue::Number(_) => "number",
            PropertyValue::String(_) => "string",
            PropertyValue::Array(_) => "array",
            PropertyValue::Object(_) => "object",
            PropertyValue::Asset(_) => "asset",
            PropertyValue::Archive(_) => "archive",
            PropertyValue::ResourceReference(_) => "resource reference",
            PropertyValue::Unknown => "unknown",
            PropertyValue::Secret(_) => "secret",
            PropertyValue::Output(_) => "output",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            PropertyValue::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&PropertyMap> {
        match self {
            PropertyValue::Object(m) => Some(m),
            _ => None,
        }
    }

    /// True if this value, or any value nested in it, is unknown.
    pub fn contains_unknowns(&self) -> bool {
        match self {
            PropertyValue::Unknown => true,
            PropertyValue::Array(items) => items.iter().any(Self::contains_unknowns),
            PropertyValue::Object(map) => map.values().any(Self::contains_unknowns),
            PropertyValue::Secret(inner) => inner.contains_unknowns(),
            PropertyValue::Output(o) => o.element.as_ref().is_none_or(|e| e.contains_unknowns()),
            PropertyValue::ResourceReference(r) => {
                matches!(r.id, Some(ref id) if id.contains_unknowns())
            }
            _ => false,
        }
    }

    /// The value inside secret and output wrappers; an output whose value
    /// is not known is [`PropertyValue::Unknown`].
    pub fn unwrapped(&self) -> &PropertyValue {
        match self {
            PropertyValue::Secret(inner) => inner.unwrapped(),
            PropertyValue::Output(o) => match &o.element {
                Some(e) => e.unwrapped(),
                None => &PropertyValue::Unknown,
            },
            other => other,
        }
    }

    /// True if this value is secret: a secret, or a secret output, or an
    /// output of a secret (not looking inside arrays and objects).
    pub fn is_secret(&self) -> bool {
        match self {
            PropertyValue::Secret(_) => true,
            PropertyValue::Output(o) => {
                o.secret || o.element.as_deref().is_some_and(Self::is_secret)
            }
            _ => false,
        }
    }

    /// True if this value, or any value nested in it, is secret.
    pub fn contains_secrets(&self) -> bool {
        match self {
            PropertyValue::Secret(_) => true,
            PropertyValue::Array(items) => items.iter().any(Self::contains_secrets),
            PropertyValue::Object(map) => map.values().any(Self::contains_secrets),
            PropertyValue::Output(o) => {
                o.secret || o.element.as_ref().is_some_and(|e| e.contains_secrets())
            }
            _ => false,
        }
    }
}

impl From<&str> for PropertyValue {
    fn from(s: &str) -> Self {
        PropertyValue::String(s.to_owned())
    }
}

impl From<String> for PropertyValue {
    fn from(s: String) -> Self {
        PropertyValue::String(s)
    }
}

impl From<bool> for PropertyValue {
    fn from(b: bool) -> Self {
        PropertyValue::Bool(b)
    }
}

impl From<f64> for PropertyValue {
    fn from(n: f64) -> Self {
        PropertyValue::Number(n)
    }
}

impl From<PropertyMap> for PropertyValue {
    fn from(m: PropertyMap) -> Self {
        PropertyValue::Object(m)
    }
}

/// A blob: literal text, a local path or a URI, with the SHA-256 of its
/// contents when known.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Asset {
    /// Lower-case hex SHA-256 of the contents; empty when not computed yet.
    pub hash: String,
    pub text: Option<String>,
    pub path: Option<String>,
    pub uri: Option<String>,
}

impl Asset {
    /// A text asset with its hash computed.
    pub fn from_text(text: impl Into<String>) -> Self {
        let text = text.into();
        let hash = sha256_hex(text.as_bytes());
        Asset {
            hash,
            text: Some(text),
            path: None,
            uri: None,
        }
    }

    pub fn from_path(path: impl Into<String>) -> Self {
        Asset {
            path: Some(path.into()),
            ..Asset::default()
        }
    }

    pub fn from_uri(uri: impl Into<String>) -> Self {
        Asset {
            uri: Some(uri.into()),
            ..Asset::default()
        }
    }
}

/// A member of an archive's literal map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArchiveMember {
    Asset(Asset),
    Archive(Archive),
}

/// A map of names to assets or archives, or a reference to an archive file
/// or URI (tar, tgz, zip), with its SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Archive {
    pub hash: String,
    pub assets: Option<BTreeMap<String, ArchiveMember>>,
    pub path: Option<String>,
    pub uri: Option<String>,
}

/// A reference to a resource: its URN, its ID when custom (an unknown ID is
/// [`PropertyValue::Unknown`]), and the version of the provider managing it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceReference {
    pub urn: Urn,
    pub id: Option<Box<PropertyValue>>,
    pub package_version: String,
}

/// An output value: `element` is `None` when unknown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutputValue {
    pub element: Option<Box<PropertyValue>>,
    pub secret: bool,
    pub dependencies: Vec<Urn>,
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every map of a snapshot holds values inline: a 10k-resource state
    /// held 60 MB more when a value was 104 bytes.
    #[test]
    fn a_value_is_four_words() {
        assert!(std::mem::size_of::<PropertyValue>() <= 32);
    }

    #[test]
    fn text_asset_hash_is_sha256_of_text() {
        let a = Asset::from_text("hello");
        assert_eq!(
            a.hash,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
    }

    #[test]
    fn unknowns_and_secrets_are_found_when_nested() {
        let v = PropertyValue::Array(vec![
            PropertyValue::Null,
            PropertyValue::Object(PropertyMap::from([(
                "k".to_owned(),
                PropertyValue::secret(PropertyValue::Unknown),
            )])),
        ]);
        assert!(v.contains_unknowns());
        assert!(v.contains_secrets());
        assert!(!PropertyValue::from("x").contains_unknowns());
        let unknown_output = PropertyValue::Output(Box::default());
        assert!(unknown_output.contains_unknowns());
    }
}

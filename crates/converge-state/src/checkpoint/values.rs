//! Property values in state JSON.
//!
//! Plain JSON values stand for themselves; the string
//! [`UNKNOWN_STRING`] is an unknown; objects carrying the signature key
//! [`SIG_KEY`] are secrets, assets, archives, resource references or output
//! values. A secret holds the JSON text of its value, encrypted
//! (`ciphertext`) at the top level and as `plaintext` when nested inside
//! another secret, whose encryption already covers it.
//!
//! Objects are written with their keys sorted, as Go writes its maps. Output
//! values are flattened as Pulumi flattens them in state: an unknown output
//! becomes the unknown string, a known one its value (secret if marked so).

use std::collections::BTreeMap;
use std::fmt;

use converge_model::{
    Archive, ArchiveMember, Asset, OutputValue, PropertyMap, PropertyValue, ResourceReference, Urn,
    UrnError, UNKNOWN_STRING,
};
use serde_json::{Map, Value};

use super::json_text::to_compact_json;
use super::property_path::{join_paths, render_path, Step};
use crate::json_limits::{self, JsonLimitError, JsonReadError, MAX_JSON_DEPTH, MAX_VALUE_DEPTH};
use crate::secrets::{CryptoError, SecretsMode};

/// The key whose value tells what kind of special object an object is.
pub const SIG_KEY: &str = "4dabf18193072939515e22adb298388d";
pub const SECRET_SIG: &str = "1b47061264138c4ac30d75fd1eb44270";
pub const RESOURCE_REFERENCE_SIG: &str = "5cf8f73096256a8f31e491e813e4eb8e";
pub const ASSET_SIG: &str = "c44067f5952c0a294b673a41bacd8c17";
pub const ARCHIVE_SIG: &str = "0def7320c3a5731c473e5ecbe6d01bc7";
pub const OUTPUT_VALUE_SIG: &str = "d0e6a833031e9bbcd3f4e8bde6ca49a4";

/// Integers up to 2^53 are exact in a double; they print without a fraction.
pub(crate) const MAX_EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// A property value that could not be read or written, with where it is
/// (a property path relative to the map, e.g. `tags.name` or `list[2]`).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct PropertyValueError {
    pub path: String,
    pub kind: PropertyValueErrorKind,
}

/// What is wrong with a property value.
#[derive(Debug, thiserror::Error)]
pub enum PropertyValueErrorKind {
    #[error(
        "unknown signature {0} (key {SIG_KEY}): this state was written by a newer tool, or is corrupt"
    )]
    UnknownSignature(String),
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
    #[error("failed to decrypt a secret: {0}")]
    Decrypt(#[source] CryptoError),
    #[error("failed to encrypt a secret: {0}")]
    Encrypt(#[source] CryptoError),
    #[error("a secret's decrypted text is not valid JSON: {0}")]
    SecretText(#[source] serde_json::Error),
    #[error("a secret's decrypted text cannot be read: {0}")]
    SecretLimit(#[source] JsonLimitError),
    #[error(
        "the secret is stored as plaintext; reading it needs the stack's secrets provider (set the passphrase)"
    )]
    PlaintextSecretWithoutCrypter,
    #[error("the secret holds ciphertext where its plaintext (`plaintext`) is expected")]
    CiphertextWherePlaintext,
    #[error(
        "a secret read without its secrets provider must hold its ciphertext (a string), not a {0}; set the passphrase"
    )]
    SecretWithoutCrypter(&'static str),
    #[error("{0} cannot be written as JSON (not a finite number)")]
    NonFinite(f64),
    #[error("{0}")]
    Urn(#[source] UrnError),
    #[error(
        "it nests arrays and objects more than {MAX_VALUE_DEPTH} levels deep, the most a value \
         can nest and still be written in a checkpoint that Converge and Pulumi read \
         ({MAX_JSON_DEPTH} levels in all)"
    )]
    TooDeep,
}

/// Reads a property map from its JSON object.
pub fn property_map_from_json(
    object: &Map<String, Value>,
    mode: SecretsMode<'_>,
) -> Result<PropertyMap, PropertyValueError> {
    let mut codec = Codec::new(mode);
    codec.map_steps = 1;
    codec.read_map(object, false)
}

/// Writes a property map as a JSON object, keys sorted.
pub fn property_map_to_json(
    map: &PropertyMap,
    mode: SecretsMode<'_>,
) -> Result<Map<String, Value>, PropertyValueError> {
    let mut codec = Codec::new(mode);
    codec.write_map(map, false)
}

/// Reads one property value from JSON, inside `enclosing` arrays and
/// objects of the property value it belongs to.
pub(crate) fn property_value_from_json_within(
    value: &Value,
    mode: SecretsMode<'_>,
    enclosing: usize,
) -> Result<PropertyValue, PropertyValueError> {
    let mut codec = Codec::new(mode);
    codec.enclosing = enclosing;
    codec.read_value(value, false)
}

/// Reads one property value from JSON.
pub fn property_value_from_json(
    value: &Value,
    mode: SecretsMode<'_>,
) -> Result<PropertyValue, PropertyValueError> {
    Codec::new(mode).read_value(value, false)
}

/// Writes one property value as JSON.
pub fn property_value_to_json(
    value: &PropertyValue,
    mode: SecretsMode<'_>,
) -> Result<Value, PropertyValueError> {
    Codec::new(mode).write_value(value, false)
}

/// The value of a top-level secret whose ciphertext is `ciphertext`:
/// decrypted with `crypter` and decoded as a read with it decodes it (see
/// `Codec::read_secret`). Errors carry paths relative to the secret.
pub(crate) fn secret_from_ciphertext(
    ciphertext: &str,
    crypter: &dyn crate::secrets::Crypter,
) -> Result<PropertyValue, PropertyValueError> {
    let codec = Codec::new(SecretsMode::Crypter(crypter));
    let text = crypter
        .decrypt(ciphertext)
        .map_err(|e| codec.error(PropertyValueErrorKind::Decrypt(e)))?;
    let inner: Value = secret_text(&text).map_err(|kind| codec.error(kind))?;
    Codec::new(SecretsMode::Crypter(crypter)).read_value(&inner, true)
}

/// A secret's text, a JSON document of its own, within the limits of
/// [`crate::json_limits`].
fn secret_text(text: &str) -> Result<Value, PropertyValueErrorKind> {
    json_limits::from_slice(text.as_bytes()).map_err(|e| match e {
        JsonReadError::Limit(e) => PropertyValueErrorKind::SecretLimit(e),
        JsonReadError::Json(e) => PropertyValueErrorKind::SecretText(e),
    })
}

struct Codec<'m, 'p> {
    mode: SecretsMode<'m>,
    path: Vec<Step<'p>>,
    /// How many arrays and objects enclose the value being read, outside
    /// it (for a special object met inside a streamed property map).
    enclosing: usize,
    /// Steps of the path that are no level of a value: 1 when the codec
    /// reads a property map, whose keys name its values.
    map_steps: usize,
}

impl<'m, 'p> Codec<'m, 'p> {
    fn new(mode: SecretsMode<'m>) -> Self {
        Codec {
            mode,
            path: Vec::new(),
            enclosing: 0,
            map_steps: 0,
        }
    }

    /// An array or object at the codec's path: refused past
    /// [`MAX_VALUE_DEPTH`], with no path (thousands of steps long).
    fn enter_collection(&self) -> Result<(), PropertyValueError> {
        match self.enclosing + self.path.len() + 1 > MAX_VALUE_DEPTH + self.map_steps {
            true => Err(PropertyValueError {
                path: String::new(),
                kind: PropertyValueErrorKind::TooDeep,
            }),
            false => Ok(()),
        }
    }

    fn error(&self, kind: PropertyValueErrorKind) -> PropertyValueError {
        PropertyValueError {
            path: render_path(&self.path),
            kind,
        }
    }

    fn malformed(&self, what: &'static str, detail: impl fmt::Display) -> PropertyValueError {
        self.error(PropertyValueErrorKind::Malformed {
            what,
            detail: detail.to_string(),
        })
    }

    // ---- reading ----

    /// `nested`: inside a secret, whose nested secrets are plaintext.
    fn read_map(
        &mut self,
        object: &'p Map<String, Value>,
        nested: bool,
    ) -> Result<PropertyMap, PropertyValueError> {
        let mut map = PropertyMap::new();
        for (key, value) in object {
            self.path.push(Step::Key(key));
            let v = self.read_value(value, nested)?;
            self.path.pop();
            map.insert(key.clone(), v);
        }
        Ok(map)
    }

    fn read_value(
        &mut self,
        value: &'p Value,
        nested: bool,
    ) -> Result<PropertyValue, PropertyValueError> {
        Ok(match value {
            Value::Null => PropertyValue::Null,
            Value::Bool(b) => PropertyValue::Bool(*b),
            Value::Number(n) => PropertyValue::Number(n.as_f64().unwrap_or_default()),
            Value::String(s) if s == UNKNOWN_STRING => PropertyValue::Unknown,
            Value::String(s) => PropertyValue::String(s.clone()),
            Value::Array(items) => {
                self.enter_collection()?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.path.push(Step::Index(i));
                    out.push(self.read_value(item, nested)?);
                    self.path.pop();
                }
                PropertyValue::Array(out)
            }
            Value::Object(object) => match object.get(SIG_KEY) {
                None => {
                    self.enter_collection()?;
                    PropertyValue::Object(self.read_map(object, nested)?)
                }
                Some(Value::String(sig)) => match sig.as_str() {
                    SECRET_SIG => self.read_secret(object, nested)?,
                    RESOURCE_REFERENCE_SIG => {
                        PropertyValue::ResourceReference(Box::new(self.read_reference(object)?))
                    }
                    ASSET_SIG => PropertyValue::Asset(Box::new(self.read_asset(object)?)),
                    ARCHIVE_SIG => PropertyValue::Archive(Box::new(self.read_archive(object)?)),
                    OUTPUT_VALUE_SIG => {
                        PropertyValue::Output(Box::new(self.read_output(object, nested)?))
                    }
                    other => {
                        return Err(self.error(PropertyValueErrorKind::UnknownSignature(format!(
                            "{other:?}"
                        ))))
                    }
                },
                Some(other) => {
                    return Err(
                        self.error(PropertyValueErrorKind::UnknownSignature(other.to_string()))
                    )
                }
            },
        })
    }

    fn read_secret(
        &mut self,
        object: &Map<String, Value>,
        nested: bool,
    ) -> Result<PropertyValue, PropertyValueError> {
        let ciphertext = self.optional_string(object, "ciphertext", "secret")?;
        let plaintext = self.optional_string(object, "plaintext", "secret")?;
        let text = match (ciphertext, plaintext) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(self.malformed(
                    "secret",
                    "exactly one of `ciphertext` and `plaintext` must be set",
                ))
            }
            // Inside a secret, the outer encryption covers everything: Pulumi
            // reads a nested `ciphertext` as plain text too.
            (Some(text), None) | (None, Some(text)) if nested => text.to_owned(),
            (None, Some(text)) => match self.mode {
                SecretsMode::Crypter(_) | SecretsMode::Plaintext => text.to_owned(),
                SecretsMode::Opaque => {
                    return Err(self.error(PropertyValueErrorKind::PlaintextSecretWithoutCrypter))
                }
            },
            (Some(ciphertext), None) => match self.mode {
                SecretsMode::Opaque => {
                    return Ok(PropertyValue::secret(PropertyValue::String(
                        ciphertext.to_owned(),
                    )))
                }
                SecretsMode::Crypter(crypter) => crypter
                    .decrypt(ciphertext)
                    .map_err(|e| self.error(PropertyValueErrorKind::Decrypt(e)))?,
                SecretsMode::Plaintext => {
                    return Err(self.error(PropertyValueErrorKind::CiphertextWherePlaintext))
                }
            },
        };
        let inner: Value = secret_text(&text).map_err(|kind| self.error(kind))?;
        // The inner value is owned here, so its keys cannot join the path's
        // borrowed steps: decode it with a fresh codec and prefix the path.
        let mut inner_codec = Codec::new(self.mode);
        let value = inner_codec.read_value(&inner, true).map_err(|mut e| {
            e.path = join_paths(&render_path(&self.path), &e.path);
            e
        })?;
        Ok(PropertyValue::secret(value))
    }

    fn read_reference(
        &self,
        object: &Map<String, Value>,
    ) -> Result<ResourceReference, PropertyValueError> {
        const WHAT: &str = "resource reference";
        let urn = self
            .optional_string(object, "urn", WHAT)?
            .ok_or_else(|| self.malformed(WHAT, "missing `urn`"))?;
        let urn = Urn::parse(urn).map_err(|e| self.error(PropertyValueErrorKind::Urn(e)))?;
        let id = match object.get("id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) if id.is_empty() || id == UNKNOWN_STRING => {
                Some(Box::new(PropertyValue::Unknown))
            }
            Some(Value::String(id)) => Some(Box::new(PropertyValue::String(id.clone()))),
            // A bug in old Pulumi versions wrote the raw property value
            // `{"V": …}`; read it as Pulumi does.
            Some(Value::Object(raw)) => match raw.get("V") {
                None | Some(Value::Null) => None,
                Some(Value::String(id)) => Some(Box::new(PropertyValue::String(id.clone()))),
                Some(Value::Object(_)) => Some(Box::new(PropertyValue::Unknown)),
                Some(_) => return Err(self.malformed(WHAT, "`id` must be a string")),
            },
            Some(_) => return Err(self.malformed(WHAT, "`id` must be a string")),
        };
        let package_version = self
            .optional_string(object, "packageVersion", WHAT)?
            .unwrap_or_default()
            .to_owned();
        Ok(ResourceReference {
            urn,
            id,
            package_version,
        })
    }

    fn read_asset(&self, object: &Map<String, Value>) -> Result<Asset, PropertyValueError> {
        const WHAT: &str = "asset";
        let field = |key| -> Result<Option<String>, PropertyValueError> {
            Ok(self.optional_string(object, key, WHAT)?.map(str::to_owned))
        };
        let mut asset = Asset {
            hash: field("hash")?.unwrap_or_default(),
            text: field("text")?,
            path: field("path")?,
            uri: field("uri")?,
        };
        // Go omits empty text; an asset with no source is an empty text asset.
        if asset.text.is_none() && asset.path.is_none() && asset.uri.is_none() {
            asset.text = Some(String::new());
        }
        Ok(asset)
    }

    fn read_archive(&self, object: &Map<String, Value>) -> Result<Archive, PropertyValueError> {
        const WHAT: &str = "archive";
        let assets = match object.get("assets") {
            None | Some(Value::Null) => None,
            Some(Value::Object(members)) => {
                let mut assets = BTreeMap::new();
                for (name, member) in members {
                    let member_object = member.as_object().ok_or_else(|| {
                        self.malformed(WHAT, format!("member {name:?} is not an asset or archive"))
                    })?;
                    let member = match member_object.get(SIG_KEY).and_then(Value::as_str) {
                        Some(ASSET_SIG) => ArchiveMember::Asset(self.read_asset(member_object)?),
                        Some(ARCHIVE_SIG) => {
                            ArchiveMember::Archive(self.read_archive(member_object)?)
                        }
                        _ => {
                            return Err(self.malformed(
                                WHAT,
                                format!("member {name:?} is not an asset or archive"),
                            ))
                        }
                    };
                    assets.insert(name.clone(), member);
                }
                Some(assets)
            }
            Some(_) => return Err(self.malformed(WHAT, "`assets` must be an object")),
        };
        let field = |key| -> Result<Option<String>, PropertyValueError> {
            Ok(self.optional_string(object, key, WHAT)?.map(str::to_owned))
        };
        let mut archive = Archive {
            hash: field("hash")?.unwrap_or_default(),
            assets,
            path: field("path")?,
            uri: field("uri")?,
        };
        if archive.assets.is_none() && archive.path.is_none() && archive.uri.is_none() {
            archive.assets = Some(BTreeMap::new());
        }
        Ok(archive)
    }

    fn read_output(
        &mut self,
        object: &'p Map<String, Value>,
        nested: bool,
    ) -> Result<OutputValue, PropertyValueError> {
        const WHAT: &str = "output value";
        let element = match object.get("value") {
            None => None,
            Some(value) => Some(Box::new(self.read_value(value, nested)?)),
        };
        let secret = match object.get("secret") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(self.malformed(WHAT, "`secret` must be a boolean")),
        };
        let dependencies = match object.get("dependencies") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    let s = item.as_str().ok_or_else(|| {
                        self.malformed(WHAT, "`dependencies` must hold URN strings")
                    })?;
                    Urn::parse(s).map_err(|e| self.error(PropertyValueErrorKind::Urn(e)))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(self.malformed(WHAT, "`dependencies` must be a list")),
        };
        Ok(OutputValue {
            element,
            secret,
            dependencies,
        })
    }

    fn optional_string<'o>(
        &self,
        object: &'o Map<String, Value>,
        key: &str,
        what: &'static str,
    ) -> Result<Option<&'o str>, PropertyValueError> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.malformed(what, format!("`{key}` must be a string"))),
        }
    }

    // ---- writing ----

    fn write_map(
        &mut self,
        map: &'p PropertyMap,
        nested: bool,
    ) -> Result<Map<String, Value>, PropertyValueError> {
        let mut object = Map::new();
        for (key, value) in map {
            self.path.push(Step::Key(key));
            let v = self.write_value(value, nested)?;
            self.path.pop();
            object.insert(key.clone(), v);
        }
        Ok(object)
    }

    fn write_value(
        &mut self,
        value: &'p PropertyValue,
        nested: bool,
    ) -> Result<Value, PropertyValueError> {
        Ok(match value {
            PropertyValue::Null => Value::Null,
            PropertyValue::Bool(b) => Value::Bool(*b),
            PropertyValue::Number(n) => self.write_number(*n)?,
            PropertyValue::String(s) => Value::String(s.clone()),
            PropertyValue::Unknown => Value::String(UNKNOWN_STRING.to_owned()),
            PropertyValue::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.path.push(Step::Index(i));
                    out.push(self.write_value(item, nested)?);
                    self.path.pop();
                }
                Value::Array(out)
            }
            PropertyValue::Object(map) => Value::Object(self.write_map(map, nested)?),
            PropertyValue::Asset(asset) => asset_to_json(asset),
            PropertyValue::Archive(archive) => archive_to_json(archive),
            PropertyValue::ResourceReference(reference) => self.write_reference(reference)?,
            PropertyValue::Secret(inner) => self.write_secret(inner, nested)?,
            PropertyValue::Output(output) => match &output.element {
                None => Value::String(UNKNOWN_STRING.to_owned()),
                Some(element)
                    if output.secret && !matches!(**element, PropertyValue::Secret(_)) =>
                {
                    self.write_secret(element, nested)?
                }
                Some(element) => self.write_value(element, nested)?,
            },
        })
    }

    fn write_number(&self, n: f64) -> Result<Value, PropertyValueError> {
        if n.fract() == 0.0 && n.abs() <= MAX_EXACT_INTEGER {
            // Also turns -0 into 0, which reads back the same.
            return Ok(Value::from(n as i64));
        }
        serde_json::Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| self.error(PropertyValueErrorKind::NonFinite(n)))
    }

    fn write_secret(
        &mut self,
        inner: &'p PropertyValue,
        nested: bool,
    ) -> Result<Value, PropertyValueError> {
        let (key, text) = if nested {
            (
                "plaintext",
                to_compact_json(&self.write_value(inner, true)?),
            )
        } else {
            match self.mode {
                SecretsMode::Opaque => match inner {
                    PropertyValue::String(ciphertext) => ("ciphertext", ciphertext.clone()),
                    other => {
                        return Err(self.error(PropertyValueErrorKind::SecretWithoutCrypter(
                            other.kind_name(),
                        )))
                    }
                },
                SecretsMode::Plaintext => (
                    "plaintext",
                    to_compact_json(&self.write_value(inner, true)?),
                ),
                SecretsMode::Crypter(crypter) => {
                    let plaintext = to_compact_json(&self.write_value(inner, true)?);
                    let ciphertext = crypter
                        .encrypt(&plaintext)
                        .map_err(|e| self.error(PropertyValueErrorKind::Encrypt(e)))?;
                    ("ciphertext", ciphertext)
                }
            }
        };
        Ok(special_object(SECRET_SIG, [(key, Value::String(text))]))
    }

    fn write_reference(&self, reference: &ResourceReference) -> Result<Value, PropertyValueError> {
        let mut fields = vec![
            ("urn", Value::String(reference.urn.to_string())),
            (
                "packageVersion",
                Value::String(reference.package_version.clone()),
            ),
        ];
        match reference.id.as_deref() {
            None => {}
            // Pulumi writes an unknown ID as the empty string.
            Some(PropertyValue::Unknown) => fields.push(("id", Value::String(String::new()))),
            Some(PropertyValue::String(id)) => fields.push(("id", Value::String(id.clone()))),
            Some(other) => {
                return Err(self.malformed(
                    "resource reference",
                    format!(
                        "its ID must be a string or unknown, not a {}",
                        other.kind_name()
                    ),
                ))
            }
        }
        Ok(special_object(RESOURCE_REFERENCE_SIG, fields))
    }
}

/// A special object: the signature plus `fields`, keys sorted.
fn special_object<'a>(sig: &str, fields: impl IntoIterator<Item = (&'a str, Value)>) -> Value {
    let mut sorted: BTreeMap<&str, Value> = fields.into_iter().collect();
    sorted.insert(SIG_KEY, Value::String(sig.to_owned()));
    Value::Object(sorted.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// Go's `omitempty`: empty strings are left out.
fn non_empty<'a>(key: &'a str, value: Option<&str>) -> Option<(&'a str, Value)> {
    value
        .filter(|s| !s.is_empty())
        .map(|s| (key, Value::String(s.to_owned())))
}

fn asset_to_json(asset: &Asset) -> Value {
    let fields = [
        non_empty("hash", Some(&asset.hash)),
        non_empty("text", asset.text.as_deref()),
        non_empty("path", asset.path.as_deref()),
        non_empty("uri", asset.uri.as_deref()),
    ];
    special_object(ASSET_SIG, fields.into_iter().flatten())
}

fn archive_to_json(archive: &Archive) -> Value {
    let mut fields: Vec<(&str, Value)> = [
        non_empty("hash", Some(&archive.hash)),
        non_empty("path", archive.path.as_deref()),
        non_empty("uri", archive.uri.as_deref()),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(assets) = &archive.assets {
        let members = assets
            .iter()
            .map(|(name, member)| {
                let v = match member {
                    ArchiveMember::Asset(a) => asset_to_json(a),
                    ArchiveMember::Archive(a) => archive_to_json(a),
                };
                (name.clone(), v)
            })
            .collect();
        fields.push(("assets", Value::Object(members)));
    }
    special_object(ARCHIVE_SIG, fields)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::{BlindingCrypter, Crypter};
    use serde_json::json;

    /// Reverses the text: enough to tell ciphertext from plaintext.
    #[derive(Debug)]
    struct Reverse;
    impl Crypter for Reverse {
        fn encrypt(&self, plaintext: &str) -> Result<String, CryptoError> {
            Ok(plaintext.chars().rev().collect())
        }
        fn decrypt(&self, ciphertext: &str) -> Result<String, CryptoError> {
            Ok(ciphertext.chars().rev().collect())
        }
    }

    fn read(v: Value) -> Result<PropertyValue, PropertyValueError> {
        property_value_from_json(&v, SecretsMode::Crypter(&Reverse))
    }

    fn write(v: &PropertyValue) -> Value {
        property_value_to_json(v, SecretsMode::Crypter(&Reverse)).unwrap()
    }

    #[test]
    fn nested_secrets_are_plaintext_inside_the_ciphertext() {
        let v = PropertyValue::secret(PropertyValue::Object(PropertyMap::from([
            ("a".to_owned(), PropertyValue::Number(1.0)),
            ("b".to_owned(), PropertyValue::secret("x".into())),
        ])));
        let j = write(&v);
        let inner = r#"{"a":1,"b":{"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","plaintext":"\"x\""}}"#;
        let ciphertext: String = inner.chars().rev().collect();
        assert_eq!(j, json!({SIG_KEY: SECRET_SIG, "ciphertext": ciphertext}));
        assert_eq!(read(j).unwrap(), v);
    }

    #[test]
    fn opaque_mode_keeps_ciphertext() {
        let j = json!({SIG_KEY: SECRET_SIG, "ciphertext": "v1:abc"});
        let v = property_value_from_json(&j, SecretsMode::Opaque).unwrap();
        assert_eq!(v, PropertyValue::secret("v1:abc".into()));
        assert_eq!(property_value_to_json(&v, SecretsMode::Opaque).unwrap(), j);
        let plain = json!({SIG_KEY: SECRET_SIG, "plaintext": "1"});
        let err = property_value_from_json(&plain, SecretsMode::Opaque).unwrap_err();
        assert!(err.to_string().contains("secrets provider"), "{err}");
        let err = property_value_to_json(
            &PropertyValue::secret(PropertyValue::Number(1.0)),
            SecretsMode::Opaque,
        )
        .unwrap_err();
        assert!(err.to_string().contains("not a number"), "{err}");
    }

    #[test]
    fn decrypt_failures_name_the_path() {
        let j = json!({"outer": {"list": [0, {SIG_KEY: SECRET_SIG, "ciphertext": "zz"}]}});
        let err = property_map_from_json(
            j.as_object().unwrap(),
            SecretsMode::Crypter(&BlindingCrypter),
        )
        .unwrap_err();
        assert_eq!(err.path, "outer.list[1]");
        assert!(
            matches!(err.kind, PropertyValueErrorKind::Decrypt(_)),
            "{err}"
        );
    }

    #[test]
    fn special_values_round_trip() {
        let urn = Urn::parse("urn:pulumi:dev::p::aws:s3/bucket:Bucket::b").unwrap();
        let values = [
            PropertyValue::Unknown,
            PropertyValue::Number(0.5),
            PropertyValue::Asset(Box::new(Asset::from_text("hello"))),
            PropertyValue::Asset(Box::new(Asset::from_path("./x"))),
            PropertyValue::Archive(Box::new(Archive {
                hash: String::new(),
                assets: Some(BTreeMap::from([(
                    "a.txt".to_owned(),
                    ArchiveMember::Asset(Asset::from_text("a")),
                )])),
                path: None,
                uri: None,
            })),
            PropertyValue::ResourceReference(Box::new(ResourceReference {
                urn: urn.clone(),
                id: Some(Box::new(PropertyValue::String("b-123".into()))),
                package_version: "6.0.0".into(),
            })),
            PropertyValue::ResourceReference(Box::new(ResourceReference {
                urn,
                id: Some(Box::new(PropertyValue::Unknown)),
                package_version: String::new(),
            })),
        ];
        for v in values {
            assert_eq!(read(write(&v)).unwrap(), v);
        }
    }

    #[test]
    fn numbers_and_outputs() {
        assert_eq!(write(&PropertyValue::Number(3.0)).to_string(), "3");
        assert_eq!(write(&PropertyValue::Number(-0.0)).to_string(), "0");
        assert!(
            property_value_to_json(&PropertyValue::Number(f64::NAN), SecretsMode::Opaque).is_err()
        );
        let output = json!({SIG_KEY: OUTPUT_VALUE_SIG, "value": "v", "secret": true,
            "dependencies": ["urn:pulumi:dev::p::t:m:T::n"]});
        let v = read(output).unwrap();
        assert!(matches!(&v, PropertyValue::Output(o) if o.secret && o.dependencies.len() == 1));
        // Flattened on write, as in Pulumi's state.
        assert_eq!(read(write(&v)).unwrap(), PropertyValue::secret("v".into()));
        let unknown = read(json!({SIG_KEY: OUTPUT_VALUE_SIG})).unwrap();
        assert_eq!(write(&unknown), json!(UNKNOWN_STRING));
    }

    #[test]
    fn unknown_signatures_are_refused() {
        let err = read(json!({"k": {SIG_KEY: "nope"}})).unwrap_err();
        assert_eq!(err.path, "k");
        assert!(
            err.to_string().contains("unknown signature \"nope\""),
            "{err}"
        );
        let err =
            read(json!({SIG_KEY: SECRET_SIG, "ciphertext": "a", "plaintext": "b"})).unwrap_err();
        assert!(err.to_string().contains("exactly one"), "{err}");
    }
}

//! PropertyValue → `google.protobuf.Value`.

use std::collections::BTreeMap;

use converge_model::{
    Archive, ArchiveMember, Asset, OutputValue, PropertyMap, PropertyValue, ResourceReference,
};
use prost_types::{value::Kind, ListValue, NullValue, Struct, Value};

use super::{
    MarshalError, MarshalOptions, PathStack, Step, ARCHIVE_SIG, ASSET_SIG, OUTPUT_VALUE_SIG,
    RESOURCE_REFERENCE_SIG, SECRET_SIG, SIG_KEY, UNKNOWN_STRING,
};

type Fields = BTreeMap<String, Value>;

pub(super) struct Encoder<'a> {
    opts: MarshalOptions,
    path: PathStack<'a>,
}

impl<'a> Encoder<'a> {
    pub(super) fn new(opts: MarshalOptions) -> Self {
        Encoder {
            opts,
            path: PathStack::default(),
        }
    }

    pub(super) fn properties(&mut self, props: &'a PropertyMap) -> Result<Struct, MarshalError> {
        let mut fields = Fields::new();
        for (key, value) in props {
            if self
                .opts
                .skips_key(key, matches!(value, PropertyValue::Null))
            {
                continue;
            }
            self.path.0.push(Step::Key(key));
            let encoded = self.value(value);
            self.path.0.pop();
            if let Some(encoded) = encoded? {
                fields.insert(key.clone(), encoded);
            }
        }
        Ok(Struct { fields })
    }

    /// Encodes `value`; `None` when it is left out.
    pub(super) fn value(
        &mut self,
        value: &'a PropertyValue,
    ) -> Result<Option<Value>, MarshalError> {
        Ok(Some(match value {
            PropertyValue::Null => kind(Kind::NullValue(NullValue::NullValue as i32)),
            PropertyValue::Bool(b) => kind(Kind::BoolValue(*b)),
            PropertyValue::Number(n) => kind(Kind::NumberValue(*n)),
            PropertyValue::String(s) => string(s),
            PropertyValue::Array(items) => {
                let mut values = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    self.path.0.push(Step::Index(i));
                    let encoded = self.value(item);
                    self.path.0.pop();
                    // Like Pulumi, an element that is left out is dropped.
                    values.extend(encoded?);
                }
                kind(Kind::ListValue(ListValue { values }))
            }
            PropertyValue::Object(map) => kind(Kind::StructValue(self.properties(map)?)),
            PropertyValue::Asset(asset) => {
                self.check_assets_allowed("asset")?;
                object(asset_fields(asset))
            }
            PropertyValue::Archive(archive) => {
                self.check_assets_allowed("archive")?;
                object(archive_fields(archive))
            }
            PropertyValue::Unknown => return self.unknown(),
            PropertyValue::Secret(inner) => {
                let value = self.value(inner)?;
                return Ok(self.secret(value));
            }
            PropertyValue::ResourceReference(reference) => return self.reference(reference),
            PropertyValue::Output(output) => return self.output(output),
        }))
    }

    fn check_assets_allowed(&self, kind: &'static str) -> Result<(), MarshalError> {
        if self.opts.reject_assets {
            return Err(MarshalError::AssetRejected {
                path: self.path.to_path(),
                kind,
            });
        }
        Ok(())
    }

    fn unknown(&self) -> Result<Option<Value>, MarshalError> {
        if self.opts.reject_unknowns {
            return Err(MarshalError::UnknownRejected {
                path: self.path.to_path(),
            });
        }
        Ok(self.opts.keep_unknowns.then(|| string(UNKNOWN_STRING)))
    }

    /// Wraps an encoded value as a secret, if secrets are kept.
    fn secret(&self, value: Option<Value>) -> Option<Value> {
        let value = value?;
        if !self.opts.keep_secrets {
            return Some(value);
        }
        let mut fields = signed(SECRET_SIG);
        fields.insert("value".to_owned(), value);
        Some(object(fields))
    }

    fn reference(
        &mut self,
        reference: &'a ResourceReference,
    ) -> Result<Option<Value>, MarshalError> {
        if !self.opts.keep_resources {
            return match &reference.id {
                Some(id) => self.value(id),
                None => Ok(Some(string(reference.urn.as_str()))),
            };
        }
        let mut fields = signed(RESOURCE_REFERENCE_SIG);
        fields.insert("urn".to_owned(), string(reference.urn.as_str()));
        if let Some(id) = &reference.id {
            let id = match id.as_ref() {
                PropertyValue::String(id) => id.as_str(),
                PropertyValue::Unknown if self.opts.keep_unknowns => UNKNOWN_STRING,
                PropertyValue::Unknown => "",
                other => {
                    return Err(MarshalError::Malformed {
                        path: self.path.to_path(),
                        what: "resource reference",
                        problem: format!("id is a {}, not a string", other.kind_name()),
                    })
                }
            };
            fields.insert("id".to_owned(), string(id));
        }
        if !reference.package_version.is_empty() {
            fields.insert(
                "packageVersion".to_owned(),
                string(&reference.package_version),
            );
        }
        Ok(Some(object(fields)))
    }

    fn output(&mut self, output: &'a OutputValue) -> Result<Option<Value>, MarshalError> {
        if !self.opts.keep_output_values {
            let value = match &output.element {
                Some(element) => self.value(element)?,
                None => self.unknown()?,
            };
            return Ok(if output.secret {
                self.secret(value)
            } else {
                value
            });
        }
        let mut fields = signed(OUTPUT_VALUE_SIG);
        if let Some(element) = &output.element {
            if let Some(value) = self.value(element)? {
                fields.insert("value".to_owned(), value);
            }
        }
        if output.secret {
            fields.insert("secret".to_owned(), kind(Kind::BoolValue(true)));
        }
        if !output.dependencies.is_empty() {
            let values = output
                .dependencies
                .iter()
                .map(|urn| string(urn.as_str()))
                .collect();
            fields.insert(
                "dependencies".to_owned(),
                kind(Kind::ListValue(ListValue { values })),
            );
        }
        Ok(Some(object(fields)))
    }
}

fn asset_fields(asset: &Asset) -> Fields {
    let mut fields = signed(ASSET_SIG);
    if !asset.hash.is_empty() {
        fields.insert("hash".to_owned(), string(&asset.hash));
    }
    for (key, value) in [
        ("text", &asset.text),
        ("path", &asset.path),
        ("uri", &asset.uri),
    ] {
        if let Some(value) = value {
            fields.insert(key.to_owned(), string(value));
        }
    }
    fields
}

fn archive_fields(archive: &Archive) -> Fields {
    let mut fields = signed(ARCHIVE_SIG);
    if !archive.hash.is_empty() {
        fields.insert("hash".to_owned(), string(&archive.hash));
    }
    if let Some(assets) = &archive.assets {
        let members = assets
            .iter()
            .map(|(name, member)| {
                let member = match member {
                    ArchiveMember::Asset(asset) => asset_fields(asset),
                    ArchiveMember::Archive(archive) => archive_fields(archive),
                };
                (name.clone(), object(member))
            })
            .collect();
        fields.insert(
            "assets".to_owned(),
            kind(Kind::StructValue(Struct { fields: members })),
        );
    }
    for (key, value) in [("path", &archive.path), ("uri", &archive.uri)] {
        if let Some(value) = value {
            fields.insert(key.to_owned(), string(value));
        }
    }
    fields
}

fn signed(signature: &str) -> Fields {
    Fields::from([(SIG_KEY.to_owned(), string(signature))])
}

fn object(fields: Fields) -> Value {
    kind(Kind::StructValue(Struct { fields }))
}

fn string(s: &str) -> Value {
    kind(Kind::StringValue(s.to_owned()))
}

fn kind(kind: Kind) -> Value {
    Value { kind: Some(kind) }
}

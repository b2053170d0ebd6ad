//! `google.protobuf.Value` → PropertyValue.

use std::collections::BTreeMap;

use converge_model::{
    Archive, ArchiveMember, Asset, OutputValue, PropertyMap, PropertyValue, ResourceReference, Urn,
};
use prost_types::{value::Kind, Struct, Value};

use super::{
    is_unknown_string, MarshalError, MarshalOptions, PathStack, Step, ARCHIVE_SIG, ASSET_SIG,
    OUTPUT_VALUE_SIG, RESOURCE_REFERENCE_SIG, SECRET_SIG, SIG_KEY,
};

type Fields = BTreeMap<String, Value>;

pub(super) struct Decoder<'a> {
    opts: MarshalOptions,
    path: PathStack<'a>,
}

impl<'a> Decoder<'a> {
    pub(super) fn new(opts: MarshalOptions) -> Self {
        Decoder {
            opts,
            path: PathStack::default(),
        }
    }

    pub(super) fn properties(&mut self, props: &'a Struct) -> Result<PropertyMap, MarshalError> {
        self.object(&props.fields)
    }

    fn object(&mut self, fields: &'a Fields) -> Result<PropertyMap, MarshalError> {
        let mut map = PropertyMap::new();
        for (key, value) in fields {
            self.path.0.push(Step::Key(key));
            let decoded = self.value(value);
            self.path.0.pop();
            if let Some(decoded) = decoded? {
                if !self
                    .opts
                    .skips_key(key, matches!(decoded, PropertyValue::Null))
                {
                    map.insert(key.clone(), decoded);
                }
            }
        }
        Ok(map)
    }

    /// Decodes `value`; `None` when it is left out.
    pub(super) fn value(
        &mut self,
        value: &'a Value,
    ) -> Result<Option<PropertyValue>, MarshalError> {
        Ok(Some(match &value.kind {
            // An unset kind is read as null rather than refused.
            None | Some(Kind::NullValue(_)) => PropertyValue::Null,
            Some(Kind::BoolValue(b)) => PropertyValue::Bool(*b),
            Some(Kind::NumberValue(n)) => PropertyValue::Number(*n),
            Some(Kind::StringValue(s)) if is_unknown_string(s) => return self.unknown(),
            Some(Kind::StringValue(s)) => PropertyValue::String(s.clone()),
            Some(Kind::ListValue(list)) => {
                let mut items = Vec::with_capacity(list.values.len());
                for (i, item) in list.values.iter().enumerate() {
                    self.path.0.push(Step::Index(i));
                    let decoded = self.value(item);
                    self.path.0.pop();
                    // Like Pulumi, an element that is left out reads as null.
                    items.push(decoded?.unwrap_or(PropertyValue::Null));
                }
                PropertyValue::Array(items)
            }
            Some(Kind::StructValue(object)) => return self.structure(object),
        }))
    }

    fn unknown(&self) -> Result<Option<PropertyValue>, MarshalError> {
        if self.opts.reject_unknowns {
            return Err(MarshalError::UnknownRejected {
                path: self.path.to_path(),
            });
        }
        Ok(self.opts.keep_unknowns.then_some(PropertyValue::Unknown))
    }

    fn secret(&self, value: PropertyValue) -> PropertyValue {
        if self.opts.keep_secrets {
            PropertyValue::secret(value)
        } else {
            value
        }
    }

    fn structure(&mut self, object: &'a Struct) -> Result<Option<PropertyValue>, MarshalError> {
        let fields = &object.fields;
        let Some(signature) = fields.get(SIG_KEY) else {
            return Ok(Some(PropertyValue::Object(self.object(fields)?)));
        };
        let signature = match &signature.kind {
            Some(Kind::StringValue(s)) => s.as_str(),
            other => {
                return Err(MarshalError::UnrecognizedSignature {
                    path: self.path.to_path(),
                    signature: format!("of type {}", kind_name(other)),
                })
            }
        };
        match signature {
            SECRET_SIG => {
                let value = fields
                    .get("value")
                    .ok_or_else(|| self.malformed("secret", "missing value".to_owned()))?;
                Ok(self.value(value)?.map(|value| self.secret(value)))
            }
            RESOURCE_REFERENCE_SIG => self.reference(fields),
            ASSET_SIG => {
                self.check_assets_allowed("asset")?;
                Ok(Some(PropertyValue::Asset(Box::new(self.asset(fields)?))))
            }
            ARCHIVE_SIG => {
                self.check_assets_allowed("archive")?;
                Ok(Some(PropertyValue::Archive(Box::new(
                    self.archive(fields)?,
                ))))
            }
            OUTPUT_VALUE_SIG => self.output(fields),
            other => Err(MarshalError::UnrecognizedSignature {
                path: self.path.to_path(),
                signature: format!("{other:?}"),
            }),
        }
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

    fn reference(&mut self, fields: &'a Fields) -> Result<Option<PropertyValue>, MarshalError> {
        const WHAT: &str = "resource reference";
        let urn = self
            .string_field(fields, WHAT, "urn")?
            .ok_or_else(|| self.malformed(WHAT, "missing urn".to_owned()))?;
        let urn = Urn::parse(urn).map_err(|source| MarshalError::InvalidUrn {
            path: self.path.to_path(),
            source,
        })?;
        let id = match fields.get("id") {
            None => None,
            Some(id) => Some(self.reference_id(id)?),
        };
        let package_version = self
            .string_field(fields, WHAT, "packageVersion")?
            .unwrap_or_default()
            .to_owned();
        if !self.opts.keep_resources {
            return match id {
                Some(PropertyValue::Unknown) => self.unknown(),
                Some(id) => Ok(Some(id)),
                None => Ok(Some(PropertyValue::String(urn.as_str().to_owned()))),
            };
        }
        Ok(Some(PropertyValue::ResourceReference(Box::new(
            ResourceReference {
                urn,
                id: id.map(Box::new),
                package_version,
            },
        ))))
    }

    /// A reference's ID: a string, where `""` and the unknown sentinels mean
    /// unknown, or an output value holding one.
    fn reference_id(&self, id: &Value) -> Result<PropertyValue, MarshalError> {
        let not_a_string = |found: &str| {
            self.malformed("resource reference", format!("id is {found}, not a string"))
        };
        match &id.kind {
            Some(Kind::StringValue(s)) if s.is_empty() || is_unknown_string(s) => {
                Ok(PropertyValue::Unknown)
            }
            Some(Kind::StringValue(s)) => Ok(PropertyValue::String(s.clone())),
            Some(Kind::StructValue(object))
                if signature_of(&object.fields) == Some(OUTPUT_VALUE_SIG) =>
            {
                match object.fields.get("value") {
                    None => Ok(PropertyValue::Unknown),
                    Some(value) => self.reference_id(value),
                }
            }
            other => Err(not_a_string(kind_name(other))),
        }
    }

    fn asset(&self, fields: &Fields) -> Result<Asset, MarshalError> {
        const WHAT: &str = "asset";
        let field = |key| -> Result<Option<String>, MarshalError> {
            Ok(self.string_field(fields, WHAT, key)?.map(str::to_owned))
        };
        Ok(Asset {
            hash: field("hash")?.unwrap_or_default(),
            text: field("text")?,
            path: field("path")?,
            uri: field("uri")?,
        })
    }

    fn archive(&mut self, fields: &'a Fields) -> Result<Archive, MarshalError> {
        const WHAT: &str = "archive";
        let assets = match fields.get("assets").map(|v| &v.kind) {
            None | Some(Some(Kind::NullValue(_))) => None,
            Some(Some(Kind::StructValue(members))) => {
                let mut assets = BTreeMap::new();
                for (name, member) in &members.fields {
                    self.path.0.push(Step::Key(name));
                    let decoded = self.archive_member(member);
                    self.path.0.pop();
                    assets.insert(name.clone(), decoded?);
                }
                Some(assets)
            }
            Some(other) => {
                return Err(self.malformed(
                    WHAT,
                    format!("assets is {}, not an object", kind_name(other)),
                ))
            }
        };
        Ok(Archive {
            hash: self
                .string_field(fields, WHAT, "hash")?
                .unwrap_or_default()
                .to_owned(),
            assets,
            path: self.string_field(fields, WHAT, "path")?.map(str::to_owned),
            uri: self.string_field(fields, WHAT, "uri")?.map(str::to_owned),
        })
    }

    fn archive_member(&mut self, member: &'a Value) -> Result<ArchiveMember, MarshalError> {
        if let Some(Kind::StructValue(object)) = &member.kind {
            match signature_of(&object.fields) {
                Some(ASSET_SIG) => return Ok(ArchiveMember::Asset(self.asset(&object.fields)?)),
                Some(ARCHIVE_SIG) => {
                    return Ok(ArchiveMember::Archive(self.archive(&object.fields)?))
                }
                _ => {}
            }
        }
        Err(self.malformed(
            "archive",
            "a member of assets is neither an asset nor an archive".to_owned(),
        ))
    }

    fn output(&mut self, fields: &'a Fields) -> Result<Option<PropertyValue>, MarshalError> {
        const WHAT: &str = "output value";
        let secret = match fields.get("secret").map(|v| &v.kind) {
            None | Some(Some(Kind::NullValue(_))) => false,
            Some(Some(Kind::BoolValue(b))) => *b,
            Some(other) => {
                return Err(
                    self.malformed(WHAT, format!("secret is {}, not a bool", kind_name(other)))
                )
            }
        };
        let dependencies = match fields.get("dependencies").map(|v| &v.kind) {
            None | Some(Some(Kind::NullValue(_))) => Vec::new(),
            Some(Some(Kind::ListValue(list))) => list
                .values
                .iter()
                .map(|dependency| match &dependency.kind {
                    Some(Kind::StringValue(urn)) => {
                        Urn::parse(urn).map_err(|source| MarshalError::InvalidUrn {
                            path: self.path.to_path(),
                            source,
                        })
                    }
                    other => Err(self.malformed(
                        WHAT,
                        format!("a dependency is {}, not a string", kind_name(other)),
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(self.malformed(
                    WHAT,
                    format!("dependencies is {}, not an array", kind_name(other)),
                ))
            }
        };
        let element = match fields.get("value") {
            Some(value) => self.value(value)?,
            None => None,
        };
        if self.opts.keep_output_values {
            return Ok(Some(PropertyValue::Output(Box::new(OutputValue {
                element: element.map(Box::new),
                secret,
                dependencies,
            }))));
        }
        let value = match element {
            Some(element) => Some(element),
            None => self.unknown()?,
        };
        Ok(if secret {
            value.map(|value| self.secret(value))
        } else {
            value
        })
    }

    /// An optional string field of a special object; null counts as absent.
    fn string_field<'f>(
        &self,
        fields: &'f Fields,
        what: &'static str,
        key: &str,
    ) -> Result<Option<&'f str>, MarshalError> {
        match fields.get(key).map(|v| &v.kind) {
            None | Some(Some(Kind::NullValue(_))) => Ok(None),
            Some(Some(Kind::StringValue(s))) => Ok(Some(s)),
            Some(other) => {
                Err(self.malformed(what, format!("{key} is {}, not a string", kind_name(other))))
            }
        }
    }

    fn malformed(&self, what: &'static str, problem: String) -> MarshalError {
        MarshalError::Malformed {
            path: self.path.to_path(),
            what,
            problem,
        }
    }
}

fn signature_of(fields: &Fields) -> Option<&str> {
    match &fields.get(SIG_KEY)?.kind {
        Some(Kind::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn kind_name(kind: &Option<Kind>) -> &'static str {
    match kind {
        None | Some(Kind::NullValue(_)) => "null",
        Some(Kind::BoolValue(_)) => "a bool",
        Some(Kind::NumberValue(_)) => "a number",
        Some(Kind::StringValue(_)) => "a string",
        Some(Kind::ListValue(_)) => "an array",
        Some(Kind::StructValue(_)) => "an object",
    }
}

//! Schemas for a [`TfMock`](super::TfMock): builders for the
//! `GetProviderSchema` answer a test gives, and the mock's own reading of
//! it (the object type of a block, which of its attributes are computed).
//!
//! The reading is written here rather than borrowed from
//! `converge-terraform`, so that the adapter under test and the provider it
//! talks to do not share a mistake.

use std::collections::BTreeMap;

use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::terraform::values::CtyType;
use converge_proto::tfplugin6::{self as tf, schema};

/// An attribute of type `ty` the configuration must set.
pub fn required(name: &str, ty: &CtyType) -> schema::Attribute {
    attribute(name, ty, (true, false, false))
}

/// An attribute of type `ty` the configuration may set.
pub fn optional(name: &str, ty: &CtyType) -> schema::Attribute {
    attribute(name, ty, (false, true, false))
}

/// An attribute of type `ty` only the provider sets.
pub fn computed(name: &str, ty: &CtyType) -> schema::Attribute {
    attribute(name, ty, (false, false, true))
}

/// An attribute of type `ty` the configuration may set and the provider
/// chooses when it does not.
pub fn optional_computed(name: &str, ty: &CtyType) -> schema::Attribute {
    attribute(name, ty, (false, true, true))
}

/// `a`, marked sensitive.
pub fn sensitive(mut a: schema::Attribute) -> schema::Attribute {
    a.sensitive = true;
    a
}

fn attribute(
    name: &str,
    ty: &CtyType,
    (required, optional, computed): (bool, bool, bool),
) -> schema::Attribute {
    schema::Attribute {
        name: name.to_owned(),
        r#type: ty.to_json().to_string().into_bytes(),
        required,
        optional,
        computed,
        ..Default::default()
    }
}

/// A resource type's (or data source's) schema at `version`.
pub fn resource(version: i64, attributes: Vec<schema::Attribute>) -> tf::Schema {
    tf::Schema {
        version,
        block: Some(schema::Block {
            attributes,
            ..Default::default()
        }),
    }
}

/// A `GetProviderSchema` answer: the provider's configuration attributes,
/// its resource types and its data sources by Terraform type name.
pub fn provider_schema(
    provider: Vec<schema::Attribute>,
    resources: Vec<(&str, tf::Schema)>,
    data_sources: Vec<(&str, tf::Schema)>,
) -> tf::get_provider_schema::Response {
    tf::get_provider_schema::Response {
        provider: Some(resource(0, provider)),
        resource_schemas: resources
            .into_iter()
            .map(|(n, s)| (n.to_owned(), s))
            .collect(),
        data_source_schemas: data_sources
            .into_iter()
            .map(|(n, s)| (n.to_owned(), s))
            .collect(),
        ..Default::default()
    }
}

/// A block as the mock reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BlockInfo {
    /// Every attribute: its type and whether it is computed.
    pub attributes: BTreeMap<String, (CtyType, bool)>,
    /// Nested blocks: their nesting mode and their block.
    pub blocks: BTreeMap<String, (schema::nested_block::NestingMode, BlockInfo)>,
}

impl BlockInfo {
    /// Reads a schema block; `Err` names an attribute whose type is bad.
    pub fn read(block: Option<&schema::Block>) -> Result<BlockInfo, String> {
        let mut out = BlockInfo::default();
        let Some(block) = block else { return Ok(out) };
        for a in &block.attributes {
            out.attributes
                .insert(a.name.clone(), (attribute_type(a)?, a.computed));
        }
        for nb in &block.block_types {
            let mode = schema::nested_block::NestingMode::try_from(nb.nesting)
                .map_err(|_| format!("nested block {} has no nesting mode", nb.type_name))?;
            out.blocks.insert(
                nb.type_name.clone(),
                (mode, BlockInfo::read(nb.block.as_ref())?),
            );
        }
        Ok(out)
    }

    /// The object type of this block's values.
    pub fn object_type(&self) -> CtyType {
        use schema::nested_block::NestingMode as M;
        let mut attributes: BTreeMap<String, CtyType> = self
            .attributes
            .iter()
            .map(|(n, (ty, _))| (n.clone(), ty.clone()))
            .collect();
        for (n, (mode, b)) in &self.blocks {
            let inner = b.object_type();
            let ty = match mode {
                M::List => CtyType::List(Box::new(inner)),
                M::Set => CtyType::Set(Box::new(inner)),
                M::Map => CtyType::Map(Box::new(inner)),
                M::Single | M::Group | M::Invalid => inner,
            };
            attributes.insert(n.clone(), ty);
        }
        CtyType::Object {
            attributes,
            optional: Default::default(),
        }
    }

    /// `object` with every computed attribute that is null made unknown
    /// (in nested blocks too): what a provider plans when it will choose
    /// those values at apply.
    pub fn unknown_computed_nulls(&self, object: &PropertyMap) -> PropertyMap {
        let mut out = object.clone();
        for (name, (_, computed)) in &self.attributes {
            let null = matches!(out.get(name), None | Some(PropertyValue::Null));
            if *computed && null {
                out.insert(name.clone(), PropertyValue::Unknown);
            }
        }
        for (name, (mode, b)) in &self.blocks {
            if let Some(v) = out.get_mut(name) {
                *v = each_object(*mode, v, &|m| b.unknown_computed_nulls(m));
            }
        }
        out
    }
}

/// `f` applied to each object of a nested block's value: the value itself
/// (single, group), its elements (list, set) or its entries (map).
fn each_object(
    mode: schema::nested_block::NestingMode,
    v: &PropertyValue,
    f: &dyn Fn(&PropertyMap) -> PropertyMap,
) -> PropertyValue {
    use schema::nested_block::NestingMode as M;
    let one = |x: &PropertyValue| match x {
        PropertyValue::Object(inner) => PropertyValue::Object(f(inner)),
        other => other.clone(),
    };
    match (mode, v) {
        (M::List | M::Set, PropertyValue::Array(items)) => {
            PropertyValue::Array(items.iter().map(one).collect())
        }
        (M::Map, PropertyValue::Object(m)) => {
            PropertyValue::Object(m.iter().map(|(k, x)| (k.clone(), one(x))).collect())
        }
        (M::Single | M::Group | M::Invalid, x) => one(x),
        (_, other) => other.clone(),
    }
}

fn attribute_type(a: &schema::Attribute) -> Result<CtyType, String> {
    if let Some(nested) = &a.nested_type {
        let mut attributes = BTreeMap::new();
        for inner in &nested.attributes {
            attributes.insert(inner.name.clone(), attribute_type(inner)?);
        }
        let object = CtyType::Object {
            attributes,
            optional: Default::default(),
        };
        use schema::object::NestingMode as M;
        return Ok(match M::try_from(nested.nesting).unwrap_or(M::Invalid) {
            M::List => CtyType::List(Box::new(object)),
            M::Set => CtyType::Set(Box::new(object)),
            M::Map => CtyType::Map(Box::new(object)),
            M::Single | M::Invalid => object,
        });
    }
    CtyType::from_json(&a.r#type).map_err(|e| format!("attribute {}: {e}", a.name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computed_nulls_become_unknown_and_the_rest_stays() {
        let s = resource(
            1,
            vec![
                computed("id", &CtyType::String),
                required("name", &CtyType::String),
                optional("note", &CtyType::String),
                optional_computed("label", &CtyType::String),
            ],
        );
        let info = BlockInfo::read(s.block.as_ref()).unwrap();
        assert_eq!(
            info.object_type().to_json().to_string(),
            r#"["object",{"id":"string","label":"string","name":"string","note":"string"}]"#
        );
        let proposed: PropertyMap = [
            ("id".to_owned(), PropertyValue::Null),
            ("name".to_owned(), PropertyValue::from("n")),
            ("note".to_owned(), PropertyValue::Null),
            ("label".to_owned(), PropertyValue::from("kept")),
        ]
        .into();
        let planned = info.unknown_computed_nulls(&proposed);
        assert_eq!(planned["id"], PropertyValue::Unknown);
        assert_eq!(planned["name"], PropertyValue::from("n"));
        assert_eq!(planned["note"], PropertyValue::Null);
        assert_eq!(planned["label"], PropertyValue::from("kept"));
    }
}

//! A Terraform provider's schema (`GetProviderSchema`) as Converge uses
//! it: blocks of attributes (each with its cty type and its required /
//! optional / computed / sensitive flags) and nested blocks, the object
//! type a block implies, which paths are computed, and the Pulumi names of
//! everything.
//!
//! Attributes with a nested type (protocol 6's structural attributes) are
//! kept as one attribute of the object type their nesting implies; the
//! flags of the attributes inside them are not consulted.

use std::collections::BTreeMap;

use converge_model::{PathElement, PropertyPath};
use converge_plugin::schema::{Properties, TypeSpec};
use converge_plugin::terraform::values::CtyType;
use converge_proto::tfplugin6::{self as tf, schema};

use crate::names::pulumi_name;

/// Why a schema could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchemaError {
    #[error("attribute {attribute} of {owner} has an invalid type: {reason}")]
    Type {
        owner: String,
        attribute: String,
        reason: String,
    },
    #[error("nested block {block} of {owner} has no nesting mode")]
    Nesting { owner: String, block: String },
}

/// The provider's configuration, resources and data sources.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderSchema {
    pub provider: Block,
    /// `provider_meta`'s type, sent as null with every resource call.
    pub provider_meta: Option<Block>,
    pub resources: BTreeMap<String, TypeSchema>,
    pub data_sources: BTreeMap<String, TypeSchema>,
}

/// A resource type's or data source's schema and its version.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TypeSchema {
    pub version: i64,
    pub block: Block,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Block {
    pub attributes: BTreeMap<String, Attribute>,
    pub blocks: BTreeMap<String, NestedBlock>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    pub ty: CtyType,
    pub required: bool,
    pub optional: bool,
    pub computed: bool,
    pub sensitive: bool,
}

impl Attribute {
    /// Set only by the provider: computed and neither required nor optional.
    pub fn computed_only(&self) -> bool {
        self.computed && !self.optional && !self.required
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nesting {
    Single,
    Group,
    List,
    Set,
    Map,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NestedBlock {
    pub nesting: Nesting,
    pub block: Block,
}

/// Either kind of member of a block, by name.
#[derive(Debug, Clone, Copy)]
pub enum Member<'a> {
    Attribute(&'a str, &'a Attribute),
    Block(&'a str, &'a NestedBlock),
}

impl Member<'_> {
    pub fn tf_name(&self) -> &str {
        match self {
            Member::Attribute(n, _) | Member::Block(n, _) => n,
        }
    }
}

impl ProviderSchema {
    /// Reads `GetProviderSchema`'s answer.
    pub fn from_response(r: &tf::get_provider_schema::Response) -> Result<Self, SchemaError> {
        let read_map = |m: &std::collections::HashMap<String, tf::Schema>| {
            m.iter()
                .map(|(name, s)| Ok((name.clone(), TypeSchema::from_proto(name, s)?)))
                .collect::<Result<BTreeMap<_, _>, SchemaError>>()
        };
        Ok(ProviderSchema {
            provider: match &r.provider {
                Some(s) => TypeSchema::from_proto("the provider", s)?.block,
                None => Block::default(),
            },
            provider_meta: match &r.provider_meta {
                Some(s) => Some(TypeSchema::from_proto("provider_meta", s)?.block),
                None => None,
            },
            resources: read_map(&r.resource_schemas)?,
            data_sources: read_map(&r.data_source_schemas)?,
        })
    }
}

impl TypeSchema {
    fn from_proto(owner: &str, s: &tf::Schema) -> Result<Self, SchemaError> {
        Ok(TypeSchema {
            version: s.version,
            block: match &s.block {
                Some(b) => Block::from_proto(owner, b)?,
                None => Block::default(),
            },
        })
    }
}

/// A cty type as a package schema says it: object attributes by their
/// Pulumi names, as values carry them; `dynamic` is not described.
fn type_spec(ty: &CtyType) -> TypeSpec {
    match ty {
        CtyType::String => TypeSpec::String,
        CtyType::Number => TypeSpec::Number,
        CtyType::Bool => TypeSpec::Bool,
        CtyType::Dynamic => TypeSpec::Any,
        CtyType::List(e) | CtyType::Set(e) => TypeSpec::Array(Box::new(type_spec(e))),
        CtyType::Tuple(_) => TypeSpec::Array(Box::new(TypeSpec::Any)),
        CtyType::Map(e) => TypeSpec::Map(Box::new(type_spec(e))),
        CtyType::Object { attributes, .. } => TypeSpec::Object(
            attributes
                .iter()
                .map(|(n, t)| (pulumi_name(n), type_spec(t)))
                .collect(),
        ),
    }
}

fn nested_object_type(owner: &str, object: &schema::Object) -> Result<CtyType, SchemaError> {
    let mut attributes = BTreeMap::new();
    for a in &object.attributes {
        attributes.insert(a.name.clone(), attribute_type(owner, a)?);
    }
    let inner = CtyType::Object {
        attributes,
        optional: Default::default(),
    };
    use schema::object::NestingMode as M;
    Ok(match M::try_from(object.nesting).unwrap_or(M::Invalid) {
        M::Single | M::Invalid => inner,
        M::List => CtyType::List(Box::new(inner)),
        M::Set => CtyType::Set(Box::new(inner)),
        M::Map => CtyType::Map(Box::new(inner)),
    })
}

fn attribute_type(owner: &str, a: &schema::Attribute) -> Result<CtyType, SchemaError> {
    if let Some(nested) = &a.nested_type {
        return nested_object_type(owner, nested);
    }
    CtyType::from_json(&a.r#type).map_err(|e| SchemaError::Type {
        owner: owner.to_owned(),
        attribute: a.name.clone(),
        reason: e.to_string(),
    })
}

impl Block {
    fn from_proto(owner: &str, b: &schema::Block) -> Result<Self, SchemaError> {
        let mut block = Block::default();
        for a in &b.attributes {
            block.attributes.insert(
                a.name.clone(),
                Attribute {
                    ty: attribute_type(owner, a)?,
                    required: a.required,
                    optional: a.optional,
                    computed: a.computed,
                    sensitive: a.sensitive,
                },
            );
        }
        for nb in &b.block_types {
            use schema::nested_block::NestingMode as M;
            let nesting = match M::try_from(nb.nesting).unwrap_or(M::Invalid) {
                M::Single => Nesting::Single,
                M::Group => Nesting::Group,
                M::List => Nesting::List,
                M::Set => Nesting::Set,
                M::Map => Nesting::Map,
                M::Invalid => {
                    return Err(SchemaError::Nesting {
                        owner: owner.to_owned(),
                        block: nb.type_name.clone(),
                    })
                }
            };
            let inner = match &nb.block {
                Some(inner) => Block::from_proto(owner, inner)?,
                None => Block::default(),
            };
            block.blocks.insert(
                nb.type_name.clone(),
                NestedBlock {
                    nesting,
                    block: inner,
                },
            );
        }
        Ok(block)
    }

    /// The object type of this block's values.
    pub fn implied_type(&self) -> CtyType {
        let mut attributes: BTreeMap<String, CtyType> = self
            .attributes
            .iter()
            .map(|(n, a)| (n.clone(), a.ty.clone()))
            .collect();
        for (n, nb) in &self.blocks {
            let inner = nb.block.implied_type();
            let ty = match nb.nesting {
                Nesting::Single | Nesting::Group => inner,
                Nesting::List => CtyType::List(Box::new(inner)),
                Nesting::Set => CtyType::Set(Box::new(inner)),
                Nesting::Map => CtyType::Map(Box::new(inner)),
            };
            attributes.insert(n.clone(), ty);
        }
        CtyType::Object {
            attributes,
            optional: Default::default(),
        }
    }

    /// The member whose Pulumi name (or Terraform name) is `name`.
    pub fn member(&self, name: &str) -> Option<Member<'_>> {
        if let Some((n, a)) = self.attributes.get_key_value(name) {
            return Some(Member::Attribute(n, a));
        }
        if let Some((n, b)) = self.blocks.get_key_value(name) {
            return Some(Member::Block(n, b));
        }
        self.attributes
            .iter()
            .find(|(n, _)| pulumi_name(n) == name)
            .map(|(n, a)| Member::Attribute(n, a))
            .or_else(|| {
                self.blocks
                    .iter()
                    .find(|(n, _)| pulumi_name(n) == name)
                    .map(|(n, b)| Member::Block(n, b))
            })
    }

    /// Every member by its Pulumi name, with its type as a package schema
    /// says it (what a resource's outputs, or a data source's result, hold).
    pub fn pulumi_properties(&self) -> Properties {
        let attributes = self
            .attributes
            .iter()
            .map(|(n, a)| (pulumi_name(n), type_spec(&a.ty)));
        let blocks = self.blocks.iter().map(|(n, nb)| {
            let object = TypeSpec::Object(nb.block.pulumi_properties());
            let ty = match nb.nesting {
                Nesting::Single | Nesting::Group => object,
                Nesting::List | Nesting::Set => TypeSpec::Array(Box::new(object)),
                Nesting::Map => TypeSpec::Map(Box::new(object)),
            };
            (pulumi_name(n), ty)
        });
        attributes.chain(blocks).collect()
    }

    /// The Pulumi names of the members a configuration may set (not the
    /// computed-only ones), for messages.
    pub fn settable_pulumi_names(&self) -> Vec<String> {
        self.attributes
            .iter()
            .filter(|(_, a)| !a.computed_only())
            .map(|(n, _)| n)
            .chain(self.blocks.keys())
            .map(|n| pulumi_name(n))
            .collect()
    }

    /// Whether the attribute at `path` (Terraform names; element indexes
    /// and map keys step into nested blocks) is computed. Paths inside a
    /// computed attribute's value are computed.
    pub fn is_computed(&self, path: &PropertyPath) -> bool {
        let mut block = self;
        let mut elements = path.elements().iter().peekable();
        while let Some(e) = elements.next() {
            let PathElement::Key(name) = e else {
                return false;
            };
            if let Some(a) = block.attributes.get(name) {
                return a.computed;
            }
            let Some(nb) = block.blocks.get(name) else {
                return false;
            };
            if matches!(nb.nesting, Nesting::List | Nesting::Set | Nesting::Map) {
                // Skip the element step into the block's object.
                elements.next();
            }
            block = &nb.block;
        }
        false
    }

    /// `path` (Terraform names) with every attribute and block name in its
    /// Pulumi spelling; map keys and indexes unchanged.
    pub fn pulumi_path(&self, path: &PropertyPath) -> PropertyPath {
        let mut out = Vec::with_capacity(path.elements().len());
        let mut block = Some(self);
        let mut skip_element = false;
        for e in path.elements() {
            if skip_element {
                skip_element = false;
                out.push(e.clone());
                continue;
            }
            match (e, block) {
                (PathElement::Key(name), Some(b)) => {
                    out.push(PathElement::Key(pulumi_name(name)));
                    if let Some(nb) = b.blocks.get(name) {
                        skip_element =
                            matches!(nb.nesting, Nesting::List | Nesting::Set | Nesting::Map);
                        block = Some(&nb.block);
                    } else {
                        block = None;
                    }
                }
                _ => {
                    out.push(e.clone());
                    block = None;
                }
            }
        }
        PropertyPath::new(out)
    }
}

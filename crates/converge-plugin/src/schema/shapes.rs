//! What a package schema says of the properties of its members: each
//! resource's inputs (`inputProperties`) and outputs (`properties`), each
//! function's arguments (`inputs`) and result (`outputs`, or
//! `returnType`), and the object and enum types they name (`types`,
//! referred to by `$ref`).
//!
//! Only names and shapes are kept — a property is a primitive, a list, a
//! map, an object of known properties, or [`TypeSpec::Any`] for
//! everything whose shape the schema leaves open: `pulumi.json#/Any` and
//! `#/Json`, unions (`oneOf`), assets and archives, resource references,
//! types of other packages, types the schema names but does not define,
//! and object types without properties. A reader of these shapes stops
//! there.
//!
//! A schema is read in one pass over its text, skipping what is not kept
//! (descriptions, language sections, defaults), so that a large provider's
//! schema is read about as fast as its tokens alone.

use std::collections::{BTreeMap, HashMap};

use serde::de::IgnoredAny;
use serde::Deserialize;

/// A property's type, as far as the schema describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeSpec {
    /// The schema does not describe the shape: nothing below is checked.
    Any,
    Bool,
    Integer,
    Number,
    String,
    Array(Box<TypeSpec>),
    /// Any string keys, values of the element type.
    Map(Box<TypeSpec>),
    /// An object type of the schema's `types`, by token: see
    /// [`Shapes::resolve`].
    Named(String),
    /// An object with exactly these properties, described in place (a
    /// function's result, a Terraform provider's nested block).
    Object(Properties),
}

/// Property name → type.
pub type Properties = BTreeMap<String, TypeSpec>;

impl TypeSpec {
    /// "a string", "a list", … for messages.
    pub fn noun(&self) -> &'static str {
        match self {
            TypeSpec::Any => "a value",
            TypeSpec::Bool => "a boolean",
            TypeSpec::Integer => "an integer",
            TypeSpec::Number => "a number",
            TypeSpec::String => "a string",
            TypeSpec::Array(_) => "a list",
            TypeSpec::Map(_) => "a map",
            TypeSpec::Named(_) | TypeSpec::Object(_) => "an object",
        }
    }
}

/// What every resource has, whatever its schema says.
pub const RESOURCE_OUTPUTS: [&str; 2] = ["id", "urn"];

/// A resource type's properties. `None` where the schema does not list
/// them (nothing is checked there).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceSpec {
    pub inputs: Option<Properties>,
    pub outputs: Option<Properties>,
    pub component: bool,
}

impl ResourceSpec {
    /// The type of the output (or, failing that, input) property `name`;
    /// `None` if the schema lists outputs and `name` is not among them.
    /// `id` and `urn` are every resource's strings; resources whose
    /// outputs are not listed answer [`TypeSpec::Any`].
    pub fn output(&self, name: &str) -> Option<&TypeSpec> {
        if RESOURCE_OUTPUTS.contains(&name) {
            return Some(&TypeSpec::String);
        }
        match &self.outputs {
            None => Some(&TypeSpec::Any),
            Some(outputs) => outputs
                .get(name)
                .or_else(|| self.inputs.as_ref().and_then(|i| i.get(name))),
        }
    }

    /// Every output name (`id`, `urn`, outputs and inputs), sorted, for
    /// messages.
    pub fn output_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .outputs
            .iter()
            .chain(&self.inputs)
            .flat_map(|p| p.keys().map(String::as_str))
            .chain(RESOURCE_OUTPUTS)
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }
}

/// A function's arguments (`None`: not listed) and result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSpec {
    pub inputs: Option<Properties>,
    pub result: TypeSpec,
}

/// The properties of a package's members, by canonical token.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shapes {
    pub resources: HashMap<String, ResourceSpec>,
    pub functions: HashMap<String, FunctionSpec>,
    /// Object and enum types: an object is [`TypeSpec::Object`], an enum
    /// its primitive.
    pub types: HashMap<String, TypeSpec>,
}

impl Shapes {
    /// `ty` with a named type replaced by its definition ([`TypeSpec::Any`]
    /// for a type the schema does not define).
    pub fn resolve<'a>(&'a self, ty: &'a TypeSpec) -> &'a TypeSpec {
        match ty {
            TypeSpec::Named(token) => self.types.get(token).unwrap_or(&TypeSpec::Any),
            other => other,
        }
    }
}

// ---- reading ------------------------------------------------------------------

/// The parts of a schema that are kept; everything else is skipped.
#[derive(Deserialize)]
pub(super) struct RawSchema {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub resources: HashMap<String, RawResource>,
    #[serde(default)]
    pub functions: HashMap<String, RawFunction>,
    #[serde(default)]
    types: HashMap<String, RawType>,
}

#[derive(Deserialize)]
pub(super) struct RawResource {
    #[serde(default)]
    properties: Option<HashMap<String, RawType>>,
    #[serde(default, rename = "inputProperties")]
    input_properties: Option<HashMap<String, RawType>>,
    #[serde(default, rename = "isComponent")]
    is_component: Option<bool>,
}

#[derive(Deserialize)]
pub(super) struct RawFunction {
    #[serde(default)]
    inputs: Option<RawType>,
    #[serde(default)]
    outputs: Option<RawType>,
    #[serde(default, rename = "returnType")]
    return_type: Option<RawType>,
}

/// A type reference, a property, an object type or an enum: the union of
/// the fields that say what a value is.
#[derive(Deserialize)]
struct RawType {
    #[serde(default, rename = "type")]
    ty: Option<String>,
    #[serde(default, rename = "$ref")]
    reference: Option<String>,
    #[serde(default)]
    items: Option<Box<RawType>>,
    #[serde(default, rename = "additionalProperties")]
    additional: Option<Box<RawType>>,
    #[serde(default, rename = "oneOf")]
    one_of: Option<IgnoredAny>,
    #[serde(default)]
    properties: Option<HashMap<String, RawType>>,
}

fn properties(raw: HashMap<String, RawType>) -> Properties {
    raw.into_iter().map(|(k, v)| (k, v.into_spec())).collect()
}

impl RawType {
    fn into_spec(self) -> TypeSpec {
        if let Some(reference) = &self.reference {
            return named(reference);
        }
        if self.one_of.is_some() {
            return TypeSpec::Any;
        }
        if let Some(props) = self.properties {
            return TypeSpec::Object(properties(props));
        }
        match self.ty.as_deref() {
            Some("boolean") => TypeSpec::Bool,
            Some("integer") => TypeSpec::Integer,
            Some("number") => TypeSpec::Number,
            Some("string") => TypeSpec::String,
            Some("array") => TypeSpec::Array(Box::new(
                self.items.map_or(TypeSpec::Any, |i| i.into_spec()),
            )),
            // A map's values are strings unless it says otherwise.
            Some("object") => TypeSpec::Map(Box::new(
                self.additional.map_or(TypeSpec::String, |a| a.into_spec()),
            )),
            _ => TypeSpec::Any,
        }
    }

    /// A `types` entry: an object with properties, an enum (its
    /// primitive), or an object without properties (not described).
    fn into_definition(self) -> TypeSpec {
        match (&self.properties, self.ty.as_deref()) {
            (Some(p), _) if !p.is_empty() => self.into_spec(),
            (_, Some("object") | None) => TypeSpec::Any,
            _ => self.into_spec(),
        }
    }
}

/// The type a `$ref` names: a type of this schema by token (escaped
/// characters decoded); anything else is not described here.
fn named(reference: &str) -> TypeSpec {
    match reference.strip_prefix("#/types/") {
        Some(token) => TypeSpec::Named(
            percent_encoding::percent_decode_str(token)
                .decode_utf8_lossy()
                .into_owned(),
        ),
        None => TypeSpec::Any,
    }
}

impl RawSchema {
    /// The shapes of every member; `resources` and `functions` are left
    /// for the tokens.
    pub(super) fn take_shapes(&mut self) -> Shapes {
        let resources = self
            .resources
            .iter_mut()
            .map(|(token, r)| {
                let spec = ResourceSpec {
                    inputs: r.input_properties.take().map(properties),
                    outputs: r.properties.take().map(properties),
                    component: r.is_component.unwrap_or(false),
                };
                (token.clone(), spec)
            })
            .collect();
        let functions = self
            .functions
            .iter_mut()
            .map(|(token, f)| {
                let result = f
                    .return_type
                    .take()
                    .or_else(|| f.outputs.take())
                    .map_or(TypeSpec::Any, RawType::into_spec);
                let spec = FunctionSpec {
                    inputs: f.inputs.take().and_then(|i| i.properties).map(properties),
                    result,
                };
                (token.clone(), spec)
            })
            .collect();
        let types = std::mem::take(&mut self.types)
            .into_iter()
            .map(|(token, t)| (token, t.into_definition()))
            .collect();
        Shapes {
            resources,
            functions,
            types,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::PackageSchema;

    fn schema() -> PackageSchema {
        PackageSchema::from_text(
            &json!({
                "name": "pkg",
                "version": "1.2.3",
                "description": "skipped",
                "language": {"nodejs": {"packageName": "@x/pkg"}},
                "types": {
                    "pkg:index/Nested:Nested": {
                        "type": "object",
                        "description": "skipped",
                        "properties": {
                            "leaf": {"type": "string", "description": "d"},
                            "self": {"$ref": "#/types/pkg:index%2FNested:Nested"},
                        },
                    },
                    "pkg:index:Size": {"type": "string", "enum": [{"value": "s"}]},
                    "pkg:index:Open": {"type": "object"},
                },
                "resources": {
                    "pkg:index:Res": {
                        "inputProperties": {"size": {"$ref": "#/types/pkg:index:Size"}},
                        "properties": {
                            "nested": {"$ref": "#/types/pkg:index/Nested:Nested"},
                            "list": {"type": "array", "items": {"type": "integer"}},
                            "tags": {"type": "object"},
                            "bag": {"type": "object",
                                    "additionalProperties": {"$ref": "pulumi.json#/Any"}},
                            "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
                            "open": {"$ref": "#/types/pkg:index:Open"},
                            "other": {"$ref": "/aws/v6.0.0/schema.json#/types/aws:x:Y"},
                        },
                    },
                    "pkg:index:Bare": {"description": "no properties listed"},
                    "pkg:index:Comp": {"isComponent": true, "properties": {}},
                },
                "functions": {
                    "pkg:index:getThing": {
                        "inputs": {"properties": {"name": {"type": "string"}}},
                        "outputs": {"type": "object", "properties": {"value": {"type": "number"}}},
                    },
                    "pkg:index:getName": {"outputs": {"type": "string"}},
                    "pkg:index:getNothing": {},
                },
            })
            .to_string(),
        )
        .unwrap()
    }

    #[test]
    fn members_keep_their_properties_and_types() {
        let s = schema();
        assert_eq!(s.version.as_deref(), Some("1.2.3"));
        assert_eq!(s.resources.len(), 3);
        let res = s.resource_spec("pkg:index:Res").unwrap();
        let outputs = res.outputs.as_ref().unwrap();
        let nested = s.shapes.resolve(&outputs["nested"]);
        let TypeSpec::Object(props) = nested else {
            panic!("{nested:?}")
        };
        assert_eq!(props["leaf"], TypeSpec::String);
        // An escaped `/` in a reference names the same type.
        assert_eq!(
            props["self"],
            TypeSpec::Named("pkg:index/Nested:Nested".into())
        );
        assert_eq!(
            outputs["list"],
            TypeSpec::Array(Box::new(TypeSpec::Integer))
        );
        assert_eq!(outputs["tags"], TypeSpec::Map(Box::new(TypeSpec::String)));
        assert_eq!(outputs["bag"], TypeSpec::Map(Box::new(TypeSpec::Any)));
        for open in ["either", "open", "other"] {
            assert_eq!(s.shapes.resolve(&outputs[open]), &TypeSpec::Any, "{open}");
        }
        // An enum is its primitive.
        let size = &res.inputs.as_ref().unwrap()["size"];
        assert_eq!(s.shapes.resolve(size), &TypeSpec::String);
        // Inputs are outputs too; id and urn always are.
        assert_eq!(res.output("size"), Some(size));
        assert_eq!(res.output("id"), Some(&TypeSpec::String));
        assert_eq!(res.output("urn"), Some(&TypeSpec::String));
        assert_eq!(res.output("nosuch"), None);
        assert!(res.output_names().contains(&"id"));
        // Nothing listed: nothing refused.
        let bare = s.resource_spec("pkg:index:Bare").unwrap();
        assert_eq!(
            (bare.inputs.as_ref(), bare.output("x")),
            (None, Some(&TypeSpec::Any))
        );
        assert!(s.resource_spec("pkg:index:Comp").unwrap().component);
    }

    #[test]
    fn functions_keep_their_arguments_and_result() {
        let s = schema();
        let f = s.function_spec("pkg:index:getThing").unwrap();
        assert_eq!(
            f.inputs.as_ref().map(|i| i.keys().collect::<Vec<_>>()),
            Some(vec![&"name".to_owned()])
        );
        let TypeSpec::Object(result) = &f.result else {
            panic!("{f:?}")
        };
        assert_eq!(result["value"], TypeSpec::Number);
        assert_eq!(
            s.function_spec("pkg:index:getName").unwrap().result,
            TypeSpec::String
        );
        let nothing = s.function_spec("pkg:index:getNothing").unwrap();
        assert_eq!((&nothing.inputs, &nothing.result), (&None, &TypeSpec::Any));
    }

    #[test]
    fn a_schema_in_a_shape_not_followed_keeps_its_tokens() {
        // `items` is not a type here: the properties are not read, the
        // tokens still are.
        let text = json!({
            "name": "odd",
            "resources": {"odd:index:Thing": {"properties": {"x": {"type": "array", "items": 3}}}},
        })
        .to_string();
        let s = PackageSchema::from_text(&text).unwrap();
        assert!(s.resources.contains("odd:index:Thing"));
        assert_eq!(s.shapes, Shapes::default());
        assert_eq!(s.resource_spec("odd:index:Thing"), None);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(PackageSchema::from_json(&v).unwrap(), s);
    }
}

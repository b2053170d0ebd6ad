//! Serde structs for the state file, field for field as Pulumi's `apitype`
//! writes them (`CheckpointV3`, `DeploymentV3`, `ResourceV3`, …).
//!
//! Reading is lenient like Go's decoder: every field is optional and `null`
//! means absent. Writing follows Go's `omitempty`: empty and false fields are
//! left out, except `urn`, `custom` and `type`. Struct fields are written in
//! declaration order.
//!
//! A resource's property maps are read as their JSON text ([`Props::Raw`])
//! and decoded once, straight into property values, when the resource is
//! (see `raw_values`); a resource is read by hand, not derived, because
//! serde's `flatten` (for the keys this version does not know) would
//! buffer every field in a generic tree first.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use converge_model::ResourceState;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::props_out::{LiveProps, PropsWriter};
use super::resource::resource_to_dto;

/// Just enough of any state file to check its version and features before
/// reading the rest.
#[derive(Debug, Deserialize)]
pub(crate) struct Header {
    pub version: Option<Value>,
    pub features: Option<Value>,
    /// Present in a backend checkpoint file.
    pub checkpoint: Option<serde::de::IgnoredAny>,
    /// Present in a `stack export` file.
    pub deployment: Option<serde::de::IgnoredAny>,
}

/// A backend file: `{"version", "features"?, "checkpoint"}`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CheckpointFile<'a> {
    /// Checked from the [`Header`]; only written here.
    #[serde(default, skip_deserializing)]
    pub version: i64,
    #[serde(default, skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    pub checkpoint: Option<Checkpoint<'a>>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Checkpoint<'a> {
    pub stack: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latest: Option<Deployment<'a>>,
}

/// A `stack export` file: `{"version", "features"?, "deployment"}`.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct DeploymentFile<'a> {
    /// Checked from the [`Header`]; only written here.
    #[serde(default, skip_deserializing)]
    pub version: i64,
    #[serde(default, skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    pub deployment: Option<Deployment<'a>>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Deployment<'a> {
    pub manifest: Option<Manifest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets_providers: Option<SecretsProviders>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_operations: Option<Vec<Operation<'a>>>,
    /// Go writes this struct even when empty (`omitempty` does not apply).
    pub metadata: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Manifest {
    #[serde(default)]
    pub time: String,
    #[serde(default)]
    pub magic: String,
    #[serde(default)]
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct SecretsProviders {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Operation<'a> {
    pub resource: Resource<'a>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

/// A deployment's resources: as read, or the states to write, each turned
/// into its [`Resource`] only while it is serialized (a list of 100,000
/// DTOs was 70 MB of fresh memory per checkpoint written).
#[derive(Debug)]
pub(crate) enum Resources<'a> {
    Read(Vec<Resource<'a>>),
    Write {
        states: &'a [ResourceState],
        writer: PropsWriter<'a>,
    },
}

impl Serialize for Resources<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Resources::Read(list) => list.serialize(s),
            Resources::Write { states, writer } => {
                let mut seq = s.serialize_seq(Some(states.len()))?;
                for state in *states {
                    match resource_to_dto(state, *writer) {
                        Ok(dto) => seq.serialize_element(&dto)?,
                        Err(e) => return Err(writer.failure.fail(e)),
                    }
                }
                seq.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Resources<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Resource>::deserialize(d).map(Resources::Read)
    }
}

/// A resource's `inputs` or `outputs`: as read (the object's text), or the
/// property map to write (see `props_out`).
#[derive(Debug)]
pub(crate) enum Props<'a> {
    Raw(Box<RawValue>),
    Live(LiveProps<'a>),
}

impl Serialize for Props<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Props::Raw(raw) => raw.serialize(s),
            Props::Live(props) => props.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Props<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(d).map(Props::Raw)
    }
}

/// The keys of a `stack export` file, of its `deployment`, of a resource
/// (`ResourceV3`) and of a pending operation, as this version reads them:
/// what a check of a hand-edited file compares unknown keys with.
pub const FILE_KEYS: &[&str] = &["version", "features", "deployment"];
/// See [`FILE_KEYS`].
pub const DEPLOYMENT_KEYS: &[&str] = &[
    "manifest",
    "secrets_providers",
    "resources",
    "pending_operations",
    "metadata",
];
/// See [`FILE_KEYS`].
pub const OPERATION_KEYS: &[&str] = &["resource", "type"];
/// See [`FILE_KEYS`]; `ResourceVisitor` reads each of them, and an
/// unknown field by one of these names is never written.
pub const RESOURCE_KEYS: &[&str] = &[
    "urn",
    "custom",
    "delete",
    "id",
    "type",
    "inputs",
    "outputs",
    "parent",
    "protect",
    "external",
    "dependencies",
    "initErrors",
    "provider",
    "propertyDependencies",
    "pendingReplacement",
    "additionalSecretOutputs",
    "aliases",
    "customTimeouts",
    "importID",
    "retainOnDelete",
    "deletedWith",
    "created",
    "modified",
    "sourcePosition",
    "ignoreChanges",
    "replaceOnChanges",
    "refreshBeforeUpdate",
    "viewOf",
    "taint",
    "hideDiff",
    "replaceWith",
    "replacementTrigger",
    "resourceHooks",
];

/// `ResourceV3`. Keys this version does not know are kept in `unknown`.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Resource<'a> {
    pub urn: Option<String>,
    pub custom: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type")]
    pub type_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<Props<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Props<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protect: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Vec<String>>,
    #[serde(rename = "initErrors", skip_serializing_if = "Option::is_none")]
    pub init_errors: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(
        rename = "propertyDependencies",
        skip_serializing_if = "Option::is_none"
    )]
    pub property_dependencies: Option<BTreeMap<String, Option<Vec<String>>>>,
    #[serde(rename = "pendingReplacement", skip_serializing_if = "Option::is_none")]
    pub pending_replacement: Option<bool>,
    #[serde(
        rename = "additionalSecretOutputs",
        skip_serializing_if = "Option::is_none"
    )]
    pub additional_secret_outputs: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aliases: Option<Vec<String>>,
    #[serde(rename = "customTimeouts", skip_serializing_if = "Option::is_none")]
    pub custom_timeouts: Option<CustomTimeouts>,
    #[serde(rename = "importID", skip_serializing_if = "Option::is_none")]
    pub import_id: Option<String>,
    #[serde(rename = "retainOnDelete", skip_serializing_if = "Option::is_none")]
    pub retain_on_delete: Option<bool>,
    #[serde(rename = "deletedWith", skip_serializing_if = "Option::is_none")]
    pub deleted_with: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    #[serde(rename = "sourcePosition", skip_serializing_if = "Option::is_none")]
    pub source_position: Option<String>,
    #[serde(rename = "ignoreChanges", skip_serializing_if = "Option::is_none")]
    pub ignore_changes: Option<Vec<String>>,
    #[serde(rename = "replaceOnChanges", skip_serializing_if = "Option::is_none")]
    pub replace_on_changes: Option<Vec<String>>,
    #[serde(
        rename = "refreshBeforeUpdate",
        skip_serializing_if = "Option::is_none"
    )]
    pub refresh_before_update: Option<bool>,
    #[serde(rename = "viewOf", skip_serializing_if = "Option::is_none")]
    pub view_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taint: Option<bool>,
    #[serde(rename = "hideDiff", skip_serializing_if = "Option::is_none")]
    pub hide_diff: Option<Vec<String>>,
    #[serde(rename = "replaceWith", skip_serializing_if = "Option::is_none")]
    pub replace_with: Option<Vec<String>>,
    #[serde(rename = "replacementTrigger", skip_serializing_if = "Option::is_none")]
    pub replacement_trigger: Option<Value>,
    #[serde(rename = "resourceHooks", skip_serializing_if = "Option::is_none")]
    pub resource_hooks: Option<BTreeMap<String, Option<Vec<String>>>>,
    /// Every other key, kept and written back (after the known ones).
    #[serde(flatten)]
    pub unknown: Map<String, Value>,
}

impl<'de, 'a> Deserialize<'de> for Resource<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ResourceVisitor(PhantomData))
    }
}

struct ResourceVisitor<'a>(PhantomData<Resource<'a>>);

impl<'de, 'a> Visitor<'de> for ResourceVisitor<'a> {
    type Value = Resource<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a resource (a JSON object)")
    }

    /// Every field optional, `null` as absent, a repeated key's last value
    /// kept: Go's decoder.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Resource<'a>, A::Error> {
        let mut r = Resource::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "urn" => r.urn = map.next_value()?,
                "custom" => r.custom = map.next_value()?,
                "delete" => r.delete = map.next_value()?,
                "id" => r.id = map.next_value()?,
                "type" => r.type_token = map.next_value()?,
                "inputs" => r.inputs = map.next_value()?,
                "outputs" => r.outputs = map.next_value()?,
                "parent" => r.parent = map.next_value()?,
                "protect" => r.protect = map.next_value()?,
                "external" => r.external = map.next_value()?,
                "dependencies" => r.dependencies = map.next_value()?,
                "initErrors" => r.init_errors = map.next_value()?,
                "provider" => r.provider = map.next_value()?,
                "propertyDependencies" => r.property_dependencies = map.next_value()?,
                "pendingReplacement" => r.pending_replacement = map.next_value()?,
                "additionalSecretOutputs" => r.additional_secret_outputs = map.next_value()?,
                "aliases" => r.aliases = map.next_value()?,
                "customTimeouts" => r.custom_timeouts = map.next_value()?,
                "importID" => r.import_id = map.next_value()?,
                "retainOnDelete" => r.retain_on_delete = map.next_value()?,
                "deletedWith" => r.deleted_with = map.next_value()?,
                "created" => r.created = map.next_value()?,
                "modified" => r.modified = map.next_value()?,
                "sourcePosition" => r.source_position = map.next_value()?,
                "ignoreChanges" => r.ignore_changes = map.next_value()?,
                "replaceOnChanges" => r.replace_on_changes = map.next_value()?,
                "refreshBeforeUpdate" => r.refresh_before_update = map.next_value()?,
                "viewOf" => r.view_of = map.next_value()?,
                "taint" => r.taint = map.next_value()?,
                "hideDiff" => r.hide_diff = map.next_value()?,
                "replaceWith" => r.replace_with = map.next_value()?,
                "replacementTrigger" => r.replacement_trigger = map.next_value()?,
                "resourceHooks" => r.resource_hooks = map.next_value()?,
                _ => {
                    let value = map.next_value()?;
                    r.unknown.insert(key, value);
                }
            }
        }
        Ok(r)
    }
}

/// Timeouts in seconds (Go's `resource.CustomTimeouts`); zero means unset.
/// Durations written as strings are accepted too.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct CustomTimeouts {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_resource_key_is_read_and_no_other() {
        let mut object = Map::new();
        for key in RESOURCE_KEYS {
            object.insert((*key).to_owned(), Value::Null);
        }
        object.insert("futureField".to_owned(), Value::Bool(true));
        let r: Resource = serde_json::from_value(Value::Object(object)).unwrap();
        assert_eq!(r.unknown.keys().collect::<Vec<_>>(), ["futureField"]);
    }
}

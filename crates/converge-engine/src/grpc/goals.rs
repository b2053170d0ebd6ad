//! Requests in wire form → goals in engine terms: URNs parsed, property
//! values unmarshalled, options and aliases mapped.

use std::collections::BTreeMap;

use converge_model::{
    sha256_hex, Archive, ArchiveMember, Asset, CustomTimeouts, PropertyMap, PropertyValue, Urn,
};
use converge_proto::pulumirpc::alias::{self, spec::Parent};
use converge_proto::pulumirpc::register_resource_request::ResourceHooksBinding;
use converge_proto::pulumirpc::{ReadResourceRequest, RegisterResourceRequest};
use converge_proto::{unmarshal_properties, unmarshal_value, MarshalOptions};
use tonic::Status;

use crate::goal::{Alias, AliasParent, AliasSpec, ReadGoal, ResourceGoal, ResourceOptions};
use crate::hooks::{HookBinding, HookKind};
use crate::step_generator::migrations::MigrationCallback;

/// How property values from a program are read: every kind kept except
/// output values, which become plain, secret or unknown values (their
/// dependencies also arrive as `propertyDependencies`).
pub(crate) fn from_program() -> MarshalOptions {
    MarshalOptions {
        keep_output_values: false,
        ..MarshalOptions::full()
    }
}

/// How property values are written back to a program: unknowns kept (a
/// preview's values), secrets and resource references only if it accepts
/// them.
pub(crate) fn to_program(accept_secrets: bool, accept_resources: bool) -> MarshalOptions {
    MarshalOptions {
        keep_secrets: accept_secrets,
        keep_resources: accept_resources,
        keep_output_values: false,
        ..MarshalOptions::full()
    }
}

pub(crate) fn invalid(what: &str, e: impl std::fmt::Display) -> Status {
    Status::invalid_argument(format!("{what}: {e}"))
}

fn urn(what: &str, text: &str) -> Result<Urn, Status> {
    Urn::parse(text).map_err(|e| invalid(what, e))
}

fn optional_urn(what: &str, text: &str) -> Result<Option<Urn>, Status> {
    if text.is_empty() {
        Ok(None)
    } else {
        urn(what, text).map(Some)
    }
}

pub(crate) fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

/// Reads a program's property map, filling in the hashes of text assets.
pub(crate) fn properties(
    what: &str,
    props: Option<&prost_types::Struct>,
) -> Result<PropertyMap, Status> {
    let Some(props) = props else {
        return Ok(PropertyMap::new());
    };
    let mut map = unmarshal_properties(props, from_program()).map_err(|e| invalid(what, e))?;
    for value in map.values_mut() {
        hash_assets(value);
    }
    Ok(map)
}

/// Text assets the SDK sent without a hash get one (Pulumi's engine
/// computes asset hashes on registration).
fn hash_assets(value: &mut PropertyValue) {
    match value {
        PropertyValue::Asset(asset) => hash_asset(asset),
        PropertyValue::Archive(archive) => hash_archive(archive),
        PropertyValue::Array(items) => items.iter_mut().for_each(hash_assets),
        PropertyValue::Object(map) => map.values_mut().for_each(hash_assets),
        PropertyValue::Secret(inner) => hash_assets(inner),
        _ => {}
    }
}

fn hash_asset(asset: &mut Asset) {
    if asset.hash.is_empty() {
        if let Some(text) = &asset.text {
            asset.hash = sha256_hex(text.as_bytes());
        }
    }
}

fn hash_archive(archive: &mut Archive) {
    for member in archive.assets.iter_mut().flat_map(|m| m.values_mut()) {
        match member {
            ArchiveMember::Asset(asset) => hash_asset(asset),
            ArchiveMember::Archive(inner) => hash_archive(inner),
        }
    }
}

/// Fills in the hashes of the file assets and archives in `map`, read
/// under `working_dir` on a blocking thread (a directory archive may be
/// large), as Pulumi's engine computes them on registration; a file that
/// cannot be read fails the registration, naming it.
pub(crate) async fn hash_files(
    what: String,
    mut map: PropertyMap,
    working_dir: &std::path::Path,
) -> Result<PropertyMap, Status> {
    if !map.values().any(crate::asset_hashes::needs_hashing) {
        return Ok(map);
    }
    let working_dir = working_dir.to_owned();
    tokio::task::spawn_blocking(move || {
        for value in map.values_mut() {
            crate::asset_hashes::ensure_hashes(value, &working_dir)
                .map_err(|e| invalid(&what, e))?;
        }
        Ok(map)
    })
    .await
    .map_err(|e| Status::internal(format!("hashing the assets of a registration: {e}")))?
}

fn urns(what: &str, texts: &[String]) -> Result<Vec<Urn>, Status> {
    texts.iter().map(|t| urn(what, t)).collect()
}

/// The aliases of a registration in engine terms: complete URNs as given;
/// specs with an empty field meaning "as now". The engine resolves them
/// and adds those inherited from the parent.
fn aliases(req: &RegisterResourceRequest) -> Result<Vec<Alias>, Status> {
    let mut out = Vec::new();
    for alias in &req.aliases {
        match &alias.alias {
            Some(alias::Alias::Urn(text)) => out.push(Alias::Urn(urn("alias", text)?)),
            Some(alias::Alias::Spec(spec)) => {
                let parent = match &spec.parent {
                    Some(Parent::NoParent(true)) => AliasParent::None,
                    Some(Parent::ParentUrn(p)) if !p.is_empty() => {
                        AliasParent::Urn(urn("alias parent", p)?)
                    }
                    _ => AliasParent::Current,
                };
                out.push(Alias::Spec(AliasSpec {
                    name: non_empty(&spec.name),
                    type_token: non_empty(&spec.r#type),
                    stack: non_empty(&spec.stack),
                    project: non_empty(&spec.project),
                    parent,
                }));
            }
            None => {}
        }
    }
    for u in urns("alias", &req.alias_ur_ns)? {
        out.push(Alias::Urn(u));
    }
    Ok(out)
}

fn custom_timeouts(
    t: Option<&converge_proto::pulumirpc::register_resource_request::CustomTimeouts>,
) -> Option<CustomTimeouts> {
    let t = t?;
    let timeouts = CustomTimeouts {
        create: non_empty(&t.create),
        update: non_empty(&t.update),
        delete: non_empty(&t.delete),
        read: non_empty(&t.read),
    };
    (!timeouts.is_empty()).then_some(timeouts)
}

/// The `replacementTrigger` option: a value, possibly secret; one not
/// known yet (a preview's) is [`PropertyValue::Unknown`].
fn replacement_trigger(
    value: Option<&prost_types::Value>,
) -> Result<Option<PropertyValue>, Status> {
    let Some(value) = value else {
        return Ok(None);
    };
    let read =
        unmarshal_value(value, from_program()).map_err(|e| invalid("replacementTrigger", e))?;
    Ok(Some(read.unwrap_or(PropertyValue::Unknown)))
}

/// The `hooks` option: hook names by kind.
fn hook_binding(b: &ResourceHooksBinding) -> HookBinding {
    [
        (HookKind::BeforeCreate, &b.before_create),
        (HookKind::AfterCreate, &b.after_create),
        (HookKind::BeforeUpdate, &b.before_update),
        (HookKind::AfterUpdate, &b.after_update),
        (HookKind::BeforeDelete, &b.before_delete),
        (HookKind::AfterDelete, &b.after_delete),
        (HookKind::OnError, &b.on_error),
    ]
    .into_iter()
    .filter(|(_, names)| !names.is_empty())
    .map(|(kind, names)| (kind, names.clone()))
    .collect()
}

/// Refuses what Converge does not implement, with a message that says so.
pub(crate) fn check_supported(req: &RegisterResourceRequest) -> Result<(), Status> {
    let what = format!("{} {:?}", req.r#type, req.name);
    let refuse = |feature: &str| {
        Err(Status::unimplemented(format!(
            "{what}: {feature} are not supported by Converge yet"
        )))
    };
    if req.remote && !req.state_migrations.is_empty() {
        return refuse(
            "state migrations on a remote component (one a component provider constructs)",
        );
    }
    Ok(())
}

/// A `RegisterResourceRequest` as a [`ResourceGoal`].
pub(crate) fn resource_goal(req: &RegisterResourceRequest) -> Result<ResourceGoal, Status> {
    let parent = optional_urn("parent", &req.parent)?;
    let mut property_dependencies = BTreeMap::new();
    for (key, deps) in &req.property_dependencies {
        property_dependencies.insert(key.clone(), urns("propertyDependencies", &deps.urns)?);
    }
    let delete_before_replace = (req.delete_before_replace_defined || req.delete_before_replace)
        .then_some(req.delete_before_replace);
    let options = ResourceOptions {
        protect: req.protect.unwrap_or(false),
        delete_before_replace,
        ignore_changes: req.ignore_changes.clone(),
        replace_on_changes: req.replace_on_changes.clone(),
        retain_on_delete: req.retain_on_delete.unwrap_or(false),
        deleted_with: optional_urn("deletedWith", &req.deleted_with)?,
        aliases: aliases(req)?,
        custom_timeouts: custom_timeouts(req.custom_timeouts.as_ref()),
        additional_secret_outputs: req.additional_secret_outputs.clone(),
        import_id: non_empty(&req.import_id),
        import_inputs: Default::default(),
        hide_diffs: req.hide_diffs.clone(),
        replace_with: urns("replaceWith", &req.replace_with)?,
        replacement_trigger: replacement_trigger(req.replacement_trigger.as_ref())?,
        hooks: req.hooks.as_ref().map(hook_binding).unwrap_or_default(),
        state_migrations: req
            .state_migrations
            .iter()
            .map(|c| MigrationCallback {
                target: c.target.clone(),
                token: c.token.clone(),
            })
            .collect(),
    };
    Ok(ResourceGoal {
        type_token: req.r#type.clone(),
        name: req.name.clone(),
        custom: req.custom,
        parent,
        inputs: properties("object", req.object.as_ref())?,
        provider: non_empty(&req.provider),
        version: non_empty(&req.version),
        dependencies: urns("dependencies", &req.dependencies)?,
        property_dependencies,
        options,
    })
}

/// A `ReadResourceRequest` as a [`ReadGoal`].
pub(crate) fn read_goal(req: &ReadResourceRequest) -> Result<ReadGoal, Status> {
    Ok(ReadGoal {
        type_token: req.r#type.clone(),
        name: req.name.clone(),
        id: req.id.clone(),
        parent: optional_urn("parent", &req.parent)?,
        inputs: properties("properties", req.properties.as_ref())?,
        provider: non_empty(&req.provider),
        version: non_empty(&req.version),
        dependencies: urns("dependencies", &req.dependencies)?,
        // The SDKs send no timeouts with a read.
        custom_timeouts: None,
    })
}

/// Marks `keys` of `outputs` secret (`additionalSecretOutputs` of a read).
pub(crate) fn mark_secret(outputs: &mut PropertyMap, keys: &[String]) {
    for key in keys {
        if let Some(value) = outputs.get_mut(key) {
            if !matches!(value, PropertyValue::Secret(_)) {
                let inner = std::mem::replace(value, PropertyValue::Null);
                *value = PropertyValue::secret(inner);
            }
        }
    }
}

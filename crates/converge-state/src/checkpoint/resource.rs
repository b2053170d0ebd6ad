//! Conversion between the serde structs of [`super::dto`] and the domain
//! types: [`Snapshot`] and [`ResourceState`].

use std::collections::BTreeMap;

use converge_model::{
    go_duration_seconds, CustomTimeouts, PropertyMap, ProviderReference, ResourceState, Urn,
};
use serde_json::{Map, Value};

use super::dto;
use super::property_path::join_paths;
use super::props_out::PropsWriter;
use super::raw_values::property_map_from_raw;
use super::values::{property_value_from_json, property_value_to_json};
use super::CheckpointError;
use crate::json_limits::unchecked_from_slice;
use crate::secrets::SecretsMode;
use crate::snapshot::{Manifest, OperationType, PendingOperation, SecretsProviders, Snapshot};

// ---- reading ----

pub(crate) fn snapshot_from_dto(
    deployment: dto::Deployment,
    mode: SecretsMode<'_>,
) -> Result<Snapshot, CheckpointError> {
    let manifest = deployment.manifest.ok_or(CheckpointError::MissingField {
        location: "the deployment".to_owned(),
        field: "manifest",
    })?;
    let resources = match deployment.resources {
        None => Vec::new(),
        Some(dto::Resources::Read(stored)) => {
            let mut resources = Vec::with_capacity(stored.len());
            for (i, resource) in stored.into_iter().enumerate() {
                resources.push(resource_from_dto(
                    resource,
                    &format!("resources[{i}]"),
                    mode,
                )?);
            }
            resources
        }
        // A DTO built for writing holds the states themselves.
        Some(dto::Resources::Write { states, .. }) => states.to_vec(),
    };
    let mut pending_operations = Vec::new();
    for (i, op) in deployment
        .pending_operations
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        let kind_text = op.kind.unwrap_or_default();
        let kind = OperationType::parse(&kind_text).ok_or(CheckpointError::UnknownOperation {
            index: i,
            kind: kind_text,
        })?;
        let resource = resource_from_dto(op.resource, &format!("pending_operations[{i}]"), mode)?;
        pending_operations.push(PendingOperation { resource, kind });
    }
    Ok(Snapshot {
        manifest: Manifest {
            time: manifest.time,
            magic: manifest.magic,
            version: manifest.version,
            plugins: manifest.plugins.map(|v| v.to_string()),
        },
        secrets_providers: deployment.secrets_providers.map(|sp| SecretsProviders {
            kind: sp.kind,
            state: sp.state.map(|v| v.to_string()),
        }),
        resources,
        pending_operations,
        metadata: deployment.metadata.map(|v| v.to_string()),
    })
}

/// `index_location` names the record (`resources[3]`) until its URN is known.
pub(crate) fn resource_from_dto(
    r: dto::Resource,
    index_location: &str,
    mode: SecretsMode<'_>,
) -> Result<ResourceState, CheckpointError> {
    let urn_text = non_empty(r.urn).ok_or_else(|| CheckpointError::MissingField {
        location: index_location.to_owned(),
        field: "urn",
    })?;
    let urn = Urn::parse(&urn_text).map_err(|source| CheckpointError::BadUrn {
        location: index_location.to_owned(),
        field: "urn".to_owned(),
        source,
    })?;
    let location = format!("resource {urn}");
    let urn_field = |field: String, text: String| {
        Urn::parse(&text).map_err(|source| CheckpointError::BadUrn {
            location: location.clone(),
            field,
            source,
        })
    };
    let optional_urn =
        |field: &str, text: Option<String>| -> Result<Option<Urn>, CheckpointError> {
            non_empty(text)
                .map(|t| urn_field(field.to_owned(), t))
                .transpose()
        };
    let urn_list = |field: &str, list: Option<Vec<String>>| -> Result<Vec<Urn>, CheckpointError> {
        list.unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, t)| urn_field(format!("{field}[{i}]"), t))
            .collect()
    };

    let type_token = non_empty(r.type_token).ok_or_else(|| CheckpointError::MissingField {
        location: location.clone(),
        field: "type",
    })?;
    let custom = r.custom.unwrap_or(false);
    let id = non_empty(r.id);
    if !custom && id.is_some() {
        return Err(CheckpointError::IdWithoutCustom {
            urn: urn.to_string(),
        });
    }
    let properties =
        |field: &str, props: Option<dto::Props>| -> Result<PropertyMap, CheckpointError> {
            let read = match &props {
                None => return Ok(PropertyMap::new()),
                Some(dto::Props::Raw(raw)) => property_map_from_raw(raw, mode),
                Some(dto::Props::Live(live)) => Ok(live.map.clone()),
            };
            read.map_err(|e| CheckpointError::Property {
                urn: urn.to_string(),
                property: join_paths(field, &e.path),
                source: e.kind,
            })
        };
    let provider = non_empty(r.provider)
        .map(|p| {
            ProviderReference::parse(&p).map_err(|source| CheckpointError::BadProvider {
                location: location.clone(),
                source,
            })
        })
        .transpose()?;
    let mut property_dependencies = BTreeMap::new();
    for (key, list) in r.property_dependencies.unwrap_or_default() {
        let urns = urn_list(&join_paths("propertyDependencies", &key), list)?;
        property_dependencies.insert(key, urns);
    }
    let custom_timeouts = r
        .custom_timeouts
        .map(|t| timeouts_from_dto(t, &location))
        .transpose()?;
    let replacement_trigger = r
        .replacement_trigger
        .map(|value| {
            property_value_from_json(&value, mode).map_err(|e| CheckpointError::Property {
                urn: urn.to_string(),
                property: join_paths("replacementTrigger", &e.path),
                source: e.kind,
            })
        })
        .transpose()?;
    let resource_hooks = r
        .resource_hooks
        .unwrap_or_default()
        .into_iter()
        .map(|(kind, names)| (kind, names.unwrap_or_default()))
        .collect();

    Ok(ResourceState {
        custom,
        delete: r.delete.unwrap_or(false),
        id,
        type_token,
        inputs: properties("inputs", r.inputs)?,
        outputs: properties("outputs", r.outputs)?,
        parent: optional_urn("parent", r.parent)?,
        protect: r.protect.unwrap_or(false),
        external: r.external.unwrap_or(false),
        dependencies: urn_list("dependencies", r.dependencies)?,
        init_errors: r.init_errors.unwrap_or_default(),
        provider,
        property_dependencies,
        pending_replacement: r.pending_replacement.unwrap_or(false),
        additional_secret_outputs: r.additional_secret_outputs.unwrap_or_default(),
        aliases: urn_list("aliases", r.aliases)?,
        custom_timeouts: custom_timeouts.map(Box::new),
        import_id: non_empty(r.import_id),
        retain_on_delete: r.retain_on_delete.unwrap_or(false),
        deleted_with: optional_urn("deletedWith", r.deleted_with)?,
        created: non_empty(r.created),
        modified: non_empty(r.modified),
        source_position: non_empty(r.source_position),
        ignore_changes: r.ignore_changes.unwrap_or_default(),
        replace_on_changes: r.replace_on_changes.unwrap_or_default(),
        refresh_before_update: r.refresh_before_update.unwrap_or(false),
        view_of: optional_urn("viewOf", r.view_of)?,
        taint: r.taint.unwrap_or(false),
        hide_diff: r.hide_diff.unwrap_or_default(),
        replace_with: urn_list("replaceWith", r.replace_with)?,
        replacement_trigger,
        resource_hooks,
        unknown_fields: r
            .unknown
            .into_iter()
            .map(|(k, v)| (k, v.to_string()))
            .collect(),
        urn,
    })
}

/// Seconds in the file (Go's float64 fields; zero means unset), kept in the
/// domain as Go duration strings (`"300s"`).
pub(crate) fn timeouts_from_dto(
    t: dto::CustomTimeouts,
    location: &str,
) -> Result<CustomTimeouts, CheckpointError> {
    let one = |field: &'static str,
               value: Option<Value>|
     -> Result<Option<String>, CheckpointError> {
        let bad = |value: &Value| CheckpointError::BadTimeout {
            location: location.to_owned(),
            field,
            value: value.to_string(),
        };
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(0.0) => Ok(None),
                Some(secs) => Ok(Some(format!("{secs}s"))),
                None => Err(bad(&Value::Number(n))),
            },
            Some(Value::String(s)) if go_duration_seconds(&s).is_some() => Ok(non_empty(Some(s))),
            Some(other) => Err(bad(&other)),
        }
    };
    Ok(CustomTimeouts {
        create: one("create", t.create)?,
        update: one("update", t.update)?,
        delete: one("delete", t.delete)?,
        read: one("read", t.read)?,
    })
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

// ---- writing ----

/// `snapshot` as written, with `manifest` (its own, or a new writer's).
pub(crate) fn snapshot_to_dto<'a>(
    snapshot: &'a Snapshot,
    manifest: &Manifest,
    writer: PropsWriter<'a>,
) -> Result<dto::Deployment<'a>, CheckpointError> {
    let pending_operations = snapshot
        .pending_operations
        .iter()
        .map(|op| {
            Ok(dto::Operation {
                resource: resource_to_dto(&op.resource, writer)?,
                kind: Some(op.kind.as_str().to_owned()),
            })
        })
        .collect::<Result<Vec<_>, CheckpointError>>()?;
    let secrets_providers = match &snapshot.secrets_providers {
        None => None,
        Some(sp) => Some(dto::SecretsProviders {
            kind: sp.kind.clone(),
            state: parse_raw(sp.state.as_deref(), "secrets_providers.state")?,
        }),
    };
    Ok(dto::Deployment {
        manifest: Some(dto::Manifest {
            time: manifest.time.clone(),
            magic: manifest.magic.clone(),
            version: manifest.version.clone(),
            plugins: parse_raw(manifest.plugins.as_deref(), "manifest.plugins")?,
        }),
        secrets_providers,
        resources: (!snapshot.resources.is_empty()).then_some(dto::Resources::Write {
            states: &snapshot.resources,
            writer,
        }),
        pending_operations: (!pending_operations.is_empty()).then_some(pending_operations),
        metadata: Some(
            parse_raw(snapshot.metadata.as_deref(), "metadata")?
                .unwrap_or_else(|| Value::Object(Map::new())),
        ),
    })
}

pub(crate) fn resource_to_dto<'a>(
    r: &'a ResourceState,
    writer: PropsWriter<'a>,
) -> Result<dto::Resource<'a>, CheckpointError> {
    // Written when the DTO is serialized, straight from the values.
    let properties = |field: &'static str, map: &'a PropertyMap| {
        (!map.is_empty()).then(|| dto::Props::Live(writer.props(map, &r.urn, field)))
    };
    let flag = |b: bool| b.then_some(true);
    let text = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    let urn = |u: &Option<Urn>| u.as_ref().map(Urn::to_string);
    let urns = |list: &[Urn]| {
        (!list.is_empty()).then(|| list.iter().map(Urn::to_string).collect::<Vec<_>>())
    };
    let strings = |list: &[String]| (!list.is_empty()).then(|| list.to_vec());

    let mut unknown = Map::new();
    for (key, raw) in &r.unknown_fields {
        if dto::RESOURCE_KEYS.contains(&key.as_str()) {
            continue;
        }
        let field = format!("resource {}: `{key}`", r.urn);
        unknown.insert(
            key.clone(),
            parse_raw(Some(raw), &field)?.unwrap_or(Value::Null),
        );
    }
    let property_dependencies = (!r.property_dependencies.is_empty()).then(|| {
        r.property_dependencies
            .iter()
            .map(|(k, list)| (k.clone(), Some(list.iter().map(Urn::to_string).collect())))
            .collect()
    });

    let replacement_trigger = r
        .replacement_trigger
        .as_ref()
        .map(|value| {
            property_value_to_json(value, writer.mode).map_err(|e| CheckpointError::Property {
                urn: r.urn.to_string(),
                property: join_paths("replacementTrigger", &e.path),
                source: e.kind,
            })
        })
        .transpose()?;
    let resource_hooks = (!r.resource_hooks.is_empty()).then(|| {
        r.resource_hooks
            .iter()
            .map(|(kind, names)| (kind.clone(), Some(names.clone())))
            .collect()
    });

    Ok(dto::Resource {
        urn: Some(r.urn.to_string()),
        custom: Some(r.custom),
        delete: flag(r.delete),
        id: text(&r.id),
        type_token: Some(r.type_token.clone()),
        inputs: properties("inputs", &r.inputs),
        outputs: properties("outputs", &r.outputs),
        parent: urn(&r.parent),
        protect: flag(r.protect),
        external: flag(r.external),
        dependencies: urns(&r.dependencies),
        init_errors: strings(&r.init_errors),
        provider: r.provider.as_ref().map(ProviderReference::to_string),
        property_dependencies,
        pending_replacement: flag(r.pending_replacement),
        additional_secret_outputs: strings(&r.additional_secret_outputs),
        aliases: urns(&r.aliases),
        custom_timeouts: r
            .custom_timeouts
            .as_ref()
            .map(|t| timeouts_to_dto(t, &format!("resource {}", r.urn)))
            .transpose()?,
        import_id: text(&r.import_id),
        retain_on_delete: flag(r.retain_on_delete),
        deleted_with: urn(&r.deleted_with),
        created: text(&r.created),
        modified: text(&r.modified),
        source_position: text(&r.source_position),
        ignore_changes: strings(&r.ignore_changes),
        replace_on_changes: strings(&r.replace_on_changes),
        refresh_before_update: flag(r.refresh_before_update),
        view_of: urn(&r.view_of),
        taint: flag(r.taint),
        hide_diff: strings(&r.hide_diff),
        replace_with: urns(&r.replace_with),
        replacement_trigger,
        resource_hooks,
        unknown,
    })
}

pub(crate) fn timeouts_to_dto(
    t: &CustomTimeouts,
    location: &str,
) -> Result<dto::CustomTimeouts, CheckpointError> {
    let one =
        |field: &'static str, value: &Option<String>| -> Result<Option<Value>, CheckpointError> {
            let Some(text) = value.as_deref().filter(|s| !s.is_empty()) else {
                return Ok(None);
            };
            let secs = go_duration_seconds(text).ok_or_else(|| CheckpointError::BadTimeout {
                location: location.to_owned(),
                field,
                value: format!("{text:?}"),
            })?;
            // Go's encoder writes a whole float64 without a fraction.
            let whole = secs.fract() == 0.0 && secs.abs() < 9.0e15;
            let number = if whole {
                Some(serde_json::Number::from(secs as i64))
            } else {
                serde_json::Number::from_f64(secs)
            };
            Ok((secs != 0.0).then_some(number).flatten().map(Value::Number))
        };
    Ok(dto::CustomTimeouts {
        create: one("create", &t.create)?,
        update: one("update", &t.update)?,
        delete: one("delete", &t.delete)?,
        read: one("read", &t.read)?,
    })
}

/// Parses raw JSON text kept verbatim in a domain type (text read from a
/// document [`crate::json_limits::check`] passed).
pub(crate) fn parse_raw(raw: Option<&str>, field: &str) -> Result<Option<Value>, CheckpointError> {
    raw.map(|text| {
        unchecked_from_slice(text.as_bytes()).map_err(|source| CheckpointError::RawJson {
            field: field.to_owned(),
            source,
        })
    })
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_read_as_seconds_and_write_back() {
        let t = dto::CustomTimeouts {
            create: Some(Value::from(300)),
            update: Some(Value::from(0)),
            delete: Some(Value::from(1.5)),
            read: Some(Value::from(45)),
        };
        let domain = timeouts_from_dto(t, "resource x").unwrap();
        assert_eq!(domain.create.as_deref(), Some("300s"));
        assert_eq!(domain.update, None);
        assert_eq!(domain.delete.as_deref(), Some("1.5s"));
        assert_eq!(domain.read.as_deref(), Some("45s"));
        let bad = dto::CustomTimeouts {
            create: Some(Value::from("soon")),
            ..Default::default()
        };
        let err = timeouts_from_dto(bad, "resource x").unwrap_err();
        assert!(err.to_string().contains("customTimeouts.create"), "{err}");
    }
}

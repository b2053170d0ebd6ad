//! The plan file: Pulumi's `DeploymentPlanV1` JSON (`manifest`, `config`,
//! `resourcePlans` keyed by URN, each with `goal`, `steps`, `state` and
//! `seed`), read and written. Property values go through the checkpoint
//! codec, so secrets are ciphertext objects of the stack's crypter and
//! unknowns the unknown sentinel. Serde DTOs stay in this file.

use std::collections::BTreeMap;

use base64::Engine as _;
use converge_model::{PropertyMap, Urn, UrnError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{DeploymentPlan, GoalPlan, PlanBase, PlanDiff, RefreshedObject, ResourcePlan};
use crate::checkpoint::dto::CustomTimeouts as TimeoutsDto;
use crate::checkpoint::resource::{timeouts_from_dto, timeouts_to_dto};
use crate::checkpoint::{
    property_map_from_json, property_map_to_json, CheckpointError, PropertyValueError,
};
use crate::json_limits::{self, unchecked_from_slice, JsonLimitError};
use crate::secrets::SecretsMode;
use crate::snapshot::Manifest;

/// Why a plan file cannot be read or written; each names where.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("the plan is not valid JSON of a deployment plan: {0}")]
    Json(#[source] serde_json::Error),
    #[error("{0}")]
    Limit(#[from] JsonLimitError),
    #[error("the plan's {location}: {source}")]
    Value {
        location: String,
        #[source]
        source: PropertyValueError,
    },
    #[error("the plan's {location}: invalid URN: {source}")]
    Urn {
        location: String,
        #[source]
        source: UrnError,
    },
    #[error("the plan's {location}: seed is not base64: {source}")]
    Seed {
        location: String,
        #[source]
        source: base64::DecodeError,
    },
    #[error("the plan's {0}")]
    Timeouts(#[source] CheckpointError),
}

/// The keys of a plan file, of a resource's plan, of its goal and of a
/// diff: Pulumi's `DeploymentPlanV1` and Converge's own (`converge…`), for
/// a check of a hand-edited plan to compare unknown keys with.
pub const PLAN_KEYS: &[&str] = &[
    "manifest",
    "config",
    "resourcePlans",
    "convergeBase",
    "convergeRefreshOnly",
];
/// See [`PLAN_KEYS`].
pub const RESOURCE_PLAN_KEYS: &[&str] = &["goal", "steps", "state", "seed", "convergeRefreshed"];
/// See [`PLAN_KEYS`].
pub const GOAL_KEYS: &[&str] = &[
    "type",
    "name",
    "custom",
    "inputDiff",
    "outputDiff",
    "parent",
    "protect",
    "dependencies",
    "provider",
    "propertyDependencies",
    "deleteBeforeReplace",
    "ignoreChanges",
    "ignoreRefreshChanges",
    "additionalSecretOutputs",
    "aliases",
    "structuredAliases",
    "id",
    "customTimeouts",
];
/// See [`PLAN_KEYS`].
pub const DIFF_KEYS: &[&str] = &["adds", "deletes", "updates"];

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PlanDto {
    manifest: ManifestDto,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    config: Map<String, Value>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    resource_plans: BTreeMap<String, ResourcePlanDto>,
    #[serde(
        rename = "convergeBase",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    base: Option<BaseDto>,
    #[serde(
        rename = "convergeRefreshOnly",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    refresh_only: bool,
}

#[derive(Debug, Serialize, Deserialize)]
struct ManifestDto {
    #[serde(default)]
    time: String,
    #[serde(default)]
    magic: String,
    #[serde(default)]
    version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plugins: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BaseDto {
    checkpoint_digest: String,
    #[serde(default)]
    journal_sequence: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct ResourcePlanDto {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    goal: Option<GoalDto>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    steps: Vec<String>,
    /// Go writes this field even when nil (`null`).
    #[serde(default)]
    state: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seed: Option<String>,
    #[serde(
        rename = "convergeRefreshed",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    refreshed: Option<RefreshedDto>,
}

#[derive(Debug, Serialize, Deserialize)]
struct RefreshedDto {
    id: String,
    #[serde(default)]
    inputs: Map<String, Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct DiffDto {
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    adds: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    deletes: Vec<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    updates: Map<String, Value>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct GoalDto {
    #[serde(rename = "type")]
    type_token: String,
    name: String,
    #[serde(default)]
    custom: bool,
    /// Go's `omitempty` does not drop a struct: always written.
    #[serde(default)]
    input_diff: DiffDto,
    #[serde(default)]
    output_diff: DiffDto,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    parent: String,
    #[serde(default)]
    protect: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    dependencies: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    provider: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    property_dependencies: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    delete_before_replace: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ignore_changes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ignore_refresh_changes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    additional_secret_outputs: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    aliases: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    structured_aliases: Option<Value>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    id: String,
    /// Go writes the struct even when empty.
    #[serde(default)]
    custom_timeouts: Option<TimeoutsDto>,
}

/// Reads a plan file; secrets decrypt with `mode`.
pub fn read_plan(bytes: &[u8], mode: SecretsMode<'_>) -> Result<DeploymentPlan, PlanError> {
    json_limits::check(bytes)?;
    let dto: PlanDto = unchecked_from_slice(bytes).map_err(PlanError::Json)?;
    let mut resource_plans = BTreeMap::new();
    for (urn_text, rp) in dto.resource_plans {
        let location = format!("resource plan {urn_text}");
        let urn = urn(&urn_text, &location)?;
        resource_plans.insert(urn, read_resource_plan(rp, &location, mode)?);
    }
    Ok(DeploymentPlan {
        manifest: Manifest {
            time: dto.manifest.time,
            magic: dto.manifest.magic,
            version: dto.manifest.version,
            plugins: dto.manifest.plugins.map(|p| p.to_string()),
        },
        config: dto.config,
        resource_plans,
        base: dto.base.map(|b| PlanBase {
            checkpoint_digest: b.checkpoint_digest,
            journal_sequence: b.journal_sequence,
        }),
        refresh_only: dto.refresh_only,
    })
}

/// Writes a plan file (indented JSON, as Pulumi writes it); secrets
/// encrypt with `mode`.
pub fn write_plan(plan: &DeploymentPlan, mode: SecretsMode<'_>) -> Result<Vec<u8>, PlanError> {
    let mut resource_plans = BTreeMap::new();
    for (urn, rp) in &plan.resource_plans {
        let location = format!("resource plan {urn}");
        resource_plans.insert(urn.to_string(), write_resource_plan(rp, &location, mode)?);
    }
    let plugins = match plan.manifest.plugins.as_deref() {
        Some(text) => Some(unchecked_from_slice(text.as_bytes()).map_err(PlanError::Json)?),
        None => None,
    };
    let dto = PlanDto {
        manifest: ManifestDto {
            time: plan.manifest.time.clone(),
            magic: plan.manifest.magic.clone(),
            version: plan.manifest.version.clone(),
            plugins,
        },
        config: plan.config.clone(),
        resource_plans,
        base: plan.base.as_ref().map(|b| BaseDto {
            checkpoint_digest: b.checkpoint_digest.clone(),
            journal_sequence: b.journal_sequence,
        }),
        refresh_only: plan.refresh_only,
    };
    let mut out = serde_json::to_vec_pretty(&dto).map_err(PlanError::Json)?;
    out.push(b'\n');
    Ok(out)
}

fn urn(text: &str, location: &str) -> Result<Urn, PlanError> {
    Urn::parse(text).map_err(|source| PlanError::Urn {
        location: location.to_owned(),
        source,
    })
}

fn urns(list: &[String], location: &str) -> Result<Vec<Urn>, PlanError> {
    list.iter().map(|u| urn(u, location)).collect()
}

fn map_in(
    object: &Map<String, Value>,
    location: String,
    mode: SecretsMode<'_>,
) -> Result<PropertyMap, PlanError> {
    property_map_from_json(object, mode).map_err(|source| PlanError::Value { location, source })
}

fn map_out(
    map: &PropertyMap,
    location: String,
    mode: SecretsMode<'_>,
) -> Result<Map<String, Value>, PlanError> {
    property_map_to_json(map, mode).map_err(|source| PlanError::Value { location, source })
}

fn read_resource_plan(
    rp: ResourcePlanDto,
    location: &str,
    mode: SecretsMode<'_>,
) -> Result<ResourcePlan, PlanError> {
    let goal = rp.goal.map(|g| read_goal(g, location, mode)).transpose()?;
    let outputs = rp
        .state
        .map(|s| map_in(&s, format!("{location} state"), mode))
        .transpose()?;
    let seed = match rp.seed {
        None => Vec::new(),
        Some(text) => base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|source| PlanError::Seed {
                location: location.to_owned(),
                source,
            })?,
    };
    let refreshed = rp
        .refreshed
        .map(|r| {
            Ok::<_, PlanError>(RefreshedObject {
                id: r.id,
                inputs: map_in(&r.inputs, format!("{location} refreshed inputs"), mode)?,
            })
        })
        .transpose()?;
    Ok(ResourcePlan {
        goal,
        steps: rp.steps,
        outputs,
        seed,
        refreshed,
    })
}

fn write_resource_plan(
    rp: &ResourcePlan,
    location: &str,
    mode: SecretsMode<'_>,
) -> Result<ResourcePlanDto, PlanError> {
    Ok(ResourcePlanDto {
        goal: rp
            .goal
            .as_ref()
            .map(|g| write_goal(g, location, mode))
            .transpose()?,
        steps: rp.steps.clone(),
        state: rp
            .outputs
            .as_ref()
            .map(|o| map_out(o, format!("{location} state"), mode))
            .transpose()?,
        seed: (!rp.seed.is_empty())
            .then(|| base64::engine::general_purpose::STANDARD.encode(&rp.seed)),
        refreshed: rp
            .refreshed
            .as_ref()
            .map(|r| {
                Ok::<_, PlanError>(RefreshedDto {
                    id: r.id.clone(),
                    inputs: map_out(&r.inputs, format!("{location} refreshed inputs"), mode)?,
                })
            })
            .transpose()?,
    })
}

fn read_diff(d: DiffDto, location: String, mode: SecretsMode<'_>) -> Result<PlanDiff, PlanError> {
    Ok(PlanDiff {
        adds: map_in(&d.adds, format!("{location} adds"), mode)?,
        deletes: d.deletes,
        updates: map_in(&d.updates, format!("{location} updates"), mode)?,
    })
}

fn write_diff(d: &PlanDiff, location: String, mode: SecretsMode<'_>) -> Result<DiffDto, PlanError> {
    Ok(DiffDto {
        adds: map_out(&d.adds, format!("{location} adds"), mode)?,
        deletes: d.deletes.clone(),
        updates: map_out(&d.updates, format!("{location} updates"), mode)?,
    })
}

fn read_goal(g: GoalDto, location: &str, mode: SecretsMode<'_>) -> Result<GoalPlan, PlanError> {
    let goal_location = format!("{location} goal");
    let mut property_dependencies = BTreeMap::new();
    for (k, list) in &g.property_dependencies {
        property_dependencies.insert(k.clone(), urns(list, &goal_location)?);
    }
    let custom_timeouts = match g.custom_timeouts {
        None => None,
        Some(t) => {
            let t = timeouts_from_dto(t, &goal_location).map_err(PlanError::Timeouts)?;
            (!t.is_empty()).then_some(t)
        }
    };
    Ok(GoalPlan {
        type_token: g.type_token,
        name: g.name,
        custom: g.custom,
        input_diff: read_diff(g.input_diff, format!("{goal_location} inputDiff"), mode)?,
        output_diff: read_diff(g.output_diff, format!("{goal_location} outputDiff"), mode)?,
        parent: (!g.parent.is_empty())
            .then(|| urn(&g.parent, &goal_location))
            .transpose()?,
        protect: g.protect,
        dependencies: urns(&g.dependencies, &goal_location)?,
        provider: (!g.provider.is_empty()).then_some(g.provider),
        property_dependencies,
        delete_before_replace: g.delete_before_replace,
        ignore_changes: g.ignore_changes,
        ignore_refresh_changes: g.ignore_refresh_changes,
        additional_secret_outputs: g.additional_secret_outputs,
        aliases: urns(&g.aliases, &goal_location)?,
        structured_aliases: g.structured_aliases,
        id: (!g.id.is_empty()).then_some(g.id),
        custom_timeouts,
    })
}

fn write_goal(g: &GoalPlan, location: &str, mode: SecretsMode<'_>) -> Result<GoalDto, PlanError> {
    let goal_location = format!("{location} goal");
    let custom_timeouts = match &g.custom_timeouts {
        None => TimeoutsDto::default(),
        Some(t) => timeouts_to_dto(t, &goal_location).map_err(PlanError::Timeouts)?,
    };
    let text = |list: &[Urn]| list.iter().map(ToString::to_string).collect::<Vec<_>>();
    Ok(GoalDto {
        type_token: g.type_token.clone(),
        name: g.name.clone(),
        custom: g.custom,
        input_diff: write_diff(&g.input_diff, format!("{goal_location} inputDiff"), mode)?,
        output_diff: write_diff(&g.output_diff, format!("{goal_location} outputDiff"), mode)?,
        parent: g
            .parent
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        protect: g.protect,
        dependencies: text(&g.dependencies),
        provider: g.provider.clone().unwrap_or_default(),
        property_dependencies: g
            .property_dependencies
            .iter()
            .map(|(k, v)| (k.clone(), text(v)))
            .collect(),
        delete_before_replace: g.delete_before_replace,
        ignore_changes: g.ignore_changes.clone(),
        ignore_refresh_changes: g.ignore_refresh_changes.clone(),
        additional_secret_outputs: g.additional_secret_outputs.clone(),
        aliases: text(&g.aliases),
        structured_aliases: g.structured_aliases.clone(),
        id: g.id.clone().unwrap_or_default(),
        custom_timeouts: Some(custom_timeouts),
    })
}

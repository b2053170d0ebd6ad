//! A stack's resources, read from its current state (the checkpoint with
//! the open journal replayed, as `GET …/export` answers): the list (with
//! a type/name filter), one resource with its relations, and the graph of
//! parents, dependencies and providers. Values are shown with every
//! secret masked ([`super::masked`]). The console's pages show exactly
//! these documents.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Path, Query};
use axum::Json;
use converge_backend::StackRef;
use converge_model::ResourceState;
use converge_state::checkpoint::read_checkpoint;
use converge_state::secrets::SecretsMode;
use converge_state::Snapshot;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{masked, stack_ref, St};
use crate::error::ApiError;
use crate::store::{Caller, Store};

/// One resource in a list.
#[derive(Debug, Clone, Serialize)]
pub struct ResourceSummary {
    pub urn: String,
    #[serde(rename = "type")]
    pub type_token: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub custom: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// The provider resource's URN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    pub protect: bool,
    /// Replaced, to be deleted when its update ends.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub delete: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub external: bool,
}

/// One resource with its values (secrets masked) and relations.
#[derive(Debug, Clone, Serialize)]
pub struct ResourceDetail {
    #[serde(flatten)]
    pub summary: ResourceSummary,
    #[serde(rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    pub inputs: Map<String, Value>,
    pub outputs: Map<String, Value>,
    pub dependencies: Vec<String>,
    #[serde(rename = "propertyDependencies")]
    pub property_dependencies: BTreeMap<String, Vec<String>>,
    #[serde(rename = "deletedWith", skip_serializing_if = "Option::is_none")]
    pub deleted_with: Option<String>,
    /// Resources whose parent this is.
    pub children: Vec<String>,
    /// Resources that depend on this one (dependencies, property
    /// dependencies, deletedWith) or use it as their provider.
    pub dependents: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    #[serde(rename = "initErrors", skip_serializing_if = "Vec::is_empty")]
    pub init_errors: Vec<String>,
}

/// What an edge of the graph means: `from` refers to `to` as its
/// parent, a dependency, or its provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EdgeKind {
    Parent,
    Dependency,
    Provider,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Edge {
    pub from: String,
    pub to: String,
    pub kind: EdgeKind,
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphNode {
    pub urn: String,
    #[serde(rename = "type")]
    pub type_token: String,
    pub name: String,
    pub custom: bool,
}

/// The resource graph: one node per URN, edges between nodes only.
#[derive(Debug, Clone, Serialize)]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<Edge>,
}

/// The stack's current state, secrets opaque (an empty snapshot for a
/// stack without one).
pub(crate) async fn current_snapshot(
    store: &Store,
    stack: &StackRef,
) -> Result<Snapshot, ApiError> {
    let snapshot = match store.current_checkpoint(stack).await? {
        Some(bytes) => {
            read_checkpoint(&bytes, SecretsMode::Opaque)
                .map_err(|e| {
                    ApiError::internal(format!("the stored checkpoint cannot be read: {e}"))
                })?
                .latest
        }
        None => None,
    };
    Ok(snapshot.unwrap_or_else(|| Snapshot::empty(converge_backend::now_rfc3339())))
}

pub(crate) fn summary(r: &ResourceState) -> ResourceSummary {
    ResourceSummary {
        urn: r.urn.to_string(),
        type_token: r.type_token.clone(),
        name: r.urn.name().to_owned(),
        id: r.id.clone().filter(|id| !id.is_empty()),
        custom: r.custom,
        parent: r.parent.as_ref().map(ToString::to_string),
        provider: r.provider.as_ref().map(|p| p.urn.to_string()),
        protect: r.protect,
        delete: r.delete,
        external: r.external,
    }
}

/// The resources whose type or name contains `filter` (any case), in
/// state order.
pub(crate) fn list(snapshot: &Snapshot, filter: Option<&str>) -> Vec<ResourceSummary> {
    let needle = filter.map(str::trim).unwrap_or("").to_lowercase();
    snapshot
        .resources
        .iter()
        .filter(|r| {
            needle.is_empty()
                || r.type_token.to_lowercase().contains(&needle)
                || r.urn.name().to_lowercase().contains(&needle)
        })
        .map(summary)
        .collect()
}

/// The resource named `urn` (the live one if a replaced one shares it).
pub(crate) fn detail(snapshot: &Snapshot, urn: &str) -> Result<ResourceDetail, ApiError> {
    let r = snapshot
        .resources
        .iter()
        .filter(|r| r.urn.as_str() == urn)
        .min_by_key(|r| r.delete)
        .ok_or_else(|| {
            ApiError::not_found(
                "resource_not_found",
                format!("no resource {urn} in the stack"),
            )
        })?;
    let urns = |list: &[converge_model::Urn]| list.iter().map(ToString::to_string).collect();
    let mut children = BTreeSet::new();
    let mut dependents = BTreeSet::new();
    for other in &snapshot.resources {
        if other.parent.as_ref().is_some_and(|p| p.as_str() == urn) {
            children.insert(other.urn.to_string());
        }
        if references(other, urn) {
            dependents.insert(other.urn.to_string());
        }
    }
    Ok(ResourceDetail {
        summary: summary(r),
        provider_id: r.provider.as_ref().map(|p| p.id.clone()),
        inputs: masked::object(&r.inputs, &[]),
        outputs: masked::object(&r.outputs, &r.additional_secret_outputs),
        dependencies: urns(&r.dependencies),
        property_dependencies: r
            .property_dependencies
            .iter()
            .map(|(k, v)| (k.clone(), urns(v)))
            .collect(),
        deleted_with: r.deleted_with.as_ref().map(ToString::to_string),
        children: children.into_iter().collect(),
        dependents: dependents.into_iter().collect(),
        created: r.created.clone(),
        modified: r.modified.clone(),
        init_errors: r.init_errors.clone(),
    })
}

/// Whether `r` depends on `urn` or uses it as its provider.
fn references(r: &ResourceState, urn: &str) -> bool {
    r.dependencies.iter().any(|d| d.as_str() == urn)
        || r.property_dependencies
            .values()
            .flatten()
            .any(|d| d.as_str() == urn)
        || r.deleted_with.as_ref().is_some_and(|d| d.as_str() == urn)
        || r.provider.as_ref().is_some_and(|p| p.urn.as_str() == urn)
}

/// The graph of the stack's resources.
pub(crate) fn graph(snapshot: &Snapshot) -> Graph {
    let mut nodes = Vec::new();
    let mut seen = BTreeSet::new();
    for r in &snapshot.resources {
        if seen.insert(r.urn.as_str()) {
            nodes.push(GraphNode {
                urn: r.urn.to_string(),
                type_token: r.type_token.clone(),
                name: r.urn.name().to_owned(),
                custom: r.custom,
            });
        }
    }
    let mut edges = BTreeSet::new();
    let mut add = |from: &ResourceState, to: &str, kind: EdgeKind| {
        if seen.contains(to) && from.urn.as_str() != to {
            edges.insert(Edge {
                from: from.urn.to_string(),
                to: to.to_owned(),
                kind,
            });
        }
    };
    for r in &snapshot.resources {
        if let Some(p) = &r.parent {
            add(r, p.as_str(), EdgeKind::Parent);
        }
        for d in r
            .dependencies
            .iter()
            .chain(r.property_dependencies.values().flatten())
        {
            add(r, d.as_str(), EdgeKind::Dependency);
        }
        if let Some(p) = &r.provider {
            add(r, p.urn.as_str(), EdgeKind::Provider);
        }
    }
    Graph {
        nodes,
        edges: edges.into_iter().collect(),
    }
}

/// The largest page of a resource list: the default.
pub(crate) const RESOURCE_PAGE_MAX: i64 = 5000;

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    filter: Option<String>,
    limit: Option<i64>,
    /// The `continuationToken` of the previous page.
    #[serde(rename = "continuationToken")]
    continuation_token: Option<String>,
}

/// A page of the stack's resources (in the state's order), `limit` of
/// them (at most [`RESOURCE_PAGE_MAX`], the default) after the previous
/// page's `continuationToken`; `total` counts those the filter matches.
pub(crate) async fn list_route(
    state: St,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let limit = super::stacks::page_limit(query.limit, RESOURCE_PAGE_MAX)?;
    let skip = query
        .continuation_token
        .map(|t| {
            t.parse::<usize>().map_err(|_| {
                ApiError::bad_request("bad_query", "continuationToken is not one of ours")
            })
        })
        .transpose()?
        .unwrap_or(0);
    let snapshot = current_snapshot(&state.store, &stack).await?;
    let all = list(&snapshot, query.filter.as_deref());
    let total = all.len();
    let take = usize::try_from(limit).unwrap_or(usize::MAX);
    let resources: Vec<ResourceSummary> = all.into_iter().skip(skip).take(take).collect();
    let end = skip + resources.len();
    let next = (end < total).then(|| end.to_string());
    Ok(Json(serde_json::json!({
        "resources": resources,
        "total": total,
        "continuationToken": next,
    })))
}

pub(crate) async fn detail_route(
    state: St,
    caller: Caller,
    Path((org, project, stack, urn)): Path<(String, String, String, String)>,
) -> Result<Json<ResourceDetail>, ApiError> {
    let stack = stack_ref(&caller, (org, project, stack))?;
    let snapshot = current_snapshot(&state.store, &stack).await?;
    Ok(Json(detail(&snapshot, &urn)?))
}

pub(crate) async fn graph_route(
    state: St,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
) -> Result<Json<Graph>, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let snapshot = current_snapshot(&state.store, &stack).await?;
    Ok(Json(graph(&snapshot)))
}

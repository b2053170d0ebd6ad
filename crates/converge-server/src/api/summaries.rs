//! Stack summaries: what the console's stack list and stack page show
//! about a stack besides its history — its resource count (in its
//! current state), the update running on it (the holder of its live
//! lease) and its outputs, secrets masked.

use axum::extract::{Path, Query};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::access::stack_filter;
use super::resources::current_snapshot;
use super::{masked, stack_ref, St};
use crate::error::ApiError;
use crate::store::{ActiveUpdate, Caller, StackInfo, StackListQuery, Store};

/// An update running on a stack.
#[derive(Debug, Clone, Serialize)]
pub struct ActiveUpdateJson {
    #[serde(rename = "updateID")]
    pub update_id: String,
    pub kind: String,
    #[serde(rename = "startedAt")]
    pub started_at: String,
    /// Who runs it (`user@host (pid N)`).
    pub holder: String,
}

impl From<ActiveUpdate> for ActiveUpdateJson {
    fn from(a: ActiveUpdate) -> ActiveUpdateJson {
        ActiveUpdateJson {
            update_id: a.update_id,
            kind: a.kind,
            started_at: a.started_at,
            holder: a.holder,
        }
    }
}

/// One stack as the list shows it.
#[derive(Debug, Clone, Serialize)]
pub struct StackSummary {
    #[serde(rename = "orgName")]
    pub org: String,
    #[serde(rename = "projectName")]
    pub project: String,
    #[serde(rename = "stackName")]
    pub stack: String,
    /// When the checkpoint was last written, in seconds since the epoch.
    #[serde(rename = "lastUpdate")]
    pub last_update: i64,
    #[serde(rename = "lastUpdateTime")]
    pub last_update_time: String,
    #[serde(rename = "resourceCount")]
    pub resource_count: usize,
    /// The update running now, if any.
    #[serde(rename = "activeUpdate")]
    pub active_update: Option<ActiveUpdateJson>,
}

/// One stack with its outputs.
#[derive(Debug, Clone, Serialize)]
pub struct StackDetail {
    #[serde(flatten)]
    pub summary: StackSummary,
    /// The stack resource's outputs, secrets masked.
    pub outputs: Map<String, Value>,
}

/// The summary of a stack and its outputs.
pub(crate) async fn describe(store: &Store, info: &StackInfo) -> Result<StackDetail, ApiError> {
    let snapshot = current_snapshot(store, &info.stack).await?;
    let active = store.active_update(&info.stack).await?;
    let outputs = snapshot
        .resources
        .iter()
        .find(|r| r.urn.is_stack() && !r.delete)
        .map(|r| masked::object(&r.outputs, &r.additional_secret_outputs))
        .unwrap_or_default();
    Ok(StackDetail {
        summary: StackSummary {
            org: info.stack.organization.clone(),
            project: info.stack.project.clone(),
            stack: info.stack.stack.clone(),
            last_update: info.updated_at,
            last_update_time: info.updated_at_rfc3339(),
            resource_count: snapshot.resources.len(),
            active_update: active.map(Into::into),
        },
        outputs,
    })
}

/// The largest page of stack summaries (each replays its stack's
/// journal): the default.
pub(crate) const SUMMARY_PAGE_MAX: i64 = 100;

/// A page of summaries of the stacks of the caller's organization that
/// its scope reaches, by project then name, after `after`
/// (`project/stack`); with the next page's token when there may be more.
pub(crate) async fn list(
    store: &Store,
    caller: &Caller,
    after: Option<&str>,
    limit: i64,
) -> Result<(Vec<StackSummary>, Option<String>), ApiError> {
    let after = after
        .map(|t| {
            t.split_once('/')
                .map(|(p, s)| (p.to_owned(), s.to_owned()))
                .ok_or_else(|| {
                    ApiError::bad_request("bad_query", "continuationToken is not one of ours")
                })
        })
        .transpose()?;
    let query = StackListQuery {
        project: None,
        filter: stack_filter(caller),
        after,
        limit,
    };
    let infos = store.list_stacks(&caller.organization, &query).await?;
    let next = (infos.len() as i64 == limit)
        .then(|| {
            infos
                .last()
                .map(|s| format!("{}/{}", s.stack.project, s.stack.stack))
        })
        .flatten();
    let mut summaries = Vec::with_capacity(infos.len());
    for info in infos {
        summaries.push(describe(store, &info).await?.summary);
    }
    Ok((summaries, next))
}

#[derive(Deserialize)]
pub(crate) struct PageQuery {
    limit: Option<i64>,
    #[serde(rename = "continuationToken")]
    continuation_token: Option<String>,
}

/// `GET /api/user/stacks`: the caller's stacks, summarized, a page at a
/// time.
pub(crate) async fn list_route(
    state: St,
    caller: Caller,
    Query(query): Query<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = super::stacks::page_limit(query.limit, SUMMARY_PAGE_MAX)?;
    let (stacks, next) = list(
        &state.store,
        &caller,
        query.continuation_token.as_deref(),
        limit,
    )
    .await?;
    Ok(Json(
        serde_json::json!({ "stacks": stacks, "continuationToken": next }),
    ))
}

/// `GET …/summary`: one stack, summarized, with its outputs.
pub(crate) async fn get_route(
    state: St,
    caller: Caller,
    Path(path): Path<(String, String, String)>,
) -> Result<Json<StackDetail>, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let info = state.store.get_stack(&stack).await?;
    Ok(Json(describe(&state.store, &info).await?))
}

//! Stacks, checkpoints and history.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine as _;
use converge_backend::{validate_project_name, StackRef};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{body, json_body, lease, no_content, organization, stack_ref, St, StackPath};
use converge_state::checkpoint::{read_checkpoint, write_deployment};
use converge_state::secrets::SecretsMode;
use converge_state::Snapshot;

use super::access::stack_filter;
use crate::error::ApiError;
use crate::store::{Audit, Caller, Scope, StackInfo, StackListQuery};

/// The largest page of a stack list.
pub(crate) const STACK_PAGE_MAX: i64 = 1000;
/// The largest page of a history.
pub(crate) const HISTORY_PAGE_MAX: i64 = 1000;

#[derive(Serialize)]
struct StackJson {
    #[serde(rename = "orgName")]
    org: String,
    #[serde(rename = "projectName")]
    project: String,
    #[serde(rename = "stackName")]
    stack: String,
    #[serde(rename = "lastUpdate")]
    last_update: i64,
    #[serde(rename = "lastUpdateTime")]
    last_update_time: String,
}

fn stack_json(info: &StackInfo) -> StackJson {
    StackJson {
        org: info.stack.organization.clone(),
        project: info.stack.project.clone(),
        stack: info.stack.stack.clone(),
        last_update: info.updated_at,
        last_update_time: info.updated_at_rfc3339(),
    }
}

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    project: Option<String>,
    limit: Option<i64>,
    /// The `continuationToken` of the previous page.
    #[serde(rename = "continuationToken")]
    continuation_token: Option<String>,
}

/// A page of the organization's stacks that the caller's scope reaches:
/// `limit` of them (at most [`STACK_PAGE_MAX`], the default), after the
/// `continuationToken` of the previous page; the answer has the next
/// one when there may be more.
pub(crate) async fn list(
    state: St,
    caller: Caller,
    Path(org): Path<String>,
    Query(query): Query<ListQuery>,
) -> Result<Json<serde_json::Value>, ApiError> {
    organization(&caller, &org)?;
    if let Some(p) = &query.project {
        validate_project_name(p)?;
    }
    let limit = page_limit(query.limit, STACK_PAGE_MAX)?;
    let after = query
        .continuation_token
        .map(|t| {
            t.split_once('/')
                .map(|(p, s)| (p.to_owned(), s.to_owned()))
                .ok_or_else(|| {
                    ApiError::bad_request("bad_query", "continuationToken is not one of ours")
                })
        })
        .transpose()?;
    let stacks = state
        .store
        .list_stacks(
            &org,
            &StackListQuery {
                project: query.project.as_deref(),
                filter: stack_filter(&caller),
                after,
                limit,
            },
        )
        .await?;
    let next = (stacks.len() as i64 == limit)
        .then(|| {
            stacks
                .last()
                .map(|s| format!("{}/{}", s.stack.project, s.stack.stack))
        })
        .flatten();
    let stacks: Vec<StackJson> = stacks.iter().map(stack_json).collect();
    Ok(Json(json!({ "stacks": stacks, "continuationToken": next })))
}

/// A page size: `limit` if given (1 to `max`), else `max`.
pub(crate) fn page_limit(limit: Option<i64>, max: i64) -> Result<i64, ApiError> {
    match limit {
        None => Ok(max),
        Some(l) if (1..=max).contains(&l) => Ok(l),
        Some(_) => Err(ApiError::bad_request(
            "bad_query",
            format!("limit is 1 to {max}"),
        )),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    #[serde(rename = "stackName")]
    stack_name: String,
    /// The first checkpoint, base64.
    #[serde(default)]
    checkpoint: Option<String>,
}

/// Creates a stack; one created with a team's token belongs to the team.
pub(crate) async fn create(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((org, project)): Path<(String, String)>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    organization(&caller, &org)?;
    let req: CreateBody = json_body(&body(bytes)?)?;
    let stack = StackRef::with_organization(org, project, req.stack_name)?;
    let checkpoint = req.checkpoint.map(|c| decode_base64(&c)).transpose()?;
    let team = match &caller.scope {
        Scope::Team { id, .. } => Some(id.as_str()),
        _ => None,
    };
    let info = state
        .store
        .create_stack(&stack, checkpoint.as_deref(), team, &audit)
        .await?;
    Ok((StatusCode::CREATED, Json(stack_json(&info))).into_response())
}

fn decode_base64(text: &str) -> Result<Vec<u8>, ApiError> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| {
            ApiError::bad_request("malformed_body", format!("checkpoint is not base64: {e}"))
        })
}

pub(crate) async fn get(
    state: St,
    caller: Caller,
    Path(path): StackPath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let info = state.store.get_stack(&stack).await?;
    Ok(Json(stack_json(&info)).into_response())
}

pub(crate) async fn delete(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(path): StackPath,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    state
        .store
        .delete_stack(&stack, lease(&headers)?.as_ref(), &audit)
        .await?;
    Ok(no_content())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenameBody {
    #[serde(rename = "newName")]
    new_name: String,
    #[serde(rename = "newProject", default)]
    new_project: Option<String>,
    /// The renamed checkpoint (base64), stored with the new name.
    #[serde(default)]
    checkpoint: Option<String>,
}

pub(crate) async fn rename(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(path): StackPath,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let req: RenameBody = json_body(&body(bytes)?)?;
    let to = StackRef::with_organization(
        stack.organization.clone(),
        req.new_project.unwrap_or_else(|| stack.project.clone()),
        req.new_name,
    )?;
    let checkpoint = req.checkpoint.map(|c| decode_base64(&c)).transpose()?;
    let info = state
        .store
        .rename_stack(
            &stack,
            &to,
            checkpoint.as_deref(),
            lease(&headers)?.as_ref(),
            &audit,
        )
        .await?;
    Ok(Json(stack_json(&info)).into_response())
}

fn checkpoint_response(bytes: Option<Vec<u8>>) -> Response {
    match bytes {
        Some(bytes) => {
            ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
        }
        None => no_content(),
    }
}

#[derive(Deserialize)]
pub(crate) struct LoadQuery {
    /// The stored checkpoint itself, without the open journal replayed:
    /// what a writer names as its journal's base.
    #[serde(default)]
    base: Option<bool>,
}

/// The stack's checkpoint: by default its current state (the open
/// journal of a running or interrupted update replayed onto it), with
/// `?base=true` the bytes as stored.
pub(crate) async fn load_checkpoint(
    state: St,
    caller: Caller,
    Path(path): StackPath,
    Query(query): Query<LoadQuery>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let bytes = if query.base.unwrap_or(false) {
        state.store.load_checkpoint(&stack, false).await?
    } else {
        state.store.current_checkpoint(&stack).await?
    };
    Ok(checkpoint_response(bytes))
}

/// The stack's current state as a deployment (`stack export`'s
/// `{"version", "deployment"}`), secrets as ciphertext.
pub(crate) async fn export(
    state: St,
    caller: Caller,
    Path(path): StackPath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let current = state.store.current_checkpoint(&stack).await?;
    let snapshot = match current {
        Some(bytes) => {
            read_checkpoint(&bytes, SecretsMode::Opaque)
                .map_err(|e| {
                    ApiError::internal(format!("the stored checkpoint cannot be read: {e}"))
                })?
                .latest
        }
        None => None,
    }
    .unwrap_or_else(|| Snapshot::empty(converge_backend::now_rfc3339()));
    let bytes = write_deployment(&snapshot, SecretsMode::Opaque)
        .map_err(|e| ApiError::internal(format!("the deployment cannot be written: {e}")))?;
    Ok(([(header::CONTENT_TYPE, "application/json")], bytes).into_response())
}

pub(crate) async fn load_previous_checkpoint(
    state: St,
    caller: Caller,
    Path(path): StackPath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    Ok(checkpoint_response(
        state.store.load_checkpoint(&stack, true).await?,
    ))
}

#[derive(Deserialize)]
pub(crate) struct SaveQuery {
    #[serde(rename = "keepBackup", default)]
    keep_backup: Option<bool>,
}

pub(crate) async fn save_checkpoint(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(path): StackPath,
    Query(query): Query<SaveQuery>,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let bytes = body(bytes)?;
    state
        .store
        .save_checkpoint(
            &stack,
            &bytes,
            query.keep_backup.unwrap_or(true),
            lease(&headers)?.as_ref(),
            &audit,
        )
        .await?;
    Ok(no_content())
}

#[derive(Deserialize)]
pub(crate) struct HistoryQuery {
    limit: Option<i64>,
    /// The `continuationToken` of the previous page.
    #[serde(rename = "continuationToken")]
    continuation_token: Option<String>,
}

/// A page of the stack's history, most recent first: `limit` records (at
/// most [`HISTORY_PAGE_MAX`], the default) recorded before the
/// `continuationToken` of the previous page.
pub(crate) async fn list_history(
    state: St,
    caller: Caller,
    Path(path): StackPath,
    Query(query): Query<HistoryQuery>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let limit = page_limit(query.limit, HISTORY_PAGE_MAX)?;
    let before = query
        .continuation_token
        .map(|t| {
            t.parse::<i64>().map_err(|_| {
                ApiError::bad_request("bad_query", "continuationToken is not one of ours")
            })
        })
        .transpose()?;
    let records = state.store.list_history_page(&stack, limit, before).await?;
    let next = (records.len() as i64 == limit)
        .then(|| records.last().map(|r| r.recorded_at.to_string()))
        .flatten();
    let updates: Vec<serde_json::Value> = records
        .iter()
        .map(|r| json!({ "kind": r.kind, "recordedAt": r.recorded_at, "record": r.record }))
        .collect();
    Ok(Json(json!({ "updates": updates, "continuationToken": next })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryBody {
    kind: String,
    /// The update record's JSON text.
    record: String,
}

pub(crate) async fn add_history(
    state: St,
    caller: Caller,
    Path(path): StackPath,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let req: HistoryBody = json_body(&body(bytes)?)?;
    state
        .store
        .add_history(&stack, &req.kind, &req.record, lease(&headers)?.as_ref())
        .await?;
    Ok(StatusCode::CREATED.into_response())
}

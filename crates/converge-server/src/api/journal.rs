//! The journal entries API (seed 002, "REST API").

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::{body, json_body, lease, no_content, stack_ref, St, StackPath, UpdatePath};
use crate::error::ApiError;
use crate::store::{Audit, Caller, NewEntry};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenBody {
    #[serde(rename = "baseDigest")]
    base_digest: String,
}

pub(crate) async fn open(
    state: St,
    caller: Caller,
    Path(path): StackPath,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let req: OpenBody = json_body(&body(bytes)?)?;
    let update_id = state
        .store
        .open_journal(&stack, &req.base_digest, lease(&headers)?.as_ref())
        .await?;
    Ok((StatusCode::CREATED, Json(json!({ "updateID": update_id }))).into_response())
}

pub(crate) async fn load(
    state: St,
    caller: Caller,
    Path(path): StackPath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    match state.store.load_journal(&stack).await? {
        Some(j) => Ok(Json(json!({
            "updateID": j.update_id,
            "baseDigest": j.base_digest,
            "nextSequenceID": j.next_sequence_id,
            "entries": j.entries,
        }))
        .into_response()),
        None => Err(ApiError::not_found(
            "no_journal",
            format!("stack {stack} has no open journal"),
        )),
    }
}

pub(crate) async fn close(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(path): StackPath,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    state
        .store
        .close_journal(&stack, lease(&headers)?.as_ref(), &audit)
        .await?;
    Ok(no_content())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryJson {
    #[serde(rename = "sequenceID")]
    sequence_id: i64,
    /// The entry's JSON text, exactly as it is to be stored.
    entry: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendBody {
    entries: Vec<EntryJson>,
}

/// `POST …/update/{id}/journalentries`: one or more entries, each with
/// the client's sequence ID; persisted before the response.
pub(crate) async fn append(
    state: St,
    caller: Caller,
    Path((org, project, stack, update)): UpdatePath,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, (org, project, stack))?;
    let req: AppendBody = json_body(&body(bytes)?)?;
    let batch: Vec<NewEntry> = req
        .entries
        .into_iter()
        .map(|e| NewEntry {
            sequence_id: e.sequence_id,
            entry: e.entry,
        })
        .collect();
    let stored = state
        .store
        .append_journal(&stack, &update, &batch, lease(&headers)?.as_ref())
        .await?;
    Ok(Json(json!({ "stored": stored })).into_response())
}

/// `POST …/journal/commit`: the service compacts the open journal itself.
pub(crate) async fn commit(
    state: St,
    caller: Caller,
    Path(path): StackPath,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    state
        .store
        .commit_journal(&stack, lease(&headers)?.as_ref())
        .await?;
    Ok(no_content())
}

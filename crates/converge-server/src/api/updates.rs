//! Update leases: start (the lock), renew, complete, cancel, list, break.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use converge_backend::LockInfo;
use serde::Deserialize;
use serde_json::json;

use super::{body, json_body, lease_for, no_content, stack_ref, St, StackPath, UpdatePath};
use crate::error::ApiError;
use crate::store::{Audit, Caller};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartBody {
    kind: String,
    #[serde(rename = "lockInfo")]
    lock_info: LockInfo,
    /// The policy packs the client runs in this update.
    #[serde(default, rename = "policyPacks")]
    policy_packs: Vec<DeclaredPack>,
}

/// A pack a client says it runs: named by its archive's digest.
#[derive(Deserialize)]
struct DeclaredPack {
    digest: String,
}

pub(crate) async fn start(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(path): StackPath,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let req: StartBody = json_body(&body(bytes)?)?;
    if req.kind.is_empty() || req.kind.len() > 64 || req.kind.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "bad_kind",
            "kind must be 1 to 64 printable characters",
        ));
    }
    let declared: Vec<String> = req.policy_packs.into_iter().map(|p| p.digest).collect();
    let (lease, required) = state
        .store
        .start_update(&stack, &req.kind, &req.lock_info, &declared, &audit)
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "updateID": lease.update_id,
            "token": lease.token,
            "leaseExpiresAt": lease.expires_at_rfc3339(),
            "requiredPolicyPacks": required,
        })),
    )
        .into_response())
}

pub(crate) async fn renew(
    state: St,
    caller: Caller,
    Path((org, project, stack, update)): UpdatePath,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, (org, project, stack))?;
    let cred = lease_for(&headers, &update)?;
    let lease = state.store.renew_lease(&stack, &cred).await?;
    Ok(Json(json!({ "leaseExpiresAt": lease.expires_at_rfc3339() })).into_response())
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CompleteBody {
    #[serde(default)]
    status: Option<String>,
    /// The packs the client ran (`packs`, each with its `digest`) and the
    /// violations they reported (`violations`).
    #[serde(default, rename = "policyReport")]
    policy_report: Option<serde_json::Value>,
}

pub(crate) async fn complete(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((org, project, stack, update)): UpdatePath,
    headers: HeaderMap,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, (org, project, stack))?;
    let cred = lease_for(&headers, &update)?;
    let bytes = body(bytes)?;
    let req: CompleteBody = if bytes.is_empty() {
        CompleteBody::default()
    } else {
        json_body(&bytes)?
    };
    let status = match req.status.as_deref() {
        None | Some("succeeded") => "succeeded",
        Some("failed") => "failed",
        Some(other) => {
            return Err(ApiError::bad_request(
                "bad_status",
                format!("status {other:?} is neither succeeded nor failed"),
            ))
        }
    };
    state
        .store
        .complete_update(&stack, &cred, status, req.policy_report.as_ref(), &audit)
        .await?;
    Ok(no_content())
}

pub(crate) async fn cancel(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((org, project, stack, update)): UpdatePath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, (org, project, stack))?;
    match state
        .store
        .break_leases(&stack, Some(&update), &audit)
        .await?
    {
        0 => Err(ApiError::not_found(
            "update_not_found",
            format!("stack {stack} has no active update {update}"),
        )),
        _ => Ok(no_content()),
    }
}

pub(crate) async fn list_locks(
    state: St,
    caller: Caller,
    Path(path): StackPath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let locks: Vec<serde_json::Value> = state
        .store
        .list_leases(&stack)
        .await?
        .into_iter()
        .map(|l| {
            json!({
                "updateID": l.update_id,
                "lockInfo": l.lock_info,
                "leaseExpiresAt": l.expires_at,
            })
        })
        .collect();
    Ok(Json(json!({ "locks": locks })).into_response())
}

pub(crate) async fn break_locks(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(path): StackPath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let broken = state.store.break_leases(&stack, None, &audit).await?;
    Ok(Json(json!({ "broken": broken })).into_response())
}

/// What an update was required to run and what its client reported.
pub(crate) async fn policies(
    state: St,
    caller: Caller,
    Path((org, project, stack, update)): UpdatePath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, (org, project, stack))?;
    match state.store.update_policy(&stack, &update).await? {
        Some(policy) => Ok(Json(policy).into_response()),
        None => Err(ApiError::not_found(
            "update_not_found",
            format!("stack {stack} has no update {update}"),
        )),
    }
}

//! The organization's administration: members and their roles, teams and
//! the stacks they own, and the audit log.

use std::collections::BTreeSet;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query};
use axum::response::Response;
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::{body, json_body, no_content, stack_ref, St, StackPath};
use crate::error::ApiError;
use crate::store::{Audit, AuditQuery, Caller, Role};

pub(crate) async fn list(state: St, caller: Caller) -> Result<Json<serde_json::Value>, ApiError> {
    let members = state.store.list_members(&caller.organization).await?;
    Ok(Json(json!({ "members": members })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberBody {
    role: String,
}

/// `PUT …/members/{member}`: adds a member or changes its role.
pub(crate) async fn set(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((_, member)): Path<(String, String)>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: MemberBody = json_body(&body(bytes)?)?;
    let role = Role::parse(&req.role).ok_or_else(|| {
        ApiError::bad_request(
            "bad_role",
            format!("role {:?} is none of admin, member, read-only", req.role),
        )
    })?;
    state
        .store
        .set_member(&caller.organization, &member, role, &audit)
        .await?;
    Ok(no_content())
}

/// `DELETE …/members/{member}`: removes a member and revokes its tokens.
pub(crate) async fn remove(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((_, member)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    state
        .store
        .remove_member(&caller.organization, &member, &audit)
        .await?;
    Ok(no_content())
}

pub(crate) async fn list_teams(
    state: St,
    caller: Caller,
) -> Result<Json<serde_json::Value>, ApiError> {
    let teams = state.store.list_teams(&caller.organization).await?;
    Ok(Json(json!({ "teams": teams })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TeamBody {
    members: BTreeSet<String>,
}

/// `PUT …/teams/{team}`: creates a team or replaces its members.
pub(crate) async fn set_team(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((_, team)): Path<(String, String)>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: TeamBody = json_body(&body(bytes)?)?;
    state
        .store
        .set_team(&caller.organization, &team, &req.members, &audit)
        .await?;
    Ok(no_content())
}

pub(crate) async fn delete_team(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((_, team)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    state
        .store
        .delete_team(&caller.organization, &team, &audit)
        .await?;
    Ok(no_content())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StackTeamBody {
    /// None: the stack belongs to no team.
    team: Option<String>,
}

/// `PUT …/team`: gives a stack to a team (or to none).
pub(crate) async fn set_stack_team(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(path): StackPath,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let req: StackTeamBody = json_body(&body(bytes)?)?;
    state
        .store
        .set_stack_team(&stack, req.team.as_deref(), &audit)
        .await?;
    Ok(no_content())
}

/// The largest page of the audit log.
pub(crate) const AUDIT_PAGE_MAX: i64 = 500;

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct AuditParams {
    pub limit: Option<i64>,
    /// The `continuationToken` of the previous page.
    #[serde(rename = "continuationToken")]
    pub continuation_token: Option<String>,
    pub action: Option<String>,
    pub member: Option<String>,
    #[serde(rename = "tokenID")]
    pub token_id: Option<String>,
    /// A prefix of the target: `stack acme/web/prod`, `token `, `member bob`.
    pub target: Option<String>,
}

impl AuditParams {
    pub(crate) fn query(self) -> Result<AuditQuery, ApiError> {
        let limit = self.limit.unwrap_or(100);
        if !(1..=AUDIT_PAGE_MAX).contains(&limit) {
            return Err(ApiError::bad_request(
                "bad_query",
                format!("limit is 1 to {AUDIT_PAGE_MAX}"),
            ));
        }
        let before = self
            .continuation_token
            .map(|t| {
                t.parse::<i64>().map_err(|_| {
                    ApiError::bad_request("bad_query", "continuationToken is not one of ours")
                })
            })
            .transpose()?;
        let blank = |v: Option<String>| v.filter(|v| !v.is_empty());
        Ok(AuditQuery {
            limit,
            before,
            action: blank(self.action),
            member: blank(self.member),
            token_id: blank(self.token_id),
            target: blank(self.target),
        })
    }
}

/// `GET /api/orgs/{org}/auditlog`: newest first, a page at a time.
pub(crate) async fn audit_log(
    state: St,
    caller: Caller,
    params: Result<Query<AuditParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let Query(params) = params.map_err(|e| ApiError::bad_request("bad_query", e.body_text()))?;
    let query = params.query()?;
    let records = state.store.audit_log(&caller.organization, &query).await?;
    let next = (records.len() as i64 == query.limit)
        .then(|| records.last().map(|r| r.id.to_string()))
        .flatten();
    Ok(Json(
        json!({ "records": records, "continuationToken": next }),
    ))
}

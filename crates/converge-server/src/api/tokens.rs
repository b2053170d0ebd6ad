//! The caller, and access tokens: list, create, revoke.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use converge_backend::StackRef;
use serde::Deserialize;
use serde_json::json;

use super::{body, json_body, no_content, St};
use crate::error::ApiError;
use crate::store::{rfc3339_of, Access, Audit, Caller, Role, Scope, TokenSpec};

pub(crate) async fn user(caller: Caller) -> Json<serde_json::Value> {
    Json(json!({
        "organization": caller.organization,
        "tokenName": caller.token_name,
        "member": caller.member,
        "role": caller.role,
        "admin": caller.role == Role::Admin,
        "scope": caller.scope.kind(),
        "scopeName": match &caller.scope {
            Scope::Organization => None,
            Scope::Team { name, .. } | Scope::Stack { name, .. } => Some(name),
        },
        "access": caller.access,
        "expiresAt": caller.expires_at.map(rfc3339_of),
    }))
}

/// `GET /api/tokens`: an admin sees every token of the organization,
/// anyone else its member's.
pub(crate) async fn list(state: St, caller: Caller) -> Result<Json<serde_json::Value>, ApiError> {
    let member = (caller.role != Role::Admin).then_some(caller.member.as_str());
    let tokens = state
        .store
        .list_tokens(&caller.organization, member)
        .await?;
    Ok(Json(json!({ "tokens": tokens })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    name: String,
    /// Must be the caller's, if given.
    #[serde(default)]
    organization: Option<String>,
    /// The member the token stands for (default: the caller's; another
    /// member's only for an admin).
    #[serde(default)]
    member: Option<String>,
    /// `organization` (default), `team` or `stack`.
    #[serde(default)]
    scope: Option<String>,
    /// The team, for a team scope.
    #[serde(default)]
    team: Option<String>,
    /// `project/stack`, for a stack scope.
    #[serde(default)]
    stack: Option<String>,
    /// `read` or `write` (default).
    #[serde(default)]
    access: Option<Access>,
    /// RFC 3339.
    #[serde(rename = "expiresAt", default)]
    expires_at: Option<String>,
    #[serde(rename = "expiresInSeconds", default)]
    expires_in_seconds: Option<i64>,
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("bad_token_request", message)
}

/// Creates a token with at most the caller's rights: for the caller's
/// member (any member, for an admin), expiring no later than the caller's
/// token. The caller's token is organization-wide and read-write (the
/// route's need), so any scope and access are within it.
pub(crate) async fn create(
    state: St,
    caller: Caller,
    audit: Audit,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: CreateBody = json_body(&body(bytes)?)?;
    let org = caller.organization.clone();
    if let Some(other) = req.organization.as_deref().filter(|o| *o != org) {
        return Err(ApiError::forbidden(format!(
            "a token of organization {org} cannot create tokens of organization {other}"
        )));
    }
    if req.name.trim().is_empty() || req.name.len() > 100 || req.name.chars().any(char::is_control)
    {
        return Err(ApiError::bad_request(
            "bad_name",
            "a token name is 1 to 100 printable characters",
        ));
    }
    let member = req.member.unwrap_or_else(|| caller.member.clone());
    if member != caller.member && caller.role != Role::Admin {
        return Err(ApiError::forbidden(format!(
            "only an admin may create tokens for another member ({member})"
        )));
    }
    if state.store.member_role(&org, &member).await?.is_none() {
        return Err(ApiError::not_found(
            "member_not_found",
            format!("no member {member} in organization {org}"),
        ));
    }
    let scope = match (
        req.scope.as_deref().unwrap_or("organization"),
        req.team,
        req.stack,
    ) {
        ("organization", None, None) => Scope::Organization,
        ("team", Some(team), None) => Scope::Team {
            id: state.store.team_id(&org, &team).await?,
            name: team,
        },
        ("stack", None, Some(stack)) => {
            let (project, name) = stack
                .split_once('/')
                .ok_or_else(|| bad("a stack scope names the stack as project/stack"))?;
            let stack = StackRef::with_organization(&org, project, name)?;
            let facts = state.store.stack_facts(&stack, &member).await?;
            let id = facts.id.ok_or_else(|| {
                ApiError::not_found("stack_not_found", format!("no stack named {stack}"))
            })?;
            Scope::Stack {
                id,
                name: stack.to_string(),
            }
        }
        (kind, team, stack) => {
            return Err(bad(format!(
                "scope {kind:?} with team {team:?} and stack {stack:?}: give scope organization \
                 alone, team with a team, or stack with a project/stack"
            )))
        }
    };
    let now = crate::store::now_secs();
    let asked = match (req.expires_at, req.expires_in_seconds) {
        (Some(_), Some(_)) => return Err(bad("give expiresAt or expiresInSeconds, not both")),
        (Some(at), None) => Some(
            time::OffsetDateTime::parse(&at, &time::format_description::well_known::Rfc3339)
                .map_err(|e| bad(format!("expiresAt {at:?} is not an RFC 3339 time: {e}")))?
                .unix_timestamp(),
        ),
        (None, Some(secs)) => Some(now.saturating_add(secs)),
        (None, None) => None,
    };
    if asked.is_some_and(|at| at <= now) {
        return Err(bad("the expiry is in the past"));
    }
    let expires_at = match (asked, caller.expires_at) {
        (Some(at), Some(limit)) if at > limit => {
            return Err(ApiError::forbidden(format!(
                "the new token would outlive this one, which expires at {}",
                rfc3339_of(limit)
            )))
        }
        (None, limit) => limit,
        (asked, _) => asked,
    };
    let spec = TokenSpec {
        organization: org,
        member,
        name: req.name,
        scope,
        access: req.access.unwrap_or(Access::Write),
        expires_at,
    };
    let token = state
        .store
        .create_token(spec, Some(&caller.token_id), Some(&audit))
        .await?;
    let spec = &token.spec;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "id": token.id,
            "token": token.token,
            "organization": spec.organization,
            "name": spec.name,
            "member": spec.member,
            "scope": spec.scope.kind(),
            "scopeName": match &spec.scope {
                Scope::Organization => None,
                Scope::Team { name, .. } | Scope::Stack { name, .. } => Some(name),
            },
            "access": spec.access,
            "expiresAt": spec.expires_at.map(rfc3339_of),
        })),
    )
        .into_response())
}

/// `DELETE /api/tokens/{id}`: an admin revokes any token of the
/// organization, anyone else its member's.
pub(crate) async fn revoke(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let member = (caller.role != Role::Admin).then_some(caller.member.as_str());
    state
        .store
        .revoke_token(&caller.organization, member, &id, &audit)
        .await?;
    Ok(no_content())
}

//! Who may call what, decided in one place.
//!
//! Every route of the API is listed in [`ROUTES`] with what it needs
//! ([`Need`]) and, for a write, the action the audit log records. The
//! router is built from that table, and one middleware ([`guard`]) runs
//! before every handler: it authenticates the token (401), applies the
//! token's rate limit (429), checks the organization in the path (403),
//! validates the names (400) and decides the need with [`authorize`]
//! (403). A handler gets the [`Caller`] and, for a write, the [`Audit`]
//! to record in its transaction, from the request; a route that is not
//! in the table cannot be reached. The console calls [`authorize`] too.
//!
//! What a token may do is its member's role, narrowed by the token's
//! scope and access:
//!
//! | | admin | member | read-only |
//! |---|---|---|---|
//! | read a stack | yes | yes | yes |
//! | write a stack | yes | if no team owns it, or its team has the member | no |
//! | create a stack | yes | yes (in a team scope: if the team has the member) | no |
//! | members, teams, stack owners, audit log | yes | no | no |
//! | publish, delete, require policy packs | yes | no | no |
//! | list policy packs (org-wide token) | yes | yes | yes |
//! | read the required packs and download them | yes | yes | yes |
//! | list tokens, create and revoke tokens | every member's | its own | its own |
//!
//! A token scoped to a team reaches only the stacks the team owns, one
//! scoped to a stack only that stack, and neither reaches the
//! organization's members, teams, tokens or audit log. A read token
//! writes nothing. An expired or revoked token, or one whose member was
//! removed, authenticates nothing.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use converge_backend::{validate_organization_name, validate_project_name, StackRef};

use super::AppState;
use crate::error::ApiError;
use crate::store::{Access, Actor, Audit, Caller, Role, Scope, StackFacts, StackFilter, Store};

/// What a route needs of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Nothing: the OpenAPI document.
    Public,
    /// Any valid token (what it is shown is filtered by its scope).
    Token,
    /// A token scoped to the whole organization.
    OrgRead,
    /// An organization-wide read-write token.
    OrgWrite,
    /// An admin's organization-wide token.
    AdminRead,
    /// An admin's organization-wide read-write token.
    AdminWrite,
    /// Creating a stack in the project of the path.
    StackCreate,
    /// Reading the stack of the path.
    StackRead,
    /// Writing the stack of the path.
    StackWrite,
}

/// One route of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// Lowercase, as in the OpenAPI document.
    pub method: &'static str,
    /// As in the OpenAPI document (and the router).
    pub path: &'static str,
    pub need: Need,
    /// The action the audit log records for this route when it changes
    /// something; None for reads and for the steps of an update (journal
    /// entries, lease renewals, history), which its start and finish
    /// frame.
    pub audit: Option<&'static str>,
    /// A stream that lasts as long as its reader stays: no request timeout.
    pub streams: bool,
}

const fn route(method: &'static str, path: &'static str, need: Need) -> Route {
    Route {
        method,
        path,
        need,
        audit: None,
        streams: false,
    }
}

const fn audited(
    method: &'static str,
    path: &'static str,
    need: Need,
    action: &'static str,
) -> Route {
    Route {
        method,
        path,
        need,
        audit: Some(action),
        streams: false,
    }
}

const S: &str = "/api/stacks/{org}/{project}/{stack}";

macro_rules! stack_path {
    ($suffix:literal) => {
        concat!("/api/stacks/{org}/{project}/{stack}", $suffix)
    };
}

/// Every route of the API.
pub const ROUTES: &[Route] = &[
    route("get", "/api/openapi.json", Need::Public),
    route("get", "/api/user", Need::Token),
    route("get", "/api/user/stacks", Need::Token),
    route("get", "/api/tokens", Need::OrgRead),
    audited("post", "/api/tokens", Need::OrgWrite, "token.create"),
    audited(
        "delete",
        "/api/tokens/{tokenID}",
        Need::OrgWrite,
        "token.revoke",
    ),
    route("get", "/api/orgs/{org}/members", Need::OrgRead),
    audited(
        "put",
        "/api/orgs/{org}/members/{member}",
        Need::AdminWrite,
        "member.set",
    ),
    audited(
        "delete",
        "/api/orgs/{org}/members/{member}",
        Need::AdminWrite,
        "member.remove",
    ),
    route("get", "/api/orgs/{org}/teams", Need::OrgRead),
    audited(
        "put",
        "/api/orgs/{org}/teams/{team}",
        Need::AdminWrite,
        "team.set",
    ),
    audited(
        "delete",
        "/api/orgs/{org}/teams/{team}",
        Need::AdminWrite,
        "team.delete",
    ),
    route("get", "/api/orgs/{org}/auditlog", Need::AdminRead),
    route("get", "/api/orgs/{org}/policypacks", Need::OrgRead),
    audited(
        "post",
        "/api/orgs/{org}/policypacks",
        Need::AdminWrite,
        "policypack.publish",
    ),
    // Every update's client reads what the organization requires and
    // downloads it, whatever its token's scope.
    route("get", "/api/orgs/{org}/policypacks/required", Need::Token),
    route(
        "get",
        "/api/orgs/{org}/policypacks/{name}/versions/{version}",
        Need::Token,
    ),
    audited(
        "delete",
        "/api/orgs/{org}/policypacks/{name}/versions/{version}",
        Need::AdminWrite,
        "policypack.delete",
    ),
    audited(
        "put",
        "/api/orgs/{org}/policypacks/{name}/required",
        Need::AdminWrite,
        "policypack.enable",
    ),
    audited(
        "delete",
        "/api/orgs/{org}/policypacks/{name}/required",
        Need::AdminWrite,
        "policypack.disable",
    ),
    route("get", "/api/stacks/{org}", Need::Token),
    audited(
        "post",
        "/api/stacks/{org}/{project}",
        Need::StackCreate,
        "stack.create",
    ),
    route("get", S, Need::StackRead),
    audited("delete", S, Need::StackWrite, "stack.delete"),
    audited(
        "post",
        stack_path!("/rename"),
        Need::StackWrite,
        "stack.rename",
    ),
    audited("put", stack_path!("/team"), Need::AdminWrite, "stack.team"),
    route("get", stack_path!("/checkpoint"), Need::StackRead),
    audited(
        "put",
        stack_path!("/checkpoint"),
        Need::StackWrite,
        "stack.checkpoint",
    ),
    route("get", stack_path!("/checkpoint/previous"), Need::StackRead),
    route("get", stack_path!("/export"), Need::StackRead),
    route("get", stack_path!("/summary"), Need::StackRead),
    route("get", stack_path!("/resources"), Need::StackRead),
    route("get", stack_path!("/resources/{urn}"), Need::StackRead),
    route("get", stack_path!("/graph"), Need::StackRead),
    Route {
        streams: true,
        ..route("get", stack_path!("/journal/events"), Need::StackRead)
    },
    route("get", stack_path!("/history"), Need::StackRead),
    route("post", stack_path!("/history"), Need::StackWrite),
    audited(
        "post",
        stack_path!("/updates"),
        Need::StackWrite,
        "update.start",
    ),
    route("get", stack_path!("/locks"), Need::StackRead),
    audited(
        "delete",
        stack_path!("/locks"),
        Need::StackWrite,
        "update.cancel",
    ),
    route(
        "post",
        stack_path!("/update/{updateID}/renew_lease"),
        Need::StackWrite,
    ),
    audited(
        "post",
        stack_path!("/update/{updateID}/complete"),
        Need::StackWrite,
        "update.finish",
    ),
    audited(
        "post",
        stack_path!("/update/{updateID}/cancel"),
        Need::StackWrite,
        "update.cancel",
    ),
    route(
        "post",
        stack_path!("/update/{updateID}/journalentries"),
        Need::StackWrite,
    ),
    route(
        "get",
        stack_path!("/update/{updateID}/policies"),
        Need::StackRead,
    ),
    route("get", stack_path!("/journal"), Need::StackRead),
    route("post", stack_path!("/journal"), Need::StackWrite),
    audited(
        "delete",
        stack_path!("/journal"),
        Need::StackWrite,
        "journal.discard",
    ),
    route("post", stack_path!("/journal/commit"), Need::StackWrite),
    route("get", stack_path!("/tags"), Need::StackRead),
    audited("put", stack_path!("/tags"), Need::StackWrite, "stack.tags"),
];

/// The route `method path` (path as the router matched it).
pub fn find_route(method: &Method, path: &str) -> Option<&'static Route> {
    ROUTES
        .iter()
        .find(|r| r.path == path && r.method.eq_ignore_ascii_case(method.as_str()))
}

fn denied(caller: &Caller, what: &str, why: &str) -> ApiError {
    ApiError::forbidden(format!(
        "token {} (member {}, {}; scope {}, {}) may not {what}: {why}",
        caller.token_name,
        caller.member,
        caller.role.as_str(),
        caller.scope.describe(),
        caller.access.as_str(),
    ))
}

fn needs_org_scope(caller: &Caller, what: &str) -> Result<(), ApiError> {
    if caller.scope == Scope::Organization {
        Ok(())
    } else {
        Err(denied(
            caller,
            what,
            "it needs a token scoped to the whole organization",
        ))
    }
}

fn needs_write(caller: &Caller, what: &str) -> Result<(), ApiError> {
    if caller.access == Access::Write {
        Ok(())
    } else {
        Err(denied(caller, what, "the token is read-only"))
    }
}

fn needs_admin(caller: &Caller, what: &str) -> Result<(), ApiError> {
    if caller.role == Role::Admin {
        Ok(())
    } else {
        Err(denied(caller, what, "it needs the admin role"))
    }
}

/// Whether the caller's scope reaches a stack.
fn in_scope(caller: &Caller, facts: &StackFacts) -> bool {
    match &caller.scope {
        Scope::Organization => true,
        Scope::Team { id, .. } => facts.team_id.as_deref() == Some(id.as_str()),
        Scope::Stack { id, .. } => facts.id.as_deref() == Some(id.as_str()),
    }
}

/// Decides whether `caller` may read or write (`write`) a stack.
pub(crate) fn decide_stack(
    caller: &Caller,
    stack: &StackRef,
    facts: &StackFacts,
    write: bool,
) -> Result<(), ApiError> {
    let what = format!("{} stack {stack}", if write { "write" } else { "read" });
    if !in_scope(caller, facts) {
        return Err(denied(
            caller,
            &what,
            "the stack is outside the token's scope",
        ));
    }
    if !write {
        return Ok(());
    }
    needs_write(caller, &what)?;
    match caller.role {
        Role::Admin => Ok(()),
        Role::Member if facts.team_id.is_none() || facts.member_in_team => Ok(()),
        Role::Member => Err(denied(
            caller,
            &what,
            "a team the member is not in owns the stack",
        )),
        Role::ReadOnly => Err(denied(caller, &what, "the member's role is read-only")),
    }
}

/// The path parameters of a request, by name.
pub(crate) type Params = HashMap<String, String>;

/// Decides `need` for `caller` with the request's path parameters:
/// Ok, or the refusal (400 for a bad name, 403 otherwise).
pub(crate) async fn authorize(
    store: &Store,
    caller: &Caller,
    need: Need,
    params: &Params,
) -> Result<(), ApiError> {
    let org = params.get("org");
    if let Some(org) = org {
        validate_organization_name(org)?;
        caller.require_org(org)?;
    }
    match need {
        Need::Public | Need::Token => Ok(()),
        Need::OrgRead => needs_org_scope(caller, "read the organization"),
        Need::OrgWrite => {
            needs_org_scope(caller, "change the organization")?;
            needs_write(caller, "change the organization")
        }
        Need::AdminRead => {
            needs_org_scope(caller, "read the organization's administration")?;
            needs_admin(caller, "read the organization's administration")
        }
        Need::AdminWrite => {
            let what = "administer the organization";
            needs_org_scope(caller, what)?;
            needs_admin(caller, what)?;
            needs_write(caller, what)
        }
        Need::StackCreate => {
            let project = params
                .get("project")
                .map(String::as_str)
                .unwrap_or_default();
            validate_project_name(project)?;
            let what = format!("create stacks in project {project}");
            needs_write(caller, &what)?;
            match (&caller.scope, caller.role) {
                (_, Role::ReadOnly) => Err(denied(caller, &what, "the member's role is read-only")),
                (Scope::Stack { .. }, _) => {
                    Err(denied(caller, &what, "the token is scoped to one stack"))
                }
                (Scope::Organization, _) | (Scope::Team { .. }, Role::Admin) => Ok(()),
                (Scope::Team { id, .. }, Role::Member) => {
                    if store.in_team(id, &caller.member).await? {
                        Ok(())
                    } else {
                        Err(denied(
                            caller,
                            &what,
                            "the member is not in the token's team",
                        ))
                    }
                }
            }
        }
        Need::StackRead | Need::StackWrite => {
            let get = |k: &str| params.get(k).cloned().unwrap_or_default();
            let stack = StackRef::with_organization(get("org"), get("project"), get("stack"))?;
            let facts = store.stack_facts(&stack, &caller.member).await?;
            decide_stack(caller, &stack, &facts, need == Need::StackWrite)
        }
    }
}

/// The stacks a caller's listings show.
pub(crate) fn stack_filter(caller: &Caller) -> StackFilter {
    match &caller.scope {
        Scope::Organization => StackFilter::All,
        Scope::Team { id, .. } => StackFilter::Team(id.clone()),
        Scope::Stack { id, .. } => StackFilter::Stack(id.clone()),
    }
}

/// The access token of a request's `Authorization: token <t>` header.
fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| {
            ApiError::unauthorized("missing the header `Authorization: token <access token>`")
        })?
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is not text"))?;
    value
        .strip_prefix("token ")
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::unauthorized("the Authorization header must be `token <access token>`")
        })
}

/// The middleware every API route runs behind (see the module's doc).
pub(crate) async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    match admit(&state, request).await {
        Ok((request, route)) => {
            if route.streams {
                next.run(request).await
            } else {
                match tokio::time::timeout(state.limits.request_timeout, next.run(request)).await {
                    Ok(response) => response,
                    Err(_) => timed_out(state.limits.request_timeout),
                }
            }
        }
        Err(response) => response,
    }
}

/// A request that ran past the timeout: 504, since what it did is not
/// known (its transaction may have committed), so that a client retries
/// only what is safe to send twice.
fn timed_out(limit: Duration) -> Response {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "timeout",
        format!(
            "the request took longer than {} s and was stopped; it may or may not have taken effect",
            limit.as_secs()
        ),
    )
    .into_response()
}

async fn admit(state: &AppState, request: Request) -> Result<(Request, &'static Route), Response> {
    let matched = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_owned())
        .unwrap_or_default();
    let route = find_route(request.method(), &matched).ok_or_else(|| {
        ApiError::internal(format!(
            "{} {matched} is not in the route table",
            request.method()
        ))
        .into_response()
    })?;
    if route.need == Need::Public {
        return Ok((request, route));
    }
    let (mut parts, body) = request.into_parts();
    let token = bearer(&parts.headers).map_err(IntoResponse::into_response)?;
    let caller = state
        .store
        .authenticate(token)
        .await
        .map_err(IntoResponse::into_response)?;
    if let Some(wait) = state
        .limits
        .limiter
        .as_ref()
        .and_then(|l| l.take(&caller.token_id))
    {
        return Err(too_many_requests(wait));
    }
    let params: Params = match RawPathParams::from_request_parts(&mut parts, state).await {
        Ok(raw) => raw
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        Err(e) => return Err(e.into_response()),
    };
    authorize(&state.store, &caller, route.need, &params)
        .await
        .map_err(IntoResponse::into_response)?;
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let peer = super::peer::client_address(peer, &parts.headers, &state.limits.trusted_proxies);
    if let Some(action) = route.audit {
        parts.extensions.insert(Audit {
            actor: Actor {
                organization: caller.organization.clone(),
                token_id: caller.token_id.clone(),
                token_name: caller.token_name.clone(),
                member: caller.member.clone(),
                peer,
            },
            action,
        });
    }
    parts.extensions.insert(caller);
    Ok((Request::from_parts(parts, body), route))
}

/// 429 with `Retry-After` (whole seconds, at least 1).
fn too_many_requests(wait: Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let secs = secs.max(1);
    let mut response = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        format!("this token is over its request rate; retry in {secs} s"),
    )
    .into_response();
    if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Caller, ApiError> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or_else(|| ApiError::internal("this route is not behind the access check"))
    }
}

impl FromRequestParts<AppState> for Audit {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Audit, ApiError> {
        parts
            .extensions
            .get::<Audit>()
            .cloned()
            .ok_or_else(|| ApiError::internal("this route records no audit action"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(role: Role, scope: Scope, access: Access) -> Caller {
        Caller {
            token_id: "t".to_owned(),
            token_name: "n".to_owned(),
            organization: "o".to_owned(),
            member: "m".to_owned(),
            role,
            scope,
            access,
            expires_at: None,
        }
    }

    #[test]
    fn a_member_writes_unowned_stacks_and_its_teams_only() {
        let stack = StackRef::with_organization("o", "p", "s").unwrap();
        let member = caller(Role::Member, Scope::Organization, Access::Write);
        let unowned = StackFacts {
            id: Some("1".to_owned()),
            team_id: None,
            member_in_team: false,
        };
        let theirs = StackFacts {
            team_id: Some("team".to_owned()),
            member_in_team: true,
            ..unowned.clone()
        };
        let others = StackFacts {
            member_in_team: false,
            ..theirs.clone()
        };
        assert!(decide_stack(&member, &stack, &unowned, true).is_ok());
        assert!(decide_stack(&member, &stack, &theirs, true).is_ok());
        let err = decide_stack(&member, &stack, &others, true).unwrap_err();
        assert_eq!(err.status, StatusCode::FORBIDDEN);
        assert!(
            err.message.contains("a team the member is not in"),
            "{}",
            err.message
        );
        assert!(decide_stack(&member, &stack, &others, false).is_ok());
        let read = caller(Role::Admin, Scope::Organization, Access::Read);
        assert!(decide_stack(&read, &stack, &unowned, true).is_err());
        let pinned = caller(
            Role::Admin,
            Scope::Stack {
                id: "2".to_owned(),
                name: String::new(),
            },
            Access::Write,
        );
        assert!(decide_stack(&pinned, &stack, &unowned, false).is_err());
    }
}

//! The organization's pages: its tokens (with a revoke button), members
//! and roles, teams, and the audit log — what `GET /api/tokens`,
//! `…/members`, `…/teams` and `…/auditlog` answer, checked by the API's
//! own access rules ([`crate::api::access::authorize`]) for the
//! session's token. Revoking is the console's one change: a POST from
//! this origin only, audited as the API's.

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::page::{self, Nav};
use super::session::{same_origin, Viewer};
use super::stacks::readable_time;
use crate::api::access::{authorize, Need, Params};
use crate::api::members::AuditParams;
use crate::api::peer::Peer;
use crate::api::AppState;
use crate::error::ApiError;
use crate::store::{Actor, Audit, Role};

/// The organization's name as a path parameter, for the access check.
fn org_params(viewer: &Viewer) -> Params {
    [("org".to_owned(), viewer.caller.organization.clone())]
        .into_iter()
        .collect()
}

async fn check(state: &AppState, viewer: &Viewer, need: Need) -> Result<(), ApiError> {
    authorize(&state.store, &viewer.caller, need, &org_params(viewer)).await
}

struct TokenRow {
    id: String,
    name: String,
    member: String,
    scope: String,
    access: &'static str,
    created: String,
    expires: String,
    active: bool,
    state: &'static str,
}

#[derive(Template)]
#[template(path = "tokens.html")]
struct TokensPage {
    nav: Option<Nav>,
    all: bool,
    member: String,
    can_revoke: bool,
    tokens: Vec<TokenRow>,
}

/// `GET /tokens`.
pub(crate) async fn tokens(State(state): State<AppState>, viewer: Viewer) -> Response {
    let built = async {
        check(&state, &viewer, Need::OrgRead).await?;
        let all = viewer.caller.role == Role::Admin;
        let member = (!all).then_some(viewer.caller.member.as_str());
        let tokens = state
            .store
            .list_tokens(&viewer.caller.organization, member)
            .await?;
        let can_revoke = check(&state, &viewer, Need::OrgWrite).await.is_ok();
        Ok::<_, ApiError>((all, can_revoke, tokens))
    }
    .await;
    let (all, can_revoke, tokens) = match built {
        Ok(b) => b,
        Err(e) => return page::error(Some(viewer.nav()), &e),
    };
    let tokens = tokens
        .into_iter()
        .map(|t| TokenRow {
            scope: match &t.scope_name {
                Some(name) => format!("{} {name}", t.scope),
                None => t.scope.clone(),
            },
            access: t.access.as_str(),
            created: readable_time(&t.created_at),
            expires: t
                .expires_at
                .as_deref()
                .map(readable_time)
                .unwrap_or_else(|| "never".to_owned()),
            state: if t.revoked_at.is_some() {
                "revoked"
            } else if t.active {
                "active"
            } else {
                "expired"
            },
            active: t.active,
            id: t.id,
            name: t.name,
            member: t.member,
        })
        .collect();
    page::render(
        StatusCode::OK,
        &TokensPage {
            nav: Some(viewer.nav()),
            all,
            member: viewer.caller.member.clone(),
            can_revoke,
            tokens,
        },
    )
}

/// `POST /tokens/{id}/revoke`: as `DELETE /api/tokens/{id}`.
pub(crate) async fn revoke(
    State(state): State<AppState>,
    viewer: Viewer,
    peer: Peer,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if !same_origin(&headers) {
        return page::error(
            Some(viewer.nav()),
            &ApiError::forbidden("This form was sent from another site."),
        );
    }
    let done = async {
        check(&state, &viewer, Need::OrgWrite).await?;
        let c = &viewer.caller;
        let audit = Audit {
            actor: Actor {
                organization: c.organization.clone(),
                token_id: c.token_id.clone(),
                token_name: c.token_name.clone(),
                member: c.member.clone(),
                peer: peer.0,
            },
            action: "token.revoke",
        };
        let member = (c.role != Role::Admin).then_some(c.member.as_str());
        state
            .store
            .revoke_token(&c.organization, member, &id, &audit)
            .await
    }
    .await;
    match done {
        Ok(()) => page::secure(Redirect::to("/tokens").into_response()),
        Err(e) => page::error(Some(viewer.nav()), &e),
    }
}

struct MemberRow {
    name: String,
    role: &'static str,
    teams: String,
}

#[derive(Template)]
#[template(path = "members.html")]
struct MembersPage {
    nav: Option<Nav>,
    members: Vec<MemberRow>,
}

/// `GET /members`.
pub(crate) async fn members(State(state): State<AppState>, viewer: Viewer) -> Response {
    let built = async {
        check(&state, &viewer, Need::OrgRead).await?;
        state.store.list_members(&viewer.caller.organization).await
    }
    .await;
    match built {
        Ok(members) => page::render(
            StatusCode::OK,
            &MembersPage {
                nav: Some(viewer.nav()),
                members: members
                    .into_iter()
                    .map(|m| MemberRow {
                        role: m.role.as_str(),
                        teams: m.teams.join(", "),
                        name: m.name,
                    })
                    .collect(),
            },
        ),
        Err(e) => page::error(Some(viewer.nav()), &e),
    }
}

struct TeamRow {
    name: String,
    members: String,
    stacks: String,
}

#[derive(Template)]
#[template(path = "teams.html")]
struct TeamsPage {
    nav: Option<Nav>,
    teams: Vec<TeamRow>,
}

/// `GET /teams`.
pub(crate) async fn teams(State(state): State<AppState>, viewer: Viewer) -> Response {
    let built = async {
        check(&state, &viewer, Need::OrgRead).await?;
        state.store.list_teams(&viewer.caller.organization).await
    }
    .await;
    match built {
        Ok(teams) => page::render(
            StatusCode::OK,
            &TeamsPage {
                nav: Some(viewer.nav()),
                teams: teams
                    .into_iter()
                    .map(|t| TeamRow {
                        members: t.members.join(", "),
                        stacks: t.stacks.join(", "),
                        name: t.name,
                    })
                    .collect(),
            },
        ),
        Err(e) => page::error(Some(viewer.nav()), &e),
    }
}

struct AuditRow {
    time: String,
    member: String,
    token: String,
    peer: String,
    action: String,
    target: String,
    detail: String,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    nav: Option<Nav>,
    action: String,
    member: String,
    target: String,
    records: Vec<AuditRow>,
    next: Option<String>,
}

/// `GET /audit`: a page of the audit log, with the API's filters.
pub(crate) async fn audit(
    State(state): State<AppState>,
    viewer: Viewer,
    params: Result<Query<AuditParams>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(params)) = params else {
        return page::error(
            Some(viewer.nav()),
            &ApiError::bad_request("bad_query", "That is not a filter of the audit log."),
        );
    };
    let (action, member, target) = (
        params.action.clone().unwrap_or_default(),
        params.member.clone().unwrap_or_default(),
        params.target.clone().unwrap_or_default(),
    );
    let built = async {
        check(&state, &viewer, Need::AdminRead).await?;
        let query = params.query()?;
        let records = state
            .store
            .audit_log(&viewer.caller.organization, &query)
            .await?;
        Ok::<_, ApiError>((query, records))
    }
    .await;
    let (query, records) = match built {
        Ok(b) => b,
        Err(e) => return page::error(Some(viewer.nav()), &e),
    };
    let next = (records.len() as i64 == query.limit)
        .then(|| records.last().map(|r| r.id))
        .flatten()
        .map(|id| {
            let enc = |v: &str| page::encode(v);
            format!(
                "/audit?action={}&member={}&target={}&continuationToken={id}",
                enc(&action),
                enc(&member),
                enc(&target)
            )
        });
    let records = records
        .into_iter()
        .map(|r| AuditRow {
            time: readable_time(&r.time),
            token: if r.token_id.is_empty() {
                r.token_name.clone()
            } else {
                format!("{} ({})", r.token_name, r.token_id)
            },
            member: r.member,
            peer: r.peer,
            action: r.action,
            target: r.target,
            detail: r.detail.to_string(),
        })
        .collect();
    page::render(
        StatusCode::OK,
        &AuditPage {
            nav: Some(viewer.nav()),
            action,
            member,
            target,
            records,
            next,
        },
    )
}

struct PackRow {
    name: String,
    version: String,
    required: bool,
    published: String,
    digest: String,
}

struct ViolationRow {
    update: String,
    started: String,
    stack: String,
    pack: String,
    policy: String,
    level: String,
    urn: String,
    message: String,
}

#[derive(Template)]
#[template(path = "policies.html")]
struct PoliciesPage {
    nav: Option<Nav>,
    packs: Vec<PackRow>,
    violations: Vec<ViolationRow>,
}

/// `GET /policies`: the organization's packs (what `GET
/// /api/orgs/{org}/policypacks` answers) and the violations its recent
/// updates reported (each update's `…/policies`).
pub(crate) async fn policies(State(state): State<AppState>, viewer: Viewer) -> Response {
    let built = async {
        check(&state, &viewer, Need::OrgRead).await?;
        let org = &viewer.caller.organization;
        let packs = state.store.list_policy_packs(org).await?;
        let reports = state.store.recent_policy_reports(org, 50).await?;
        Ok::<_, ApiError>((packs, reports))
    }
    .await;
    let (packs, reports) = match built {
        Ok(b) => b,
        Err(e) => return page::error(Some(viewer.nav()), &e),
    };
    let text = |v: &serde_json::Value, key: &str| v[key].as_str().unwrap_or_default().to_owned();
    let mut violations = Vec::new();
    for r in &reports {
        for v in r.report["violations"].as_array().into_iter().flatten() {
            violations.push(ViolationRow {
                update: r.update_id.clone(),
                started: readable_time(&r.started_at),
                stack: r.stack.clone(),
                pack: format!("{}@{}", text(v, "packName"), text(v, "packVersion")),
                policy: text(v, "policyName"),
                level: text(v, "enforcementLevel"),
                urn: text(v, "urn"),
                message: text(v, "message"),
            });
        }
    }
    page::render(
        StatusCode::OK,
        &PoliciesPage {
            nav: Some(viewer.nav()),
            packs: packs
                .into_iter()
                .map(|p| PackRow {
                    name: p.name,
                    version: p.version,
                    required: p.required,
                    published: p.published_at,
                    digest: p.digest,
                })
                .collect(),
            violations,
        },
    )
}

//! The HTTP API, under `/api`. Every route but `GET /api/openapi.json`
//! needs `Authorization: token <t>`, and what the token may do is decided
//! in one place, [`access`], from the route table [`ROUTES`] the router is
//! built from. Bodies are JSON (checkpoints are raw bytes); errors are
//! `{"code","message"}`. The routes are listed in `openapi.json`, which a
//! test compares with [`ROUTES`].

pub(crate) mod access;
mod events;
mod journal;
pub(crate) mod limits;
pub(crate) mod masked;
pub(crate) mod members;
pub(crate) mod peer;
pub(crate) mod policy_packs;
pub(crate) mod resources;
mod stacks;
pub(crate) mod summaries;
mod tags;
mod tokens;
mod updates;

pub(crate) use events::stream_response as journal_events;

use axum::body::Bytes;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put, MethodRouter};
use axum::Router;
use converge_backend::{validate_organization_name, StackRef};
use serde::de::DeserializeOwned;

use self::limits::Limits;
use crate::error::ApiError;
use crate::store::{Caller, LeaseCredential, Store};

/// The header naming the update whose lease a write request holds.
pub const UPDATE_HEADER: &str = "x-converge-update-id";
/// The header carrying that lease's secret token.
pub const LEASE_HEADER: &str = "x-converge-lease-token";

pub use access::{Need, Route, ROUTES};

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub store: Store,
    pub limits: Arc<Limits>,
}

/// The handler of a route of [`ROUTES`].
fn handler(route: &Route) -> MethodRouter<AppState> {
    const S: &str = "/api/stacks/{org}/{project}/{stack}";
    let suffix = route.path.strip_prefix(S);
    match (route.method, route.path, suffix) {
        ("get", "/api/openapi.json", _) => get(openapi),
        ("get", "/api/user", _) => get(tokens::user),
        ("get", "/api/user/stacks", _) => get(summaries::list_route),
        ("get", "/api/tokens", _) => get(tokens::list),
        ("post", "/api/tokens", _) => post(tokens::create),
        ("delete", "/api/tokens/{tokenID}", _) => delete(tokens::revoke),
        ("get", "/api/orgs/{org}/members", _) => get(members::list),
        ("put", "/api/orgs/{org}/members/{member}", _) => put(members::set),
        ("delete", "/api/orgs/{org}/members/{member}", _) => delete(members::remove),
        ("get", "/api/orgs/{org}/teams", _) => get(members::list_teams),
        ("put", "/api/orgs/{org}/teams/{team}", _) => put(members::set_team),
        ("delete", "/api/orgs/{org}/teams/{team}", _) => delete(members::delete_team),
        ("get", "/api/orgs/{org}/auditlog", _) => get(members::audit_log),
        ("get", "/api/orgs/{org}/policypacks", _) => get(policy_packs::list),
        ("post", "/api/orgs/{org}/policypacks", _) => post(policy_packs::publish),
        ("get", "/api/orgs/{org}/policypacks/required", _) => get(policy_packs::required),
        ("get", "/api/orgs/{org}/policypacks/{name}/versions/{version}", _) => {
            get(policy_packs::download)
        }
        ("delete", "/api/orgs/{org}/policypacks/{name}/versions/{version}", _) => {
            delete(policy_packs::delete_version)
        }
        ("put", "/api/orgs/{org}/policypacks/{name}/required", _) => put(policy_packs::enable),
        ("delete", "/api/orgs/{org}/policypacks/{name}/required", _) => {
            delete(policy_packs::disable)
        }
        ("get", "/api/stacks/{org}", _) => get(stacks::list),
        ("post", "/api/stacks/{org}/{project}", _) => post(stacks::create),
        ("get", _, Some("")) => get(stacks::get),
        ("delete", _, Some("")) => delete(stacks::delete),
        ("post", _, Some("/rename")) => post(stacks::rename),
        ("put", _, Some("/team")) => put(members::set_stack_team),
        ("get", _, Some("/checkpoint")) => get(stacks::load_checkpoint),
        ("put", _, Some("/checkpoint")) => put(stacks::save_checkpoint),
        ("get", _, Some("/checkpoint/previous")) => get(stacks::load_previous_checkpoint),
        ("get", _, Some("/export")) => get(stacks::export),
        ("get", _, Some("/summary")) => get(summaries::get_route),
        ("get", _, Some("/resources")) => get(resources::list_route),
        ("get", _, Some("/resources/{urn}")) => get(resources::detail_route),
        ("get", _, Some("/graph")) => get(resources::graph_route),
        ("get", _, Some("/journal/events")) => get(events::route),
        ("get", _, Some("/history")) => get(stacks::list_history),
        ("post", _, Some("/history")) => post(stacks::add_history),
        ("post", _, Some("/updates")) => post(updates::start),
        ("get", _, Some("/locks")) => get(updates::list_locks),
        ("delete", _, Some("/locks")) => delete(updates::break_locks),
        ("post", _, Some("/update/{updateID}/renew_lease")) => post(updates::renew),
        ("post", _, Some("/update/{updateID}/complete")) => post(updates::complete),
        ("post", _, Some("/update/{updateID}/cancel")) => post(updates::cancel),
        ("post", _, Some("/update/{updateID}/journalentries")) => post(journal::append),
        ("get", _, Some("/update/{updateID}/policies")) => get(updates::policies),
        ("get", _, Some("/journal")) => get(journal::load),
        ("post", _, Some("/journal")) => post(journal::open),
        ("delete", _, Some("/journal")) => delete(journal::close),
        ("post", _, Some("/journal/commit")) => post(journal::commit),
        ("get", _, Some("/tags")) => get(tags::get),
        ("put", _, Some("/tags")) => put(tags::put),
        (method, path, _) => panic!("no handler for the route {method} {path}"),
    }
}

/// The API's router: every route of [`ROUTES`], behind the access check.
pub(crate) fn router(state: AppState, max_body_bytes: usize) -> Router {
    let mut router = Router::new();
    for route in ROUTES {
        router = router.route(route.path, handler(route));
    }
    router
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            access::guard,
        ))
        .fallback(fallback)
        .layer(axum::extract::DefaultBodyLimit::max(max_body_bytes))
        .with_state(state)
}

/// An unknown path: under `/api`, a JSON 404; elsewhere the console's.
async fn fallback(uri: axum::http::Uri) -> Response {
    if uri.path() == "/api" || uri.path().starts_with("/api/") {
        ApiError::not_found("no_route", "no such API route").into_response()
    } else {
        crate::console::not_found().into_response()
    }
}

async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::OPENAPI_JSON,
    )
        .into_response()
}

/// `{org}/{project}/{stack}` from the path: validated, and the caller's
/// organization.
pub(crate) fn stack_ref(
    caller: &Caller,
    (org, project, stack): (String, String, String),
) -> Result<StackRef, ApiError> {
    let r = StackRef::with_organization(org, project, stack)?;
    caller.require_org(&r.organization)?;
    Ok(r)
}

pub(crate) fn organization(caller: &Caller, org: &str) -> Result<(), ApiError> {
    validate_organization_name(org)?;
    caller.require_org(org)
}

/// A JSON body; any malformed or mistyped body is a 400 naming the problem.
pub(crate) fn json_body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request("malformed_body", format!("malformed JSON body: {e}")))
}

/// The lease a write request presents, from its headers.
pub(crate) fn lease(headers: &HeaderMap) -> Result<Option<LeaseCredential>, ApiError> {
    let text = |name: &str| -> Result<Option<String>, ApiError> {
        headers
            .get(name)
            .map(|v| {
                v.to_str()
                    .map(str::to_owned)
                    .map_err(|_| ApiError::bad_request("bad_header", format!("{name} is not text")))
            })
            .transpose()
    };
    match (text(UPDATE_HEADER)?, text(LEASE_HEADER)?) {
        (Some(update_id), Some(token)) => Ok(Some(LeaseCredential { update_id, token })),
        (None, None) => Ok(None),
        _ => Err(ApiError::bad_request(
            "bad_header",
            format!("send both {UPDATE_HEADER} and {LEASE_HEADER}, or neither"),
        )),
    }
}

/// The lease token for a route under `update/{id}`.
pub(crate) fn lease_for(headers: &HeaderMap, update_id: &str) -> Result<LeaseCredential, ApiError> {
    let token = headers
        .get(LEASE_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::unauthorized(format!(
                "this route needs the update's lease token in {LEASE_HEADER}"
            ))
        })?;
    Ok(LeaseCredential {
        update_id: update_id.to_owned(),
        token: token.to_owned(),
    })
}

pub(crate) type StackPath = Path<(String, String, String)>;
pub(crate) type UpdatePath = Path<(String, String, String, String)>;
pub(crate) type St = State<AppState>;

pub(crate) fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// The request body, or the reason it could not be read (413 when it is
/// over the limit).
pub(crate) fn body(
    bytes: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Result<Bytes, ApiError> {
    bytes.map_err(|rejection| {
        let status = rejection.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "bad_body"
        };
        ApiError::new(status, code, rejection.body_text())
    })
}

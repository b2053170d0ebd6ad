//! The HTTP API, under `/api`. Every route but `GET /api/openapi.json`
//! needs `Authorization: token <t>`; routes under `/api/stacks/{org}` need
//! a token of that organization. Bodies are JSON (checkpoints are raw
//! bytes); errors are `{"code","message"}`. The routes are listed in
//! `openapi.json`, which a test compares with [`ROUTES`].

mod events;
mod journal;
pub(crate) mod masked;
pub(crate) mod resources;
mod stacks;
pub(crate) mod summaries;
mod tags;
mod tokens;
mod updates;

pub(crate) use events::stream_response as journal_events;

use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use converge_backend::{validate_organization_name, StackRef};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::store::{Caller, LeaseCredential, Store};

/// The header naming the update whose lease a write request holds.
pub const UPDATE_HEADER: &str = "x-converge-update-id";
/// The header carrying that lease's secret token.
pub const LEASE_HEADER: &str = "x-converge-lease-token";

/// Every route: (method, path as in the OpenAPI document).
pub const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/openapi.json"),
    ("get", "/api/user"),
    ("get", "/api/user/stacks"),
    ("post", "/api/tokens"),
    ("delete", "/api/tokens/{tokenID}"),
    ("get", "/api/stacks/{org}"),
    ("post", "/api/stacks/{org}/{project}"),
    ("get", "/api/stacks/{org}/{project}/{stack}"),
    ("delete", "/api/stacks/{org}/{project}/{stack}"),
    ("post", "/api/stacks/{org}/{project}/{stack}/rename"),
    ("get", "/api/stacks/{org}/{project}/{stack}/checkpoint"),
    ("put", "/api/stacks/{org}/{project}/{stack}/checkpoint"),
    (
        "get",
        "/api/stacks/{org}/{project}/{stack}/checkpoint/previous",
    ),
    ("get", "/api/stacks/{org}/{project}/{stack}/export"),
    ("get", "/api/stacks/{org}/{project}/{stack}/summary"),
    ("get", "/api/stacks/{org}/{project}/{stack}/resources"),
    ("get", "/api/stacks/{org}/{project}/{stack}/resources/{urn}"),
    ("get", "/api/stacks/{org}/{project}/{stack}/graph"),
    ("get", "/api/stacks/{org}/{project}/{stack}/journal/events"),
    ("get", "/api/stacks/{org}/{project}/{stack}/history"),
    ("post", "/api/stacks/{org}/{project}/{stack}/history"),
    ("post", "/api/stacks/{org}/{project}/{stack}/updates"),
    ("get", "/api/stacks/{org}/{project}/{stack}/locks"),
    ("delete", "/api/stacks/{org}/{project}/{stack}/locks"),
    (
        "post",
        "/api/stacks/{org}/{project}/{stack}/update/{updateID}/renew_lease",
    ),
    (
        "post",
        "/api/stacks/{org}/{project}/{stack}/update/{updateID}/complete",
    ),
    (
        "post",
        "/api/stacks/{org}/{project}/{stack}/update/{updateID}/cancel",
    ),
    (
        "post",
        "/api/stacks/{org}/{project}/{stack}/update/{updateID}/journalentries",
    ),
    ("get", "/api/stacks/{org}/{project}/{stack}/journal"),
    ("post", "/api/stacks/{org}/{project}/{stack}/journal"),
    ("delete", "/api/stacks/{org}/{project}/{stack}/journal"),
    ("post", "/api/stacks/{org}/{project}/{stack}/journal/commit"),
    ("get", "/api/stacks/{org}/{project}/{stack}/tags"),
    ("put", "/api/stacks/{org}/{project}/{stack}/tags"),
];

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct AppState {
    pub store: Store,
}

pub(crate) fn router(state: AppState, max_body_bytes: usize) -> Router {
    const STACK: &str = "/api/stacks/{org}/{project}/{stack}";
    const UPDATE: &str = "/api/stacks/{org}/{project}/{stack}/update/{update}";
    Router::new()
        .route("/api/openapi.json", get(openapi))
        .route("/api/user", get(tokens::user))
        .route("/api/user/stacks", get(summaries::list_route))
        .route("/api/tokens", post(tokens::create))
        .route("/api/tokens/{id}", axum::routing::delete(tokens::revoke))
        .route("/api/stacks/{org}", get(stacks::list))
        .route("/api/stacks/{org}/{project}", post(stacks::create))
        .route(STACK, get(stacks::get).delete(stacks::delete))
        .route(&format!("{STACK}/rename"), post(stacks::rename))
        .route(
            &format!("{STACK}/checkpoint"),
            get(stacks::load_checkpoint).put(stacks::save_checkpoint),
        )
        .route(&format!("{STACK}/export"), get(stacks::export))
        .route(&format!("{STACK}/summary"), get(summaries::get_route))
        .route(&format!("{STACK}/resources"), get(resources::list_route))
        .route(
            &format!("{STACK}/resources/{{urn}}"),
            get(resources::detail_route),
        )
        .route(&format!("{STACK}/graph"), get(resources::graph_route))
        .route(&format!("{STACK}/journal/events"), get(events::route))
        .route(
            &format!("{STACK}/checkpoint/previous"),
            get(stacks::load_previous_checkpoint),
        )
        .route(
            &format!("{STACK}/history"),
            get(stacks::list_history).post(stacks::add_history),
        )
        .route(&format!("{STACK}/updates"), post(updates::start))
        .route(
            &format!("{STACK}/locks"),
            get(updates::list_locks).delete(updates::break_locks),
        )
        .route(&format!("{UPDATE}/renew_lease"), post(updates::renew))
        .route(&format!("{UPDATE}/complete"), post(updates::complete))
        .route(&format!("{UPDATE}/cancel"), post(updates::cancel))
        .route(&format!("{UPDATE}/journalentries"), post(journal::append))
        .route(
            &format!("{STACK}/journal"),
            get(journal::load)
                .post(journal::open)
                .delete(journal::close),
        )
        .route(&format!("{STACK}/journal/commit"), post(journal::commit))
        .route(&format!("{STACK}/tags"), get(tags::get).put(tags::put))
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

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Caller, ApiError> {
        let value = parts
            .headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| {
                ApiError::unauthorized("missing the header `Authorization: token <access token>`")
            })?
            .to_str()
            .map_err(|_| ApiError::unauthorized("the Authorization header is not text"))?;
        let token = value
            .strip_prefix("token ")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                ApiError::unauthorized("the Authorization header must be `token <access token>`")
            })?;
        state.store.authenticate(token).await
    }
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

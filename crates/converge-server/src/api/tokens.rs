//! The caller and access tokens.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::Path;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use converge_backend::validate_organization_name;
use serde::Deserialize;
use serde_json::json;

use super::{body, json_body, no_content, St};
use crate::error::ApiError;
use crate::store::Caller;

pub(crate) async fn user(caller: Caller) -> Json<serde_json::Value> {
    Json(json!({
        "organization": caller.organization,
        "tokenName": caller.token_name,
        "admin": caller.admin,
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    name: String,
    #[serde(default)]
    organization: Option<String>,
    #[serde(default)]
    admin: bool,
}

/// Creates a token in the caller's organization; an admin may create one
/// in any organization, and admin tokens.
pub(crate) async fn create(
    state: St,
    caller: Caller,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let req: CreateBody = json_body(&body(bytes)?)?;
    let org = req
        .organization
        .unwrap_or_else(|| caller.organization.clone());
    validate_organization_name(&org)?;
    if !caller.admin && (org != caller.organization || req.admin) {
        return Err(ApiError::forbidden(
            "only an admin token may create tokens of another organization or admin tokens",
        ));
    }
    if req.name.is_empty() || req.name.len() > 100 || req.name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "bad_name",
            "a token name is 1 to 100 printable characters",
        ));
    }
    let token = state.store.create_token(&org, &req.name, req.admin).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "id": token.id,
            "token": token.token,
            "organization": token.organization,
            "name": token.name,
            "admin": token.admin,
        })),
    )
        .into_response())
}

pub(crate) async fn revoke(
    state: St,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    state.store.revoke_token(&caller, &id).await?;
    Ok(no_content())
}

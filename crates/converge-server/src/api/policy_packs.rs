//! Policy packs of an organization: publish, list, download, delete, and
//! require (enable) or stop requiring (disable) a version.
//!
//! A pack is published as `POST /api/orgs/{org}/policypacks?name=N&version=V`
//! with the gzipped tar of its directory as the body
//! (`PulumiPolicy.yaml` at its root). Every update in the organization
//! must then say it runs the required versions (see
//! [`crate::store::RequiredPack`] and `POST …/updates`).

use std::io::Read as _;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::{body, json_body, no_content, organization, St};
use crate::error::ApiError;
use crate::store::{Audit, Caller, Published};

/// The file every pack has at its root.
const MANIFEST: &str = "PulumiPolicy.yaml";

/// A pack's name, as `PolicyPack(name)` gives it: letters, digits, `-`,
/// `_` and `.`, at most 100.
pub(crate) fn validate_pack_name(name: &str) -> Result<(), ApiError> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "bad_policy_pack_name",
            format!(
                "{name:?} is not a policy pack name: use 1 to 100 letters, digits, '-', '_' or '.'"
            ),
        ))
    }
}

/// A version: 1 to 64 letters, digits, `.`, `-`, `+` or `_`.
pub(crate) fn validate_pack_version(version: &str) -> Result<(), ApiError> {
    let ok = !version.is_empty()
        && version.len() <= 64
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'));
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(
            "bad_policy_pack_version",
            format!(
                "{version:?} is not a version: use 1 to 64 letters, digits, '.', '-', '+' or '_'"
            ),
        ))
    }
}

/// Checks that `bytes` is a gzipped tar whose entries are relative paths
/// inside the pack, with `PulumiPolicy.yaml` at its root.
fn check_archive(bytes: &[u8]) -> Result<(), ApiError> {
    let bad = |why: String| {
        ApiError::bad_request(
            "bad_policy_pack_archive",
            format!("the body is not a policy pack archive (a gzipped tar of the pack's directory): {why}"),
        )
    };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut manifest = false;
    for entry in archive.entries().map_err(|e| bad(e.to_string()))? {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        let path = entry.path().map_err(|e| bad(e.to_string()))?.into_owned();
        let inside = path.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if !inside {
            return Err(bad(format!(
                "{} leaves the pack's directory",
                path.display()
            )));
        }
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            return Err(bad(format!(
                "{} is neither a file nor a directory",
                path.display()
            )));
        }
        let relative: std::path::PathBuf = path
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect();
        if relative == std::path::Path::new(MANIFEST) {
            manifest = true;
        }
        std::io::copy(&mut entry, &mut std::io::sink()).map_err(|e| bad(e.to_string()))?;
    }
    let mut rest = Vec::new();
    let _ = archive.into_inner().read_to_end(&mut rest);
    if manifest {
        Ok(())
    } else {
        Err(bad(format!("it has no {MANIFEST} at its root")))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishQuery {
    name: String,
    version: String,
}

pub(crate) async fn publish(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(org): Path<String>,
    Query(query): Query<PublishQuery>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    organization(&caller, &org)?;
    validate_pack_name(&query.name)?;
    validate_pack_version(&query.version)?;
    let bytes = body(bytes)?;
    check_archive(&bytes)?;
    let (version, outcome) = state
        .store
        .publish_policy_pack(&org, &query.name, &query.version, &bytes, &audit)
        .await?;
    let status = match outcome {
        Published::Created => StatusCode::CREATED,
        Published::Unchanged => StatusCode::OK,
    };
    Ok((status, Json(version)).into_response())
}

pub(crate) async fn list(
    state: St,
    caller: Caller,
    Path(org): Path<String>,
) -> Result<Response, ApiError> {
    organization(&caller, &org)?;
    let versions = state.store.list_policy_packs(&org).await?;
    Ok(Json(json!({ "policyPacks": versions })).into_response())
}

pub(crate) async fn required(
    state: St,
    caller: Caller,
    Path(org): Path<String>,
) -> Result<Response, ApiError> {
    organization(&caller, &org)?;
    let required = state.store.required_policy_packs(&org).await?;
    Ok(Json(json!({ "requiredPolicyPacks": required })).into_response())
}

pub(crate) async fn download(
    state: St,
    caller: Caller,
    Path((org, name, version)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    organization(&caller, &org)?;
    validate_pack_name(&name)?;
    validate_pack_version(&version)?;
    let (digest, archive) = state
        .store
        .policy_pack_archive(&org, &name, &version)
        .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/gzip".to_owned()),
            (header::ETAG, format!("\"{digest}\"")),
        ],
        archive,
    )
        .into_response())
}

pub(crate) async fn delete_version(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((org, name, version)): Path<(String, String, String)>,
) -> Result<Response, ApiError> {
    organization(&caller, &org)?;
    validate_pack_name(&name)?;
    validate_pack_version(&version)?;
    state
        .store
        .delete_policy_pack(&org, &name, &version, &audit)
        .await?;
    Ok(no_content())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RequireBody {
    version: String,
    #[serde(default)]
    config: Option<serde_json::Value>,
}

pub(crate) async fn enable(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((org, name)): Path<(String, String)>,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    organization(&caller, &org)?;
    validate_pack_name(&name)?;
    let req: RequireBody = json_body(&body(bytes)?)?;
    validate_pack_version(&req.version)?;
    state
        .store
        .require_policy_pack(&org, &name, &req.version, req.config.as_ref(), &audit)
        .await?;
    Ok(no_content())
}

pub(crate) async fn disable(
    state: St,
    caller: Caller,
    audit: Audit,
    Path((org, name)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    organization(&caller, &org)?;
    validate_pack_name(&name)?;
    state
        .store
        .unrequire_policy_pack(&org, &name, &audit)
        .await?;
    Ok(no_content())
}

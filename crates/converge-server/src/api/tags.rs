//! Stack tags: `GET` and `PUT …/tags`, `{"tags": {"<name>": "<value>"}}`.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::{body, json_body, no_content, stack_ref, St, StackPath};
use crate::error::ApiError;
use crate::store::{Audit, Caller};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TagsBody {
    tags: BTreeMap<String, String>,
}

pub(crate) async fn get(
    state: St,
    caller: Caller,
    Path(path): StackPath,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let tags = state.store.load_tags(&stack).await?;
    Ok(Json(json!({ "tags": tags })).into_response())
}

pub(crate) async fn put(
    state: St,
    caller: Caller,
    audit: Audit,
    Path(path): StackPath,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let stack = stack_ref(&caller, path)?;
    let req: TagsBody = json_body(&body(bytes)?)?;
    state.store.save_tags(&stack, &req.tags, &audit).await?;
    Ok(no_content())
}

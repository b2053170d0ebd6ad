//! Stack tags and stack rename on the state service:
//! `GET|PUT …/tags` (`{"tags": {…}}`) and `POST …/rename` with the
//! renamed checkpoint, which the service stores in the same transaction
//! as the new name.

use async_trait::async_trait;
use base64::Engine as _;
use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use super::client::Idempotence;
use super::HttpBackend;
use crate::capabilities::{StackTags, TagStore};
use crate::error::{BackendError, Result};
use crate::name::StackRef;

#[derive(Deserialize)]
struct TagsJson {
    tags: StackTags,
}

#[async_trait]
impl TagStore for HttpBackend {
    async fn load_tags(&self, stack: &StackRef) -> Result<StackTags> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let reply = inner
            .send(inner.stack_request(Method::GET, stack, "/tags", Idempotence::Idempotent))
            .await?;
        inner.error_unless_ok(stack, &reply)?;
        Ok(reply.json::<TagsJson>(&inner.url)?.tags)
    }

    async fn save_tags(&self, stack: &StackRef, tags: &StackTags) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let request = inner
            .stack_request(Method::PUT, stack, "/tags", Idempotence::Idempotent)
            .json(json!({ "tags": tags }));
        let reply = inner.send(request).await?;
        inner.error_unless_ok(stack, &reply)
    }
}

impl HttpBackend {
    pub(super) async fn rename(
        &self,
        from: &StackRef,
        to: &StackRef,
        checkpoint: &[u8],
    ) -> Result<()> {
        from.validate()?;
        to.validate()?;
        let from = &self.inner.qualify(from);
        let to = &self.inner.qualify(to);
        if from.organization != to.organization {
            return Err(BackendError::Unsupported(format!(
                "stack {from} cannot be renamed into another organization ({to})"
            )));
        }
        let inner = &self.inner;
        let request = inner
            .stack_request(Method::POST, from, "/rename", Idempotence::Once)
            .json(json!({
                "newName": to.stack,
                "newProject": to.project,
                "checkpoint": base64::engine::general_purpose::STANDARD.encode(checkpoint),
            }));
        let reply = inner.send(request).await?;
        match inner.error_unless_ok(from, &reply) {
            Err(BackendError::StackAlreadyExists { backend, .. }) => {
                Err(BackendError::StackAlreadyExists {
                    stack: to.to_string(),
                    backend,
                })
            }
            other => other,
        }
    }
}

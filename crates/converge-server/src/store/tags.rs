//! Stack tags: names to values, replaced as a whole.

use std::collections::BTreeMap;

use converge_backend::StackRef;
use sqlx::Row;

use super::{stack_id, Store};
use crate::error::ApiError;

impl Store {
    /// The stack's tags, by name.
    pub async fn load_tags(&self, stack: &StackRef) -> Result<BTreeMap<String, String>, ApiError> {
        let mut conn = self.db.pool.acquire().await?;
        let id = stack_id(&mut conn, stack).await?;
        let rows = sqlx::query("SELECT name, value FROM stack_tags WHERE stack_id = $1")
            .bind(&id)
            .fetch_all(&mut *conn)
            .await?;
        rows.iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect()
    }

    /// Replaces the stack's tags, in one transaction. Tags are metadata, not
    /// state: setting them needs no lease, so they can be changed while an
    /// update runs.
    pub async fn save_tags(
        &self,
        stack: &StackRef,
        tags: &BTreeMap<String, String>,
        audit: &super::Audit,
    ) -> Result<(), ApiError> {
        if let Some(name) = tags.keys().find(|n| n.trim().is_empty()) {
            return Err(ApiError::bad_request(
                "invalid_tag",
                format!("a tag name cannot be empty or blank ({name:?})"),
            ));
        }
        let mut tx = self.db.pool.begin().await?;
        let id = stack_id(&mut tx, stack).await?;
        sqlx::query("DELETE FROM stack_tags WHERE stack_id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        for (name, value) in tags {
            sqlx::query("INSERT INTO stack_tags (stack_id, name, value) VALUES ($1, $2, $3)")
                .bind(&id)
                .bind(name)
                .bind(value)
                .execute(&mut *tx)
                .await?;
        }
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({ "tags": tags.keys().collect::<Vec<_>>() }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }
}

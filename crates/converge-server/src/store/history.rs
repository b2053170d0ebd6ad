//! The record of finished updates, as clients add them.

use converge_backend::StackRef;
use sqlx::Row;

use super::{stack_id, LeaseCredential, Store};
use crate::error::ApiError;

/// One recorded update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryRecord {
    pub kind: Option<String>,
    /// Nanoseconds since the epoch; strictly increasing per stack.
    pub recorded_at: i64,
    /// The record's JSON text, exactly as added.
    pub record: String,
}

impl Store {
    /// Adds a record: a JSON object whose `kind`, if any, equals `kind`.
    pub async fn add_history(
        &self,
        stack: &StackRef,
        kind: &str,
        record: &str,
        lease: Option<&LeaseCredential>,
    ) -> Result<(), ApiError> {
        check_record(stack, kind, record)?;
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        let last: Option<i64> =
            sqlx::query("SELECT MAX(recorded_at) FROM history WHERE stack_id = $1")
                .bind(&id)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
        let now = super::now_nanos();
        let at = match last {
            Some(last) if last >= now => last + 1,
            _ => now,
        };
        sqlx::query(
            "INSERT INTO history (stack_id, recorded_at, kind, record) VALUES ($1, $2, $3, $4)",
        )
        .bind(&id)
        .bind(at)
        .bind(kind)
        .bind(record)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Records, most recent first.
    pub async fn list_history(
        &self,
        stack: &StackRef,
        limit: Option<i64>,
    ) -> Result<Vec<HistoryRecord>, ApiError> {
        let mut conn = self.db.pool.acquire().await?;
        let id = stack_id(&mut conn, stack).await?;
        let rows = sqlx::query(
            "SELECT kind, recorded_at, record FROM history WHERE stack_id = $1
             ORDER BY recorded_at DESC LIMIT $2",
        )
        .bind(&id)
        .bind(limit.unwrap_or(i64::MAX))
        .fetch_all(&mut *conn)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(HistoryRecord {
                    kind: r.try_get(0)?,
                    recorded_at: r.try_get(1)?,
                    record: r.try_get(2)?,
                })
            })
            .collect()
    }
}

fn check_record(stack: &StackRef, kind: &str, record: &str) -> Result<(), ApiError> {
    let bad = |reason: String| {
        ApiError::bad_request(
            "invalid_history_record",
            format!("invalid history record for stack {stack}: {reason}"),
        )
    };
    let value: serde_json::Value =
        serde_json::from_str(record).map_err(|e| bad(format!("it is not JSON: {e}")))?;
    let object = value
        .as_object()
        .ok_or_else(|| bad("it is not a JSON object".to_owned()))?;
    match object.get("kind").and_then(|k| k.as_str()) {
        Some(k) if k != kind => Err(bad(format!(
            "its kind {k:?} differs from the update's kind {kind:?}"
        ))),
        _ => Ok(()),
    }
}

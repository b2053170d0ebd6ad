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
    /// Under a lease, a record the update already added (the same text)
    /// is acknowledged and not added again: a client that lost the answer
    /// sends it again.
    pub async fn add_history(
        &self,
        stack: &StackRef,
        kind: &str,
        record: &str,
        lease: Option<&LeaseCredential>,
    ) -> Result<(), ApiError> {
        check_record(stack, kind, record)?;
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        if let Some(lease) = lease {
            let added = sqlx::query(
                "SELECT 1 FROM history WHERE stack_id = $1 AND update_id = $2 AND record = $3",
            )
            .bind(&id)
            .bind(&lease.update_id)
            .bind(record)
            .fetch_optional(&mut *tx)
            .await?;
            if added.is_some() {
                return Ok(());
            }
        }
        insert(
            &mut tx,
            &id,
            kind,
            record,
            lease.map(|l| l.update_id.as_str()),
        )
        .await?;
        super::commit(tx).await?;
        Ok(())
    }

    /// Records, most recent first.
    pub async fn list_history(
        &self,
        stack: &StackRef,
        limit: Option<i64>,
    ) -> Result<Vec<HistoryRecord>, ApiError> {
        self.list_history_page(stack, limit.unwrap_or(i64::MAX), None)
            .await
    }

    /// `limit` records, most recent first, recorded before `before`.
    pub async fn list_history_page(
        &self,
        stack: &StackRef,
        limit: i64,
        before: Option<i64>,
    ) -> Result<Vec<HistoryRecord>, ApiError> {
        let mut conn = self.db.pool.acquire().await?;
        let id = stack_id(&mut conn, stack).await?;
        let rows = sqlx::query(
            "SELECT kind, recorded_at, record FROM history WHERE stack_id = $1 AND recorded_at < $2
             ORDER BY recorded_at DESC LIMIT $3",
        )
        .bind(&id)
        .bind(before.unwrap_or(i64::MAX))
        .bind(limit)
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

/// Adds a record to a stack's history, after every record there (the
/// clock of another replica may lag), naming the update it records.
pub(super) async fn insert(
    conn: &mut sqlx::AnyConnection,
    stack_id: &str,
    kind: &str,
    record: &str,
    update_id: Option<&str>,
) -> Result<(), ApiError> {
    let last: Option<i64> = sqlx::query("SELECT MAX(recorded_at) FROM history WHERE stack_id = $1")
        .bind(stack_id)
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    let now = super::now_nanos();
    let at = match last {
        Some(last) if last >= now => last + 1,
        _ => now,
    };
    sqlx::query(
        "INSERT INTO history (stack_id, recorded_at, kind, record, update_id)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(stack_id)
    .bind(at)
    .bind(kind)
    .bind(record)
    .bind(update_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The `version` of the next record: one more than the latest record's
/// (a record without one counts as the number of records before it), as
/// Converge's clients number them.
pub(super) async fn next_version(
    conn: &mut sqlx::AnyConnection,
    stack_id: &str,
) -> Result<i64, ApiError> {
    let latest = sqlx::query(
        "SELECT record, (SELECT COUNT(*) FROM history WHERE stack_id = $1) FROM history
         WHERE stack_id = $1 ORDER BY recorded_at DESC LIMIT 1",
    )
    .bind(stack_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(latest) = latest else {
        return Ok(1);
    };
    let record: String = latest.try_get(0)?;
    let count: i64 = latest.try_get(1)?;
    let version = serde_json::from_str::<serde_json::Value>(&record)
        .ok()
        .and_then(|r| r.get("version").and_then(serde_json::Value::as_i64))
        .filter(|v| *v > 0)
        .unwrap_or(count);
    Ok(version + 1)
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

//! What a stack is doing now, for readers that follow it (the stack
//! summaries and the journal's event stream): the update holding its live
//! lease, an update's recorded status, and the entries of its open
//! journal after a sequence ID.

use converge_backend::StackRef;
use sqlx::Row;

use super::{lease_row, now_secs, rfc3339, stack_id, Store};
use crate::error::ApiError;

/// The update that holds a stack's live lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveUpdate {
    pub update_id: String,
    /// `update`, `preview`, `refresh`, `destroy`, … as the client said.
    pub kind: String,
    /// RFC 3339; empty if the update's record is gone.
    pub started_at: String,
    /// The same, in seconds since the epoch (0 if unknown).
    pub started_at_secs: i64,
    /// Who runs it: `user@host (pid N)`.
    pub holder: String,
}

/// The entries of a stack's open journal after a sequence ID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalTail {
    pub update_id: String,
    /// (sequence ID, entry text) in sequence order.
    pub entries: Vec<(i64, String)>,
}

impl Store {
    /// The update holding the stack's live lease, if any. The stack need
    /// not exist (leases belong to stack names).
    pub async fn active_update(&self, stack: &StackRef) -> Result<Option<ActiveUpdate>, ApiError> {
        let mut conn = self.db.pool.acquire().await?;
        let Some(lease) = lease_row(&mut conn, &stack.to_string())
            .await?
            .filter(|row| row.expires_at > now_secs())
        else {
            return Ok(None);
        };
        let row = sqlx::query("SELECT kind, started_at FROM updates WHERE id = $1")
            .bind(&lease.update_id)
            .fetch_optional(&mut *conn)
            .await?;
        let (kind, started_at_secs) = match row {
            Some(r) => (r.try_get(0)?, r.try_get(1)?),
            None => ("update".to_owned(), 0),
        };
        let lock = lease.lock_info();
        Ok(Some(ActiveUpdate {
            holder: format!("{}@{} (pid {})", lock.username, lock.hostname, lock.pid),
            update_id: lease.update_id,
            kind,
            started_at: if started_at_secs > 0 {
                rfc3339(started_at_secs)
            } else {
                String::new()
            },
            started_at_secs,
        }))
    }

    /// An update's recorded status (`running`, `succeeded`, `failed`,
    /// `cancelled`, `expired`, …), if the service knows the update.
    pub async fn update_status(&self, update_id: &str) -> Result<Option<String>, ApiError> {
        let row = sqlx::query("SELECT status FROM updates WHERE id = $1")
            .bind(update_id)
            .fetch_optional(&self.db.pool)
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    /// The entries of the stack's open journal with a sequence ID above
    /// `after`; None when no journal is open. 404 if the stack is gone.
    pub async fn journal_tail(
        &self,
        stack: &StackRef,
        after: i64,
    ) -> Result<Option<JournalTail>, ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let id = stack_id(&mut tx, stack).await?;
        let Some(journal) = sqlx::query("SELECT update_id FROM journals WHERE stack_id = $1")
            .bind(&id)
            .fetch_optional(&mut *tx)
            .await?
        else {
            return Ok(None);
        };
        let update_id: String = journal.try_get(0)?;
        let rows = sqlx::query(
            "SELECT seq, entry FROM journal_entries WHERE update_id = $1 AND seq > $2 ORDER BY seq",
        )
        .bind(&update_id)
        .bind(after)
        .fetch_all(&mut *tx)
        .await?;
        let entries = rows
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<Result<Vec<_>, sqlx::Error>>()?;
        super::commit(tx).await?;
        Ok(Some(JournalTail { update_id, entries }))
    }
}

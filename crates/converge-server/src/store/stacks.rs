//! Stacks and their checkpoints.

use converge_backend::StackRef;
use sqlx::Row;

use super::audit::Audit;
use super::{not_found, rfc3339, LeaseCredential, Store};
use crate::error::ApiError;

/// Which of an organization's stacks a listing shows: those a token's
/// scope reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StackFilter {
    All,
    Team(String),
    Stack(String),
}

/// A page of an organization's stacks, sorted by project then name.
#[derive(Debug, Clone)]
pub struct StackListQuery<'a> {
    pub project: Option<&'a str>,
    pub filter: StackFilter,
    /// Only stacks after this `(project, name)`.
    pub after: Option<(String, String)>,
    pub limit: i64,
}

/// One stack, as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackInfo {
    pub stack: StackRef,
    /// When the checkpoint was last written, in seconds since the epoch.
    pub updated_at: i64,
}

impl StackInfo {
    pub fn updated_at_rfc3339(&self) -> String {
        rfc3339(self.updated_at)
    }
}

impl Store {
    /// Creates a stack, owned by `team_id` if given.
    pub async fn create_stack(
        &self,
        stack: &StackRef,
        checkpoint: Option<&[u8]>,
        team_id: Option<&str>,
        audit: &Audit,
    ) -> Result<StackInfo, ApiError> {
        let now = super::now_secs();
        let mut tx = self.db.pool.begin().await?;
        let done = sqlx::query(
            "INSERT INTO stacks (id, org, project, name, checkpoint, previous, created_at, updated_at,
                 team_id)
             VALUES ($1, $2, $3, $4, $5, NULL, $6, $6, $7)
             ON CONFLICT (org, project, name) DO NOTHING",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(&stack.organization)
        .bind(&stack.project)
        .bind(&stack.stack)
        .bind(checkpoint.map(<[u8]>::to_vec))
        .bind(now)
        .bind(team_id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(ApiError::conflict(
                "stack_exists",
                format!("stack {stack} already exists"),
            ));
        }
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({ "checkpointBytes": checkpoint.map(<[u8]>::len) }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(StackInfo {
            stack: stack.clone(),
            updated_at: now,
        })
    }

    /// A page of the organization's stacks, sorted by project then name.
    pub async fn list_stacks(
        &self,
        org: &str,
        query: &StackListQuery<'_>,
    ) -> Result<Vec<StackInfo>, ApiError> {
        let (team, id) = match &query.filter {
            StackFilter::All => ("", ""),
            StackFilter::Team(t) => (t.as_str(), ""),
            StackFilter::Stack(s) => ("", s.as_str()),
        };
        let (after_project, after_name) = query
            .after
            .as_ref()
            .map_or(("", ""), |(p, n)| (p.as_str(), n.as_str()));
        let rows = sqlx::query(
            "SELECT project, name, updated_at FROM stacks
             WHERE org = $1 AND ($2 = '' OR project = $2)
                 AND ($3 = '' OR team_id = $3) AND ($4 = '' OR id = $4)
                 AND (project > $5 OR (project = $5 AND name > $6))
             ORDER BY project, name LIMIT $7",
        )
        .bind(org)
        .bind(query.project.unwrap_or(""))
        .bind(team)
        .bind(id)
        .bind(after_project)
        .bind(after_name)
        .bind(query.limit)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(StackInfo {
                    stack: StackRef {
                        organization: org.to_owned(),
                        project: r.try_get(0)?,
                        stack: r.try_get(1)?,
                    },
                    updated_at: r.try_get(2)?,
                })
            })
            .collect()
    }

    pub async fn get_stack(&self, stack: &StackRef) -> Result<StackInfo, ApiError> {
        let row = sqlx::query(
            "SELECT updated_at FROM stacks WHERE org = $1 AND project = $2 AND name = $3",
        )
        .bind(&stack.organization)
        .bind(&stack.project)
        .bind(&stack.stack)
        .fetch_optional(&self.db.pool)
        .await?
        .ok_or_else(|| not_found(stack))?;
        Ok(StackInfo {
            stack: stack.clone(),
            updated_at: row.try_get(0)?,
        })
    }

    /// Removes a stack with its history and journal. Its lease, if any,
    /// stays with its holder: leases belong to stack names.
    pub async fn delete_stack(
        &self,
        stack: &StackRef,
        lease: Option<&LeaseCredential>,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        for statement in [
            "DELETE FROM journal_entries WHERE update_id IN (SELECT update_id FROM journals WHERE stack_id = $1)",
            "DELETE FROM journals WHERE stack_id = $1",
            "DELETE FROM history WHERE stack_id = $1",
            "DELETE FROM stack_tags WHERE stack_id = $1",
            "DELETE FROM stacks WHERE id = $1",
        ] {
            sqlx::query(statement).bind(&id).execute(&mut *tx).await?;
        }
        audit
            .record(&mut tx, &format!("stack {stack}"), serde_json::json!({}))
            .await?;
        super::commit(tx).await?;
        Ok(())
    }

    /// Renames a stack, possibly into another project of its organization.
    /// The checkpoint is opaque to the service: a client that rewrote the
    /// URNs inside it for the new name sends the result as `checkpoint`,
    /// stored in the same transaction (the old one kept as the previous).
    /// History, journal and tags belong to the stack and follow it.
    pub async fn rename_stack(
        &self,
        stack: &StackRef,
        to: &StackRef,
        checkpoint: Option<&[u8]>,
        lease: Option<&LeaseCredential>,
        audit: &Audit,
    ) -> Result<StackInfo, ApiError> {
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        let taken =
            sqlx::query("SELECT id FROM stacks WHERE org = $1 AND project = $2 AND name = $3")
                .bind(&to.organization)
                .bind(&to.project)
                .bind(&to.stack)
                .fetch_optional(&mut *tx)
                .await?;
        if taken.is_some() {
            return Err(ApiError::conflict(
                "stack_exists",
                format!("stack {to} already exists"),
            ));
        }
        if let Some(bytes) = checkpoint {
            write_checkpoint(&mut tx, &id, bytes, true).await?;
        }
        let now = super::now_secs();
        sqlx::query("UPDATE stacks SET project = $1, name = $2, updated_at = $3 WHERE id = $4")
            .bind(&to.project)
            .bind(&to.stack)
            .bind(now)
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({ "to": to.to_string(), "checkpointRewritten": checkpoint.is_some() }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(StackInfo {
            stack: to.clone(),
            updated_at: now,
        })
    }

    /// The current checkpoint (`previous: false`) or the one the last save
    /// replaced.
    pub async fn load_checkpoint(
        &self,
        stack: &StackRef,
        previous: bool,
    ) -> Result<Option<Vec<u8>>, ApiError> {
        let column = if previous { "previous" } else { "checkpoint" };
        let row = sqlx::query(&format!(
            "SELECT {column} FROM stacks WHERE org = $1 AND project = $2 AND name = $3"
        ))
        .bind(&stack.organization)
        .bind(&stack.project)
        .bind(&stack.stack)
        .fetch_optional(&self.db.pool)
        .await?
        .ok_or_else(|| not_found(stack))?;
        Ok(row.try_get(0)?)
    }

    pub async fn save_checkpoint(
        &self,
        stack: &StackRef,
        bytes: &[u8],
        keep_backup: bool,
        lease: Option<&LeaseCredential>,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        let (mut tx, id) = self.begin_write(stack, lease).await?;
        // Saving the bytes already there changes nothing (a retried save
        // must not replace the previous checkpoint with the current one).
        let current: Option<Vec<u8>> = sqlx::query("SELECT checkpoint FROM stacks WHERE id = $1")
            .bind(&id)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        if current.as_deref() == Some(bytes) {
            return Ok(());
        }
        write_checkpoint(&mut tx, &id, bytes, keep_backup).await?;
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({
                    "bytes": bytes.len(),
                    "sha256": super::sha256_hex(bytes),
                    "withLease": lease.map(|l| l.update_id.clone()),
                }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }
}

/// Replaces a stack's checkpoint, keeping the old one as the previous
/// version if asked.
pub(super) async fn write_checkpoint(
    conn: &mut sqlx::AnyConnection,
    stack_id: &str,
    bytes: &[u8],
    keep_backup: bool,
) -> Result<(), ApiError> {
    // In SQL every right-hand side sees the row as it was.
    let statement = if keep_backup {
        "UPDATE stacks SET previous = checkpoint, checkpoint = $1, updated_at = $2 WHERE id = $3"
    } else {
        "UPDATE stacks SET checkpoint = $1, updated_at = $2 WHERE id = $3"
    };
    sqlx::query(statement)
        .bind(bytes.to_vec())
        .bind(super::now_secs())
        .bind(stack_id)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

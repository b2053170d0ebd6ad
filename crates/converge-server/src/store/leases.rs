//! Update leases: the stack lock of the HTTP backend. Starting an update
//! takes the stack's one lease row; the holder renews it; it ends when the
//! holder completes the update, when someone cancels (breaks) it, or when
//! it expires and the next update (or the sweeper) takes it away. An update
//! that ends with its journal still open is compacted here, on the server
//! (see [`crate::compaction`]).

use converge_backend::{LockInfo, StackRef};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::audit::{Actor, Audit};
use super::policy_packs::{self, RequiredPack};
use super::{
    lease_lost, lease_row, new_secret, now_secs, parse_lock_info, rfc3339, sha256_hex, stacks,
    Store,
};
use crate::compaction::Compaction;
use crate::error::ApiError;

/// A granted lease, with its secret token (shown once).
#[derive(Debug, Clone)]
pub struct Lease {
    pub update_id: String,
    pub token: String,
    pub expires_at: i64,
}

impl Lease {
    pub fn expires_at_rfc3339(&self) -> String {
        rfc3339(self.expires_at)
    }
}

/// A lease somebody holds.
#[derive(Debug, Clone)]
pub struct HeldLease {
    pub update_id: String,
    pub lock_info: LockInfo,
    pub expires_at: String,
}

pub(super) struct LeaseRow {
    pub update_id: String,
    token_hash: String,
    lock_info: String,
    pub expires_at: i64,
}

impl LeaseRow {
    pub fn from_row(row: &AnyRow) -> Result<LeaseRow, ApiError> {
        Ok(LeaseRow {
            update_id: row.try_get(0)?,
            token_hash: row.try_get(1)?,
            lock_info: row.try_get(2)?,
            expires_at: row.try_get(3)?,
        })
    }

    pub fn matches(&self, cred: &super::LeaseCredential) -> bool {
        self.update_id == cred.update_id && self.token_hash == sha256_hex(cred.token.as_bytes())
    }

    pub fn lock_info(&self) -> LockInfo {
        parse_lock_info(&self.lock_info)
    }
}

impl Store {
    fn lease_expiry(&self) -> i64 {
        let secs = i64::try_from(self.options.lease_duration.as_secs()).unwrap_or(i64::MAX / 2);
        now_secs().saturating_add(secs.max(1))
    }

    /// Starts an update holding the stack's lease; 409 `locked` naming
    /// the holder if a live lease exists. An expired lease is broken first.
    /// `declared` are the digests of the policy packs the client says it
    /// runs: 409 `policy_packs_required` unless they include every pack the
    /// organization requires, which the update records (and returns). A
    /// state edit (`kind` `edit`) is not asked for packs.
    pub async fn start_update(
        &self,
        stack: &StackRef,
        kind: &str,
        info: &LockInfo,
        declared: &[String],
        audit: &Audit,
    ) -> Result<(Lease, Vec<RequiredPack>), ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let id = stack.to_string();
        // A state edit runs no program and no analyzer: the organization's
        // packs are required of updates, not of edits.
        let required = if kind == policy_packs::STATE_EDIT_KIND {
            Vec::new()
        } else {
            policy_packs::required(&mut tx, &stack.organization).await?
        };
        policy_packs::check_declared(&stack.organization, &required, declared)?;
        let expired = sqlx::query(
            "DELETE FROM leases WHERE stack_key = $1 AND expires_at <= $2 RETURNING update_id",
        )
        .bind(&id)
        .bind(now_secs())
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = expired {
            let update: String = row.try_get(0)?;
            let closer = Audit {
                actor: Actor::service(&stack.organization),
                action: "update.interrupted",
            };
            end_update(&mut tx, &id, &update, EXPIRED, Some(&closer)).await?;
        }
        let lease = Lease {
            update_id: uuid::Uuid::new_v4().to_string(),
            token: new_secret("lease-"),
            expires_at: self.lease_expiry(),
        };
        let info_json =
            serde_json::to_string(info).map_err(|e| ApiError::internal(e.to_string()))?;
        let inserted = sqlx::query(
            "INSERT INTO leases (stack_key, update_id, token_hash, lock_info, expires_at)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (stack_key) DO NOTHING",
        )
        .bind(&id)
        .bind(&lease.update_id)
        .bind(sha256_hex(lease.token.as_bytes()))
        .bind(&info_json)
        .bind(lease.expires_at)
        .execute(&mut *tx)
        .await?;
        if inserted.rows_affected() == 0 {
            let holder = lease_row(&mut tx, &id).await?;
            drop(tx);
            return Err(match holder {
                Some(row) => ApiError::locked(&stack.to_string(), &row.update_id, row.lock_info()),
                None => ApiError::conflict("locked", format!("stack {stack} is locked")),
            });
        }
        insert_update(&mut tx, &id, &lease.update_id, kind, &info_json).await?;
        policy_packs::record_required(&mut tx, &lease.update_id, &required).await?;
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({
                    "updateID": lease.update_id,
                    "kind": kind,
                    "holder": info.describe(),
                    "policyPacks": required.iter().map(|r| format!("{}@{}", r.name, r.version))
                        .collect::<Vec<_>>(),
                }),
            )
            .await?;
        super::commit(tx).await?;
        Ok((lease, required))
    }

    /// Extends a live lease.
    pub async fn renew_lease(
        &self,
        stack: &StackRef,
        cred: &super::LeaseCredential,
    ) -> Result<Lease, ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let id = stack.to_string();
        let expires_at = self.lease_expiry();
        let done = sqlx::query(
            "UPDATE leases SET expires_at = $1
             WHERE stack_key = $2 AND update_id = $3 AND token_hash = $4 AND expires_at > $5",
        )
        .bind(expires_at)
        .bind(&id)
        .bind(&cred.update_id)
        .bind(sha256_hex(cred.token.as_bytes()))
        .bind(now_secs())
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(lease_lost(stack, &cred.update_id));
        }
        super::commit(tx).await?;
        Ok(Lease {
            update_id: cred.update_id.clone(),
            token: cred.token.clone(),
            expires_at,
        })
    }

    /// The holder ends its update (`status`: succeeded, failed, …). Its
    /// journal, if still open, is compacted.
    pub async fn complete_update(
        &self,
        stack: &StackRef,
        cred: &super::LeaseCredential,
        status: &str,
        policy_report: Option<&serde_json::Value>,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let id = stack.to_string();
        // An expired lease nobody took over still belongs to its holder.
        let done = sqlx::query(
            "DELETE FROM leases WHERE stack_key = $1 AND update_id = $2 AND token_hash = $3",
        )
        .bind(&id)
        .bind(&cred.update_id)
        .bind(sha256_hex(cred.token.as_bytes()))
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(lease_lost(stack, &cred.update_id));
        }
        // A refusal rolls the deletion back: the update keeps its lease.
        policy_packs::check_and_store_report(&mut tx, &cred.update_id, status, policy_report)
            .await?;
        end_update(&mut tx, &id, &cred.update_id, status, None).await?;
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({ "updateID": cred.update_id, "status": status }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }

    /// Breaks one update's lease (`converge cancel`), or every lease of
    /// the stack (`update_id` None); returns how many were broken.
    pub async fn break_leases(
        &self,
        stack: &StackRef,
        update_id: Option<&str>,
        audit: &Audit,
    ) -> Result<usize, ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let id = stack.to_string();
        let rows = sqlx::query(
            "DELETE FROM leases WHERE stack_key = $1 AND ($2 = '' OR update_id = $2)
             RETURNING update_id",
        )
        .bind(&id)
        .bind(update_id.unwrap_or(""))
        .fetch_all(&mut *tx)
        .await?;
        if rows.is_empty() && update_id.is_some() {
            // No such update: nothing to record (the caller answers 404).
            return Ok(0);
        }
        let mut broken = Vec::with_capacity(rows.len());
        for row in &rows {
            let update: String = row.try_get(0)?;
            end_update(&mut tx, &id, &update, "cancelled", None).await?;
            broken.push(update);
        }
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({ "updateIDs": broken }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(rows.len())
    }

    /// The stack's live leases (zero or one).
    pub async fn list_leases(&self, stack: &StackRef) -> Result<Vec<HeldLease>, ApiError> {
        let mut conn = self.db.pool.acquire().await?;
        Ok(lease_row(&mut conn, &stack.to_string())
            .await?
            .filter(|row| row.expires_at > now_secs())
            .map(|row| HeldLease {
                lock_info: row.lock_info(),
                expires_at: rfc3339(row.expires_at),
                update_id: row.update_id,
            })
            .into_iter()
            .collect())
    }

    /// Breaks every expired lease, compacting the journals their updates
    /// left open, so the checkpoint served is current without waiting for
    /// the next update. Returns how many were broken.
    pub async fn sweep_expired(&self) -> Result<usize, ApiError> {
        let expired = sqlx::query("SELECT stack_key, update_id FROM leases WHERE expires_at <= $1")
            .bind(now_secs())
            .fetch_all(&self.db.pool)
            .await?;
        let mut broken = 0;
        for row in expired {
            let stack_key: String = row.try_get(0)?;
            let update: String = row.try_get(1)?;
            let mut tx = self.db.pool.begin().await?;
            let done = sqlx::query(
                "DELETE FROM leases WHERE stack_key = $1 AND update_id = $2 AND expires_at <= $3",
            )
            .bind(&stack_key)
            .bind(&update)
            .bind(now_secs())
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 1 {
                let org = stack_key.split('/').next().unwrap_or_default();
                let closer = Audit {
                    actor: Actor::service(org),
                    action: "update.interrupted",
                };
                end_update(&mut tx, &stack_key, &update, EXPIRED, Some(&closer)).await?;
                broken += 1;
            }
            super::commit(tx).await?;
        }
        Ok(broken)
    }
}

pub(super) async fn insert_update(
    conn: &mut AnyConnection,
    stack_key: &str,
    update_id: &str,
    kind: &str,
    lock_info: &str,
) -> Result<(), ApiError> {
    sqlx::query(
        "INSERT INTO updates (id, stack_key, kind, lock_info, status, started_at, ended_at)
         VALUES ($1, $2, $3, $4, 'running', $5, NULL)",
    )
    .bind(update_id)
    .bind(stack_key)
    .bind(kind)
    .bind(lock_info)
    .bind(now_secs())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The status of an update whose lease expired.
const EXPIRED: &str = "expired";

/// What the history says of an update whose lease expired: its client
/// stopped renewing the lease (it died, or lost the service for longer
/// than the lease lasts) without ending the update.
pub const INTERRUPTED_MESSAGE: &str = "interrupted: the client stopped renewing its lease";

/// Records the end of an update and compacts its journal if it is still
/// open: replayed onto the checkpoint it started from, or dropped if the
/// checkpoint no longer is that one (the client compacted it already). A
/// journal that cannot be replayed stays open for a client to recover.
/// An update that expired (`closer` given) after opening a journal, and
/// whose client recorded nothing in the history, is recorded there as
/// failed ([`INTERRUPTED_MESSAGE`]), and `closer` in the audit log.
async fn end_update(
    conn: &mut AnyConnection,
    stack_key: &str,
    update_id: &str,
    status: &str,
    closer: Option<&Audit>,
) -> Result<(), ApiError> {
    sqlx::query("UPDATE updates SET status = $1, ended_at = $2 WHERE id = $3")
        .bind(status)
        .bind(now_secs())
        .bind(update_id)
        .execute(&mut *conn)
        .await?;
    let compacted = compact_on_end(conn, stack_key, update_id, status).await?;
    if let Some(closer) = closer {
        let recorded = record_interrupted(conn, stack_key, update_id).await?;
        closer
            .record(
                conn,
                &format!("stack {stack_key}"),
                serde_json::json!({
                    "updateID": update_id,
                    "journal": compacted,
                    "history": recorded,
                }),
            )
            .await?;
    }
    Ok(())
}

/// Compacts the update's open journal, if it has one; says what became
/// of it (`compacted`, `dropped`, `left open: …`, `none`).
async fn compact_on_end(
    conn: &mut AnyConnection,
    stack_key: &str,
    update_id: &str,
    status: &str,
) -> Result<String, ApiError> {
    let journal = sqlx::query(
        "SELECT j.stack_id FROM journals j JOIN stacks s ON s.id = j.stack_id
         WHERE j.update_id = $1 AND s.org || '/' || s.project || '/' || s.name = $2",
    )
    .bind(update_id)
    .bind(stack_key)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(journal) = journal else {
        return Ok("none".to_owned());
    };
    let stack_id: String = journal.try_get(0)?;
    let stack_id = stack_id.as_str();
    let outcome = match super::journal::compact_open(conn, stack_id).await? {
        Some(Ok(Compaction::Replayed(bytes))) => {
            stacks::write_checkpoint(conn, stack_id, &bytes, true).await?;
            "compacted"
        }
        Some(Ok(Compaction::AlreadyCompacted)) => "dropped",
        Some(Err(reason)) => {
            sqlx::query("UPDATE updates SET status = $1 WHERE id = $2")
                .bind(format!("{status}; journal left open: {reason}"))
                .bind(update_id)
                .execute(&mut *conn)
                .await?;
            return Ok(format!("left open: {reason}"));
        }
        None => return Ok("none".to_owned()),
    };
    super::journal::close(conn, stack_id).await?;
    Ok(outcome.to_owned())
}

/// Adds the failed history record of an interrupted update, unless it
/// never opened a journal (a preview, or an update that stopped before
/// changing anything) or its client recorded it already. Says whether
/// it did.
async fn record_interrupted(
    conn: &mut AnyConnection,
    stack_key: &str,
    update_id: &str,
) -> Result<bool, ApiError> {
    let Some(update) = sqlx::query("SELECT kind, started_at, journaled FROM updates WHERE id = $1")
        .bind(update_id)
        .fetch_optional(&mut *conn)
        .await?
    else {
        return Ok(false);
    };
    let kind: String = update.try_get(0)?;
    let started_at: i64 = update.try_get(1)?;
    let journaled: Option<i64> = update.try_get(2)?;
    if journaled.unwrap_or(0) == 0 {
        return Ok(false);
    }
    let Some(stack) =
        sqlx::query("SELECT id FROM stacks WHERE org || '/' || project || '/' || name = $1")
            .bind(stack_key)
            .fetch_optional(&mut *conn)
            .await?
    else {
        return Ok(false);
    };
    let stack_id: String = stack.try_get(0)?;
    let recorded = sqlx::query("SELECT 1 FROM history WHERE stack_id = $1 AND update_id = $2")
        .bind(&stack_id)
        .bind(update_id)
        .fetch_optional(&mut *conn)
        .await?;
    if recorded.is_some() {
        return Ok(false);
    }
    let version = super::history::next_version(conn, &stack_id).await?;
    let record = serde_json::json!({
        "kind": kind,
        "startTime": started_at,
        "message": INTERRUPTED_MESSAGE,
        "environment": {},
        "config": {},
        "result": "failed",
        "endTime": now_secs(),
        "version": version,
        "resourceChanges": {},
    });
    super::history::insert(conn, &stack_id, &kind, &record.to_string(), Some(update_id)).await?;
    Ok(true)
}

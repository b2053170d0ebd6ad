//! The service's storage logic over [`Db`]: stacks and checkpoints,
//! history, tags, update leases, journals and tokens. Every method runs in one
//! database transaction; invariants that must hold between concurrent
//! requests (or several service processes on one PostgreSQL) are enforced
//! by the schema: one lease row per stack, one open journal per stack, one
//! entry per (update, sequence ID), `INSERT … ON CONFLICT DO NOTHING`
//! deciding every race.

mod activity;
pub(crate) mod audit;
mod history;
mod journal;
mod leases;
mod members;
mod policy_packs;
mod sessions;
mod stacks;
mod tags;
mod tokens;

use std::time::Duration;

use converge_backend::{LockInfo, StackRef};
use sha2::{Digest, Sha256};
use sqlx::{AnyConnection, Row};

use crate::db::Db;
use crate::error::ApiError;

pub use activity::ActiveUpdate;
pub use audit::{Actor, Audit, AuditQuery};
pub use history::HistoryRecord;
pub use journal::NewEntry;
pub use leases::INTERRUPTED_MESSAGE;
pub use members::StackFacts;
pub use policy_packs::Published;
pub use stacks::{StackFilter, StackInfo, StackListQuery};
pub use tokens::{Access, Caller, NewToken, Role, Scope, TokenSpec};

/// A lease as a client presents it: the update it started and the secret
/// token it was given.
#[derive(Debug, Clone)]
pub struct LeaseCredential {
    pub update_id: String,
    pub token: String,
}

/// How the service behaves, apart from the database.
#[derive(Debug, Clone)]
pub(crate) struct StoreOptions {
    /// How long a lease lasts without a renewal.
    pub lease_duration: Duration,
}

#[derive(Debug, Clone)]
pub(crate) struct Store {
    db: Db,
    options: StoreOptions,
}

impl Store {
    pub fn new(db: Db, options: StoreOptions) -> Store {
        Store { db, options }
    }

    /// A transaction for a write to `stack`, and the stack's id: 404 if
    /// the stack does not exist, 409 if the caller may not write to it
    /// (see [`check_writer`]).
    async fn begin_write(
        &self,
        stack: &StackRef,
        lease: Option<&LeaseCredential>,
    ) -> Result<(sqlx::Transaction<'static, sqlx::Any>, String), ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let id = stack_id(&mut tx, stack).await?;
        check_writer(&mut tx, stack, lease).await?;
        Ok((tx, id))
    }
}

pub(crate) fn now_secs() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

pub(crate) fn now_nanos() -> i64 {
    let nanos = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    i64::try_from(nanos).unwrap_or(i64::MAX)
}

/// Lowercase hex SHA-256: how tokens are stored (never in plaintext).
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A new secret: 32 random bytes, hex, with a prefix that makes leaked
/// tokens easy to recognise.
pub(crate) fn new_secret(prefix: &str) -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{prefix}{}", hex::encode(bytes))
}

/// Unix seconds as RFC 3339.
pub(crate) fn rfc3339_of(unix_secs: i64) -> String {
    rfc3339(unix_secs)
}

fn rfc3339(unix_secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(unix_secs)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// Commits `tx`. A database failure before the commit wrote nothing
/// (503: any client may send the request again), but one during it leaves
/// the outcome unknown, so it is a 500 (`commit_unknown`), which Converge's
/// client retries only for a request that is idempotent.
async fn commit(tx: sqlx::Transaction<'_, sqlx::Any>) -> Result<(), ApiError> {
    tx.commit().await.map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "commit_unknown",
            format!(
                "the database failed while committing ({e}): the change may or may not \
                 have been made; read the stack before trying again"
            ),
        )
    })
}

fn not_found(stack: &StackRef) -> ApiError {
    ApiError::not_found("stack_not_found", format!("no stack named {stack}"))
}

/// The id of a stack, or 404.
async fn stack_id(conn: &mut AnyConnection, stack: &StackRef) -> Result<String, ApiError> {
    let row = sqlx::query("SELECT id FROM stacks WHERE org = $1 AND project = $2 AND name = $3")
        .bind(&stack.organization)
        .bind(&stack.project)
        .bind(&stack.stack)
        .fetch_optional(&mut *conn)
        .await?;
    match row {
        Some(row) => Ok(row.try_get(0)?),
        None => Err(not_found(stack)),
    }
}

/// The lease row of a stack, if any (expired or not). Leases are keyed by
/// the stack's name (`org/project/stack`), not its id: a stack that does
/// not exist yet can be locked, as on every backend.
async fn lease_row(
    conn: &mut AnyConnection,
    stack_key: &str,
) -> Result<Option<leases::LeaseRow>, ApiError> {
    let row = sqlx::query(
        "SELECT update_id, token_hash, lock_info, expires_at FROM leases WHERE stack_key = $1",
    )
    .bind(stack_key)
    .fetch_optional(&mut *conn)
    .await?;
    row.map(|r| leases::LeaseRow::from_row(&r)).transpose()
}

/// Whether a request may write to a stack: when the stack has a live
/// lease, only with that lease; with a lease that is no longer live,
/// never (its holder lost the stack); without a lease, when the stack
/// has no live lease.
async fn check_writer(
    conn: &mut AnyConnection,
    stack: &StackRef,
    lease: Option<&LeaseCredential>,
) -> Result<(), ApiError> {
    let row = lease_row(conn, &stack.to_string()).await?;
    let live = row.filter(|r| r.expires_at > now_secs());
    match (live, lease) {
        (Some(row), Some(cred)) if row.matches(cred) => Ok(()),
        (Some(row), _) => Err(ApiError::locked(
            &stack.to_string(),
            &row.update_id,
            row.lock_info(),
        )),
        (None, Some(cred)) => Err(lease_lost(stack, &cred.update_id)),
        (None, None) => Ok(()),
    }
}

fn lease_lost(stack: &StackRef, update_id: &str) -> ApiError {
    ApiError::conflict(
        "lease_lost",
        format!(
            "update {update_id} no longer holds stack {stack}: its lease expired or was broken"
        ),
    )
}

fn parse_lock_info(text: &str) -> LockInfo {
    serde_json::from_str(text).unwrap_or(LockInfo {
        pid: 0,
        username: "unknown".to_owned(),
        hostname: "unknown".to_owned(),
        timestamp: "an unknown time".to_owned(),
    })
}

//! The web console's sessions. A session is a random id the browser keeps
//! in a cookie; the database keeps only its SHA-256, the id of the token
//! that logged in (never the token) and an expiry. Every request checks
//! the token again, so revoking it ends its sessions. Sessions live in the
//! database, so several service processes on one PostgreSQL share them.

use std::time::Duration;

use sqlx::Row;

use super::{new_secret, now_secs, sha256_hex, Caller, Store};
use crate::error::ApiError;

impl Store {
    /// Starts a session for `caller`, valid for `lifetime`; returns the
    /// session id (shown only here). Expired sessions are purged.
    pub async fn create_session(
        &self,
        caller: &Caller,
        lifetime: Duration,
    ) -> Result<String, ApiError> {
        let id = new_secret("cvs-");
        let lifetime = i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX / 2);
        let now = now_secs();
        let mut tx = self.db.pool.begin().await?;
        sqlx::query("DELETE FROM console_sessions WHERE expires_at <= $1")
            .bind(now)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO console_sessions (id_hash, token_id, expires_at) VALUES ($1, $2, $3)",
        )
        .bind(sha256_hex(id.as_bytes()))
        .bind(&caller.token_id)
        .bind(now.saturating_add(lifetime.max(1)))
        .execute(&mut *tx)
        .await?;
        super::commit(tx).await?;
        Ok(id)
    }

    /// The caller of a live session whose token is still valid; 401
    /// otherwise.
    pub async fn session_caller(&self, session_id: &str) -> Result<Caller, ApiError> {
        let mut conn = self.db.pool.acquire().await?;
        let row = sqlx::query(
            "SELECT token_id FROM console_sessions WHERE id_hash = $1 AND expires_at > $2",
        )
        .bind(sha256_hex(session_id.as_bytes()))
        .bind(now_secs())
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| ApiError::unauthorized("the session expired or was ended; log in again"))?;
        let token_id: String = row.try_get(0)?;
        self.caller_of_token(&mut conn, &token_id).await
    }

    /// Ends a session (nothing happens if it does not exist).
    pub async fn end_session(&self, session_id: &str) -> Result<(), ApiError> {
        sqlx::query("DELETE FROM console_sessions WHERE id_hash = $1")
            .bind(sha256_hex(session_id.as_bytes()))
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }
}

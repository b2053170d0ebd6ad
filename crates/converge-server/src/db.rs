//! The database: one code path for SQLite and PostgreSQL through sqlx's
//! `Any` driver. Queries use `$N` placeholders (both drivers accept them),
//! integers are BIGINT, and only the blob type differs between the two
//! schemas. The schema is created at start, idempotently.

use sqlx::any::AnyPoolOptions;
use sqlx::AnyPool;

use crate::error::ServerError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone)]
pub(crate) struct Db {
    pub pool: AnyPool,
}

/// Statements that create the schema; `{BLOB}` is the dialect's blob type.
/// Leases and updates belong to a stack's name (`stack_key`,
/// `org/project/stack`), journals and history to the stack (`stack_id`).
const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS stacks (
        id TEXT PRIMARY KEY,
        org TEXT NOT NULL,
        project TEXT NOT NULL,
        name TEXT NOT NULL,
        checkpoint {BLOB},
        previous {BLOB},
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        UNIQUE (org, project, name))",
    "CREATE TABLE IF NOT EXISTS tokens (
        id TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL UNIQUE,
        org TEXT NOT NULL,
        name TEXT NOT NULL,
        admin BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT)",
    "CREATE TABLE IF NOT EXISTS updates (
        id TEXT PRIMARY KEY,
        stack_key TEXT NOT NULL,
        kind TEXT NOT NULL,
        lock_info TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at BIGINT NOT NULL,
        ended_at BIGINT)",
    "CREATE TABLE IF NOT EXISTS leases (
        stack_key TEXT PRIMARY KEY,
        update_id TEXT NOT NULL,
        token_hash TEXT NOT NULL,
        lock_info TEXT NOT NULL,
        expires_at BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS journals (
        stack_id TEXT PRIMARY KEY,
        update_id TEXT NOT NULL UNIQUE,
        base_digest TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS journal_entries (
        update_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        entry TEXT NOT NULL,
        PRIMARY KEY (update_id, seq))",
    "CREATE TABLE IF NOT EXISTS history (
        stack_id TEXT NOT NULL,
        recorded_at BIGINT NOT NULL,
        kind TEXT,
        record TEXT NOT NULL,
        PRIMARY KEY (stack_id, recorded_at))",
    "CREATE TABLE IF NOT EXISTS stack_tags (
        stack_id TEXT NOT NULL,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (stack_id, name))",
    // The web console's sessions: the SHA-256 of the cookie's random id,
    // mapped to the token that logged in (by id, never the token itself).
    "CREATE TABLE IF NOT EXISTS console_sessions (
        id_hash TEXT PRIMARY KEY,
        token_id TEXT NOT NULL,
        expires_at BIGINT NOT NULL)",
];

impl Db {
    /// Connects to `sqlite://FILE` (created if missing) or `postgres://…`
    /// and creates the schema.
    pub async fn open(url: &str) -> Result<Db, ServerError> {
        let dialect = if url.starts_with("sqlite:") {
            Dialect::Sqlite
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Dialect::Postgres
        } else {
            return Err(ServerError::UnsupportedUrl(url.to_owned()));
        };
        sqlx::any::install_default_drivers();
        // SQLite serializes writers anyway; one connection avoids
        // SQLITE_BUSY between the service's own transactions.
        let max = match dialect {
            Dialect::Sqlite => 1,
            Dialect::Postgres => 8,
        };
        let pool = AnyPoolOptions::new()
            .max_connections(max)
            .connect(url)
            .await
            .map_err(|source| ServerError::Database {
                url: redact(url),
                source,
            })?;
        let blob = match dialect {
            Dialect::Sqlite => "BLOB",
            Dialect::Postgres => "BYTEA",
        };
        for statement in SCHEMA {
            sqlx::query(&statement.replace("{BLOB}", blob))
                .execute(&pool)
                .await
                .map_err(ServerError::Migration)?;
        }
        Ok(Db { pool })
    }
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// The SQLite URL of a database file, created if missing.
pub fn sqlite_url(path: &std::path::Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_sqlite_database_is_created_in_any_directory() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("with space#and%percent");
        std::fs::create_dir_all(&data).unwrap();
        let path = data.join("converge.db");
        Db::open(&sqlite_url(&path)).await.unwrap();
        assert!(path.exists(), "the file is where it was asked to be");
        // Opening again finds the schema in place.
        Db::open(&sqlite_url(&path)).await.unwrap();
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }
}

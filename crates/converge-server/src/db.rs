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
    // An organization's members (people or systems that tokens stand
    // for), each with a role: admin, member, read-only.
    "CREATE TABLE IF NOT EXISTS members (
        org TEXT NOT NULL,
        name TEXT NOT NULL,
        role TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (org, name))",
    // Teams own stacks (`stacks.team_id`) and have members.
    "CREATE TABLE IF NOT EXISTS teams (
        id TEXT PRIMARY KEY,
        org TEXT NOT NULL,
        name TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        UNIQUE (org, name))",
    "CREATE TABLE IF NOT EXISTS team_members (
        team_id TEXT NOT NULL,
        member TEXT NOT NULL,
        PRIMARY KEY (team_id, member))",
    // Who wrote what, when, from where; never a secret value.
    "CREATE TABLE IF NOT EXISTS audit_log (
        id {SERIAL} PRIMARY KEY,
        org TEXT NOT NULL,
        at BIGINT NOT NULL,
        token_id TEXT NOT NULL,
        token_name TEXT NOT NULL,
        member TEXT NOT NULL,
        peer TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL,
        detail TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS audit_log_org ON audit_log (org, id)",
    // Policy packs: each published version's archive (a gzipped tar of
    // the pack's directory) named by its digest; the versions the
    // organization requires of every update, with their configuration;
    // what each update was required to run and what its client reported.
    "CREATE TABLE IF NOT EXISTS policy_packs (
        org TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        digest TEXT NOT NULL,
        size BIGINT NOT NULL,
        archive {BLOB} NOT NULL,
        published_at BIGINT NOT NULL,
        PRIMARY KEY (org, name, version))",
    "CREATE TABLE IF NOT EXISTS policy_requirements (
        org TEXT NOT NULL,
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        config TEXT,
        enabled_at BIGINT NOT NULL,
        PRIMARY KEY (org, name))",
    "CREATE TABLE IF NOT EXISTS update_policies (
        update_id TEXT PRIMARY KEY,
        required TEXT NOT NULL,
        report TEXT)",
    "CREATE TABLE IF NOT EXISTS schema_migrations (
        name TEXT PRIMARY KEY,
        applied_at BIGINT NOT NULL)",
];

/// Changes to tables that existed before, each applied once (recorded in
/// `schema_migrations`, in the same transaction as its statements).
const MIGRATIONS: &[(&str, &[&str])] = &[(
    // Tokens belong to a member and carry a scope, an access and an
    // expiry; stacks may belong to a team; a history record names the
    // update that added it. Tokens made before stand for a member named
    // `admin` (admin tokens) or `member`, on the whole organization,
    // read-write, without expiry: they keep the rights they had. An
    // update that opened a journal is marked `journaled`.
    "members-teams-scoped-tokens",
    &[
        "ALTER TABLE tokens ADD COLUMN member TEXT",
        "ALTER TABLE tokens ADD COLUMN scope_kind TEXT",
        "ALTER TABLE tokens ADD COLUMN scope_id TEXT",
        "ALTER TABLE tokens ADD COLUMN access TEXT",
        "ALTER TABLE tokens ADD COLUMN expires_at BIGINT",
        "ALTER TABLE tokens ADD COLUMN created_by TEXT",
        "ALTER TABLE stacks ADD COLUMN team_id TEXT",
        "ALTER TABLE history ADD COLUMN update_id TEXT",
        "ALTER TABLE updates ADD COLUMN journaled BIGINT",
        "UPDATE tokens SET member = CASE WHEN admin = 1 THEN 'admin' ELSE 'member' END,
            scope_kind = 'organization', access = 'write'",
        "INSERT INTO members (org, name, role, created_at)
            SELECT DISTINCT org, member, CASE WHEN admin = 1 THEN 'admin' ELSE 'member' END, 0
            FROM tokens WHERE true ON CONFLICT DO NOTHING",
    ],
)];

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
        create_schema(&pool, dialect)
            .await
            .map_err(ServerError::Migration)?;
        Ok(Db { pool })
    }
}

/// A number PostgreSQL's advisory lock is taken on while the schema is
/// created: replicas starting at once would otherwise race in
/// `CREATE TABLE IF NOT EXISTS` (which is not atomic there).
const SCHEMA_LOCK: i64 = 0x636f_6e76_6572_6765;

async fn create_schema(pool: &AnyPool, dialect: Dialect) -> Result<(), sqlx::Error> {
    let (blob, serial) = match dialect {
        Dialect::Sqlite => ("BLOB", "INTEGER"),
        Dialect::Postgres => ("BYTEA", "BIGSERIAL"),
    };
    let mut conn = pool.acquire().await?;
    if dialect == Dialect::Postgres {
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(SCHEMA_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    let result = async {
        for statement in SCHEMA {
            let statement = statement
                .replace("{BLOB}", blob)
                .replace("{SERIAL}", serial);
            sqlx::query(&statement).execute(&mut *conn).await?;
        }
        for (name, statements) in MIGRATIONS {
            let mut tx = sqlx::Connection::begin(&mut *conn).await?;
            let fresh = sqlx::query(
                "INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)
                 ON CONFLICT (name) DO NOTHING",
            )
            .bind(*name)
            .bind(time::OffsetDateTime::now_utc().unix_timestamp())
            .execute(&mut *tx)
            .await?;
            if fresh.rows_affected() == 1 {
                for statement in *statements {
                    sqlx::query(statement).execute(&mut *tx).await?;
                }
            }
            tx.commit().await?;
        }
        Ok(())
    }
    .await;
    if dialect == Dialect::Postgres {
        sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(SCHEMA_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    result
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

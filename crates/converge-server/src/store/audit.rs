//! The audit log: every write a token makes (and the service's own, such
//! as closing an update whose lease expired), recorded in the same
//! transaction as the write — who (token id and name, its member), what
//! (an action and its target, with details that never hold a value of
//! the state), when, and from where (the peer address, or the client a
//! trusted proxy names).

use serde::Serialize;
use sqlx::{AnyConnection, Row};

use super::{now_nanos, Store};
use crate::error::ApiError;

/// Who acts, from where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub organization: String,
    pub token_id: String,
    pub token_name: String,
    pub member: String,
    pub peer: String,
}

impl Actor {
    /// The service itself (the lease sweeper), in `organization`.
    pub fn service(organization: &str) -> Actor {
        Actor {
            organization: organization.to_owned(),
            token_id: String::new(),
            token_name: "converge serve".to_owned(),
            member: String::new(),
            peer: String::new(),
        }
    }
}

/// An action about to be recorded: who does it and what it is; the
/// target and details are given when it is recorded.
#[derive(Debug, Clone)]
pub struct Audit {
    pub actor: Actor,
    pub action: &'static str,
}

impl Audit {
    /// Inserts the record on `conn` (the write's own transaction).
    pub async fn record(
        &self,
        conn: &mut AnyConnection,
        target: &str,
        detail: serde_json::Value,
    ) -> Result<(), ApiError> {
        let a = &self.actor;
        sqlx::query(
            "INSERT INTO audit_log (org, at, token_id, token_name, member, peer, action, target,
                 detail)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&a.organization)
        .bind(now_nanos())
        .bind(&a.token_id)
        .bind(&a.token_name)
        .bind(&a.member)
        .bind(&a.peer)
        .bind(self.action)
        .bind(target)
        .bind(detail.to_string())
        .execute(&mut *conn)
        .await?;
        Ok(())
    }
}

/// One record as read back.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    pub id: i64,
    /// RFC 3339, to the nanosecond.
    pub time: String,
    #[serde(rename = "tokenID")]
    pub token_id: String,
    #[serde(rename = "tokenName")]
    pub token_name: String,
    pub member: String,
    pub peer: String,
    pub action: String,
    pub target: String,
    pub detail: serde_json::Value,
}

/// Which records to read: newest first, `limit` of them, older than
/// record `before`, each filter matching exactly (`target` as a prefix).
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    pub limit: i64,
    pub before: Option<i64>,
    pub action: Option<String>,
    pub member: Option<String>,
    pub token_id: Option<String>,
    pub target: Option<String>,
}

impl Store {
    /// A page of `org`'s audit log.
    pub async fn audit_log(
        &self,
        org: &str,
        query: &AuditQuery,
    ) -> Result<Vec<AuditRecord>, ApiError> {
        let target = query.target.as_deref().map(|t| {
            format!(
                "{}%",
                t.replace('\\', "\\\\")
                    .replace('%', "\\%")
                    .replace('_', "\\_")
            )
        });
        let rows = sqlx::query(
            "SELECT id, at, token_id, token_name, member, peer, action, target, detail
             FROM audit_log
             WHERE org = $1 AND id < $2 AND ($3 = '' OR action = $3) AND ($4 = '' OR member = $4)
                 AND ($5 = '' OR token_id = $5) AND ($6 = '' OR target LIKE $6 ESCAPE '\\')
             ORDER BY id DESC LIMIT $7",
        )
        .bind(org)
        .bind(query.before.unwrap_or(i64::MAX))
        .bind(query.action.as_deref().unwrap_or(""))
        .bind(query.member.as_deref().unwrap_or(""))
        .bind(query.token_id.as_deref().unwrap_or(""))
        .bind(target.as_deref().unwrap_or(""))
        .bind(query.limit)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let at: i64 = r.try_get(1)?;
                let detail: String = r.try_get(8)?;
                Ok(AuditRecord {
                    id: r.try_get(0)?,
                    time: time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at))
                        .ok()
                        .and_then(|t| {
                            t.format(&time::format_description::well_known::Rfc3339)
                                .ok()
                        })
                        .unwrap_or_default(),
                    token_id: r.try_get(2)?,
                    token_name: r.try_get(3)?,
                    member: r.try_get(4)?,
                    peer: r.try_get(5)?,
                    action: r.try_get(6)?,
                    target: r.try_get(7)?,
                    detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
                })
            })
            .collect()
    }
}

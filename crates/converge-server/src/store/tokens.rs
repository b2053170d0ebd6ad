//! Access tokens. A token belongs to one member of one organization and
//! carries a scope (the organization, a team, or one stack), an access
//! (read or write) and, optionally, an expiry. What a request may do is
//! the token's member's role narrowed by the token's scope and access
//! ([`crate::api::access`] decides it). Only a token's SHA-256 is stored.

use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use super::audit::Audit;
use super::{new_secret, now_secs, rfc3339, sha256_hex, Store};
use crate::error::ApiError;

/// An organization role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Everything in the organization: every stack, members and roles,
    /// teams, every token, the audit log.
    Admin,
    /// Reads every stack; writes (and creates) the stacks no team owns
    /// and those of the teams it belongs to.
    Member,
    /// Reads every stack; writes nothing but its own tokens.
    ReadOnly,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Member => "member",
            Role::ReadOnly => "read-only",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "admin" => Some(Role::Admin),
            "member" => Some(Role::Member),
            "read-only" => Some(Role::ReadOnly),
            _ => None,
        }
    }
}

/// What a token may do within its scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Read,
    Write,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// What a token reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every stack of the organization, and the organization itself
    /// (members, teams, tokens, audit log) as the role allows.
    Organization,
    /// The stacks the team owns, nothing else. `name` is empty if the
    /// team was deleted (the token then reaches nothing).
    Team { id: String, name: String },
    /// One stack (by identity: a rename keeps it), nothing else. `name`
    /// is its current `org/project/stack`, empty if it was deleted.
    Stack { id: String, name: String },
}

impl Scope {
    pub fn kind(&self) -> &'static str {
        match self {
            Scope::Organization => "organization",
            Scope::Team { .. } => "team",
            Scope::Stack { .. } => "stack",
        }
    }

    fn id(&self) -> Option<&str> {
        match self {
            Scope::Organization => None,
            Scope::Team { id, .. } | Scope::Stack { id, .. } => Some(id),
        }
    }

    /// `organization`, `team payments`, `stack acme/web/prod`.
    pub fn describe(&self) -> String {
        match self {
            Scope::Organization => "organization".to_owned(),
            Scope::Team { name, .. } => format!("team {}", or_deleted(name)),
            Scope::Stack { name, .. } => format!("stack {}", or_deleted(name)),
        }
    }
}

fn or_deleted(name: &str) -> &str {
    if name.is_empty() {
        "(deleted)"
    } else {
        name
    }
}

/// Who is calling: the token that authenticated the request, and what
/// stands behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub token_id: String,
    pub token_name: String,
    pub organization: String,
    /// The member the token belongs to.
    pub member: String,
    /// The member's role now (a role change applies to its tokens at once).
    pub role: Role,
    pub scope: Scope,
    pub access: Access,
    /// Unix seconds; None: never.
    pub expires_at: Option<i64>,
}

impl Caller {
    /// An admin with an organization-wide read-write token: may do
    /// anything in its organization.
    pub fn is_org_admin(&self) -> bool {
        self.role == Role::Admin
            && self.scope == Scope::Organization
            && self.access == Access::Write
    }

    /// 403 unless the caller belongs to `org`.
    pub fn require_org(&self, org: &str) -> Result<(), ApiError> {
        if self.organization == org {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "this token belongs to organization {}; it has no access to organization {org}",
                self.organization
            )))
        }
    }
}

/// What a new token is to be.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    pub organization: String,
    pub member: String,
    pub name: String,
    pub scope: Scope,
    pub access: Access,
    pub expires_at: Option<i64>,
}

/// A created token; `token` is shown only here.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub id: String,
    pub token: String,
    pub spec: TokenSpec,
}

/// A token as listed (never its secret).
#[derive(Debug, Clone, Serialize)]
pub struct TokenInfo {
    pub id: String,
    pub name: String,
    pub member: String,
    pub scope: String,
    #[serde(rename = "scopeName", skip_serializing_if = "Option::is_none")]
    pub scope_name: Option<String>,
    pub access: Access,
    #[serde(rename = "createdAt")]
    pub created_at: String,
    #[serde(rename = "expiresAt", skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(rename = "revokedAt", skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    /// Expired or revoked: it authenticates nothing.
    pub active: bool,
}

/// The columns a caller is read from, in [`caller_from_row`]'s order.
const CALLER_COLUMNS: &str = "t.id, t.name, t.org, t.member, m.role, t.scope_kind, t.scope_id,
    t.access, t.expires_at, tm.name, s.org, s.project, s.name";

/// The joins that go with [`CALLER_COLUMNS`]: a token whose member was
/// removed authenticates nothing.
const CALLER_JOINS: &str = "FROM tokens t
    JOIN members m ON m.org = t.org AND m.name = t.member
    LEFT JOIN teams tm ON t.scope_kind = 'team' AND tm.id = t.scope_id
    LEFT JOIN stacks s ON t.scope_kind = 'stack' AND s.id = t.scope_id";

fn caller_from_row(row: &AnyRow) -> Result<Caller, ApiError> {
    let role: String = row.try_get(4)?;
    let kind: String = row.try_get(5)?;
    let scope_id: Option<String> = row.try_get(6)?;
    let access: String = row.try_get(7)?;
    let scope = match (kind.as_str(), scope_id) {
        ("organization", _) => Scope::Organization,
        ("team", Some(id)) => Scope::Team {
            id,
            name: row.try_get::<Option<String>, _>(9)?.unwrap_or_default(),
        },
        ("stack", Some(id)) => {
            let org: Option<String> = row.try_get(10)?;
            let project: Option<String> = row.try_get(11)?;
            let stack: Option<String> = row.try_get(12)?;
            let name = match (org, project, stack) {
                (Some(o), Some(p), Some(s)) => format!("{o}/{p}/{s}"),
                _ => String::new(),
            };
            Scope::Stack { id, name }
        }
        (other, _) => {
            return Err(ApiError::internal(format!(
                "a token has an unknown scope {other:?}"
            )))
        }
    };
    Ok(Caller {
        token_id: row.try_get(0)?,
        token_name: row.try_get(1)?,
        organization: row.try_get(2)?,
        member: row.try_get(3)?,
        role: Role::parse(&role)
            .ok_or_else(|| ApiError::internal(format!("a member has an unknown role {role:?}")))?,
        scope,
        access: if access == "read" {
            Access::Read
        } else {
            Access::Write
        },
        expires_at: row.try_get(8)?,
    })
}

/// 401 for a token past its expiry.
fn unexpired(caller: Caller) -> Result<Caller, ApiError> {
    match caller.expires_at {
        Some(at) if at <= now_secs() => Err(ApiError::unauthorized(format!(
            "the access token {} expired at {}; ask for a new one",
            caller.token_name,
            rfc3339(at)
        ))),
        _ => Ok(caller),
    }
}

impl Store {
    /// Creates a token as `spec` says, recording `audit` with it. The
    /// caller's rights are checked before ([`crate::api::access`]).
    pub async fn create_token(
        &self,
        spec: TokenSpec,
        created_by: Option<&str>,
        audit: Option<&Audit>,
    ) -> Result<NewToken, ApiError> {
        let token = NewToken {
            id: uuid::Uuid::new_v4().to_string(),
            token: new_secret("cvg-"),
            spec,
        };
        let spec = &token.spec;
        let mut tx = self.db.pool.begin().await?;
        sqlx::query(
            "INSERT INTO tokens (id, token_hash, org, name, admin, created_at, revoked_at,
                 member, scope_kind, scope_id, access, expires_at, created_by)
             VALUES ($1, $2, $3, $4, 0, $5, NULL, $6, $7, $8, $9, $10, $11)",
        )
        .bind(&token.id)
        .bind(sha256_hex(token.token.as_bytes()))
        .bind(&spec.organization)
        .bind(&spec.name)
        .bind(now_secs())
        .bind(&spec.member)
        .bind(spec.scope.kind())
        .bind(spec.scope.id())
        .bind(spec.access.as_str())
        .bind(spec.expires_at)
        .bind(created_by)
        .execute(&mut *tx)
        .await?;
        if let Some(audit) = audit {
            audit
                .record(
                    &mut tx,
                    &format!("token {} ({})", token.id, spec.name),
                    serde_json::json!({
                        "member": spec.member,
                        "scope": spec.scope.describe(),
                        "access": spec.access,
                        "expiresAt": spec.expires_at.map(rfc3339),
                    }),
                )
                .await?;
        }
        super::commit(tx).await?;
        Ok(token)
    }

    /// Makes `member` an admin of `organization` (creating the member)
    /// and gives it a new organization-wide read-write token: how a
    /// service operator bootstraps an organization.
    pub async fn create_admin_token(
        &self,
        organization: &str,
        member: &str,
        name: &str,
    ) -> Result<NewToken, ApiError> {
        sqlx::query(
            "INSERT INTO members (org, name, role, created_at) VALUES ($1, $2, 'admin', $3)
             ON CONFLICT (org, name) DO UPDATE SET role = 'admin'",
        )
        .bind(organization)
        .bind(member)
        .bind(now_secs())
        .execute(&self.db.pool)
        .await?;
        let spec = TokenSpec {
            organization: organization.to_owned(),
            member: member.to_owned(),
            name: name.to_owned(),
            scope: Scope::Organization,
            access: Access::Write,
            expires_at: None,
        };
        self.create_token(spec, None, None).await
    }

    /// The caller a token stands for; 401 for an unknown, revoked or
    /// expired token, or one whose member was removed.
    pub async fn authenticate(&self, token: &str) -> Result<Caller, ApiError> {
        let row = sqlx::query(&format!(
            "SELECT {CALLER_COLUMNS} {CALLER_JOINS}
             WHERE t.token_hash = $1 AND t.revoked_at IS NULL"
        ))
        .bind(sha256_hex(token.as_bytes()))
        .fetch_optional(&self.db.pool)
        .await?
        .ok_or_else(|| ApiError::unauthorized("the access token is unknown or was revoked"))?;
        unexpired(caller_from_row(&row)?)
    }

    /// The caller of the live token `token_id` (a console session's).
    pub(super) async fn caller_of_token(
        &self,
        conn: &mut AnyConnection,
        token_id: &str,
    ) -> Result<Caller, ApiError> {
        let row = sqlx::query(&format!(
            "SELECT {CALLER_COLUMNS} {CALLER_JOINS}
             WHERE t.id = $1 AND t.revoked_at IS NULL"
        ))
        .bind(token_id)
        .fetch_optional(&mut *conn)
        .await?
        .ok_or_else(|| ApiError::unauthorized("the session's token was revoked; log in again"))?;
        unexpired(caller_from_row(&row)?)
    }

    /// The tokens of `org` (of `member` only, if given), newest first.
    pub async fn list_tokens(
        &self,
        org: &str,
        member: Option<&str>,
    ) -> Result<Vec<TokenInfo>, ApiError> {
        let rows = sqlx::query(
            "SELECT t.id, t.name, t.member, t.scope_kind, t.access, t.created_at, t.expires_at,
                 t.revoked_at, tm.name, s.org, s.project, s.name
             FROM tokens t
             LEFT JOIN teams tm ON t.scope_kind = 'team' AND tm.id = t.scope_id
             LEFT JOIN stacks s ON t.scope_kind = 'stack' AND s.id = t.scope_id
             WHERE t.org = $1 AND ($2 = '' OR t.member = $2)
             ORDER BY t.created_at DESC, t.id",
        )
        .bind(org)
        .bind(member.unwrap_or(""))
        .fetch_all(&self.db.pool)
        .await?;
        let now = now_secs();
        rows.iter()
            .map(|r| {
                let kind: String = r.try_get(3)?;
                let access: String = r.try_get(4)?;
                let expires_at: Option<i64> = r.try_get(6)?;
                let revoked_at: Option<i64> = r.try_get(7)?;
                let team: Option<String> = r.try_get(8)?;
                let stack = match (
                    r.try_get::<Option<String>, _>(9)?,
                    r.try_get::<Option<String>, _>(10)?,
                    r.try_get::<Option<String>, _>(11)?,
                ) {
                    (Some(o), Some(p), Some(s)) => Some(format!("{o}/{p}/{s}")),
                    _ => None,
                };
                Ok(TokenInfo {
                    id: r.try_get(0)?,
                    name: r.try_get(1)?,
                    member: r.try_get(2)?,
                    scope_name: match kind.as_str() {
                        "team" => Some(team.unwrap_or_else(|| "(deleted)".to_owned())),
                        "stack" => Some(stack.unwrap_or_else(|| "(deleted)".to_owned())),
                        _ => None,
                    },
                    scope: kind,
                    access: if access == "read" {
                        Access::Read
                    } else {
                        Access::Write
                    },
                    created_at: rfc3339(r.try_get(5)?),
                    active: revoked_at.is_none() && expires_at.is_none_or(|e| e > now),
                    expires_at: expires_at.map(rfc3339),
                    revoked_at: revoked_at.map(rfc3339),
                })
            })
            .collect()
    }

    /// Revokes a token of `org` (of `member` only, if given: a non-admin
    /// revokes its own tokens); 404 for any other.
    pub async fn revoke_token(
        &self,
        org: &str,
        member: Option<&str>,
        id: &str,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let row = sqlx::query(
            "UPDATE tokens SET revoked_at = $1
             WHERE id = $2 AND org = $3 AND ($4 = '' OR member = $4) AND revoked_at IS NULL
             RETURNING name",
        )
        .bind(now_secs())
        .bind(id)
        .bind(org)
        .bind(member.unwrap_or(""))
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| ApiError::not_found("token_not_found", format!("no active token {id}")))?;
        let name: String = row.try_get(0)?;
        audit
            .record(
                &mut tx,
                &format!("token {id} ({name})"),
                serde_json::json!({}),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }
}

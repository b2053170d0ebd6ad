//! Access tokens. A token belongs to one organization and sees nothing
//! outside it; an admin token may also create and revoke tokens of any
//! organization. Only a token's SHA-256 is stored.

use sqlx::Row;

use super::{new_secret, now_secs, sha256_hex, Store};
use crate::error::ApiError;

/// Who is calling: the token that authenticated the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub token_id: String,
    pub token_name: String,
    pub organization: String,
    pub admin: bool,
}

impl Caller {
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

/// A created token; `token` is shown only here.
#[derive(Debug, Clone)]
pub struct NewToken {
    pub id: String,
    pub token: String,
    pub organization: String,
    pub name: String,
    pub admin: bool,
}

impl Store {
    pub async fn create_token(
        &self,
        organization: &str,
        name: &str,
        admin: bool,
    ) -> Result<NewToken, ApiError> {
        let token = NewToken {
            id: uuid::Uuid::new_v4().to_string(),
            token: new_secret("cvg-"),
            organization: organization.to_owned(),
            name: name.to_owned(),
            admin,
        };
        sqlx::query(
            "INSERT INTO tokens (id, token_hash, org, name, admin, created_at, revoked_at)
             VALUES ($1, $2, $3, $4, $5, $6, NULL)",
        )
        .bind(&token.id)
        .bind(sha256_hex(token.token.as_bytes()))
        .bind(organization)
        .bind(name)
        .bind(i64::from(admin))
        .bind(now_secs())
        .execute(&self.db.pool)
        .await?;
        Ok(token)
    }

    /// The caller a token stands for; 401 for an unknown or revoked token.
    pub async fn authenticate(&self, token: &str) -> Result<Caller, ApiError> {
        let row = sqlx::query(
            "SELECT id, name, org, admin FROM tokens WHERE token_hash = $1 AND revoked_at IS NULL",
        )
        .bind(sha256_hex(token.as_bytes()))
        .fetch_optional(&self.db.pool)
        .await?
        .ok_or_else(|| ApiError::unauthorized("the access token is unknown or was revoked"))?;
        Ok(Caller {
            token_id: row.try_get(0)?,
            token_name: row.try_get(1)?,
            organization: row.try_get(2)?,
            admin: row.try_get::<i64, _>(3)? != 0,
        })
    }

    /// Revokes a token of the caller's organization (any, for an admin).
    pub async fn revoke_token(&self, caller: &Caller, id: &str) -> Result<(), ApiError> {
        let row = sqlx::query("SELECT org FROM tokens WHERE id = $1 AND revoked_at IS NULL")
            .bind(id)
            .fetch_optional(&self.db.pool)
            .await?;
        let org: String = match row {
            Some(r) => r.try_get(0)?,
            None => {
                return Err(ApiError::not_found(
                    "token_not_found",
                    format!("no token {id}"),
                ))
            }
        };
        if !caller.admin && org != caller.organization {
            return Err(ApiError::not_found(
                "token_not_found",
                format!("no token {id}"),
            ));
        }
        sqlx::query("UPDATE tokens SET revoked_at = $1 WHERE id = $2")
            .bind(now_secs())
            .bind(id)
            .execute(&self.db.pool)
            .await?;
        Ok(())
    }
}

//! Members and their roles, teams and the stacks they own, and what the
//! access check needs to know about a stack.

use std::collections::BTreeSet;

use converge_backend::StackRef;
use serde::Serialize;
use sqlx::Row;

use super::audit::Audit;
use super::tokens::Role;
use super::{now_secs, stack_id, Store};
use crate::error::ApiError;

/// A member as listed.
#[derive(Debug, Clone, Serialize)]
pub struct MemberInfo {
    pub name: String,
    pub role: Role,
    /// The teams it belongs to, by name.
    pub teams: Vec<String>,
}

/// A team as listed.
#[derive(Debug, Clone, Serialize)]
pub struct TeamInfo {
    pub name: String,
    pub members: Vec<String>,
    /// The stacks it owns, `project/stack`.
    pub stacks: Vec<String>,
}

/// What the access check needs about a stack named in a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackFacts {
    /// None: no stack has that name.
    pub id: Option<String>,
    /// The team owning it, if any.
    pub team_id: Option<String>,
    /// Whether the caller's member belongs to that team.
    pub member_in_team: bool,
}

fn check_name(what: &str, name: &str) -> Result<(), ApiError> {
    converge_backend::validate_organization_name(name).map_err(|_| {
        ApiError::bad_request(
            "invalid_name",
            format!("a {what} name is 1 to 100 letters, digits, `_`, `.` or `-`: {name:?}"),
        )
    })
}

impl Store {
    /// What the access check needs about `stack`, for `member`.
    pub async fn stack_facts(
        &self,
        stack: &StackRef,
        member: &str,
    ) -> Result<StackFacts, ApiError> {
        let row = sqlx::query(
            "SELECT s.id, s.team_id,
                 (SELECT COUNT(*) FROM team_members tm WHERE tm.team_id = s.team_id AND tm.member = $4)
             FROM stacks s WHERE s.org = $1 AND s.project = $2 AND s.name = $3",
        )
        .bind(&stack.organization)
        .bind(&stack.project)
        .bind(&stack.stack)
        .bind(member)
        .fetch_optional(&self.db.pool)
        .await?;
        Ok(match row {
            Some(r) => StackFacts {
                id: Some(r.try_get(0)?),
                team_id: r.try_get(1)?,
                member_in_team: r.try_get::<i64, _>(2)? > 0,
            },
            None => StackFacts::default(),
        })
    }

    /// Whether `member` belongs to team `team_id`.
    pub async fn in_team(&self, team_id: &str, member: &str) -> Result<bool, ApiError> {
        let row = sqlx::query("SELECT 1 FROM team_members WHERE team_id = $1 AND member = $2")
            .bind(team_id)
            .bind(member)
            .fetch_optional(&self.db.pool)
            .await?;
        Ok(row.is_some())
    }

    /// The id of team `name` of `org`, or 404.
    pub async fn team_id(&self, org: &str, name: &str) -> Result<String, ApiError> {
        let row = sqlx::query("SELECT id FROM teams WHERE org = $1 AND name = $2")
            .bind(org)
            .bind(name)
            .fetch_optional(&self.db.pool)
            .await?
            .ok_or_else(|| ApiError::not_found("team_not_found", format!("no team {name}")))?;
        Ok(row.try_get(0)?)
    }

    /// The role of member `name`, if it exists.
    pub async fn member_role(&self, org: &str, name: &str) -> Result<Option<Role>, ApiError> {
        let row = sqlx::query("SELECT role FROM members WHERE org = $1 AND name = $2")
            .bind(org)
            .bind(name)
            .fetch_optional(&self.db.pool)
            .await?;
        Ok(row
            .map(|r| r.try_get::<String, _>(0))
            .transpose()?
            .as_deref()
            .and_then(Role::parse))
    }

    pub async fn list_members(&self, org: &str) -> Result<Vec<MemberInfo>, ApiError> {
        let rows = sqlx::query(
            "SELECT m.name, m.role, t.name FROM members m
             LEFT JOIN team_members tm ON tm.member = m.name
                 AND tm.team_id IN (SELECT id FROM teams WHERE org = $1)
             LEFT JOIN teams t ON t.id = tm.team_id
             WHERE m.org = $1 ORDER BY m.name, t.name",
        )
        .bind(org)
        .fetch_all(&self.db.pool)
        .await?;
        let mut members: Vec<MemberInfo> = Vec::new();
        for r in &rows {
            let name: String = r.try_get(0)?;
            let role: String = r.try_get(1)?;
            let team: Option<String> = r.try_get(2)?;
            if members.last().is_none_or(|m| m.name != name) {
                members.push(MemberInfo {
                    name,
                    role: Role::parse(&role).unwrap_or(Role::ReadOnly),
                    teams: Vec::new(),
                });
            }
            if let (Some(team), Some(m)) = (team, members.last_mut()) {
                m.teams.push(team);
            }
        }
        Ok(members)
    }

    /// Adds member `name` with `role`, or changes its role. Refuses to
    /// leave the organization without an admin.
    pub async fn set_member(
        &self,
        org: &str,
        name: &str,
        role: Role,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        check_name("member", name)?;
        let mut tx = self.db.pool.begin().await?;
        let previous: Option<String> =
            sqlx::query("SELECT role FROM members WHERE org = $1 AND name = $2")
                .bind(org)
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?
                .map(|r| r.try_get(0))
                .transpose()?;
        sqlx::query(
            "INSERT INTO members (org, name, role, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (org, name) DO UPDATE SET role = $3",
        )
        .bind(org)
        .bind(name)
        .bind(role.as_str())
        .bind(now_secs())
        .execute(&mut *tx)
        .await?;
        keep_an_admin(&mut tx, org).await?;
        audit
            .record(
                &mut tx,
                &format!("member {name}"),
                serde_json::json!({ "role": role, "previousRole": previous }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }

    /// Removes member `name`: its tokens are revoked and it leaves its
    /// teams.
    pub async fn remove_member(
        &self,
        org: &str,
        name: &str,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let done = sqlx::query("DELETE FROM members WHERE org = $1 AND name = $2")
            .bind(org)
            .bind(name)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(ApiError::not_found(
                "member_not_found",
                format!("no member {name}"),
            ));
        }
        keep_an_admin(&mut tx, org).await?;
        let revoked = sqlx::query(
            "UPDATE tokens SET revoked_at = $1 WHERE org = $2 AND member = $3 AND revoked_at IS NULL",
        )
        .bind(now_secs())
        .bind(org)
        .bind(name)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "DELETE FROM team_members WHERE member = $1
             AND team_id IN (SELECT id FROM teams WHERE org = $2)",
        )
        .bind(name)
        .bind(org)
        .execute(&mut *tx)
        .await?;
        audit
            .record(
                &mut tx,
                &format!("member {name}"),
                serde_json::json!({ "tokensRevoked": revoked.rows_affected() }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }

    pub async fn list_teams(&self, org: &str) -> Result<Vec<TeamInfo>, ApiError> {
        let teams = sqlx::query("SELECT id, name FROM teams WHERE org = $1 ORDER BY name")
            .bind(org)
            .fetch_all(&self.db.pool)
            .await?;
        let mut out = Vec::with_capacity(teams.len());
        for t in &teams {
            let id: String = t.try_get(0)?;
            let members =
                sqlx::query("SELECT member FROM team_members WHERE team_id = $1 ORDER BY member")
                    .bind(&id)
                    .fetch_all(&self.db.pool)
                    .await?
                    .iter()
                    .map(|r| r.try_get(0))
                    .collect::<Result<_, _>>()?;
            let stacks = sqlx::query(
                "SELECT project, name FROM stacks WHERE team_id = $1 ORDER BY project, name",
            )
            .bind(&id)
            .fetch_all(&self.db.pool)
            .await?
            .iter()
            .map(|r| {
                Ok(format!(
                    "{}/{}",
                    r.try_get::<String, _>(0)?,
                    r.try_get::<String, _>(1)?
                ))
            })
            .collect::<Result<_, sqlx::Error>>()?;
            out.push(TeamInfo {
                name: t.try_get(1)?,
                members,
                stacks,
            });
        }
        Ok(out)
    }

    /// Creates team `name` or replaces its members (each must be a
    /// member of the organization).
    pub async fn set_team(
        &self,
        org: &str,
        name: &str,
        members: &BTreeSet<String>,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        check_name("team", name)?;
        let mut tx = self.db.pool.begin().await?;
        for m in members {
            let known = sqlx::query("SELECT 1 FROM members WHERE org = $1 AND name = $2")
                .bind(org)
                .bind(m)
                .fetch_optional(&mut *tx)
                .await?;
            if known.is_none() {
                return Err(ApiError::bad_request(
                    "member_not_found",
                    format!("{m} is not a member of organization {org}; add it first"),
                ));
            }
        }
        sqlx::query(
            "INSERT INTO teams (id, org, name, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (org, name) DO NOTHING",
        )
        .bind(uuid::Uuid::new_v4().to_string())
        .bind(org)
        .bind(name)
        .bind(now_secs())
        .execute(&mut *tx)
        .await?;
        let id: String = sqlx::query("SELECT id FROM teams WHERE org = $1 AND name = $2")
            .bind(org)
            .bind(name)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        sqlx::query("DELETE FROM team_members WHERE team_id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        for m in members {
            sqlx::query("INSERT INTO team_members (team_id, member) VALUES ($1, $2)")
                .bind(&id)
                .bind(m)
                .execute(&mut *tx)
                .await?;
        }
        audit
            .record(
                &mut tx,
                &format!("team {name}"),
                serde_json::json!({ "members": members }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }

    /// Deletes team `name`: its stacks are no team's any more, and tokens
    /// scoped to it reach nothing.
    pub async fn delete_team(&self, org: &str, name: &str, audit: &Audit) -> Result<(), ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let row = sqlx::query("DELETE FROM teams WHERE org = $1 AND name = $2 RETURNING id")
            .bind(org)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| ApiError::not_found("team_not_found", format!("no team {name}")))?;
        let id: String = row.try_get(0)?;
        sqlx::query("DELETE FROM team_members WHERE team_id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE stacks SET team_id = NULL WHERE team_id = $1")
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        audit
            .record(&mut tx, &format!("team {name}"), serde_json::json!({}))
            .await?;
        super::commit(tx).await?;
        Ok(())
    }

    /// Gives `stack` to team `team` (None: to no team).
    pub async fn set_stack_team(
        &self,
        stack: &StackRef,
        team: Option<&str>,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        let team_id = match team {
            Some(name) => Some(self.team_id(&stack.organization, name).await?),
            None => None,
        };
        let mut tx = self.db.pool.begin().await?;
        let id = stack_id(&mut tx, stack).await?;
        sqlx::query("UPDATE stacks SET team_id = $1 WHERE id = $2")
            .bind(&team_id)
            .bind(&id)
            .execute(&mut *tx)
            .await?;
        audit
            .record(
                &mut tx,
                &format!("stack {stack}"),
                serde_json::json!({ "team": team }),
            )
            .await?;
        super::commit(tx).await?;
        Ok(())
    }
}

/// 409 if `org` would be left without an admin.
async fn keep_an_admin(conn: &mut sqlx::AnyConnection, org: &str) -> Result<(), ApiError> {
    let admins: i64 = sqlx::query("SELECT COUNT(*) FROM members WHERE org = $1 AND role = 'admin'")
        .bind(org)
        .fetch_one(&mut *conn)
        .await?
        .try_get(0)?;
    if admins == 0 {
        return Err(ApiError::conflict(
            "last_admin",
            format!("organization {org} must keep at least one admin"),
        ));
    }
    Ok(())
}

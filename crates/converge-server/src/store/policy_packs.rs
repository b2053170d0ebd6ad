//! Policy packs an organization publishes (each version an archive of the
//! pack's directory, named by its SHA-256) and requires of every update,
//! and the policy report each update's client sends when it ends.

use serde::Serialize;
use sqlx::{AnyConnection, Row};

use super::{now_secs, rfc3339_of, sha256_hex, Audit, Store};
use crate::error::ApiError;

/// One published version of a pack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackVersion {
    pub name: String,
    pub version: String,
    /// `sha256:<hex>` of the archive.
    pub digest: String,
    pub size: i64,
    #[serde(rename = "publishedAt")]
    pub published_at: String,
    /// Whether the organization requires this version.
    pub required: bool,
}

/// A pack the organization requires, with its configuration.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct RequiredPack {
    pub name: String,
    pub version: String,
    pub digest: String,
    /// The `--policy-pack-config` JSON of the pack, if one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

/// What publishing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// A new version.
    Created,
    /// The same bytes were published before: nothing changed.
    Unchanged,
}

/// The digest of an archive, as packs are named by it.
pub fn archive_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

fn no_version(org: &str, name: &str, version: &str) -> ApiError {
    ApiError::not_found(
        "policy_pack_not_found",
        format!("organization {org} has no policy pack {name} version {version}"),
    )
}

impl Store {
    /// Stores version `version` of pack `name`. The same bytes again change
    /// nothing; different bytes under a published version are refused
    /// (409): a version, once published, means one pack.
    pub async fn publish_policy_pack(
        &self,
        org: &str,
        name: &str,
        version: &str,
        archive: &[u8],
        audit: &Audit,
    ) -> Result<(PackVersion, Published), ApiError> {
        let digest = archive_digest(archive);
        let mut tx = self.db.pool.begin().await?;
        let existing = sqlx::query(
            "SELECT digest FROM policy_packs WHERE org = $1 AND name = $2 AND version = $3",
        )
        .bind(org)
        .bind(name)
        .bind(version)
        .fetch_optional(&mut *tx)
        .await?;
        let outcome = match existing {
            Some(row) => {
                let stored: String = row.try_get(0)?;
                if stored != digest {
                    return Err(ApiError::conflict(
                        "policy_pack_version_exists",
                        format!(
                            "policy pack {name} version {version} is already published with \
                             other contents ({stored}); publish the changed pack under a new \
                             version"
                        ),
                    ));
                }
                Published::Unchanged
            }
            None => {
                let inserted = sqlx::query(
                    "INSERT INTO policy_packs (org, name, version, digest, size, archive, published_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
                )
                .bind(org)
                .bind(name)
                .bind(version)
                .bind(&digest)
                .bind(i64::try_from(archive.len()).unwrap_or(i64::MAX))
                .bind(archive.to_vec())
                .bind(now_secs())
                .execute(&mut *tx)
                .await?;
                if inserted.rows_affected() == 0 {
                    return Err(ApiError::conflict(
                        "policy_pack_version_exists",
                        format!(
                            "policy pack {name} version {version} was published at the same \
                             time by another request; list the packs and try again"
                        ),
                    ));
                }
                audit
                    .record(
                        &mut tx,
                        &format!("policy pack {name}@{version}"),
                        serde_json::json!({ "digest": digest, "size": archive.len() }),
                    )
                    .await?;
                Published::Created
            }
        };
        super::commit(tx).await?;
        let version = self
            .list_policy_packs(org)
            .await?
            .into_iter()
            .find(|v| v.name == name && v.version == version)
            .ok_or_else(|| no_version(org, name, version))?;
        Ok((version, outcome))
    }

    /// Every published version of every pack, by name then publication.
    pub async fn list_policy_packs(&self, org: &str) -> Result<Vec<PackVersion>, ApiError> {
        let rows = sqlx::query(
            "SELECT p.name, p.version, p.digest, p.size, p.published_at, r.version
             FROM policy_packs p
             LEFT JOIN policy_requirements r
                ON r.org = p.org AND r.name = p.name AND r.version = p.version
             WHERE p.org = $1 ORDER BY p.name, p.published_at, p.version",
        )
        .bind(org)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let required: Option<String> = r.try_get(5)?;
                Ok(PackVersion {
                    name: r.try_get(0)?,
                    version: r.try_get(1)?,
                    digest: r.try_get(2)?,
                    size: r.try_get(3)?,
                    published_at: rfc3339_of(r.try_get(4)?),
                    required: required.is_some(),
                })
            })
            .collect()
    }

    /// A version's archive and digest; 404 if it was never published.
    pub async fn policy_pack_archive(
        &self,
        org: &str,
        name: &str,
        version: &str,
    ) -> Result<(String, Vec<u8>), ApiError> {
        let row = sqlx::query(
            "SELECT digest, archive FROM policy_packs WHERE org = $1 AND name = $2 AND version = $3",
        )
        .bind(org)
        .bind(name)
        .bind(version)
        .fetch_optional(&self.db.pool)
        .await?
        .ok_or_else(|| no_version(org, name, version))?;
        Ok((row.try_get(0)?, row.try_get(1)?))
    }

    /// Deletes a version; 409 while the organization requires it.
    pub async fn delete_policy_pack(
        &self,
        org: &str,
        name: &str,
        version: &str,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let required = sqlx::query(
            "SELECT 1 FROM policy_requirements WHERE org = $1 AND name = $2 AND version = $3",
        )
        .bind(org)
        .bind(name)
        .bind(version)
        .fetch_optional(&mut *tx)
        .await?;
        if required.is_some() {
            return Err(ApiError::conflict(
                "policy_pack_required",
                format!(
                    "organization {org} requires policy pack {name} version {version}; \
                     disable it before deleting it"
                ),
            ));
        }
        let deleted =
            sqlx::query("DELETE FROM policy_packs WHERE org = $1 AND name = $2 AND version = $3")
                .bind(org)
                .bind(name)
                .bind(version)
                .execute(&mut *tx)
                .await?;
        if deleted.rows_affected() == 0 {
            return Err(no_version(org, name, version));
        }
        audit
            .record(
                &mut tx,
                &format!("policy pack {name}@{version}"),
                serde_json::json!({}),
            )
            .await?;
        super::commit(tx).await
    }

    /// Makes `version` of pack `name` required of every update in the
    /// organization (replacing another version of the same pack), with
    /// `config` (the pack's `--policy-pack-config` JSON object).
    pub async fn require_policy_pack(
        &self,
        org: &str,
        name: &str,
        version: &str,
        config: Option<&serde_json::Value>,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        if config.is_some_and(|c| !c.is_object()) {
            return Err(ApiError::bad_request(
                "bad_policy_config",
                "a policy pack's config is a JSON object of policy names to settings",
            ));
        }
        let mut tx = self.db.pool.begin().await?;
        let published = sqlx::query(
            "SELECT digest FROM policy_packs WHERE org = $1 AND name = $2 AND version = $3",
        )
        .bind(org)
        .bind(name)
        .bind(version)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(published) = published else {
            return Err(no_version(org, name, version));
        };
        let digest: String = published.try_get(0)?;
        sqlx::query("DELETE FROM policy_requirements WHERE org = $1 AND name = $2")
            .bind(org)
            .bind(name)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO policy_requirements (org, name, version, config, enabled_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(org)
        .bind(name)
        .bind(version)
        .bind(config.map(ToString::to_string))
        .bind(now_secs())
        .execute(&mut *tx)
        .await?;
        audit
            .record(
                &mut tx,
                &format!("policy pack {name}@{version}"),
                serde_json::json!({ "digest": digest, "configured": config.is_some() }),
            )
            .await?;
        super::commit(tx).await
    }

    /// Stops requiring pack `name`; 404 if it was not required.
    pub async fn unrequire_policy_pack(
        &self,
        org: &str,
        name: &str,
        audit: &Audit,
    ) -> Result<(), ApiError> {
        let mut tx = self.db.pool.begin().await?;
        let deleted = sqlx::query("DELETE FROM policy_requirements WHERE org = $1 AND name = $2")
            .bind(org)
            .bind(name)
            .execute(&mut *tx)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(ApiError::not_found(
                "policy_pack_not_required",
                format!("organization {org} does not require a policy pack named {name}"),
            ));
        }
        audit
            .record(
                &mut tx,
                &format!("policy pack {name}"),
                serde_json::json!({}),
            )
            .await?;
        super::commit(tx).await
    }

    /// The packs the organization requires, by name.
    pub async fn required_policy_packs(&self, org: &str) -> Result<Vec<RequiredPack>, ApiError> {
        let mut conn = self.db.pool.acquire().await?;
        required(&mut conn, org).await
    }

    /// The policy record of an update: what it was required to run and
    /// what its client reported (`None` before it ended).
    pub async fn update_policy(
        &self,
        stack: &converge_backend::StackRef,
        update_id: &str,
    ) -> Result<Option<UpdatePolicy>, ApiError> {
        let row = sqlx::query(
            "SELECT p.required, p.report FROM update_policies p
             JOIN updates u ON u.id = p.update_id
             WHERE p.update_id = $1 AND u.stack_key = $2",
        )
        .bind(update_id)
        .bind(stack.to_string())
        .fetch_optional(&self.db.pool)
        .await?;
        row.map(|r| {
            let required: String = r.try_get(0)?;
            let report: Option<String> = r.try_get(1)?;
            Ok(UpdatePolicy {
                required: serde_json::from_str(&required).unwrap_or_default(),
                report: report.and_then(|t| serde_json::from_str(&t).ok()),
            })
        })
        .transpose()
    }
}

/// An update's policy report, for the console.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateReport {
    pub update_id: String,
    /// `org/project/stack`.
    pub stack: String,
    /// RFC 3339.
    pub started_at: String,
    pub report: serde_json::Value,
}

impl Store {
    /// The reports of the organization's `limit` most recent updates that
    /// sent one, newest first.
    pub async fn recent_policy_reports(
        &self,
        org: &str,
        limit: i64,
    ) -> Result<Vec<UpdateReport>, ApiError> {
        let rows = sqlx::query(
            "SELECT u.id, u.stack_key, u.started_at, p.report FROM update_policies p
             JOIN updates u ON u.id = p.update_id
             JOIN stacks s ON s.org || '/' || s.project || '/' || s.name = u.stack_key
             WHERE p.report IS NOT NULL AND s.org = $1
             ORDER BY u.started_at DESC, u.id LIMIT $2",
        )
        .bind(org)
        .bind(limit)
        .fetch_all(&self.db.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let report: String = r.try_get(3)?;
                Ok(UpdateReport {
                    update_id: r.try_get(0)?,
                    stack: r.try_get(1)?,
                    started_at: rfc3339_of(r.try_get(2)?),
                    report: serde_json::from_str(&report).unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// What an update was required to run, and what its client reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UpdatePolicy {
    pub required: Vec<RequiredPack>,
    pub report: Option<serde_json::Value>,
}

pub(super) async fn required(
    conn: &mut AnyConnection,
    org: &str,
) -> Result<Vec<RequiredPack>, ApiError> {
    let rows = sqlx::query(
        "SELECT r.name, r.version, p.digest, r.config FROM policy_requirements r
         JOIN policy_packs p ON p.org = r.org AND p.name = r.name AND p.version = r.version
         WHERE r.org = $1 ORDER BY r.name",
    )
    .bind(org)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|r| {
            let config: Option<String> = r.try_get(3)?;
            Ok(RequiredPack {
                name: r.try_get(0)?,
                version: r.try_get(1)?,
                digest: r.try_get(2)?,
                config: config.and_then(|c| serde_json::from_str(&c).ok()),
            })
        })
        .collect()
}

/// Records what an update starting now is required to run.
pub(super) async fn record_required(
    conn: &mut AnyConnection,
    update_id: &str,
    required: &[RequiredPack],
) -> Result<(), ApiError> {
    let text = serde_json::to_string(required).map_err(|e| ApiError::internal(e.to_string()))?;
    sqlx::query("INSERT INTO update_policies (update_id, required, report) VALUES ($1, $2, NULL)")
        .bind(update_id)
        .bind(text)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Checks, as an update ends with `status`, the client's `report` against
/// what the update was required to run, and stores it. A succeeded
/// update must report every required pack by digest; a failed one may
/// end without a report.
pub(super) async fn check_and_store_report(
    conn: &mut AnyConnection,
    update_id: &str,
    status: &str,
    report: Option<&serde_json::Value>,
) -> Result<(), ApiError> {
    let row = sqlx::query("SELECT required FROM update_policies WHERE update_id = $1")
        .bind(update_id)
        .fetch_optional(&mut *conn)
        .await?;
    let required: Vec<RequiredPack> = match row {
        Some(r) => serde_json::from_str(&r.try_get::<String, _>(0)?).unwrap_or_default(),
        None => Vec::new(),
    };
    if status == "succeeded" {
        let ran: Vec<&str> = report
            .and_then(|r| r.get("packs"))
            .and_then(serde_json::Value::as_array)
            .map(|packs| {
                packs
                    .iter()
                    .filter_map(|p| p.get("digest").and_then(serde_json::Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let missing: Vec<String> = required
            .iter()
            .filter(|r| !ran.contains(&r.digest.as_str()))
            .map(|r| format!("{}@{} ({})", r.name, r.version, r.digest))
            .collect();
        if !missing.is_empty() {
            return Err(ApiError::conflict(
                "policy_report_missing",
                format!(
                    "the update cannot succeed: its client did not report running the \
                     organization's required policy packs {}; run it with a Converge client, \
                     which runs them",
                    missing.join(", ")
                ),
            ));
        }
    }
    if let Some(report) = report {
        sqlx::query(
            "INSERT INTO update_policies (update_id, required, report) VALUES ($1, '[]', $2)
             ON CONFLICT (update_id) DO UPDATE SET report = $2",
        )
        .bind(update_id)
        .bind(report.to_string())
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The kind of an update that edits a stack's state without running its
/// program (the CLI's `state` commands, `stack rm`, renames, transfers):
/// no analyzer runs in it, so no policy pack is required of it.
pub const STATE_EDIT_KIND: &str = "edit";

/// Refuses an update that starts without saying it runs every pack the
/// organization requires (`declared`: the digests its client runs).
pub(super) fn check_declared(
    org: &str,
    required: &[RequiredPack],
    declared: &[String],
) -> Result<(), ApiError> {
    let missing: Vec<String> = required
        .iter()
        .filter(|r| !declared.contains(&r.digest))
        .map(|r| format!("{}@{} ({})", r.name, r.version, r.digest))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError::conflict(
        "policy_packs_required",
        format!(
            "organization {org} requires every update to run the policy packs {}, and this \
             update's client did not say it runs them; update with a Converge client (it \
             downloads and runs the organization's packs)",
            missing.join(", ")
        ),
    ))
}

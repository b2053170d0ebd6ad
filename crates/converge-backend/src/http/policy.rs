//! The organization's policy packs on a state service: publishing,
//! requiring and listing them, and what an update must run.
//!
//! An update starts by saying which packs it runs (each named by its
//! archive's digest): the service refuses to start one that does not
//! include every pack the organization requires. When it ends, the update
//! sends a report of the packs it ran and their violations, without which
//! the service does not let it end as succeeded.

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::client::{Idempotence, Request};
use super::{lock_map, HttpBackend};
use crate::error::Result;
use crate::name::StackRef;

/// A pack the organization requires of every update.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequiredPolicyPack {
    pub name: String,
    pub version: String,
    /// `sha256:<hex>` of its archive.
    pub digest: String,
    /// Its `--policy-pack-config` JSON, if the organization gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

/// One published version of a pack.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PublishedPolicyPack {
    pub name: String,
    pub version: String,
    pub digest: String,
    pub size: i64,
    #[serde(rename = "publishedAt")]
    pub published_at: String,
    pub required: bool,
}

/// A pack an update runs, named by its archive's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyPackRun {
    pub name: String,
    pub version: String,
    pub digest: String,
}

/// A violation an update's packs reported, as the service stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportedViolation {
    #[serde(rename = "packName")]
    pub pack_name: String,
    #[serde(rename = "packVersion")]
    pub pack_version: String,
    #[serde(rename = "policyName")]
    pub policy_name: String,
    #[serde(rename = "enforcementLevel")]
    pub enforcement_level: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub urn: Option<String>,
    pub message: String,
}

/// What an update says of its policy packs: the packs it runs (sent when
/// it starts) and the violations they reported (sent when it ends).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PolicyRunReport {
    pub packs: Vec<PolicyPackRun>,
    pub violations: Vec<ReportedViolation>,
}

#[derive(Deserialize)]
struct RequiredJson {
    #[serde(rename = "requiredPolicyPacks")]
    required: Vec<RequiredPolicyPack>,
}

#[derive(Deserialize)]
struct ListJson {
    #[serde(rename = "policyPacks")]
    packs: Vec<PublishedPolicyPack>,
}

impl HttpBackend {
    fn packs_path(&self) -> String {
        format!("/api/orgs/{}/policypacks", self.inner.organization)
    }

    async fn call(&self, request: Request) -> Result<super::client::Reply> {
        let reply = self.inner.send(request).await?;
        if reply.ok() {
            Ok(reply)
        } else {
            Err(self.inner.service_error(reply.status, reply.failure()))
        }
    }

    /// The packs the organization requires of every update.
    pub async fn required_policy_packs(&self) -> Result<Vec<RequiredPolicyPack>> {
        let request = Request::new(
            Method::GET,
            format!("{}/required", self.packs_path()),
            Idempotence::Idempotent,
        );
        let reply = self.call(request).await?;
        Ok(reply.json::<RequiredJson>(&self.inner.url)?.required)
    }

    /// A published version's archive (a gzipped tar of the pack).
    pub async fn download_policy_pack(&self, name: &str, version: &str) -> Result<Vec<u8>> {
        let request = Request::new(
            Method::GET,
            format!("{}/{name}/versions/{version}", self.packs_path()),
            Idempotence::Idempotent,
        );
        Ok(self.call(request).await?.bytes)
    }

    /// Publishes `archive` as `version` of pack `name`.
    pub async fn publish_policy_pack(
        &self,
        name: &str,
        version: &str,
        archive: Vec<u8>,
    ) -> Result<PublishedPolicyPack> {
        let request = Request::new(Method::POST, self.packs_path(), Idempotence::Idempotent)
            .query("name", name.to_owned())
            .query("version", version.to_owned())
            .bytes(archive);
        let reply = self.call(request).await?;
        reply.json(&self.inner.url)
    }

    /// Every published version of the organization's packs.
    pub async fn list_policy_packs(&self) -> Result<Vec<PublishedPolicyPack>> {
        let request = Request::new(Method::GET, self.packs_path(), Idempotence::Idempotent);
        let reply = self.call(request).await?;
        Ok(reply.json::<ListJson>(&self.inner.url)?.packs)
    }

    /// Requires `version` of pack `name` of every update, with `config`.
    pub async fn enable_policy_pack(
        &self,
        name: &str,
        version: &str,
        config: Option<serde_json::Value>,
    ) -> Result<()> {
        let mut body = json!({ "version": version });
        if let Some(config) = config {
            body["config"] = config;
        }
        let request = Request::new(
            Method::PUT,
            format!("{}/{name}/required", self.packs_path()),
            Idempotence::Idempotent,
        )
        .json(body);
        self.call(request).await.map(|_| ())
    }

    /// Stops requiring pack `name`.
    pub async fn disable_policy_pack(&self, name: &str) -> Result<()> {
        let request = Request::new(
            Method::DELETE,
            format!("{}/{name}/required", self.packs_path()),
            Idempotence::Idempotent,
        );
        self.call(request).await.map(|_| ())
    }

    /// Says that the next lock of `stack` is for a state edit: no program
    /// runs and no analyzer judges anything, so the start of that update
    /// is not refused for the organization's required policy packs.
    pub fn declare_state_edit(&self, stack: &StackRef) {
        let stack = self.inner.qualify(stack);
        lock_map(&self.inner.state_edits).insert(stack);
    }

    /// Sets what the next update of `stack` says of its policy packs:
    /// the packs, when it starts; the violations too, when it ends.
    pub fn set_policy_report(&self, stack: &StackRef, report: PolicyRunReport) {
        let stack = self.inner.qualify(stack);
        lock_map(&self.inner.policy_reports).insert(stack, report);
    }
}

impl super::Inner {
    /// What the update of `stack` says of its policy packs, if anything.
    pub(super) fn policy_report(&self, stack: &StackRef) -> Option<PolicyRunReport> {
        lock_map(&self.policy_reports).get(stack).cloned()
    }

    /// The kind the next lock of `stack` starts: `edit` when the command
    /// said it edits the state without running a program (no analyzer
    /// runs, so the organization's packs are not asked for), else
    /// `update`.
    pub(super) fn lock_kind(&self, stack: &StackRef) -> &'static str {
        if lock_map(&self.state_edits).contains(stack) {
            STATE_EDIT_KIND
        } else {
            "update"
        }
    }
}

/// The update kind of a lock taken to edit a stack's state (`state`
/// commands, `stack rm`, `rename`, `change-secrets-provider`, transfers):
/// the state service does not require the organization's policy packs of
/// it.
pub const STATE_EDIT_KIND: &str = "edit";

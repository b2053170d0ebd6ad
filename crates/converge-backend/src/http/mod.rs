//! The HTTP backend: stacks kept by a Converge state service
//! (`converge serve`), reached at `http://host:port` with an access token.
//!
//! - [`StackStore`] and [`HistoryStore`] map to the service's stack,
//!   checkpoint and history routes; checkpoints travel as raw bytes.
//! - [`StackLocker`]: a lock is an update lease, renewed by a background
//!   heartbeat and ended (the update completed) on release. While this
//!   backend holds a stack's lease, every write to that stack carries it,
//!   and the service refuses writes from anyone else.
//! - [`JournalStore`]: a journal belongs to an update; appends are
//!   `POST …/update/{id}/journalentries` with sequence IDs this backend
//!   assigns, so a retried append is never stored twice.
//!
//! Transient failures (connection errors, 5xx, 429) are retried with
//! backoff ([`RetryPolicy`]); requests that are not idempotent are retried
//! only when the service certainly did not process them.
//!
//! `https://` services are reached over TLS (rustls, which the object-store
//! backends already build; certificates checked against the platform's
//! roots).

mod client;
mod journal;
mod lease;
mod policy;
mod tags;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine as _;
use bytes::Bytes;
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::json;

pub use client::RetryPolicy;
pub use policy::{
    PolicyPackRun, PolicyRunReport, PublishedPolicyPack, ReportedViolation, RequiredPolicyPack,
};

use self::client::{stack_path, Idempotence, LeaseCredential, Request};
use crate::capabilities::{
    Backend, HistoryEntry, HistoryStore, ListHistoryOptions, ListStacksOptions, RemoveOptions,
    SaveOptions, StackStore, StackSummary, UpdateKind,
};
use crate::error::{BackendError, Result};
use crate::name::{validate_project_name, StackRef};

/// How to reach a state service.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpBackendOptions {
    /// `http://host:port`, without a trailing path.
    pub url: String,
    /// The access token (`Authorization: token …`).
    pub token: String,
    /// The token's organization: where unqualified stack names live.
    pub organization: String,
    pub retry: RetryPolicy,
}

impl fmt::Debug for HttpBackendOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpBackendOptions")
            .field("url", &self.url)
            .field("token", &"[secret]")
            .field("organization", &self.organization)
            .field("retry", &self.retry)
            .finish()
    }
}

/// Who a token is, as the service says.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenIdentity {
    pub organization: String,
    #[serde(rename = "tokenName")]
    pub token_name: String,
    pub admin: bool,
}

/// A backend on a Converge state service.
#[derive(Debug, Clone)]
pub struct HttpBackend {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    url: String,
    token: String,
    organization: String,
    retry: RetryPolicy,
    client: reqwest::Client,
    /// The leases this backend holds, by stack: its writes carry them.
    leases: Mutex<HashMap<StackRef, LeaseCredential>>,
    /// The open journal of each stack this backend appends to.
    journals: Mutex<HashMap<StackRef, journal::Cursor>>,
    /// What each stack's update says of its policy packs.
    policy_reports: Mutex<HashMap<StackRef, PolicyRunReport>>,
    /// The stacks whose next lock is for a state edit (no analyzer runs).
    state_edits: Mutex<std::collections::HashSet<StackRef>>,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpBackend")
            .field("url", &self.url)
            .field("organization", &self.organization)
            .finish_non_exhaustive()
    }
}

/// Checks a service URL: `http(s)://host[:port]`, trailing slashes dropped.
pub fn normalize_service_url(url: &str) -> Result<String> {
    let invalid = |reason: &str| BackendError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("https://") {
        ("https", rest)
    } else if let Some(rest) = url.strip_prefix("http://") {
        ("http", rest)
    } else {
        return Err(invalid(
            "a state service URL starts with http:// or https://",
        ));
    };
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest.contains('/') || rest.contains('?') || rest.contains('#') {
        return Err(invalid("expected http(s)://HOST[:PORT] with no path"));
    }
    Ok(format!("{scheme}://{rest}"))
}

impl HttpBackend {
    /// A backend for `options`; no request is made yet.
    pub fn new(options: HttpBackendOptions) -> Result<HttpBackend> {
        let url = normalize_service_url(&options.url)?;
        crate::name::validate_organization_name(&options.organization)?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| BackendError::InvalidUrl {
                url: url.clone(),
                reason: format!("cannot create an HTTP client: {e}"),
            })?;
        Ok(HttpBackend {
            inner: Arc::new(Inner {
                url,
                token: options.token,
                organization: options.organization,
                retry: options.retry,
                client,
                leases: Mutex::new(HashMap::new()),
                journals: Mutex::new(HashMap::new()),
                policy_reports: Mutex::new(HashMap::new()),
                state_edits: Mutex::new(std::collections::HashSet::new()),
            }),
        })
    }

    /// Asks the service who `token` is (`GET /api/user`): checks the URL
    /// and the token, and learns the token's organization.
    pub async fn identify(url: &str, token: &str) -> Result<TokenIdentity> {
        let probe = HttpBackend::new(HttpBackendOptions {
            url: url.to_owned(),
            token: token.to_owned(),
            organization: crate::name::DIY_ORGANIZATION.to_owned(),
            retry: RetryPolicy::default(),
        })?;
        let inner = &probe.inner;
        let reply = inner
            .send(Request::new(
                Method::GET,
                "/api/user".to_owned(),
                Idempotence::Idempotent,
            ))
            .await?;
        if !reply.ok() {
            return Err(inner.service_error(reply.status, reply.failure()));
        }
        reply.json(&inner.url)
    }
}

impl Inner {
    /// The stack in this backend's organization when it names the DIY
    /// placeholder organization, which is what the CLI gives a stack name
    /// typed without one: unqualified names live in the token's
    /// organization, as on Pulumi Cloud.
    fn qualify(&self, stack: &StackRef) -> StackRef {
        if stack.organization == crate::name::DIY_ORGANIZATION {
            StackRef {
                organization: self.organization.clone(),
                ..stack.clone()
            }
        } else {
            stack.clone()
        }
    }

    fn lease_of(&self, stack: &StackRef) -> Option<LeaseCredential> {
        lock_map(&self.leases).get(stack).cloned()
    }

    /// A request about `stack`, carrying this backend's lease on it.
    fn stack_request(
        &self,
        method: Method,
        stack: &StackRef,
        suffix: &str,
        idempotence: Idempotence,
    ) -> Request {
        Request::new(
            method,
            format!("{}{suffix}", stack_path(stack)),
            idempotence,
        )
        .lease(self.lease_of(stack))
    }

    /// GETs a checkpoint; `flag` names a boolean query parameter set true.
    async fn load(
        &self,
        stack: &StackRef,
        suffix: &str,
        flag: Option<&'static str>,
    ) -> Result<Option<Vec<u8>>> {
        stack.validate()?;
        let stack = &self.qualify(stack);
        let mut request = self.stack_request(Method::GET, stack, suffix, Idempotence::Idempotent);
        if let Some(flag) = flag {
            request = request.query(flag, "true".to_owned());
        }
        let reply = self.send(request).await?;
        match reply.status {
            StatusCode::OK => Ok(Some(reply.bytes)),
            StatusCode::NO_CONTENT => Ok(None),
            _ => Err(self.error(stack, &reply)),
        }
    }
}

/// Locks a mutex, recovering from poisoning (the maps stay consistent:
/// every update is a single insert or remove).
fn lock_map<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[derive(Deserialize)]
struct StackListJson {
    stacks: Vec<StackJson>,
    /// The next page's token, while there may be more.
    #[serde(rename = "continuationToken", default)]
    continuation_token: Option<String>,
}

#[derive(Deserialize)]
struct StackJson {
    #[serde(rename = "orgName")]
    org: String,
    #[serde(rename = "projectName")]
    project: String,
    #[serde(rename = "stackName")]
    stack: String,
    #[serde(rename = "lastUpdate", default)]
    last_update: Option<i64>,
}

#[derive(Deserialize)]
struct HistoryListJson {
    updates: Vec<HistoryJson>,
    #[serde(rename = "continuationToken", default)]
    continuation_token: Option<String>,
}

#[derive(Deserialize)]
struct HistoryJson {
    kind: Option<String>,
    #[serde(rename = "recordedAt")]
    recorded_at: i64,
    record: String,
}

#[async_trait]
impl StackStore for HttpBackend {
    async fn create_stack(&self, stack: &StackRef, initial_checkpoint: &[u8]) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let body = json!({
            "stackName": stack.stack,
            "checkpoint": base64::engine::general_purpose::STANDARD.encode(initial_checkpoint),
        });
        let path = format!("/api/stacks/{}/{}", stack.organization, stack.project);
        let reply = inner
            .send(Request::new(Method::POST, path, Idempotence::Once).json(body))
            .await?;
        if reply.ok() {
            Ok(())
        } else {
            Err(inner.error(stack, &reply))
        }
    }

    /// Every page of the list.
    async fn list_stacks(&self, options: &ListStacksOptions) -> Result<Vec<StackSummary>> {
        let inner = &self.inner;
        if let Some(project) = &options.project {
            validate_project_name(project)?;
        }
        let mut stacks = Vec::new();
        let mut continuation: Option<String> = None;
        loop {
            let mut request = Request::new(
                Method::GET,
                format!("/api/stacks/{}", inner.organization),
                Idempotence::Idempotent,
            );
            if let Some(project) = &options.project {
                request = request.query("project", project.clone());
            }
            if let Some(token) = continuation.take() {
                request = request.query("continuationToken", token);
            }
            let reply = inner.send(request).await?;
            if !reply.ok() {
                return Err(inner.service_error(reply.status, reply.failure()));
            }
            let list: StackListJson = reply.json(&inner.url)?;
            stacks.extend(list.stacks.into_iter().map(|s| StackSummary {
                stack_ref: StackRef {
                    organization: s.org,
                    project: s.project,
                    stack: s.stack,
                },
                last_modified: s.last_update,
            }));
            match list.continuation_token {
                Some(token) => continuation = Some(token),
                None => return Ok(stacks),
            }
        }
    }

    async fn stack_exists(&self, stack: &StackRef) -> Result<bool> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let reply = inner
            .send(inner.stack_request(Method::GET, stack, "", Idempotence::Idempotent))
            .await?;
        match inner.error_unless_ok(stack, &reply) {
            Ok(()) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    async fn remove_stack(&self, stack: &StackRef, _options: &RemoveOptions) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let reply = inner
            .send(inner.stack_request(Method::DELETE, stack, "", Idempotence::Once))
            .await?;
        inner.error_unless_ok(stack, &reply)?;
        lock_map(&inner.journals).remove(stack);
        Ok(())
    }

    async fn load_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>> {
        // The stored bytes (the base of the next journal), not the
        // service's replay of an open journal.
        self.inner.load(stack, "/checkpoint", Some("base")).await
    }

    async fn load_previous_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>> {
        self.inner.load(stack, "/checkpoint/previous", None).await
    }

    async fn save_checkpoint(
        &self,
        stack: &StackRef,
        checkpoint: Bytes,
        options: &SaveOptions,
    ) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        // Idempotent: the service ignores a save of the bytes it already has.
        let request = inner
            .stack_request(Method::PUT, stack, "/checkpoint", Idempotence::Idempotent)
            .query("keepBackup", options.keep_backup.to_string())
            .bytes(checkpoint);
        let reply = inner.send(request).await?;
        inner.error_unless_ok(stack, &reply)
    }

    async fn rename_stack(&self, from: &StackRef, to: &StackRef, checkpoint: &[u8]) -> Result<()> {
        self.rename(from, to, checkpoint).await
    }
}

impl Inner {
    fn error_unless_ok(&self, stack: &StackRef, reply: &client::Reply) -> Result<()> {
        if reply.ok() {
            Ok(())
        } else {
            Err(self.error(stack, reply))
        }
    }
}

#[async_trait]
impl HistoryStore for HttpBackend {
    async fn add_history(&self, stack: &StackRef, kind: UpdateKind, record: &[u8]) -> Result<()> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let record =
            std::str::from_utf8(record).map_err(|_| BackendError::InvalidHistoryRecord {
                stack: stack.to_string(),
                reason: "it is not UTF-8 text".to_owned(),
            })?;
        // Under the update's lease the service acknowledges a record it
        // already holds, so the request may be sent again.
        let idempotence = if inner.lease_of(stack).is_some() {
            Idempotence::Idempotent
        } else {
            Idempotence::Once
        };
        let request = inner
            .stack_request(Method::POST, stack, "/history", idempotence)
            .json(json!({ "kind": kind.as_str(), "record": record }));
        let reply = inner.send(request).await?;
        inner.error_unless_ok(stack, &reply)
    }

    async fn list_history(
        &self,
        stack: &StackRef,
        options: &ListHistoryOptions,
    ) -> Result<Vec<HistoryEntry>> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let mut entries = Vec::new();
        let mut continuation: Option<String> = None;
        loop {
            let mut request =
                inner.stack_request(Method::GET, stack, "/history", Idempotence::Idempotent);
            if let Some(limit) = options.limit {
                let left = limit.saturating_sub(entries.len());
                request = request.query("limit", left.clamp(1, 1000).to_string());
            }
            if let Some(token) = continuation.take() {
                request = request.query("continuationToken", token);
            }
            let reply = inner.send(request).await?;
            inner.error_unless_ok(stack, &reply)?;
            let list: HistoryListJson = reply.json(&inner.url)?;
            entries.extend(list.updates.into_iter().map(|h| HistoryEntry {
                kind: h.kind.as_deref().map(UpdateKind::parse),
                recorded_at_unix_nanos: h.recorded_at,
                record: h.record.into_bytes(),
            }));
            let enough = options.limit.is_some_and(|l| entries.len() >= l);
            match list.continuation_token {
                Some(token) if !enough => continuation = Some(token),
                _ => {
                    if let Some(limit) = options.limit {
                        entries.truncate(limit);
                    }
                    return Ok(entries);
                }
            }
        }
    }
}

impl Backend for HttpBackend {
    fn url(&self) -> String {
        self.inner.url.clone()
    }

    fn default_organization(&self) -> String {
        self.inner.organization.clone()
    }

    fn as_service(&self) -> Option<&HttpBackend> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_urls_are_http_host_and_port_only() {
        assert_eq!(
            normalize_service_url("http://127.0.0.1:8080/").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            normalize_service_url("http://state").unwrap(),
            "http://state"
        );
        assert_eq!(
            normalize_service_url("https://state.example:8443/").unwrap(),
            "https://state.example:8443"
        );
        for bad in ["http://", "http://h/api", "http://h?x", "ftp://h", "h:80"] {
            assert!(normalize_service_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_token_never_appears_in_debug_output() {
        let options = HttpBackendOptions {
            url: "http://h:1".to_owned(),
            token: "cvg-secret".to_owned(),
            organization: "acme".to_owned(),
            retry: RetryPolicy::default(),
        };
        assert!(!format!("{options:?}").contains("cvg-secret"));
        let backend = HttpBackend::new(options).unwrap();
        assert!(!format!("{backend:?}").contains("cvg-secret"));
        assert_eq!(backend.default_organization(), "acme");
    }
}

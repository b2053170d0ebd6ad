//! The stack lock as an update lease, kept alive by a heartbeat.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use reqwest::Method;
use serde::Deserialize;
use serde_json::json;

use super::client::{Idempotence, LeaseCredential, Request};
use super::{lock_map, HttpBackend, Inner};
use crate::capabilities::StackLocker;
use crate::error::Result;
use crate::lock::{HeldLock, LockGuard, LockHandle, LockInfo};
use crate::name::StackRef;

#[derive(Deserialize)]
struct StartedJson {
    #[serde(rename = "updateID")]
    update_id: String,
    token: String,
    #[serde(rename = "leaseExpiresAt")]
    lease_expires_at: String,
}

#[derive(Deserialize)]
struct LocksJson {
    locks: Vec<LockJson>,
}

#[derive(Deserialize)]
struct LockJson {
    #[serde(rename = "updateID")]
    update_id: String,
    #[serde(rename = "lockInfo")]
    lock_info: LockInfo,
    #[serde(rename = "leaseExpiresAt")]
    lease_expires_at: String,
}

#[derive(Deserialize)]
struct BrokenJson {
    broken: usize,
}

/// The start of an update: with the policy packs it runs, if it said.
fn start_body(inner: &Inner, stack: &StackRef, info: &LockInfo) -> serde_json::Value {
    let mut body = json!({ "kind": inner.lock_kind(stack), "lockInfo": info });
    if let Some(report) = inner.policy_report(stack) {
        body["policyPacks"] = json!(report.packs);
    }
    body
}

/// The end of an update: succeeded, with its policy report, if any.
fn complete_body(inner: &Inner, stack: &StackRef) -> serde_json::Value {
    let mut body = json!({ "status": "succeeded" });
    if let Some(report) = inner.policy_report(stack) {
        body["policyReport"] = json!(report);
    }
    body
}

/// How often to renew a lease that expires at `expires_at`: a third of
/// the time left, at least 100 ms.
fn heartbeat_period(expires_at: &str) -> Duration {
    let left_ms =
        time::OffsetDateTime::parse(expires_at, &time::format_description::well_known::Rfc3339)
            .map(|t| (t - time::OffsetDateTime::now_utc()).whole_milliseconds())
            .unwrap_or(60_000);
    Duration::from_millis(u64::try_from(left_ms / 3).unwrap_or(0).max(100))
}

#[async_trait]
impl StackLocker for HttpBackend {
    async fn lock(&self, stack: &StackRef, info: LockInfo) -> Result<LockGuard> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let request = Request::new(
            Method::POST,
            format!("{}/updates", super::stack_path(stack)),
            Idempotence::Once,
        )
        .json(start_body(inner, stack, &info));
        let reply = inner.send(request).await?;
        inner.error_unless_ok(stack, &reply)?;
        let started: StartedJson = reply.json(&inner.url)?;
        let cred = LeaseCredential {
            update_id: started.update_id.clone(),
            token: started.token,
        };
        lock_map(&inner.leases).insert(stack.clone(), cred.clone());
        let heartbeat = tokio::spawn(heartbeat(
            Arc::clone(&self.inner),
            stack.clone(),
            cred.clone(),
            heartbeat_period(&started.lease_expires_at),
        ));
        let location = format!(
            "{}{}/update/{}",
            inner.url,
            super::stack_path(stack),
            started.update_id
        );
        let handle = LeaseHandle {
            inner: Arc::clone(&self.inner),
            stack: stack.clone(),
            cred,
            heartbeat,
        };
        Ok(LockGuard::new(
            stack.clone(),
            info,
            location,
            Box::new(handle),
        ))
    }

    async fn list_locks(&self, stack: &StackRef) -> Result<Vec<HeldLock>> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let reply = inner
            .send(inner.stack_request(Method::GET, stack, "/locks", Idempotence::Idempotent))
            .await?;
        inner.error_unless_ok(stack, &reply)?;
        let locks: LocksJson = reply.json(&inner.url)?;
        Ok(locks
            .locks
            .into_iter()
            .map(|l| HeldLock {
                info: l.lock_info,
                location: format!(
                    "{}{}/update/{} (lease until {})",
                    inner.url,
                    super::stack_path(stack),
                    l.update_id,
                    l.lease_expires_at
                ),
            })
            .collect())
    }

    async fn break_locks(&self, stack: &StackRef) -> Result<usize> {
        stack.validate()?;
        let stack = &self.inner.qualify(stack);
        let inner = &self.inner;
        let reply = inner
            .send(inner.stack_request(Method::DELETE, stack, "/locks", Idempotence::Idempotent))
            .await?;
        inner.error_unless_ok(stack, &reply)?;
        let broken: BrokenJson = reply.json(&inner.url)?;
        Ok(broken.broken)
    }
}

/// Renews the lease every `period` until aborted. A failed renewal is
/// retried at the next beat; a lost lease ends the heartbeat (the holder's
/// next write then fails with `lease_lost`).
async fn heartbeat(inner: Arc<Inner>, stack: StackRef, cred: LeaseCredential, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let request = Request::new(
            Method::POST,
            format!(
                "{}/update/{}/renew_lease",
                super::stack_path(&stack),
                cred.update_id
            ),
            Idempotence::Idempotent,
        )
        .lease(Some(cred.clone()));
        if let Ok(reply) = inner.send(request).await {
            if reply.status == reqwest::StatusCode::CONFLICT {
                return;
            }
        }
    }
}

#[derive(Debug)]
struct LeaseHandle {
    inner: Arc<Inner>,
    stack: StackRef,
    cred: LeaseCredential,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl LeaseHandle {
    fn forget(&self) {
        self.heartbeat.abort();
        let mut leases = lock_map(&self.inner.leases);
        if leases.get(&self.stack) == Some(&self.cred) {
            leases.remove(&self.stack);
        }
    }
}

async fn complete(inner: &Inner, stack: &StackRef, cred: &LeaseCredential) -> Result<()> {
    let request = Request::new(
        Method::POST,
        format!(
            "{}/update/{}/complete",
            super::stack_path(stack),
            cred.update_id
        ),
        Idempotence::Idempotent,
    )
    .lease(Some(cred.clone()))
    .json(complete_body(inner, stack));
    let reply = inner.send(request).await?;
    // A retried completion may find its first attempt already done.
    if reply.retried && reply.failure().code == "lease_lost" {
        return Ok(());
    }
    inner.error_unless_ok(stack, &reply)
}

#[async_trait]
impl LockHandle for LeaseHandle {
    async fn release(self: Box<Self>) -> Result<()> {
        self.forget();
        complete(&self.inner, &self.stack, &self.cred).await
    }

    fn release_on_drop(self: Box<Self>) {
        self.forget();
        // Drop cannot await, and the caller's runtime may be the thread we
        // are on: complete the update from a thread of its own with its own
        // runtime and client, and wait for it (at most a few seconds; if it
        // fails, the lease expires on its own).
        let url = format!(
            "{}{}/update/{}/complete",
            self.inner.url,
            super::stack_path(&self.stack),
            self.cred.update_id
        );
        let token = self.inner.token.clone();
        let lease = self.cred.token.clone();
        let body = complete_body(&self.inner, &self.stack).to_string();
        let (done, wait) = std::sync::mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("converge-lease-release".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                if let Ok(runtime) = runtime {
                    runtime.block_on(async move {
                        let client = reqwest::Client::builder()
                            .timeout(Duration::from_secs(5))
                            .build();
                        if let Ok(client) = client {
                            let _ = client
                                .post(&url)
                                .header("authorization", format!("token {token}"))
                                .header("x-converge-lease-token", lease)
                                .header("content-type", "application/json")
                                .body(body)
                                .send()
                                .await;
                        }
                    });
                }
                let _ = done.send(());
            });
        if spawned.is_ok() {
            let _ = wait.recv_timeout(Duration::from_secs(6));
        }
    }
}

//! Stack locks in a bucket: leases taken with a conditional create.
//!
//! The lease is `<lock_dir>/converge-lease.json`, in Pulumi's lock
//! directory, holding Pulumi's lock-file fields (pid, username, hostname,
//! timestamp) plus the lease's id and expiry. Taking it is a create-if-absent
//! PUT, so of two processes exactly one wins. Because it sits where Pulumi
//! looks for lock files, a Pulumi CLI sees the stack as locked; and a lock
//! file Pulumi wrote there (`<uuid>.json`) makes Converge refuse too.
//!
//! The holder renews the lease every third of its lifetime with a
//! conditional update on the ETag it last wrote: if somebody broke the
//! lease (`converge cancel`), the renewal fails and stops. A lease whose
//! expiry has passed (its holder died) is taken over with a conditional
//! update on the ETag read, so two processes taking over one dead lease
//! cannot both win; so is a lease of a process of this host that no
//! longer runs (as the file backend treats its lock files). Expiry compares wall clocks: keep the lease lifetime
//! well above the clock skew between machines.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};
use serde::{Deserialize, Serialize};

use crate::error::{BackendError, Result};
use crate::lock::{is_stale, HeldLock, LockFence, LockGuard, LockHandle, LockInfo};
use crate::name::StackRef;
use crate::object::Inner;

/// The lease object's name in the stack's lock directory.
pub(crate) const LEASE: &str = "converge-lease.json";

/// Leases this process released by dropping their guard, whose delete may
/// still be in flight: the next `lock` here may take them over at once.
static DROPPED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Held by a dropped guard's delete and by a take-over of a dropped lease,
/// so that the delete never removes the lease a take-over has just written
/// (a bucket has no conditional delete): whichever comes second sees the
/// lease's id gone from [`DROPPED`] and stands back.
static DROPPED_GATE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How many times `lock` tries again when the lease vanished under it.
const ATTEMPTS: usize = 5;

fn dropped() -> std::sync::MutexGuard<'static, Option<HashSet<String>>> {
    DROPPED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Waits, at most `within`, for the leases of dropped guards to be
/// deleted (each guard's release runs on a task of its own): for a
/// process about to exit after abandoning what held them.
pub async fn settle_dropped_locks(within: std::time::Duration) {
    let deadline = tokio::time::Instant::now() + within;
    while dropped().as_ref().is_some_and(|d| !d.is_empty())
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Lease {
    #[serde(flatten)]
    info: LockInfo,
    #[serde(rename = "convergeLease")]
    terms: Terms,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Terms {
    id: String,
    /// Seconds since the Unix epoch.
    #[serde(rename = "expiresAt")]
    expires_at: u64,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl Lease {
    fn new(info: LockInfo, id: String, ttl: Duration) -> Lease {
        Lease {
            info,
            terms: Terms {
                id,
                expires_at: now_secs() + ttl.as_secs().max(1),
            },
        }
    }

    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a lease serializes")
    }

    fn is_expired(&self) -> bool {
        now_secs() >= self.terms.expires_at
    }
}

fn locked(inner: &Inner, stack: &StackRef, key: &Path, holder: LockInfo) -> BackendError {
    BackendError::Locked {
        stack: stack.to_string(),
        holder: Box::new(holder),
        path: format!("{}/{key}", inner.url.trim_end_matches('/')),
    }
}

/// Every lock file in the stack's lock directory but the lease: Pulumi's.
async fn foreign_locks(inner: &Inner, dir: &Path) -> Result<Vec<(Path, LockInfo)>> {
    let mut out = Vec::new();
    for meta in inner.list(dir).await? {
        let name = meta.location.filename().unwrap_or_default();
        if name == LEASE || !name.ends_with(".json") {
            continue;
        }
        let Some(bytes) = inner.get_optional(&meta.location).await? else {
            continue;
        };
        let info = serde_json::from_slice(&bytes).unwrap_or_else(|_| LockInfo::unknown());
        out.push((meta.location, info));
    }
    Ok(out)
}

pub(crate) async fn lock(
    inner: &Arc<Inner>,
    stack: &StackRef,
    info: LockInfo,
) -> Result<LockGuard> {
    let keys = inner.keys.stack(stack)?;
    let key = keys.lock_dir.clone().join(LEASE);
    if let Some((path, holder)) = foreign_locks(inner, &keys.lock_dir)
        .await?
        .into_iter()
        .next()
    {
        return Err(locked(inner, stack, &path, holder));
    }
    let lease = Lease::new(
        info.clone(),
        uuid::Uuid::new_v4().to_string(),
        inner.options.lease_ttl,
    );
    let mut attempt = 0;
    let e_tag = loop {
        attempt += 1;
        match inner.create_tagged(&key, &lease.bytes()).await? {
            Some(e_tag) => break e_tag,
            None => match take_over(inner, &key, &lease).await? {
                TakeOver::Taken(e_tag) => break e_tag,
                TakeOver::Held(holder) => return Err(locked(inner, stack, &key, holder)),
                // Released between our create and now: create again.
                TakeOver::Vanished if attempt < ATTEMPTS => continue,
                TakeOver::Vanished => return Err(locked(inner, stack, &key, LockInfo::unknown())),
            },
        }
    };
    // A Pulumi lock file written meanwhile: Pulumi's protocol makes it
    // back off too, but be sure neither proceeds.
    if let Some((path, holder)) = foreign_locks(inner, &keys.lock_dir)
        .await?
        .into_iter()
        .next()
    {
        let _ = inner.delete_optional(&key).await;
        return Err(locked(inner, stack, &path, holder));
    }
    let heartbeat = tokio::spawn(renew(inner.clone(), key.clone(), lease.clone(), e_tag));
    let location = format!("{}/{key}", inner.url.trim_end_matches('/'));
    Ok(LockGuard::new(
        stack.clone(),
        info,
        location,
        Box::new(LeaseHandle {
            inner: inner.clone(),
            stack: stack.to_string(),
            key,
            id: lease.terms.id,
            heartbeat,
        }),
    ))
}

/// What became of an attempt to take over an existing lease.
enum TakeOver {
    /// It is ours now, with this ETag.
    Taken(Option<String>),
    /// Somebody holds it.
    Held(LockInfo),
    /// It was deleted meanwhile: the stack may be free.
    Vanished,
}

/// The lease exists: take it over if it expired, its holder is a process
/// of this host that no longer runs, or this process dropped it.
async fn take_over(inner: &Inner, key: &Path, lease: &Lease) -> Result<TakeOver> {
    let current = match inner.store.get(key).await {
        Ok(r) => r,
        Err(object_store::Error::NotFound { .. }) => return Ok(TakeOver::Vanished),
        Err(e) => return Err(inner.storage_error("read", key, e)),
    };
    let version = UpdateVersion {
        e_tag: current.meta.e_tag.clone(),
        version: current.meta.version.clone(),
    };
    let bytes = current
        .bytes()
        .await
        .map_err(|e| inner.storage_error("read", key, e))?;
    // Not a lease we can read: somebody wrote it; it is not ours to take.
    let Some(held) = serde_json::from_slice::<Lease>(&bytes).ok() else {
        return Ok(TakeOver::Held(LockInfo::unknown()));
    };
    let dropped_here = dropped()
        .as_ref()
        .is_some_and(|d| d.contains(&held.terms.id));
    // A lease this process dropped: claim it from its pending delete first.
    let _gate = match dropped_here {
        true => {
            let gate = DROPPED_GATE.lock().await;
            let claimed = dropped().as_mut().is_some_and(|d| d.remove(&held.terms.id));
            if !claimed {
                // Its delete ran first (we waited for it to end).
                return Ok(TakeOver::Vanished);
            }
            Some(gate)
        }
        false if held.is_expired() || is_stale(&held.info, &lease.info) => None,
        false => {
            // Held, unless it went meanwhile: a dropped lease's delete
            // unlists it only once the lease is gone, so a lease read
            // before that delete and no longer listed is gone by now.
            return match inner.store.head(key).await {
                Ok(meta) if meta.e_tag == version.e_tag => Ok(TakeOver::Held(held.info)),
                Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(TakeOver::Vanished),
                Err(e) => Err(inner.storage_error("read", key, e)),
            };
        }
    };
    let update = PutOptions {
        mode: PutMode::Update(version),
        ..PutOptions::default()
    };
    match inner
        .store
        .put_opts(key, PutPayload::from(lease.bytes()), update)
        .await
    {
        Ok(r) => Ok(TakeOver::Taken(r.e_tag)),
        Err(object_store::Error::NotFound { .. }) => Ok(TakeOver::Vanished),
        // Somebody else took it over first, or it was released and taken.
        Err(object_store::Error::Precondition { .. }) => {
            match inner
                .get_optional(key)
                .await?
                .map(|b| serde_json::from_slice::<Lease>(&b).ok())
            {
                None => Ok(TakeOver::Vanished),
                Some(now) => Ok(TakeOver::Held(
                    now.map_or_else(LockInfo::unknown, |l| l.info),
                )),
            }
        }
        Err(e) => Err(inner.storage_error("update", key, e)),
    }
}

/// Renews the lease until it is released or lost.
async fn renew(inner: Arc<Inner>, key: Path, mut lease: Lease, mut e_tag: Option<String>) {
    let every = (inner.options.lease_ttl / 3).max(Duration::from_millis(200));
    loop {
        tokio::time::sleep(every).await;
        lease.terms.expires_at = now_secs() + inner.options.lease_ttl.as_secs().max(1);
        let update = PutOptions {
            mode: PutMode::Update(UpdateVersion {
                e_tag: e_tag.clone(),
                version: None,
            }),
            ..PutOptions::default()
        };
        match inner
            .store
            .put_opts(&key, PutPayload::from(lease.bytes()), update)
            .await
        {
            Ok(r) => e_tag = r.e_tag,
            // Broken or taken over: the lease is lost; stop renewing.
            Err(_) => return,
        }
    }
}

pub(crate) async fn list(inner: &Inner, stack: &StackRef) -> Result<Vec<HeldLock>> {
    let keys = inner.keys.stack(stack)?;
    let mut out = Vec::new();
    for meta in inner.list(&keys.lock_dir).await? {
        let name = meta.location.filename().unwrap_or_default();
        if !name.ends_with(".json") {
            continue;
        }
        let Some(bytes) = inner.get_optional(&meta.location).await? else {
            continue;
        };
        let info = if name == LEASE {
            match serde_json::from_slice::<Lease>(&bytes) {
                // An expired lease holds nothing.
                Ok(l) if l.is_expired() => continue,
                Ok(l) => l.info,
                Err(_) => LockInfo::unknown(),
            }
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| LockInfo::unknown())
        };
        out.push(HeldLock {
            info,
            location: format!("{}/{}", inner.url.trim_end_matches('/'), meta.location),
        });
    }
    Ok(out)
}

#[derive(Debug)]
struct LeaseHandle {
    inner: Arc<Inner>,
    stack: String,
    key: Path,
    id: String,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl LeaseHandle {
    /// Deletes the lease if it is still ours.
    async fn delete_if_ours(inner: &Inner, key: &Path, id: &str) -> Result<()> {
        let ours = inner
            .get_optional(key)
            .await?
            .and_then(|b| serde_json::from_slice::<Lease>(&b).ok())
            .is_some_and(|l| l.terms.id == id);
        if ours {
            inner.delete_optional(key).await?;
        }
        Ok(())
    }
}

/// A lease is held while the lease object names it: `converge cancel`
/// deletes it, a take-over after expiry replaces it.
#[derive(Debug)]
struct LeaseFence {
    inner: Arc<Inner>,
    stack: String,
    key: Path,
    id: String,
}

#[async_trait]
impl LockFence for LeaseFence {
    async fn check(&self) -> Result<()> {
        let ours = self
            .inner
            .get_optional(&self.key)
            .await?
            .and_then(|b| serde_json::from_slice::<Lease>(&b).ok())
            .is_some_and(|l| l.terms.id == self.id);
        if ours {
            return Ok(());
        }
        Err(BackendError::LockLost {
            stack: self.stack.clone(),
            location: format!("{}/{}", self.inner.url.trim_end_matches('/'), self.key),
        })
    }
}

#[async_trait]
impl LockHandle for LeaseHandle {
    async fn release(self: Box<Self>) -> Result<()> {
        self.heartbeat.abort();
        LeaseHandle::delete_if_ours(&self.inner, &self.key, &self.id).await
    }

    fn fence(&self) -> Option<Arc<dyn LockFence>> {
        Some(Arc::new(LeaseFence {
            inner: self.inner.clone(),
            stack: self.stack.clone(),
            key: self.key.clone(),
            id: self.id.clone(),
        }))
    }

    fn release_on_drop(self: Box<Self>) {
        self.heartbeat.abort();
        dropped()
            .get_or_insert_with(HashSet::new)
            .insert(self.id.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                // Unless a take-over here claimed the lease first. The id
                // stays listed until the lease is gone, so that a take-over
                // meanwhile waits for the delete and then creates anew.
                let _gate = DROPPED_GATE.lock().await;
                let unclaimed = dropped().as_ref().is_some_and(|d| d.contains(&self.id));
                if unclaimed
                    && LeaseHandle::delete_if_ours(&self.inner, &self.key, &self.id)
                        .await
                        .is_ok()
                {
                    if let Some(d) = dropped().as_mut() {
                        d.remove(&self.id);
                    }
                }
            });
        }
    }
}

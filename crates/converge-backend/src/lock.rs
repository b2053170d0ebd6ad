//! Who holds a stack lock, and the guard that releases it.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::name::StackRef;

/// Who holds (or wants) a stack lock.
///
/// Serialized exactly as Pulumi's DIY lock file:
/// `{"pid":..,"username":"..","hostname":"..","timestamp":".."}`, where the
/// timestamp is RFC 3339.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    #[serde(default)]
    pub pid: u32,
    #[serde(default)]
    pub username: String,
    #[serde(default)]
    pub hostname: String,
    #[serde(default)]
    pub timestamp: String,
}

impl LockInfo {
    /// This process: its pid, the OS user, the host name and the time now.
    pub fn current() -> LockInfo {
        let username = whoami::username()
            .ok()
            .or_else(|| std::env::var("USER").ok())
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "unknown".to_owned());
        let hostname = whoami::hostname()
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_owned());
        LockInfo {
            pid: std::process::id(),
            username,
            hostname,
            timestamp: now_rfc3339(),
        }
    }

    /// A holder whose lock record could not be read.
    pub(crate) fn unknown() -> LockInfo {
        LockInfo {
            pid: 0,
            username: "unknown".to_owned(),
            hostname: "unknown".to_owned(),
            timestamp: "an unknown time".to_owned(),
        }
    }

    /// `user@host (pid N) since TIMESTAMP`, for messages.
    pub fn describe(&self) -> String {
        format!(
            "{}@{} (pid {}) since {}",
            self.username, self.hostname, self.pid, self.timestamp
        )
    }
}

/// True if `holder` is another process of this host (`me`'s) that still
/// runs. Only where `/proc` tells.
pub fn runs_here(holder: &LockInfo, me: &LockInfo) -> bool {
    Path::new("/proc/self").exists()
        && holder.hostname == me.hostname
        && holder.pid != 0
        && holder.pid != me.pid
        && Path::new(&format!("/proc/{}", holder.pid)).exists()
}

/// True if `holder` is a process of this host (`me`'s) that no longer
/// runs: its lock is stale and may be removed. Only where `/proc` tells.
pub(crate) fn is_stale(holder: &LockInfo, me: &LockInfo) -> bool {
    let procfs = Path::new("/proc/self").exists();
    procfs
        && holder.hostname == me.hostname
        && holder.pid != 0
        && holder.pid != me.pid
        && !Path::new(&format!("/proc/{}", holder.pid)).exists()
}

/// The current time as RFC 3339 in UTC.
pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// A lock that somebody holds, as listed by
/// [`StackLocker::list_locks`](crate::StackLocker::list_locks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldLock {
    pub info: LockInfo,
    /// Where the lock lives: a file path for the file backend.
    pub location: String,
}

/// How a backend releases one lock it granted. Backend implementors provide
/// this; users only see [`LockGuard`].
#[async_trait]
pub trait LockHandle: Send + Sync + fmt::Debug {
    /// Releases the lock.
    async fn release(self: Box<Self>) -> Result<()>;
    /// Releases the lock without awaiting, from `Drop`; errors are ignored.
    fn release_on_drop(self: Box<Self>);
    /// How a writer checks that the lock is still its own, where the store
    /// itself does not refuse a holder's writes once its lock was broken
    /// (a state service does: its writes carry the lease).
    fn fence(&self) -> Option<Arc<dyn LockFence>> {
        None
    }
}

/// Tells a writer whether the lock it was granted is still held: a lock
/// broken by `converge cancel` (or a lease taken over after it expired)
/// must stop its former holder before its next write, so that two writers
/// never interleave in one stack's journal or checkpoint.
#[async_trait]
pub trait LockFence: Send + Sync + fmt::Debug {
    /// `Err(BackendError::LockLost)` once the lock is not held any more.
    async fn check(&self) -> Result<()>;
}

/// A held stack lock. Release it with [`LockGuard::release`]; dropping the
/// guard releases it on a best-effort basis.
#[derive(Debug)]
#[must_use = "the stack lock is released as soon as the guard is dropped"]
pub struct LockGuard {
    stack: StackRef,
    info: LockInfo,
    location: String,
    handle: Option<Box<dyn LockHandle>>,
}

impl LockGuard {
    /// For backend implementations: wraps a granted lock.
    pub fn new(
        stack: StackRef,
        info: LockInfo,
        location: String,
        handle: Box<dyn LockHandle>,
    ) -> LockGuard {
        LockGuard {
            stack,
            info,
            location,
            handle: Some(handle),
        }
    }

    pub fn stack(&self) -> &StackRef {
        &self.stack
    }

    pub fn info(&self) -> &LockInfo {
        &self.info
    }

    /// Where the lock lives (the lock file path for the file backend).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The check a writer makes before each write under this lock, if the
    /// store needs one (see [`LockHandle::fence`]).
    pub fn fence(&self) -> Option<Arc<dyn LockFence>> {
        self.handle.as_ref().and_then(|h| h.fence())
    }

    /// Releases the lock and reports whether that worked.
    pub async fn release(mut self) -> Result<()> {
        match self.handle.take() {
            Some(handle) => handle.release().await,
            None => Ok(()),
        }
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.release_on_drop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_info_json_matches_pulumi() {
        let info = LockInfo {
            pid: 42,
            username: "alice".into(),
            hostname: "box".into(),
            timestamp: "2024-05-01T10:00:00Z".into(),
        };
        assert_eq!(
            serde_json::to_string(&info).unwrap(),
            r#"{"pid":42,"username":"alice","hostname":"box","timestamp":"2024-05-01T10:00:00Z"}"#
        );
        // Pulumi writes Go's RFC 3339 with nanoseconds and a zone offset.
        let go: LockInfo = serde_json::from_str(
            r#"{"pid":7,"username":"bob","hostname":"h","timestamp":"2023-01-02T03:04:05.123456789-07:00"}"#,
        )
        .unwrap();
        assert_eq!(
            go.describe(),
            "bob@h (pid 7) since 2023-01-02T03:04:05.123456789-07:00"
        );
    }

    #[test]
    fn current_names_this_process() {
        let me = LockInfo::current();
        assert_eq!(me.pid, std::process::id());
        assert!(!me.username.is_empty() && !me.hostname.is_empty());
        time::OffsetDateTime::parse(
            &me.timestamp,
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
    }
}

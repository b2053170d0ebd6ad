//! Pulumi's DIY lock protocol.
//!
//! A lock is a file `<lock dir>/<uuid>.json` holding [`LockInfo`]. To lock:
//! fail if any lock file exists; write our own (atomically); list the
//! directory again; if any *other* lock file exists, remove ours and fail
//! naming its holder. Each contender's file is complete before it lists, so
//! of two racing contenders at least one sees the other: both may lose, but
//! both can never win.
//!
//! A lock whose holder ran on this host and is gone (no `/proc/<pid>`) is
//! stale and removed before locking: a killed `converge up` does not leave
//! its stack locked.

use std::path::{Path, PathBuf};

use async_trait::async_trait;

use crate::error::{BackendError, Result};
use crate::file::atomic;
use crate::file::{run_blocking, FileStore};
use crate::lock::{is_stale, HeldLock, LockGuard, LockHandle, LockInfo};
use crate::name::StackRef;

impl FileStore {
    pub(crate) fn lock(&self, stack: &StackRef, info: LockInfo) -> Result<LockGuard> {
        let (_, paths) = self.resolve(stack)?;
        let dir = &paths.lock_dir;
        // A lock left by a process of this host that no longer runs (killed,
        // crashed) is stale: it protects nothing, so it is removed.
        for (path, holder) in holders(dir, None)? {
            if is_stale(&holder, &info) {
                atomic::remove_optional(&path)?;
            }
        }
        if let Some((path, holder)) = holders(dir, None)?.into_iter().next() {
            return Err(locked(stack, path, holder));
        }
        let json = serde_json::to_vec(&info).expect("LockInfo serializes");
        let own = dir.join(format!("{}.json", uuid::Uuid::new_v4()));
        atomic::write_atomic(&own, &json)?;
        match holders(dir, Some(&own)) {
            Ok(others) if others.is_empty() => {}
            Ok(others) => {
                let _ = atomic::remove_optional(&own);
                let (path, holder) = others.into_iter().next().expect("non-empty");
                return Err(locked(stack, path, holder));
            }
            Err(e) => {
                let _ = atomic::remove_optional(&own);
                return Err(e);
            }
        }
        let location = own.display().to_string();
        Ok(LockGuard::new(
            stack.clone(),
            info,
            location,
            Box::new(FileLockHandle { path: own }),
        ))
    }

    pub(crate) fn list_locks(&self, stack: &StackRef) -> Result<Vec<HeldLock>> {
        let (_, paths) = self.resolve(stack)?;
        Ok(holders(&paths.lock_dir, None)?
            .into_iter()
            .map(|(path, info)| HeldLock {
                info,
                location: path.display().to_string(),
            })
            .collect())
    }

    pub(crate) fn break_locks(&self, stack: &StackRef) -> Result<usize> {
        let (_, paths) = self.resolve(stack)?;
        let mut removed = 0;
        for (path, _) in holders(&paths.lock_dir, None)? {
            if atomic::remove_optional(&path)? {
                removed += 1;
            }
        }
        if removed > 0 {
            atomic::sync_dir(&paths.lock_dir)?;
        }
        Ok(removed)
    }
}

fn locked(stack: &StackRef, path: PathBuf, holder: LockInfo) -> BackendError {
    BackendError::Locked {
        stack: stack.to_string(),
        holder: Box::new(holder),
        path: path.display().to_string(),
    }
}

/// The lock files in `dir` other than `except`, with their holders, sorted by
/// file name. An unreadable record still counts as a holder, of unknown
/// identity; a file removed while we look does not.
fn holders(dir: &Path, except: Option<&Path>) -> Result<Vec<(PathBuf, LockInfo)>> {
    let mut out = Vec::new();
    for e in atomic::list_dir(dir)? {
        if e.is_dir || !e.name.ends_with(".json") || Some(e.path.as_path()) == except {
            continue;
        }
        let Some(bytes) = atomic::read_optional(&e.path)? else {
            continue;
        };
        let info = serde_json::from_slice(&bytes).unwrap_or_else(|_| LockInfo::unknown());
        out.push((e.path, info));
    }
    Ok(out)
}

/// Releases a file lock by removing its file.
#[derive(Debug)]
struct FileLockHandle {
    path: PathBuf,
}

#[async_trait]
impl LockHandle for FileLockHandle {
    async fn release(self: Box<Self>) -> Result<()> {
        let path = self.path;
        run_blocking(move || atomic::remove_optional(&path).map(|_| ())).await
    }

    fn release_on_drop(self: Box<Self>) {
        let _ = std::fs::remove_file(&self.path);
    }
}

//! Pulumi's DIY lock protocol, with a tie-break between Converge processes.
//!
//! A lock is a file `<lock dir>/<uuid>.json` holding [`LockInfo`]'s fields,
//! which is all Pulumi reads (it counts every file of the directory as a
//! lock, and its JSON decoding ignores fields it does not know). Converge
//! adds one field, `"convergeLock"`: `"contending"` while it is deciding,
//! `"held"` once it has won. A lock file without that field (Pulumi's, an
//! older Converge's) or one that cannot be read is *foreign*.
//!
//! To lock, a contender
//!
//! 1. removes stale locks (below), and fails naming the holder if any lock
//!    file exists;
//! 2. writes its own file, complete, marked `contending` (atomically: a
//!    temporary file renamed into place, so nobody ever reads half of it);
//! 3. lists the directory, and repeats until it decides:
//!    - no other lock file: it marks its file `held` (again by rename, so
//!      the file never disappears) and proceeds;
//!    - a foreign lock, a `held` lock, or a `contending` lock whose file
//!      name orders before its own: it removes its file and fails naming
//!      that holder;
//!    - only `contending` locks whose names order after its own: it waits a
//!      few milliseconds and lists again, for at most [`TIE_WAIT`]; then it
//!      removes its file and fails naming the first of them.
//!
//! **Two never both win.** A contender proceeds only on a listing, made
//! after its own file was complete, that shows no other lock. Suppose A and
//! B both proceeded, A's deciding listing first. A's file stays from its
//! write until A releases, and B's from its write until B releases; neither
//! withdraws, having won. If B's file was written before A's deciding
//! listing, A would have seen it. So B wrote after that listing, hence after
//! A wrote; B's deciding listing, later still, would have seen A's file
//! unless A had already released: then they did not hold the lock together.
//!
//! **A tie has a winner.** Let contenders write their files before any of
//! them lists, and let M be the one whose file name orders first. Every
//! other contender sees M's file (M never withdraws while it sees only
//! names after its own, and none of them can win or mark `held` while M's
//! file is there) and withdraws; M keeps listing until their files are gone
//! and proceeds. Only a contender that does not withdraw within
//! [`TIE_WAIT`] (a stopped process) can make M fail too. A contender that
//! waits on names after its own and sees them turn `held` fails at once:
//! they are real holders that had listed before it wrote.
//!
//! A Pulumi lock always blocks Converge, as before; a Pulumi process racing
//! a Converge one may make both back off (Pulumi's own protocol), never
//! both win.
//!
//! A lock whose holder ran on this host and is gone (no `/proc/<pid>`) is
//! stale and removed, before locking and at every listing while deciding:
//! a killed `converge up` does not leave its stack locked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::error::{BackendError, Result};
use crate::file::atomic;
use crate::file::{run_blocking, FileStore};
use crate::lock::{is_stale, HeldLock, LockFence, LockGuard, LockHandle, LockInfo};
use crate::name::StackRef;

/// How long a contender waits for contenders whose names order after its
/// own to withdraw. They withdraw right after their first listing, so this
/// only bounds the wait for a contender stopped in the middle.
pub(crate) const TIE_WAIT: Duration = Duration::from_secs(5);

/// How often a waiting contender lists the directory again.
const POLL: Duration = Duration::from_millis(5);

/// Where a Converge lock file is in the protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Phase {
    Contending,
    Held,
}

/// A lock file: Pulumi's fields, and Converge's phase if Converge wrote it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LockFile {
    #[serde(flatten)]
    info: LockInfo,
    #[serde(
        rename = "convergeLock",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    phase: Option<Phase>,
}

impl LockFile {
    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a lock file serializes")
    }
}

/// Another lock file found while locking.
#[derive(Debug)]
struct Other {
    path: PathBuf,
    name: String,
    info: LockInfo,
    /// None: foreign (Pulumi's, or unreadable).
    phase: Option<Phase>,
}

/// What a contender does after one listing.
#[derive(Debug)]
enum Decision {
    Proceed,
    /// Withdraw and fail naming this holder.
    Fail(Other),
    /// Only contenders ordering after us: list again.
    Wait(Other),
}

/// The protocol's rule, on the other lock files of one listing.
fn decide(own_name: &str, others: Vec<Other>) -> Decision {
    let mut waiting_on = None;
    for other in others {
        let blocks = match other.phase {
            None | Some(Phase::Held) => true,
            Some(Phase::Contending) => other.name.as_str() < own_name,
        };
        if blocks {
            return Decision::Fail(other);
        }
        waiting_on.get_or_insert(other);
    }
    match waiting_on {
        None => Decision::Proceed,
        Some(other) => Decision::Wait(other),
    }
}

impl FileStore {
    pub(crate) fn lock(&self, stack: &StackRef, info: LockInfo) -> Result<LockGuard> {
        let (_, paths) = self.resolve(stack)?;
        let dir = &paths.lock_dir;
        if let Some(other) = others(dir, None, &info)?.into_iter().next() {
            return Err(locked(stack, other));
        }
        let own_name = format!("{}.json", uuid::Uuid::new_v4());
        let own = dir.join(&own_name);
        let mut file = LockFile {
            info: info.clone(),
            phase: Some(Phase::Contending),
        };
        atomic::write_atomic(&own, &file.bytes())?;
        let withdraw = |e: BackendError| {
            let _ = atomic::remove_optional(&own);
            e
        };
        let deadline = Instant::now() + TIE_WAIT;
        loop {
            let listing = others(dir, Some(&own), &info).map_err(withdraw)?;
            match decide(&own_name, listing) {
                Decision::Proceed => break,
                Decision::Fail(other) => return Err(withdraw(locked(stack, other))),
                Decision::Wait(other) if Instant::now() >= deadline => {
                    return Err(withdraw(locked(stack, other)))
                }
                Decision::Wait(_) => std::thread::sleep(POLL),
            }
        }
        // Won: say so, so that a contender still waiting on us fails at
        // once instead of waiting for us to withdraw.
        file.phase = Some(Phase::Held);
        atomic::write_atomic(&own, &file.bytes()).map_err(withdraw)?;
        let location = own.display().to_string();
        Ok(LockGuard::new(
            stack.clone(),
            info,
            location,
            Box::new(FileLockHandle {
                stack: stack.clone(),
                path: own,
            }),
        ))
    }

    pub(crate) fn list_locks(&self, stack: &StackRef) -> Result<Vec<HeldLock>> {
        let (_, paths) = self.resolve(stack)?;
        Ok(lock_files(&paths.lock_dir, None)?
            .into_iter()
            .map(|o| HeldLock {
                info: o.info,
                location: o.path.display().to_string(),
            })
            .collect())
    }

    pub(crate) fn break_locks(&self, stack: &StackRef) -> Result<usize> {
        let (_, paths) = self.resolve(stack)?;
        let mut removed = 0;
        for o in lock_files(&paths.lock_dir, None)? {
            if atomic::remove_optional(&o.path)? {
                removed += 1;
            }
        }
        if removed > 0 {
            atomic::sync_dir(&paths.lock_dir)?;
        }
        Ok(removed)
    }
}

fn locked(stack: &StackRef, other: Other) -> BackendError {
    BackendError::Locked {
        stack: stack.to_string(),
        holder: Box::new(other.info),
        path: other.path.display().to_string(),
    }
}

/// The lock files in `dir` other than `except`, sorted by file name, after
/// removing those that are stale for `me`.
fn others(dir: &Path, except: Option<&Path>, me: &LockInfo) -> Result<Vec<Other>> {
    let mut out = Vec::new();
    for other in lock_files(dir, except)? {
        // A lock left by a process of this host that no longer runs
        // (killed, crashed) is stale: it protects nothing, so it is removed.
        if is_stale(&other.info, me) {
            atomic::remove_optional(&other.path)?;
        } else {
            out.push(other);
        }
    }
    Ok(out)
}

/// The lock files in `dir` other than `except`, with their holders, sorted
/// by file name. An unreadable record still counts as a (foreign) holder,
/// of unknown identity; a file removed while we look does not.
fn lock_files(dir: &Path, except: Option<&Path>) -> Result<Vec<Other>> {
    let mut out = Vec::new();
    for e in atomic::list_dir(dir)? {
        if e.is_dir || !e.name.ends_with(".json") || Some(e.path.as_path()) == except {
            continue;
        }
        let Some(bytes) = atomic::read_optional(&e.path)? else {
            continue;
        };
        let (info, phase) = match serde_json::from_slice::<LockFile>(&bytes) {
            Ok(f) => (f.info, f.phase),
            Err(_) => (LockInfo::unknown(), None),
        };
        out.push(Other {
            path: e.path,
            name: e.name,
            info,
            phase,
        });
    }
    Ok(out)
}

/// Releases a file lock by removing its file.
#[derive(Debug)]
struct FileLockHandle {
    stack: StackRef,
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

    fn fence(&self) -> Option<Arc<dyn LockFence>> {
        Some(Arc::new(FileLockFence {
            stack: self.stack.clone(),
            path: self.path.clone(),
        }))
    }
}

/// A file lock is held while its file is there: its name is this
/// process's own (a fresh UUID), so nobody else ever writes it, and
/// `converge cancel` breaks it by removing it.
#[derive(Debug)]
struct FileLockFence {
    stack: StackRef,
    path: PathBuf,
}

#[async_trait]
impl LockFence for FileLockFence {
    async fn check(&self) -> Result<()> {
        let path = self.path.clone();
        let held = run_blocking(move || Ok(path.exists())).await?;
        if held {
            return Ok(());
        }
        Err(BackendError::LockLost {
            stack: self.stack.to_string(),
            location: self.path.display().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other(name: &str, phase: Option<Phase>) -> Other {
        Other {
            path: PathBuf::from(name),
            name: name.to_owned(),
            info: LockInfo::unknown(),
            phase,
        }
    }

    #[test]
    fn the_rule() {
        use Decision::*;
        let c = Some(Phase::Contending);
        assert!(matches!(decide("b.json", vec![]), Proceed));
        assert!(matches!(
            decide("b.json", vec![other("a.json", c)]),
            Fail(_)
        ));
        assert!(matches!(
            decide("b.json", vec![other("c.json", c)]),
            Wait(_)
        ));
        let held = other("c.json", Some(Phase::Held));
        assert!(matches!(decide("b.json", vec![held]), Fail(_)));
        let pulumi = other("c.json", None);
        assert!(matches!(decide("b.json", vec![pulumi]), Fail(_)));
        // Any blocker wins over waiting, wherever it is in the listing.
        let mixed = vec![other("c.json", c), other("d.json", None)];
        assert!(matches!(decide("b.json", mixed), Fail(o) if o.name == "d.json"));
    }

    #[test]
    fn lock_files_stay_readable_by_pulumi() {
        let file = LockFile {
            info: LockInfo {
                pid: 42,
                username: "alice".into(),
                hostname: "box".into(),
                timestamp: "2024-05-01T10:00:00Z".into(),
            },
            phase: Some(Phase::Contending),
        };
        assert_eq!(
            String::from_utf8(file.bytes()).unwrap(),
            r#"{"pid":42,"username":"alice","hostname":"box","timestamp":"2024-05-01T10:00:00Z","convergeLock":"contending"}"#
        );
        // Pulumi's own lock file is foreign.
        let pulumi: LockFile = serde_json::from_str(
            r#"{"pid":7,"username":"bob","hostname":"h","timestamp":"2023-01-02T03:04:05Z"}"#,
        )
        .unwrap();
        assert_eq!(pulumi.phase, None);
        assert_eq!(pulumi.info.pid, 7);
    }
}

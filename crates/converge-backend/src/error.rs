//! The one error type every backend returns.
//!
//! Messages are single lines a user can act on: they name the stack, the
//! path or the character at fault, and say what to do next.

use std::path::PathBuf;

use crate::lock::LockInfo;

/// What kind of name failed validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Organization,
    Project,
    Stack,
}

impl std::fmt::Display for NameKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameKind::Organization => "organization",
            NameKind::Project => "project",
            NameKind::Stack => "stack",
        })
    }
}

/// An error from a backend operation.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// A stack, project or organization name is not allowed.
    #[error("invalid {kind} name {name:?}: {reason}")]
    InvalidName {
        kind: NameKind,
        name: String,
        reason: String,
    },

    /// A stack reference string could not be parsed.
    #[error("invalid stack reference {input:?}: {reason}")]
    InvalidStackRef { input: String, reason: String },

    /// The stack does not exist in this backend.
    #[error(
        "no stack named {stack} found in {backend}: run `converge stack ls` to see the stacks, \
         or `converge stack init {stack}` to create it"
    )]
    StackNotFound { stack: String, backend: String },

    /// `create_stack` on a stack that already exists.
    #[error("stack {stack} already exists in {backend}")]
    StackAlreadyExists { stack: String, backend: String },

    /// Someone else holds the stack's lock.
    #[error(
        "stack {stack}: the stack is currently locked by {holder} ({path}); wait for that \
         operation to finish, or stop it with `converge cancel` (which also breaks a stale \
         lock, whose process is gone)",
        holder = holder.describe()
    )]
    Locked {
        stack: String,
        holder: Box<LockInfo>,
        /// Where the holder's lock lives (a file path for the file backend).
        path: String,
    },

    /// The lock this process was granted was broken (`converge cancel`) or
    /// taken over after it expired: nothing more is written under it.
    #[error(
        "the lock of stack {stack} was taken from this operation ({location}), by `converge \
         cancel` or because it expired; it stopped writing, and the stack's next command \
         recovers what it had journaled"
    )]
    LockLost { stack: String, location: String },

    /// A filesystem (or storage) operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done, as a verb phrase: "read", "write", "list directory".
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// `.pulumi/meta.yaml` is not valid.
    #[error("malformed backend metadata {}: {reason}", path.display())]
    MalformedMeta { path: PathBuf, reason: String },

    /// `.pulumi/meta.yaml` names a layout version this build does not know.
    #[error(
        "backend {} uses state layout version {version}, which this version of converge \
         does not support (known: 0 and 1); upgrade converge",
        path.display()
    )]
    UnsupportedLayout { path: PathBuf, version: i64 },

    /// A backend URL that cannot be used.
    #[error("invalid backend URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },

    /// A history record that is not a JSON object, or whose kind disagrees.
    #[error("invalid history record for stack {stack}: {reason}")]
    InvalidHistoryRecord { stack: String, reason: String },

    /// `open_journal` while a journal exists: an earlier update did not
    /// finish and must be recovered first (see [`crate::journal_store`]).
    #[error(
        "stack {stack} has the journal of an unfinished update ({location}); recover it \
         (replay it onto the checkpoint, or discard it if the checkpoint already includes it) \
         before starting another"
    )]
    JournalExists { stack: String, location: String },

    /// `append_journal` without an open journal.
    #[error("stack {stack} has no open journal; open one before appending entries")]
    NoJournal { stack: String },

    /// A journal entry or base digest that cannot be stored.
    #[error("invalid journal data for stack {stack}: {reason}")]
    InvalidJournal { stack: String, reason: String },

    /// A journal damaged other than by a torn last entry.
    #[error(
        "the journal {location} is corrupt at line {line}: {reason}; its entries from there \
         on cannot be replayed: move the file aside to discard the unfinished update's \
         journal (the stack's state then lacks that update's changes; refresh the stack)"
    )]
    CorruptJournal {
        location: String,
        line: usize,
        reason: String,
    },

    /// A stack tags file (Pulumi's `<stack>.pulumi-tags`) that cannot be read.
    #[error(
        "the stack tags file {location} cannot be read: {reason}; fix or remove it \
         (removing it forgets the stack's tags)"
    )]
    MalformedTags { location: String, reason: String },

    /// Stored data this backend cannot read (for example a compressed checkpoint).
    #[error("{0}")]
    Unsupported(String),

    /// A request to an object store failed.
    #[error("cannot {action} {key} in {backend}: {message}")]
    Storage {
        /// What was being done, as a verb phrase: "read", "write", "list".
        action: &'static str,
        key: String,
        backend: String,
        message: String,
    },

    /// A state service could not be reached (connection refused, timed
    /// out), even after retries.
    #[error("cannot reach the state service {backend}: {reason}")]
    Unreachable { backend: String, reason: String },

    /// A state service refused or failed a request.
    #[error("the state service {backend} answered {status} ({code}): {message}")]
    Service {
        backend: String,
        status: u16,
        /// The service's machine-readable reason (`lease_lost`, …).
        code: String,
        message: String,
    },

    /// The checkpoint's text ended before its writer finished it (its
    /// serializer failed, and says why): nothing was stored.
    #[error("the checkpoint of stack {stack} was not stored: its text is incomplete")]
    IncompleteCheckpoint { stack: String },

    /// A background task running the operation was cancelled (runtime shutting down).
    #[error("backend operation was cancelled: {0}")]
    Cancelled(#[source] tokio::task::JoinError),
}

impl BackendError {
    /// Wraps an I/O error with the path and what was being done.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        BackendError::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// True for [`BackendError::StackNotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, BackendError::StackNotFound { .. })
    }

    /// True for [`BackendError::Locked`].
    pub fn is_locked(&self) -> bool {
        matches!(self, BackendError::Locked { .. })
    }

    /// True when the writer's lease on the stack is gone (broken by
    /// `converge cancel`, expired, or taken over): it may write no more.
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, BackendError::Service { code, .. } if code == "lease_lost")
            || matches!(self, BackendError::LockLost { .. })
    }

    /// When local storage failed (no space left, permission denied, a
    /// read-only file system, a path through a file, a disk error): what
    /// the operating system said, and what to do.
    pub fn storage_failure(&self) -> Option<StorageFailure> {
        match self {
            BackendError::Io { source, .. } => Some(StorageFailure::of(source)),
            _ => None,
        }
    }
}

/// A failure of local storage in a user's words: the operating system's
/// cause and, where there is one, what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageFailure {
    /// The operating system's words: "no space left on device",
    /// "permission denied", "read-only file system", "not a directory".
    pub cause: String,
    pub remedy: Option<&'static str>,
}

impl StorageFailure {
    /// What `e` says, and the remedy of its kind.
    pub fn of(e: &std::io::Error) -> StorageFailure {
        use std::io::ErrorKind;
        let remedy = match e.kind() {
            ErrorKind::StorageFull | ErrorKind::QuotaExceeded => {
                Some("free some space, then run the command again")
            }
            ErrorKind::PermissionDenied => {
                Some("give this user permission to write there, or use another location")
            }
            ErrorKind::ReadOnlyFilesystem => Some("use a location on a writable file system"),
            ErrorKind::NotADirectory => {
                Some("a part of the path is a file where a directory is expected")
            }
            _ => None,
        };
        StorageFailure {
            cause: os_words(e),
            remedy,
        }
    }
}

impl std::fmt::Display for StorageFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.remedy {
            Some(remedy) => write!(f, "{}; {remedy}", self.cause),
            None => f.write_str(&self.cause),
        }
    }
}

/// The operating system's words for `e`: its message without Rust's
/// " (os error N)", starting in lower case ("no space left on device").
pub fn os_words(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = match text.find(" (os error ") {
        Some(at) => &text[..at],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Shorthand for results of backend operations.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io;

    use super::*;

    #[test]
    fn storage_failures_say_the_operating_systems_cause() {
        let failure = |code| StorageFailure::of(&io::Error::from_raw_os_error(code));
        // Linux's numbers: ENOSPC, EACCES, EROFS, ENOTDIR, EIO.
        assert_eq!(
            failure(28).to_string(),
            "no space left on device; free some space, then run the command again"
        );
        assert_eq!(
            failure(13).to_string(),
            "permission denied; give this user permission to write there, or use another location"
        );
        assert_eq!(
            failure(30).to_string(),
            "read-only file system; use a location on a writable file system"
        );
        assert_eq!(
            failure(20).to_string(),
            "not a directory; a part of the path is a file where a directory is expected"
        );
        assert_eq!(failure(5).to_string(), "input/output error");
        let e = BackendError::io("write", "/x", io::Error::from_raw_os_error(28));
        assert_eq!(e.storage_failure(), Some(failure(28)));
        assert_eq!(
            BackendError::Unsupported("x".into()).storage_failure(),
            None
        );
    }
}

//! The capability traits every backend implements, and their plain data.
//!
//! As in OpenTofu's `statemgr`, each capability is a small trait
//! ([`StackStore`], [`StackLocker`], [`HistoryStore`], and
//! [`JournalStore`] in [`crate::journal_store`], [`TagStore`]) and
//! [`Backend`] composes them. Checkpoints and history records are opaque bytes here: the
//! CLI serializes and parses them with `converge-state`.

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use bytes::Bytes;

use crate::checkpoint_text::CheckpointText;
use crate::error::Result;
use crate::journal_store::JournalStore;
use crate::lock::{HeldLock, LockGuard, LockInfo};
use crate::name::StackRef;

/// One stack, as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackSummary {
    pub stack_ref: StackRef,
    /// When the stack's checkpoint was last written, in whole seconds since
    /// the Unix epoch, when the backend knows it.
    pub last_modified: Option<i64>,
}

/// Which stacks [`StackStore::list_stacks`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListStacksOptions {
    /// Only stacks of this project; `None` lists every project's stacks.
    pub project: Option<String>,
}

/// How [`StackStore::save_checkpoint`] writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveOptions {
    /// Keep the checkpoint being replaced as the previous version (Pulumi's
    /// `<stack>.json.bak`). On by default.
    pub keep_backup: bool,
}

impl Default for SaveOptions {
    fn default() -> SaveOptions {
        SaveOptions { keep_backup: true }
    }
}

/// How [`StackStore::remove_stack`] removes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoveOptions {
    /// Also delete the previous version and every backup of the checkpoint
    /// (Pulumi's `stack rm --remove-backups`). Off by default, so a removed
    /// stack's last checkpoint survives as a backup.
    pub remove_backups: bool,
}

/// The kind of an update, as Pulumi's `apitype.UpdateKind` spells it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum UpdateKind {
    Update,
    Preview,
    Refresh,
    Rename,
    Destroy,
    /// `stack import`.
    Import,
    /// `import` of resources.
    ResourceImport,
    Other(String),
}

impl UpdateKind {
    pub fn as_str(&self) -> &str {
        match self {
            UpdateKind::Update => "update",
            UpdateKind::Preview => "preview",
            UpdateKind::Refresh => "refresh",
            UpdateKind::Rename => "rename",
            UpdateKind::Destroy => "destroy",
            UpdateKind::Import => "import",
            UpdateKind::ResourceImport => "resource-import",
            UpdateKind::Other(s) => s,
        }
    }

    pub fn parse(s: &str) -> UpdateKind {
        match s {
            "update" => UpdateKind::Update,
            "preview" => UpdateKind::Preview,
            "refresh" => UpdateKind::Refresh,
            "rename" => UpdateKind::Rename,
            "destroy" => UpdateKind::Destroy,
            "import" => UpdateKind::Import,
            "resource-import" => UpdateKind::ResourceImport,
            other => UpdateKind::Other(other.to_owned()),
        }
    }
}

impl fmt::Display for UpdateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One recorded update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryEntry {
    /// The record's `kind`, when it has one.
    pub kind: Option<UpdateKind>,
    /// When the record was added, in nanoseconds since the Unix epoch.
    pub recorded_at_unix_nanos: i64,
    /// The update record's JSON, exactly as added.
    pub record: Vec<u8>,
}

/// Which history [`HistoryStore::list_history`] returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListHistoryOptions {
    /// At most this many entries (the most recent ones).
    pub limit: Option<usize>,
}

/// Stacks and their checkpoints.
#[async_trait]
pub trait StackStore: Send + Sync + fmt::Debug {
    /// Creates a stack whose first checkpoint is `initial_checkpoint`.
    /// Fails with `StackAlreadyExists` if it exists.
    async fn create_stack(&self, stack: &StackRef, initial_checkpoint: &[u8]) -> Result<()>;

    /// The stacks, sorted by project then stack name.
    async fn list_stacks(&self, options: &ListStacksOptions) -> Result<Vec<StackSummary>>;

    async fn stack_exists(&self, stack: &StackRef) -> Result<bool>;

    /// Removes a stack and its history. Fails with `StackNotFound` if it
    /// does not exist. Whether it still has resources is the caller's check.
    async fn remove_stack(&self, stack: &StackRef, options: &RemoveOptions) -> Result<()>;

    /// The current checkpoint: `Ok(None)` if the stack exists but has none;
    /// `StackNotFound` if it does not exist.
    async fn load_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>>;

    /// The checkpoint that the last save replaced (Pulumi's `.bak`), if any.
    async fn load_previous_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>>;

    /// Replaces the checkpoint, atomically: a reader sees the old bytes or
    /// the new ones, never a mix. Fails with `StackNotFound` if the stack
    /// does not exist. The bytes are shared, not copied: a checkpoint of
    /// 100,000 resources is 80 MB.
    async fn save_checkpoint(
        &self,
        stack: &StackRef,
        checkpoint: Bytes,
        options: &SaveOptions,
    ) -> Result<()>;

    /// [`StackStore::save_checkpoint`] of a text still being written (see
    /// [`crate::checkpoint_text`]): as atomic, and a text that ends
    /// unfinished stores nothing ([`crate::BackendError::IncompleteCheckpoint`]).
    /// Returns the text's length. A store that can write the pieces as
    /// they come does (the file backend); this default collects them
    /// first.
    async fn save_checkpoint_text(
        &self,
        stack: &StackRef,
        text: CheckpointText,
        options: &SaveOptions,
    ) -> Result<u64> {
        let bytes = text.collect_joined(stack).await?;
        let len = bytes.len() as u64;
        self.save_checkpoint(stack, bytes, options).await?;
        Ok(len)
    }

    /// Renames `from` to `to` (same organization, possibly another
    /// project): `checkpoint` becomes the renamed stack's checkpoint (the
    /// caller's rewrite of the current one, its URNs in the new name), and
    /// the stack's history, previous checkpoint, backups and tags follow it.
    /// Fails with `StackAlreadyExists` if `to` exists and `StackNotFound`
    /// if `from` does not, changing nothing. The caller holds `from`'s lock.
    async fn rename_stack(&self, from: &StackRef, to: &StackRef, checkpoint: &[u8]) -> Result<()>;
}

/// Mutual exclusion between processes working on one stack.
#[async_trait]
pub trait StackLocker: Send + Sync + fmt::Debug {
    /// Takes the stack's lock for `info`. If anyone else holds it, fails with
    /// `BackendError::Locked` naming the holder. Two concurrent callers can
    /// never both succeed.
    async fn lock(&self, stack: &StackRef, info: LockInfo) -> Result<LockGuard>;

    /// Everyone holding the stack's lock right now.
    async fn list_locks(&self, stack: &StackRef) -> Result<Vec<HeldLock>>;

    /// Removes every lock on the stack (for a stale lock whose process is
    /// gone); returns how many were removed.
    async fn break_locks(&self, stack: &StackRef) -> Result<usize>;
}

/// The record of past updates.
#[async_trait]
pub trait HistoryStore: Send + Sync + fmt::Debug {
    /// Records one finished update. `record` is the JSON of the update record
    /// (Pulumi's `UpdateInfo`); its `kind`, when present, must equal `kind`.
    /// Fails with `StackNotFound` if the stack does not exist.
    async fn add_history(&self, stack: &StackRef, kind: UpdateKind, record: &[u8]) -> Result<()>;

    /// Recorded updates, most recent first.
    async fn list_history(
        &self,
        stack: &StackRef,
        options: &ListHistoryOptions,
    ) -> Result<Vec<HistoryEntry>>;

    /// The checkpoint that the update recorded at `recorded_at_unix_nanos`
    /// (its [`HistoryEntry::recorded_at_unix_nanos`]) left, where the
    /// backend keeps one per update (the DIY layouts'
    /// `<stack>-<unixnano>.checkpoint.json`); `Ok(None)` where it keeps
    /// none, or none for that update.
    async fn load_history_checkpoint(
        &self,
        stack: &StackRef,
        recorded_at_unix_nanos: i64,
    ) -> Result<Option<Vec<u8>>> {
        let _ = (stack, recorded_at_unix_nanos);
        Ok(None)
    }
}

/// A stack's tags: names to values (Pulumi's `stack tag`).
pub type StackTags = BTreeMap<String, String>;

/// Stack tags.
#[async_trait]
pub trait TagStore: Send + Sync + fmt::Debug {
    /// The stack's tags (empty when none were ever set). Fails with
    /// `StackNotFound` if the stack does not exist.
    async fn load_tags(&self, stack: &StackRef) -> Result<StackTags>;

    /// Replaces the stack's tags. Fails with `StackNotFound` if the stack
    /// does not exist.
    async fn save_tags(&self, stack: &StackRef, tags: &StackTags) -> Result<()>;
}

/// A complete backend.
pub trait Backend: StackStore + StackLocker + HistoryStore + JournalStore + TagStore {
    /// The backend's URL, for messages (`file:///home/me/state`).
    fn url(&self) -> String;

    /// The organization that unqualified stack names belong to.
    fn default_organization(&self) -> String;

    /// The state service this backend is, if it is one (for what only a
    /// service has: the organization's policy packs).
    fn as_service(&self) -> Option<&crate::http::HttpBackend> {
        None
    }
}

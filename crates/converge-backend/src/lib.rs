//! Backends: where stacks, their checkpoints, locks and update history live.
//!
//! - [`capabilities`]: the small async traits every backend implements
//!   ([`StackStore`], [`StackLocker`], [`HistoryStore`], and
//!   [`JournalStore`] from [`journal_store`]) and [`Backend`], which
//!   combines them. They are dyn-compatible: the CLI holds a
//!   `Box<dyn Backend>`.
//! - [`FileBackend`]: Pulumi's DIY layout in a local directory, readable by
//!   Pulumi and able to read what Pulumi wrote.
//! - [`ObjectBackend`]: the same layout in an object store (`s3://`,
//!   `gs://`, `azblob://`), with leases for locks.
//! - [`http::HttpBackend`]: stacks on a Converge state service
//!   (`converge serve`); locks are update leases.
//! - [`checkpoint_text`]: a checkpoint's text handed to a store while it
//!   is being written, so that serializing and storing overlap.
//! - [`journal_store`]: the update journal (O(1) bytes per step), its
//!   protocol and the recovery rule after a crash.
//! - `conformance` (feature `conformance`, for tests): the checks every
//!   backend must pass.
//!
//! # Architecture invariants
//!
//! - The backend stores checkpoint and history *bytes*. It knows nothing of
//!   the checkpoint format, snapshots or the engine; the CLI serializes and
//!   parses with `converge-state`.
//! - Every entry point validates the stack reference before touching
//!   storage, so no name can reach outside the backend root.
//! - Every write is atomic: readers see the old bytes or the new ones. The
//!   one exception is a journal append, which adds whole lines and is made
//!   durable before it returns; a line torn by a crash is dropped on load.

pub mod capabilities;
pub mod checkpoint_text;
#[cfg(feature = "conformance")]
pub mod conformance;
mod error;
pub mod file;
mod file_url;
mod history_record;
pub mod http;
pub mod journal_store;
mod lock;
mod name;
pub mod object;
mod tags_file;

/// The checkpoint bytes [`StackStore::save_checkpoint`] takes, shared rather
/// than copied.
pub use bytes::Bytes;
pub use capabilities::{
    Backend, HistoryEntry, HistoryStore, ListHistoryOptions, ListStacksOptions, RemoveOptions,
    SaveOptions, StackLocker, StackStore, StackSummary, StackTags, TagStore, UpdateKind,
};
pub use checkpoint_text::{checkpoint_text, CheckpointText, CheckpointWriter};
pub use error::{os_words, BackendError, NameKind, Result, StorageFailure};
pub use file::{FileBackend, FileBackendOptions, LayoutVersion, StackPaths};
pub use file_url::{parse_file_url, parse_file_url_with_home};
pub use history_record::{is_cancelled, CANCELLED_FIELD};
pub use journal_store::{JournalStore, StoredJournal};
pub use lock::{now_rfc3339, runs_here, HeldLock, LockFence, LockGuard, LockHandle, LockInfo};
pub use name::{
    validate_organization_name, validate_project_name, validate_stack_name, StackRef,
    DIY_ORGANIZATION, MAX_NAME_LEN,
};
pub use object::{is_object_store_url, settle_dropped_locks, ObjectBackend, ObjectBackendOptions};

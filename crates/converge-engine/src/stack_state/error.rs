//! Why a stack's state could not be read, recovered or written.

use converge_backend::BackendError;
use converge_state::checkpoint::CheckpointError;
use converge_state::integrity::IntegrityError;
use converge_state::journal::{JournalJsonError, ReplayError};

use crate::journaler::JournalError;

/// An error of [`super::StackState`] or [`super::LockedStack`]. Each
/// variant keeps its cause's type, so a caller can tell a held lock or a
/// lost lease ([`StackStateError::Backend`]) from a malformed checkpoint or
/// a journal that does not replay.
#[derive(Debug, thiserror::Error)]
pub enum StackStateError {
    /// The backend failed or refused (held lock, lost lease, disk, network).
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A view of the stack (taken without its lock, for a preview) was
    /// asked to write.
    #[error("stack {stack} was read without its lock (for a preview): nothing is written to it")]
    NotLocked { stack: String },
    /// The stored checkpoint cannot be read (or the snapshot written).
    #[error(
        "the state of stack {stack} cannot be read: {source}; if it was damaged, put an \
         earlier version in its place: `converge stack history` lists the versions, \
         `converge stack export --version N --file state.json` writes one, and `converge \
         stack import --force --file state.json` replaces the damaged state with it"
    )]
    Checkpoint {
        stack: String,
        #[source]
        source: Box<CheckpointError>,
    },
    /// An entry of the stored journal cannot be read.
    #[error("the journal of stack {stack} cannot be read: {source}")]
    JournalEntry {
        stack: String,
        #[source]
        source: Box<JournalJsonError>,
    },
    /// The stored journal does not replay onto its base.
    #[error("the journal of stack {stack} cannot be replayed: {source}")]
    Replay {
        stack: String,
        #[source]
        source: Box<ReplayError>,
    },
    /// The stack's state breaks an integrity rule.
    #[error(
        "the state of stack {stack} fails integrity verification: {source}; \
         `converge state repair` fixes what can be fixed safely (order, dangling \
         dependencies) and names the rest; or edit it with `converge stack export` \
         and `converge stack import`"
    )]
    Integrity {
        stack: String,
        #[source]
        source: Box<IntegrityError>,
    },
    /// The stack's state cannot be moved into the new name.
    #[error("stack {stack} cannot be renamed to {to}: {source}")]
    Rename {
        stack: String,
        to: String,
        #[source]
        source: Box<converge_state::surgery::SurgeryError>,
    },
    /// An update journal appeared after this process took the stack's lock
    /// and found none: somebody else is updating the stack at the same
    /// time. The lock was broken, or the store's conditional writes are not
    /// atomic. This process has changed nothing.
    #[error(
        "another update of stack {stack} started while this one held the stack's lock (its \
         journal is {location}); this update changed nothing and stops. Either the lock was \
         broken (`converge cancel`) or the backend does not make conditional writes atomic \
         (an S3-compatible store must honour `If-None-Match: *` on PUT). Let the other update \
         finish, then run this one again"
    )]
    ConcurrentUpdate { stack: String, location: String },
    /// The stored checkpoint, read back, is not the one this process wrote
    /// while it held the stack's lock.
    #[error(
        "the checkpoint of stack {stack} changed while this process held the stack's lock: \
         another process wrote it (the lock was broken with `converge cancel`, or a lease \
         expired); this process stops without changing it. Check the stack with `converge \
         stack export`, then run the command again"
    )]
    CheckpointChanged { stack: String },
    /// A base change or the end of an update could not be journaled.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// [`LockedStack::commit_changes`](super::LockedStack::commit_changes):
    /// the change is durable in the stack's journal, but the checkpoint
    /// could not be rewritten from it. The change holds: every later
    /// command replays the journal, and the next one that can writes the
    /// checkpoint.
    #[error(
        "the change to stack {stack} is saved in its journal, but the checkpoint could not be \
         rewritten from it ({source}); the change holds, and the next command that opens the \
         stack writes the checkpoint"
    )]
    NotCompacted {
        stack: String,
        #[source]
        source: Box<StackStateError>,
    },
}

impl StackStateError {
    /// True when someone else holds the stack.
    pub fn is_locked(&self) -> bool {
        matches!(self, StackStateError::Backend(e) if e.is_locked())
    }

    /// True when the change was made even so (its journal entry is
    /// durable): [`StackStateError::NotCompacted`].
    pub fn change_holds(&self) -> bool {
        matches!(self, StackStateError::NotCompacted { .. })
    }
}

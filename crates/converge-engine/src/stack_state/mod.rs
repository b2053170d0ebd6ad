//! One owner for a stack's state: every reader sees the journal, every
//! change is a journal entry.
//!
//! A stack's state is its stored checkpoint (the *base*) plus, while an
//! update runs or after one was interrupted, the update's journal. What
//! anyone sees is `replay(base, journal)`:
//!
//! - [`StackState::read`] is every reader's door (`stack export`, `stack
//!   output`, `stack ls`, `cancel`): it reads the checkpoint and the journal
//!   and replays, secrets kept as ciphertext, so no passphrase is needed.
//!   When the journal's writer is provably gone — its lock can be taken: a
//!   dead process of this host, an expired lease, a lock broken by `converge
//!   cancel` — the reader compacts the journal into the checkpoint, so other
//!   tools (Pulumi's CLI on the same DIY directory) read it too. When the
//!   writer may be alive (its lock is held: an update running here, another
//!   host's lease) the reader shows the replayed state and writes nothing.
//! - [`StackState::lock`] is every writer's door: it takes the stack's lock,
//!   recovers an interrupted journal, and returns a [`LockedStack`], which
//!   decrypts and verifies the base once, journals base changes
//!   ([`LockedStack::set_secrets_providers`],
//!   [`LockedStack::clear_pending_operations`]), opens the journal an
//!   operation persists through ([`LockedStack::start`]) and compacts it at
//!   the end with the history record ([`LockedStack::finish`]).
//!
//! Base changes are journal entries (a SecretsManager entry, a Write entry)
//! at the head of the next operation's journal, so the stored journal
//! replayed onto the stored checkpoint is exactly the operation's result,
//! by construction: a store that compacts journals itself (a state service)
//! always can, and a crash at any moment loses none of them.

mod error;
mod journal;
mod locked;
mod recovery;
mod stored;

use std::sync::Arc;

use converge_backend::{Backend, LockInfo, StackRef};
use converge_state::checkpoint::StackCheckpoint;
use converge_state::secrets::{Crypter, SecretsMode};

pub use error::StackStateError;
pub use journal::{Completion, UpdateJournal};
pub use locked::{Finished, LockedStack, UpdateRecord};
pub use recovery::Recovery;

/// How secrets in journal entries and checkpoints are treated.
#[derive(Debug, Clone)]
pub enum Secrets {
    /// Decrypted with, and encrypted by, this crypter.
    Crypter(Arc<dyn Crypter>),
    /// Ciphertext kept as is (no secret in plaintext is ever created).
    Opaque,
}

impl Secrets {
    pub(crate) fn mode(&self) -> SecretsMode<'_> {
        match self {
            Secrets::Crypter(c) => SecretsMode::Crypter(c.as_ref()),
            Secrets::Opaque => SecretsMode::Opaque,
        }
    }
}

/// A stack in a backend: the one way to read or change its state.
#[derive(Debug, Clone)]
pub struct StackState {
    backend: Arc<dyn Backend>,
    stack: StackRef,
}

/// How [`StackState::read`] may act on a journal it finds.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Compact a journal whose writer is provably gone, holding the stack's
    /// lock as this holder for the moment it takes. `None`: never write.
    pub compact_as: Option<LockInfo>,
}

/// What a reader sees.
#[derive(Debug, Clone)]
pub struct CurrentState {
    /// The stored checkpoint with any open journal replayed onto it; secrets
    /// as ciphertext.
    pub checkpoint: StackCheckpoint,
    pub journal: JournalStatus,
}

/// What [`StackState::read`] found of an update's journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalStatus {
    /// No journal: the checkpoint is current.
    None,
    /// An update's journal whose writer may be alive (it holds the lock):
    /// its `entries` are replayed in what was read; nothing was written.
    Live { entries: usize },
    /// A journal whose writer was gone, compacted into the checkpoint.
    Recovered(Recovery),
}

impl StackState {
    pub fn new(backend: Arc<dyn Backend>, stack: StackRef) -> StackState {
        StackState { backend, stack }
    }

    pub fn stack(&self) -> &StackRef {
        &self.stack
    }

    /// Creates the stack with an empty first checkpoint, as Pulumi does. A
    /// stack that exists already is the backend's `AlreadyExists` error.
    pub async fn create(&self) -> Result<(), StackStateError> {
        let empty = StackCheckpoint {
            stack: self.stack.to_string(),
            config: None,
            latest: None,
        };
        let bytes = converge_state::checkpoint::write_checkpoint(&empty, SecretsMode::Opaque)
            .map_err(|source| StackStateError::Checkpoint {
                stack: self.stack.to_string(),
                source: Box::new(source),
            })?;
        self.backend.create_stack(&self.stack, &bytes).await?;
        Ok(())
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The stack's current state: the checkpoint with any journal replayed
    /// (see the [module docs](self)).
    pub async fn read(&self, options: &ReadOptions) -> Result<CurrentState, StackStateError> {
        let bytes = self.backend.load_checkpoint(&self.stack).await?;
        let Some(journal) = self.backend.load_journal(&self.stack).await? else {
            return Ok(CurrentState {
                checkpoint: recovery::parse(&self.stack, bytes.as_deref(), SecretsMode::Opaque)?,
                journal: JournalStatus::None,
            });
        };
        if let Some(info) = &options.compact_as {
            match self.lock(info.clone()).await {
                Ok(locked) => {
                    let current = CurrentState {
                        checkpoint: locked.stored_checkpoint(),
                        journal: JournalStatus::Recovered(locked.recovery().clone()),
                    };
                    locked.release().await?;
                    return Ok(current);
                }
                // The writer may be alive: show its progress, change nothing.
                Err(e) if e.is_locked() => {}
                Err(e) => return Err(e),
            }
        }
        let replayed =
            recovery::replay_stored(&self.stack, bytes.as_deref(), &journal, SecretsMode::Opaque)?;
        Ok(match replayed {
            Some((checkpoint, entries)) => CurrentState {
                checkpoint,
                journal: JournalStatus::Live { entries },
            },
            // The checkpoint already holds the journal's compaction.
            None => CurrentState {
                checkpoint: recovery::parse(&self.stack, bytes.as_deref(), SecretsMode::Opaque)?,
                journal: JournalStatus::Live { entries: 0 },
            },
        })
    }

    /// The stack as it is now, without taking its lock: what a preview
    /// runs on (see [`LockedStack::view`]); it writes nothing.
    pub async fn view(&self) -> Result<LockedStack, StackStateError> {
        LockedStack::view(self.backend.clone(), self.stack.clone()).await
    }

    /// Takes the stack's lock as `info` and recovers what an interrupted
    /// update left (its journal, replayed and compacted). Fails with a
    /// [`StackStateError::Backend`] naming the holder when the stack is
    /// locked.
    pub async fn lock(&self, info: LockInfo) -> Result<LockedStack, StackStateError> {
        let guard = self.backend.lock(&self.stack, info).await?;
        LockedStack::open(self.backend.clone(), self.stack.clone(), guard).await
    }

    /// Takes the stack's lock to replace its state whatever it holds
    /// (`stack import --force`): as [`StackState::lock`], but a checkpoint
    /// or journal that cannot be read is no error. The stack is then given
    /// an empty base — the caller replaces it — and its unreadable journal
    /// is closed; the second value says what could not be read.
    pub async fn lock_replacing(
        &self,
        info: LockInfo,
    ) -> Result<(LockedStack, Option<StackStateError>), StackStateError> {
        let guard = self.backend.lock(&self.stack, info).await?;
        LockedStack::open_replacing(self.backend.clone(), self.stack.clone(), guard).await
    }
}

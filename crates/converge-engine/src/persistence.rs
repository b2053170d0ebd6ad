//! Journaled persistence on a backend (seed 002, "Snapshot Journaling").
//!
//! An update opens a journal whose base is the current checkpoint (by
//! digest), appends each batch of entries durably (one fsync per batch on
//! the file backend: O(1) bytes per step, no full snapshot rewrite), and at
//! the end writes the compacted checkpoint and closes the journal. After a
//! crash, [`recover`] replays a journal onto its base checkpoint — or drops
//! it, when the checkpoint already holds its compaction.
//!
//! On a store that compacts journals itself (a state service,
//! [`converge_backend::JournalStore::compacts_journals`]), [`BackendJournal::complete`] lets
//! it — O(1) bytes at the end too — when replaying the persisted entries
//! onto the stored base gives exactly the snapshot the update produced
//! (the caller may have changed the base in memory without journaling it,
//! the secrets provider of a new stack for example); otherwise it uploads
//! the snapshot as on every other store.

use std::sync::Mutex;

use std::sync::Arc;

use async_trait::async_trait;
use converge_backend::{Backend, SaveOptions, StackRef};
use converge_state::checkpoint::{self, StackCheckpoint};
use converge_state::journal::{entry_from_json, entry_to_json, replay, JournalEntry};
use converge_state::secrets::{Crypter, SecretsMode};
use converge_state::Snapshot;
use sha2::{Digest, Sha256};

use crate::journaler::{JournalError, JournalSink};

/// How secrets in journal entries and checkpoints are encrypted.
#[derive(Debug, Clone)]
pub enum Secrets {
    Crypter(Arc<dyn Crypter>),
    /// Ciphertext kept as is (no secrets in plaintext are ever created).
    Opaque,
}

impl Secrets {
    fn mode(&self) -> SecretsMode<'_> {
        match self {
            Secrets::Crypter(c) => SecretsMode::Crypter(c.as_ref()),
            Secrets::Opaque => SecretsMode::Opaque,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PersistenceError {
    #[error("{0}")]
    Backend(String),
    #[error("the stack's state cannot be read: {0}")]
    Checkpoint(String),
    #[error("the journal of stack {stack} cannot be replayed: {reason}")]
    Replay { stack: String, reason: String },
}

fn backend_err(e: converge_backend::BackendError) -> PersistenceError {
    PersistenceError::Backend(e.to_string())
}

/// Hex SHA-256 of checkpoint bytes: how a journal names its base.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A journal sink writing to a backend's journal store.
#[derive(Debug)]
pub struct BackendJournal {
    backend: Arc<dyn Backend>,
    stack: StackRef,
    secrets: Secrets,
    /// When the store compacts journals itself.
    store_compaction: Option<StoreCompaction>,
}

/// What [`BackendJournal::complete`] needs to decide whether the store's
/// compaction gives the update's snapshot: the stored base and every
/// entry persisted.
#[derive(Debug)]
struct StoreCompaction {
    base: StackCheckpoint,
    persisted: Mutex<Vec<JournalEntry>>,
}

/// How [`BackendJournal::complete`] compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The snapshot was uploaded: `bytes` long.
    Uploaded { bytes: usize },
    /// The store replayed the journal itself; nothing was uploaded.
    CompactedByStore,
}

impl BackendJournal {
    /// Opens a journal for an update whose base is the checkpoint `base`
    /// (the bytes as stored).
    pub async fn open(
        backend: Arc<dyn Backend>,
        stack: StackRef,
        base: &[u8],
        secrets: Secrets,
    ) -> Result<Self, PersistenceError> {
        backend
            .open_journal(&stack, &digest(base))
            .await
            .map_err(backend_err)?;
        // A base that cannot be read is compacted by the caller, as always.
        let store_compaction = backend
            .compacts_journals()
            .then(|| checkpoint::read_checkpoint(base, secrets.mode()).ok())
            .flatten()
            .map(|base| StoreCompaction {
                base,
                persisted: Mutex::new(Vec::new()),
            });
        Ok(BackendJournal {
            backend,
            stack,
            secrets,
            store_compaction,
        })
    }

    /// Compacts: the store replays the journal itself when that gives
    /// `snapshot` (see the module docs), else the snapshot is written as the
    /// checkpoint and the journal closed.
    pub async fn complete(
        &self,
        config: Option<String>,
        snapshot: Snapshot,
    ) -> Result<Completion, PersistenceError> {
        if self.store_replay_matches(&config, &snapshot)
            && self.backend.commit_journal(&self.stack).await.is_ok()
        {
            return Ok(Completion::CompactedByStore);
        }
        // The store declined or failed: its journal is still open (or was
        // committed by a request whose answer was lost, which the upload
        // below overwrites with the same content).
        let written = save_snapshot(
            self.backend.as_ref(),
            &self.stack,
            config,
            snapshot,
            &self.secrets,
        )
        .await?;
        self.backend
            .close_journal(&self.stack)
            .await
            .map_err(backend_err)?;
        Ok(Completion::Uploaded { bytes: written })
    }

    /// Whether the store's replay of the persisted entries onto the stored
    /// base is `snapshot` with `config` (manifests aside: each writer
    /// stamps its own).
    fn store_replay_matches(&self, config: &Option<String>, snapshot: &Snapshot) -> bool {
        let Some(sc) = &self.store_compaction else {
            return false;
        };
        if sc.base.config != *config || sc.base.stack != self.stack.to_string() {
            return false;
        }
        let persisted = sc.persisted.lock().unwrap_or_else(|p| p.into_inner());
        let base = sc
            .base
            .latest
            .clone()
            .unwrap_or_else(|| Snapshot::empty(converge_backend::now_rfc3339()));
        match replay(&base, &persisted) {
            Ok(mut replayed) => {
                replayed.manifest = snapshot.manifest.clone();
                replayed == *snapshot
            }
            Err(_) => false,
        }
    }
}

#[async_trait]
impl JournalSink for BackendJournal {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        let lines = batch
            .iter()
            .map(|e| entry_to_json(e, self.secrets.mode()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| JournalError(e.to_string()))?;
        self.backend
            .append_journal(&self.stack, &lines)
            .await
            .map_err(|e| JournalError(e.to_string()))?;
        if let Some(sc) = &self.store_compaction {
            sc.persisted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(batch.iter().cloned());
        }
        Ok(())
    }
}

/// Writes `snapshot` as the stack's checkpoint; returns its size in bytes.
pub async fn save_snapshot(
    backend: &dyn Backend,
    stack: &StackRef,
    config: Option<String>,
    snapshot: Snapshot,
    secrets: &Secrets,
) -> Result<usize, PersistenceError> {
    let mut snapshot = snapshot;
    // The manifest says who wrote the checkpoint, and when.
    let plugins = snapshot.manifest.plugins.take();
    snapshot.manifest = converge_state::Manifest::converge(converge_backend::now_rfc3339());
    snapshot.manifest.plugins = plugins;
    let cp = StackCheckpoint {
        stack: stack.to_string(),
        config,
        latest: Some(snapshot),
    };
    let bytes = checkpoint::write_checkpoint(&cp, secrets.mode())
        .map_err(|e| PersistenceError::Checkpoint(e.to_string()))?;
    backend
        .save_checkpoint(stack, &bytes, &SaveOptions::default())
        .await
        .map_err(backend_err)?;
    Ok(bytes.len())
}

/// What [`recover`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// No journal: the checkpoint is current.
    Clean,
    /// A journal of an interrupted update was replayed onto its base and
    /// saved; `pending` operations were in flight when it stopped.
    Replayed { entries: usize, pending: usize },
    /// The journal's update had already been compacted into the
    /// checkpoint; the journal was dropped.
    AlreadyCompacted,
}

/// Brings a stack's checkpoint up to date after a crash: a journal whose
/// base is the current checkpoint is replayed onto it and saved; any other
/// journal was already compacted. Either way the journal is closed.
pub async fn recover(
    backend: &dyn Backend,
    stack: &StackRef,
    secrets: &Secrets,
) -> Result<Recovery, PersistenceError> {
    let Some(journal) = backend.load_journal(stack).await.map_err(backend_err)? else {
        return Ok(Recovery::Clean);
    };
    let current = backend
        .load_checkpoint(stack)
        .await
        .map_err(backend_err)?
        .unwrap_or_default();
    if digest(&current) != journal.base_digest {
        backend.close_journal(stack).await.map_err(backend_err)?;
        return Ok(Recovery::AlreadyCompacted);
    }
    let cp = checkpoint::read_checkpoint(&current, secrets.mode())
        .map_err(|e| PersistenceError::Checkpoint(e.to_string()))?;
    let base = cp
        .latest
        .unwrap_or_else(|| Snapshot::empty(converge_backend::now_rfc3339()));
    let entries = journal
        .entries
        .iter()
        .map(|line| entry_from_json(line, secrets.mode()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PersistenceError::Replay {
            stack: stack.to_string(),
            reason: e.to_string(),
        })?;
    let snapshot = replay(&base, &entries).map_err(|e| PersistenceError::Replay {
        stack: stack.to_string(),
        reason: e.to_string(),
    })?;
    let pending = snapshot.pending_operations.len();
    save_snapshot(backend, stack, cp.config, snapshot, secrets).await?;
    backend.close_journal(stack).await.map_err(backend_err)?;
    Ok(Recovery::Replayed {
        entries: entries.len(),
        pending,
    })
}

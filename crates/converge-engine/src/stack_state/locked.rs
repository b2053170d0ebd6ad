//! A stack held by its lock: the one writer of its state.

use std::collections::BTreeMap;
use std::sync::Arc;

use converge_backend::{
    Backend, BackendError, Bytes, ListHistoryOptions, LockGuard, StackRef, UpdateKind,
};
use converge_state::checkpoint::StackCheckpoint;
use converge_state::integrity;
use converge_state::journal::JournalEntry;
use converge_state::secrets::Crypter;
use converge_state::{PendingOperation, SecretsProviders, Snapshot};

use super::journal::{Completion, UpdateJournal};
use super::recovery::{self, Encoding, ManifestStamp, Recovery, Replaced};
use super::stored::StoredText;
use super::{Secrets, StackStateError};
use crate::operations::OperationResult;
use converge_backend::now_rfc3339;

/// Whole seconds since the Unix epoch, as Pulumi's history records times.
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A stack whose lock this process holds (from [`super::StackState::lock`]).
/// Its base is the stored checkpoint, recovered; changes to it are journal
/// entries, persisted at the head of the next operation's journal (or by
/// [`LockedStack::commit_changes`]).
#[derive(Debug)]
pub struct LockedStack {
    backend: Arc<dyn Backend>,
    stack: StackRef,
    guard: Option<LockGuard>,
    /// The checkpoint as stored now: the base of the next journal.
    stored: StoredText,
    /// Whether the stored checkpoint has a snapshot (a new stack has none).
    deployed: bool,
    /// The stored checkpoint, read with `secrets`, without its snapshot
    /// (that is `base`).
    checkpoint: StackCheckpoint,
    /// The stored snapshot (an empty one for a new stack) with the base
    /// changes: shared with the operation that runs on it, not copied.
    base: Arc<Snapshot>,
    secrets: Secrets,
    recovery: Recovery,
    /// Base changes not yet persisted, in order.
    changes: Vec<JournalEntry>,
    /// The manifest the next compaction writes: the base's own after
    /// [`LockedStack::replace_base`], else a new one.
    stamp: ManifestStamp,
    /// A view ([`LockedStack::view`]) with an update's journal replayed:
    /// that update is running, or stopped before it finished.
    journaled: bool,
}

/// What the history records of a finished operation: Pulumi's
/// `UpdateInfo`, whose times are whole seconds since the Unix epoch.
#[derive(Debug, Clone)]
pub struct UpdateRecord {
    pub kind: UpdateKind,
    /// When the operation started, in seconds since the Unix epoch.
    pub start_time: i64,
    pub message: String,
    /// Facts about where the operation ran (Pulumi's `environment`).
    pub environment: BTreeMap<String, String>,
    /// The stack's configuration as stored (Pulumi's `config.Map` JSON:
    /// `"<namespace>:<key>"` to a string, an object, or `{"secure":
    /// "<ciphertext>"}`), never decrypted.
    pub config: serde_json::Map<String, serde_json::Value>,
}

/// What [`LockedStack::finish`] did.
#[derive(Debug)]
pub struct Finished {
    pub completion: Completion,
    /// The history record could not be added (the state itself is saved).
    pub history_error: Option<BackendError>,
}

impl LockedStack {
    /// A stack opened over `stored`, its base not read yet (empty).
    fn unread(
        backend: Arc<dyn Backend>,
        stack: StackRef,
        guard: Option<LockGuard>,
        stored: StoredText,
        recovery: Recovery,
    ) -> LockedStack {
        LockedStack {
            backend,
            stack,
            guard,
            stored,
            deployed: false,
            checkpoint: StackCheckpoint {
                stack: String::new(),
                config: None,
                latest: None,
            },
            base: Arc::new(Snapshot::empty(now_rfc3339())),
            secrets: Secrets::Opaque,
            recovery,
            changes: Vec::new(),
            stamp: ManifestStamp::New,
            journaled: false,
        }
    }

    pub(super) async fn open(
        backend: Arc<dyn Backend>,
        stack: StackRef,
        guard: LockGuard,
    ) -> Result<LockedStack, StackStateError> {
        match Self::load(&backend, &stack).await {
            Ok((bytes, recovery)) => {
                let mut locked = LockedStack::unread(
                    backend,
                    stack,
                    Some(guard),
                    StoredText::loaded(bytes),
                    recovery,
                );
                if let Err(e) = locked.read_base(Secrets::Opaque).await {
                    locked.release().await?;
                    return Err(e);
                }
                // Read into the base: the text's memory is the operation's.
                locked.stored.release();
                Ok(locked)
            }
            Err(e) => {
                guard.release().await?;
                Err(e)
            }
        }
    }

    /// [`StackState::lock_replacing`]: the stack opened as
    /// [`LockedStack::open`] opens it, or, when its stored state cannot be
    /// read, with an empty base over the stored text as it is (the base of
    /// the next journal) and no journal left open.
    pub(super) async fn open_replacing(
        backend: Arc<dyn Backend>,
        stack: StackRef,
        guard: LockGuard,
    ) -> Result<(LockedStack, Option<StackStateError>), StackStateError> {
        let unreadable_kind = |e: &StackStateError| {
            matches!(
                e,
                StackStateError::Checkpoint { .. }
                    | StackStateError::JournalEntry { .. }
                    | StackStateError::Replay { .. }
            )
        };
        let (bytes, recovery, mut unreadable) = match Self::load(&backend, &stack).await {
            Ok((bytes, recovery)) => (bytes, recovery, None),
            Err(e) if unreadable_kind(&e) => {
                // The journal does not replay: closed, so that the new
                // state's own journal can open.
                let stored = async {
                    if backend.load_journal(&stack).await.ok().flatten().is_some() {
                        backend.close_journal(&stack).await?;
                    }
                    Ok::<_, StackStateError>(
                        backend.load_checkpoint(&stack).await?.map(Bytes::from),
                    )
                }
                .await;
                match stored {
                    Ok(bytes) => (bytes, Recovery::Clean, Some(e)),
                    Err(other) => {
                        guard.release().await?;
                        return Err(other);
                    }
                }
            }
            Err(e) => {
                guard.release().await?;
                return Err(e);
            }
        };
        let mut locked = LockedStack::unread(
            backend,
            stack,
            Some(guard),
            StoredText::loaded(bytes),
            recovery,
        );
        if unreadable.is_none() {
            match locked.read_base(Secrets::Opaque).await {
                // Read into the base: the text's memory is the operation's.
                Ok(()) => locked.stored.release(),
                // The checkpoint itself does not parse: the base stays
                // empty, the text stays the next journal's base.
                Err(e) if unreadable_kind(&e) => unreadable = Some(e),
                Err(e) => {
                    locked.release().await?;
                    return Err(e);
                }
            }
        }
        Ok((locked, unreadable))
    }

    /// The stack as it is now, without its lock: the stored checkpoint
    /// with an update's live journal replayed onto it (nothing compacted,
    /// nothing written; the owner of the lock, if any, goes on). What a
    /// preview runs on, as Pulumi's previews take no lock. Writing through
    /// it fails with [`StackStateError::NotLocked`].
    pub(super) async fn view(
        backend: Arc<dyn Backend>,
        stack: StackRef,
    ) -> Result<LockedStack, StackStateError> {
        let stored = backend.load_checkpoint(&stack).await?.map(Bytes::from);
        let journal = backend.load_journal(&stack).await?;
        let journaled = journal.is_some();
        let text = match journal {
            None => stored,
            Some(journal) => match recovery::replay_stored(
                &stack,
                stored.as_deref(),
                &journal,
                converge_state::secrets::SecretsMode::Opaque,
            )? {
                Some((cp, _)) => Some(Bytes::from(
                    converge_state::checkpoint::write_checkpoint(
                        &cp,
                        converge_state::secrets::SecretsMode::Opaque,
                    )
                    .map_err(|source| StackStateError::Checkpoint {
                        stack: stack.to_string(),
                        source: Box::new(source),
                    })?,
                )),
                None => stored,
            },
        };
        let mut view = LockedStack::unread(
            backend,
            stack,
            None,
            StoredText::loaded(text),
            Recovery::Clean,
        );
        view.journaled = journaled;
        // The text is kept: it is not the stored one when a journal was
        // replayed, so it could not be read back.
        view.read_base(Secrets::Opaque).await?;
        Ok(view)
    }

    /// True for a view ([`LockedStack::view`]) that found an update's
    /// journal: its base holds that update's steps so far, and its pending
    /// operations are under way (or were, if it stopped).
    pub fn journaled(&self) -> bool {
        self.journaled
    }

    /// Fails unless this process holds the stack's lock.
    fn must_hold(&self) -> Result<(), StackStateError> {
        match self.guard {
            Some(_) => Ok(()),
            None => Err(StackStateError::NotLocked {
                stack: self.stack.to_string(),
            }),
        }
    }

    /// The stored checkpoint after recovering any journal left behind.
    async fn load(
        backend: &Arc<dyn Backend>,
        stack: &StackRef,
    ) -> Result<(Option<Bytes>, Recovery), StackStateError> {
        let bytes = backend.load_checkpoint(stack).await?.map(Bytes::from);
        match backend.load_journal(stack).await? {
            None => Ok((bytes, Recovery::Clean)),
            Some(journal) => {
                let (recovery, bytes) =
                    recovery::recover(backend.as_ref(), stack, bytes, journal).await?;
                Ok((bytes, recovery))
            }
        }
    }

    /// Reads the stored checkpoint into the base (and `checkpoint`) with
    /// `secrets`, discarding base changes not yet persisted.
    async fn read_base(&mut self, secrets: Secrets) -> Result<(), StackStateError> {
        let text = self.stored.text(self.backend.as_ref(), &self.stack).await?;
        let mut cp = recovery::parse(&self.stack, text.map(|b| &b[..]), secrets.mode())?;
        let latest = cp.latest.take();
        self.deployed = latest.is_some();
        self.base = Arc::new(latest.unwrap_or_else(|| Snapshot::empty(now_rfc3339())));
        self.checkpoint = cp;
        self.secrets = secrets;
        self.changes.clear();
        Ok(())
    }

    pub fn stack(&self) -> &StackRef {
        &self.stack
    }

    /// What opening found of an interrupted update.
    pub fn recovery(&self) -> &Recovery {
        &self.recovery
    }

    /// The checkpoint as stored (after recovery), secrets as read.
    pub(super) fn stored_checkpoint(&self) -> StackCheckpoint {
        let mut cp = self.checkpoint.clone();
        if self.deployed {
            cp.latest = Some(Snapshot::clone(&self.base));
        }
        cp
    }

    /// The base an operation starts from: the stored snapshot with the base
    /// changes made so far.
    pub fn base(&self) -> &Snapshot {
        &self.base
    }

    /// [`LockedStack::base`], shared: what an operation runs on.
    pub fn shared_base(&self) -> Arc<Snapshot> {
        Arc::clone(&self.base)
    }

    /// The base to change (copied first only while an operation still
    /// holds it).
    fn base_mut(&mut self) -> &mut Snapshot {
        Arc::make_mut(&mut self.base)
    }

    /// The state a saved plan records it was made against: the stored
    /// checkpoint's digest (after recovery, so no journal is open).
    pub async fn plan_base(&mut self) -> Result<converge_state::plan::PlanBase, StackStateError> {
        Ok(converge_state::plan::PlanBase {
            checkpoint_digest: self
                .stored
                .digest(self.backend.as_ref(), &self.stack)
                .await?,
            journal_sequence: 0,
        })
    }

    /// The stored checkpoint's `config` (raw JSON), kept as it was.
    pub fn config(&self) -> Option<&str> {
        self.checkpoint.config.as_deref()
    }

    /// Reads the base again with `crypter`, so that secrets are plaintext in
    /// memory and encrypted by it in every entry and checkpoint written.
    /// Discards base changes not yet persisted. The base as locked (read
    /// without a secrets provider, unchanged, held by no one else) is
    /// decrypted in place instead of decoded a second time: the same
    /// values and the same errors.
    pub async fn decrypt(&mut self, crypter: Arc<dyn Crypter>) -> Result<(), StackStateError> {
        let as_locked = matches!(self.secrets, Secrets::Opaque) && self.changes.is_empty();
        let base = match Arc::get_mut(&mut self.base) {
            Some(base) if as_locked => base,
            _ => return self.read_base(Secrets::Crypter(crypter)).await,
        };
        match converge_state::checkpoint::decrypt_snapshot(base, crypter.as_ref()) {
            Ok(()) => {
                self.secrets = Secrets::Crypter(crypter);
                Ok(())
            }
            Err(source) => {
                // Partly decrypted: back to the base as stored.
                self.read_base(Secrets::Opaque).await?;
                Err(StackStateError::Checkpoint {
                    stack: self.stack.to_string(),
                    source: Box::new(source),
                })
            }
        }
    }

    /// Checks every integrity rule on the base.
    pub fn verify(&self) -> Result<(), StackStateError> {
        integrity::verify(self.base()).map_err(|source| StackStateError::Integrity {
            stack: self.stack.to_string(),
            source: Box::new(source),
        })
    }

    /// Sets the secrets provider the state is encrypted with: a
    /// SecretsManager entry when it differs from the base's.
    pub fn set_secrets_providers(&mut self, providers: SecretsProviders) {
        if self.base().secrets_providers.as_ref() == Some(&providers) {
            return;
        }
        self.base_mut().secrets_providers = Some(providers.clone());
        self.changes
            .push(JournalEntry::secrets_manager(0, providers));
    }

    /// Moves the stack to another secrets provider (`stack
    /// change-secrets-provider`): the base is read again with `from` (every
    /// secret must decrypt; base changes not yet persisted are discarded),
    /// then `to` encrypts every entry and checkpoint written, and the change
    /// is a SecretsManager entry naming `providers` followed by a Write
    /// entry of the whole base, so each secret is stored re-encrypted.
    pub async fn change_secrets(
        &mut self,
        from: Arc<dyn Crypter>,
        to: Arc<dyn Crypter>,
        providers: SecretsProviders,
    ) -> Result<(), StackStateError> {
        self.read_base(Secrets::Crypter(from)).await?;
        self.secrets = Secrets::Crypter(to);
        self.base_mut().secrets_providers = Some(providers.clone());
        self.changes
            .push(JournalEntry::secrets_manager(0, providers));
        let snapshot = self.base().clone();
        self.changes.push(JournalEntry::write(0, snapshot));
        Ok(())
    }

    /// Forgets the pending operations `keep` rejects: a Write entry of the
    /// new base when any is dropped. Returns how many were dropped.
    pub fn clear_pending_operations(
        &mut self,
        mut keep: impl FnMut(&PendingOperation) -> bool,
    ) -> usize {
        let base = self.base_mut();
        let before = base.pending_operations.len();
        base.pending_operations.retain(|p| keep(p));
        let dropped = before - base.pending_operations.len();
        if dropped > 0 {
            let snapshot = self.base().clone();
            self.changes.push(JournalEntry::write(0, snapshot));
        }
        dropped
    }

    /// Replaces the whole base (`stack import`): a Write entry. The next
    /// compaction stores it with its own manifest, as given.
    pub fn replace_base(&mut self, snapshot: Snapshot) {
        self.stamp = ManifestStamp::Keep;
        *self.base_mut() = snapshot.clone();
        self.changes.push(JournalEntry::write(0, snapshot));
    }

    /// Replaces the base with an edit of it (`converge state …`): a Write
    /// entry, once `snapshot` passes every integrity rule; refused, the base
    /// unchanged, when it does not. The next compaction stamps a new
    /// manifest.
    pub fn edit_base(&mut self, snapshot: Snapshot) -> Result<(), StackStateError> {
        integrity::verify(&snapshot).map_err(|source| StackStateError::Integrity {
            stack: self.stack.to_string(),
            source: Box::new(source),
        })?;
        *self.base_mut() = snapshot.clone();
        self.changes.push(JournalEntry::write(0, snapshot));
        Ok(())
    }

    /// Opens the journal an operation persists through, its base the stored
    /// checkpoint, and persists the base changes made so far as its first
    /// entries. The operation runs on [`LockedStack::base`].
    pub async fn start(&mut self) -> Result<Arc<UpdateJournal>, StackStateError> {
        self.must_hold()?;
        // Taking the lock found no journal: one now is another writer's.
        let digest = self
            .stored
            .digest(self.backend.as_ref(), &self.stack)
            .await?;
        match self.backend.open_journal(&self.stack, &digest).await {
            Ok(()) => {}
            Err(BackendError::JournalExists { location, .. }) => {
                return Err(StackStateError::ConcurrentUpdate {
                    stack: self.stack.to_string(),
                    location,
                })
            }
            Err(e) => return Err(e.into()),
        }
        let mut changes = std::mem::take(&mut self.changes);
        for (i, entry) in changes.iter_mut().enumerate() {
            entry.sequence_id = i as u64 + 1;
        }
        let journal = UpdateJournal {
            backend: self.backend.clone(),
            stack: self.stack.clone(),
            secrets: self.secrets.clone(),
            first_sequence_id: changes.len() as u64 + 1,
            bytes_persisted: Default::default(),
            fence: self.fence(),
        };
        if !changes.is_empty() {
            journal.persist_entries(&changes).await?;
        }
        Ok(Arc::new(journal))
    }

    /// The check made before each write under the stack's lock.
    fn fence(&self) -> Option<Arc<dyn converge_backend::LockFence>> {
        self.guard.as_ref().and_then(LockGuard::fence)
    }

    /// Ends an operation started with [`LockedStack::start`]: compacts its
    /// journal (the store replays it itself when it can, else the result is
    /// uploaded and the journal closed), makes the result the new base, and
    /// adds `record` to the history.
    pub async fn finish(
        &mut self,
        journal: Arc<UpdateJournal>,
        result: &OperationResult,
        record: Option<UpdateRecord>,
    ) -> Result<Finished, StackStateError> {
        let completion = self.compact(journal, Arc::clone(&result.snapshot)).await?;
        let history_error = match record {
            Some(r) => self.add_history(&r, result).await.err(),
            None => None,
        };
        Ok(Finished {
            completion,
            history_error,
        })
    }

    /// Persists the base changes made so far on their own (a journal of
    /// only them, compacted at once); does nothing when there are none.
    ///
    /// Once the journal holds them the changes are made: a checkpoint that
    /// cannot be written then is [`StackStateError::NotCompacted`], which
    /// callers report as a warning, never as "nothing changed".
    pub async fn commit_changes(&mut self) -> Result<(), StackStateError> {
        if self.changes.is_empty() {
            return Ok(());
        }
        let journal = self.start().await?;
        if let Err(source) = self.compact(journal, Arc::clone(&self.base)).await {
            return Err(StackStateError::NotCompacted {
                stack: self.stack.to_string(),
                source: Box::new(source),
            });
        }
        Ok(())
    }

    /// Stores `snapshot` (the journal's result, shared with whoever holds
    /// it, not copied) as the checkpoint and makes it the base.
    async fn compact(
        &mut self,
        journal: Arc<UpdateJournal>,
        snapshot: Arc<Snapshot>,
    ) -> Result<Completion, StackStateError> {
        drop(journal);
        // A lock broken meanwhile: the journal is the next holder's to
        // recover now; the checkpoint is not this process's to write.
        if let Some(fence) = self.fence() {
            fence.check().await?;
        }
        // The stored journal replayed onto the stored base is `snapshot` by
        // construction, so a store that compacts journals itself can.
        // (The store stamps its own manifest: a snapshot kept as given is
        // uploaded.)
        let completion = if self.stamp == ManifestStamp::New
            && self.backend.compacts_journals()
            && self.backend.commit_journal(&self.stack).await.is_ok()
        {
            let stored = self.backend.load_checkpoint(&self.stack).await?;
            self.stored = StoredText::loaded(stored.map(Bytes::from));
            Completion::CompactedByStore
        } else {
            // The store declined or failed: its journal is still open (or
            // was committed by a request whose answer was lost, which this
            // upload overwrites with the same content).
            let len = recovery::stream_snapshot(
                self.backend.as_ref(),
                &self.stack,
                self.checkpoint.config.clone(),
                Arc::clone(&snapshot),
                self.secrets.clone(),
                self.stamp,
            )
            .await?;
            self.stamp = ManifestStamp::New;
            // Stored: whatever happens next, its text is the base of the
            // next journal, not the one before.
            self.stored = StoredText::NotHeld { len, digest: None };
            self.backend.close_journal(&self.stack).await?;
            Completion::Uploaded {
                bytes: usize::try_from(len).unwrap_or(usize::MAX),
            }
        };
        self.deployed = true;
        let replaced = std::mem::replace(&mut self.base, snapshot);
        // The base the operation started from is freed on a blocking thread
        // when this was its last holder: 100,000 resources take a while.
        if Arc::strong_count(&replaced) == 1 {
            tokio::task::spawn_blocking(move || drop(replaced));
        }
        Ok(completion)
    }

    /// The stored checkpoint's size, for the buffer of the next one.
    fn replaced(&self) -> Option<Replaced> {
        self.stored.len().map(|len| Replaced {
            bytes: usize::try_from(len).unwrap_or(usize::MAX),
            resources: self.base.resources.len(),
        })
    }

    async fn add_history(
        &self,
        record: &UpdateRecord,
        result: &OperationResult,
    ) -> Result<(), BackendError> {
        let changes: serde_json::Map<String, serde_json::Value> = result
            .plan
            .counts()
            .into_iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.into()))
            .collect();
        let mut json = serde_json::json!({
            "kind": record.kind.as_str(),
            "startTime": record.start_time,
            "message": record.message,
            "environment": record.environment,
            "config": record.config,
            "result": if result.error.is_none() { "succeeded" } else { "failed" },
            "endTime": unix_now(),
            "version": self.next_version().await?,
            "resourceChanges": changes,
        });
        if let Some(crate::EngineError::Interrupted { .. }) = &result.error {
            json[converge_backend::CANCELLED_FIELD] = serde_json::Value::Bool(true);
        }
        self.backend
            .add_history(
                &self.stack,
                record.kind.clone(),
                json.to_string().as_bytes(),
            )
            .await
    }

    /// The next update's `version`: one more than the latest record's (a
    /// record without one, as Pulumi's DIY backends write, counts as the
    /// number of records before it).
    async fn next_version(&self) -> Result<i64, BackendError> {
        let latest = self
            .backend
            .list_history(&self.stack, &ListHistoryOptions { limit: Some(1) })
            .await?;
        let Some(entry) = latest.first() else {
            return Ok(1);
        };
        let version = serde_json::from_slice::<serde_json::Value>(&entry.record)
            .ok()
            .and_then(|v| v.get("version").and_then(serde_json::Value::as_i64))
            .filter(|v| *v > 0);
        Ok(match version {
            Some(v) => v + 1,
            None => {
                let all = self
                    .backend
                    .list_history(&self.stack, &ListHistoryOptions::default())
                    .await?;
                all.len() as i64 + 1
            }
        })
    }

    /// Renames the stack to `to` (stack, project, same organization) and
    /// releases its lock: every URN of the state moved into the new name
    /// ([`converge_state::surgery::rename_stack`]), the result stored under
    /// `to` in one backend operation, which moves the history and tags.
    /// Secrets stay as they are stored. On any error nothing changes: the
    /// stack keeps its name and state.
    pub async fn rename(mut self, to: &StackRef) -> Result<(), StackStateError> {
        self.must_hold()?;
        let result = self.rename_locked(to).await;
        let released = self.release().await;
        result.and(released)
    }

    async fn rename_locked(&mut self, to: &StackRef) -> Result<(), StackStateError> {
        let config = self.checkpoint.config.clone();
        let bytes = if self.deployed {
            let mut snapshot = Snapshot::clone(&self.base);
            converge_state::surgery::rename_stack(&mut snapshot, &to.stack, &to.project).map_err(
                |source| StackStateError::Rename {
                    stack: self.stack.to_string(),
                    to: to.to_string(),
                    source: Box::new(source),
                },
            )?;
            recovery::encode_snapshot(
                to,
                config.as_deref(),
                &snapshot,
                &self.secrets,
                Encoding {
                    stamp: ManifestStamp::New,
                    replaced: self.replaced(),
                },
            )?
        } else {
            let cp = StackCheckpoint {
                stack: to.to_string(),
                config,
                latest: None,
            };
            converge_state::checkpoint::write_checkpoint(&cp, self.secrets.mode()).map_err(
                |source| StackStateError::Checkpoint {
                    stack: to.to_string(),
                    source: Box::new(source),
                },
            )?
        };
        self.backend.rename_stack(&self.stack, to, &bytes).await?;
        Ok(())
    }

    /// Releases the stack's lock.
    pub async fn release(mut self) -> Result<(), StackStateError> {
        if let Some(guard) = self.guard.take() {
            guard.release().await?;
        }
        Ok(())
    }
}

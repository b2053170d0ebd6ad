//! The stack's state owner on the file backend: an update journals each
//! step durably and compacts at the end; base changes are journal entries;
//! every reader sees the journal replayed; an interrupted update is
//! recovered by the first reader or writer that can prove its writer gone.

use std::sync::Arc;

use converge_backend::{Backend, FileBackend, LockInfo, StackRef};
use converge_engine::stack_state::{
    JournalStatus, ReadOptions, Recovery, StackState, StackStateError, UpdateJournal,
};
use converge_engine::{DeploymentOptions, EventSink, LockedStack, OperationContext};
use converge_state::checkpoint;
use converge_state::journal::base_digest;
use converge_state::secrets::SecretsMode;
use converge_state::{integrity, OperationType, SecretsProviders, Snapshot};
use converge_testkit::{check_cloud_tracked, numbered_things, MockCloud, MockLoader, MockProvider};

struct World {
    _dir: tempfile::TempDir,
    backend: Arc<dyn Backend>,
    state: StackState,
    cloud: Arc<MockCloud>,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = Arc::new(FileBackend::new(dir.path(), ""));
    let stack = StackRef::new("proj", "test").unwrap();
    StackState::new(backend.clone(), stack.clone())
        .create()
        .await
        .unwrap();
    World {
        _dir: dir,
        state: StackState::new(backend.clone(), stack),
        backend,
        cloud: MockCloud::new(),
    }
}

fn me() -> LockInfo {
    LockInfo::current()
}

/// A live holder on another host: its lock can never be proved stale here.
fn other_host() -> LockInfo {
    LockInfo {
        hostname: "elsewhere.example".to_owned(),
        pid: 1,
        ..LockInfo::current()
    }
}

impl World {
    fn context(&self, base: &Snapshot, sink: Arc<UpdateJournal>) -> OperationContext {
        let provider = MockProvider::new("pkg").with_cloud(self.cloud.clone());
        OperationContext {
            base: Arc::new(base.clone()),
            loader: Arc::new(MockLoader::single(provider)),
            sink,
            events: EventSink::discard(),
            options: DeploymentOptions::new("test", "proj"),
        }
    }

    /// Runs an update of `n` things to its end without compacting it, as a
    /// process killed right after its last step would leave it.
    async fn update_then_die(&self, locked: &mut LockedStack, n: usize) {
        let journal = locked.start().await.unwrap();
        let result =
            converge_engine::update(self.context(locked.base(), journal), &numbered_things(n))
                .await;
        assert!(result.error.is_none(), "{:?}", result.error);
    }

    /// Runs an update of `n` things and compacts it, as a whole `up` does.
    async fn update(&self, locked: &mut LockedStack, n: usize) {
        let journal = locked.start().await.unwrap();
        let result = converge_engine::update(
            self.context(locked.base(), journal.clone()),
            &numbered_things(n),
        )
        .await;
        assert!(result.error.is_none(), "{:?}", result.error);
        locked.finish(journal, &result, None).await.unwrap();
    }

    async fn stored(&self) -> Option<Snapshot> {
        let bytes = self
            .backend
            .load_checkpoint(self.state.stack())
            .await
            .unwrap()?;
        checkpoint::read_checkpoint(&bytes, SecretsMode::Opaque)
            .unwrap()
            .latest
    }

    /// The stored checkpoint's text.
    async fn checkpoint_text(&self) -> Vec<u8> {
        let text = self.backend.load_checkpoint(self.state.stack()).await;
        text.unwrap().expect("a checkpoint")
    }

    /// Another writer stores `text` as the checkpoint, behind the lock
    /// holder's back.
    async fn intrude(&self, text: &[u8]) {
        let stack = self.state.stack();
        let options = Default::default();
        let saved = self
            .backend
            .save_checkpoint(stack, text.to_vec().into(), &options);
        saved.await.unwrap();
    }

    /// Opens a journal on `locked` and closes it again: the base digest
    /// it named.
    async fn journal_base(&self, locked: &mut LockedStack) -> String {
        let journal = locked.start().await.unwrap();
        let open = self.backend.load_journal(self.state.stack()).await;
        let open = open.unwrap().expect("the journal just opened");
        drop(journal);
        self.backend
            .close_journal(self.state.stack())
            .await
            .unwrap();
        open.base_digest
    }

    async fn journal_left(&self) -> bool {
        self.backend
            .load_journal(self.state.stack())
            .await
            .unwrap()
            .is_some()
    }

    async fn read_only(&self) -> (Snapshot, JournalStatus) {
        let current = self.state.read(&ReadOptions::default()).await.unwrap();
        (current.checkpoint.latest.unwrap(), current.journal)
    }
}

#[tokio::test]
async fn an_update_journals_then_compacts() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    assert_eq!(locked.recovery(), &Recovery::Clean);
    let journal = locked.start().await.unwrap();
    let result = converge_engine::update(
        w.context(locked.base(), journal.clone()),
        &numbered_things(20),
    )
    .await;
    assert!(result.error.is_none(), "{:?}", result.error);
    // Before compaction, the journal on disk holds every entry.
    let stored = w
        .backend
        .load_journal(w.state.stack())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.entries.len(), result.journal.len());
    locked.finish(journal, &result, None).await.unwrap();
    assert!(!w.journal_left().await);
    let snapshot = w.stored().await.unwrap();
    assert_eq!(snapshot.resources.len(), 22);
    integrity::verify(&snapshot).unwrap();
    // The operation's result is the new base, shared rather than copied,
    // and it is what was stored.
    assert!(Arc::ptr_eq(&locked.shared_base(), &result.snapshot));
    assert_eq!(snapshot.resources, result.snapshot.resources);
    locked.release().await.unwrap();
    let again = w.state.lock(me()).await.unwrap();
    assert_eq!(again.recovery(), &Recovery::Clean);
    again.release().await.unwrap();
}

/// A compaction streams the checkpoint to the store without keeping its
/// text: what the owner needs of it later (the base of the next journal, a
/// plan's base, the base read again with a secrets provider) it reads back,
/// and a checkpoint changed behind its back stops it with nothing changed.
#[tokio::test]
async fn after_a_compaction_the_checkpoint_is_read_back_when_needed() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update(&mut locked, 3).await;
    let stored = w.checkpoint_text().await;
    assert_eq!(
        locked.plan_base().await.unwrap().checkpoint_digest,
        base_digest(&stored)
    );
    // Read again with a crypter, then another update on the same lock:
    // its journal names the stored checkpoint as its base.
    let crypter: Arc<dyn converge_state::secrets::Crypter> = Arc::new(
        converge_state::secrets::SymmetricCrypter::from_key(&[7; 32]),
    );
    locked.decrypt(crypter).await.unwrap();
    assert_eq!(locked.base().resources.len(), 5);
    assert_eq!(w.journal_base(&mut locked).await, base_digest(&stored));
    w.update(&mut locked, 4).await;

    // Another writer, behind the lock holder's back.
    let mut intruded = w.checkpoint_text().await;
    intruded.extend_from_slice(b"\n");
    w.intrude(&intruded).await;
    let err = locked.start().await.unwrap_err();
    assert!(
        matches!(err, StackStateError::CheckpointChanged { .. }),
        "{err}"
    );
    assert!(!w.journal_left().await, "no journal was opened");
    assert_eq!(w.checkpoint_text().await, intruded);
    locked.release().await.unwrap();
}

/// The lock is the first guard against two updates; the journal's
/// create-if-absent is the second. If another writer gets past the lock
/// (a broken lease, a store whose conditional writes are not atomic), the
/// update that finds its journal stops before changing anything, and says
/// why instead of asking for a recovery that would race the live writer.
/// Opening reads the checkpoint into the base and lets its text go (the
/// operation's memory takes its place): the next journal names the digest
/// of the text that was read, without reading it again, and a read back
/// (the base read again with a crypter after a change) finds a checkpoint
/// changed behind the lock holder's back — as long as before, other bytes
/// — and stops, with nothing changed.
#[tokio::test]
async fn the_checkpoint_read_at_open_is_let_go_and_checked_when_read_back() {
    let w = world().await;
    let mut first = w.state.lock(me()).await.unwrap();
    w.update(&mut first, 3).await;
    first.release().await.unwrap();
    let stored = w.checkpoint_text().await;

    let mut locked = w.state.lock(me()).await.unwrap();
    assert_eq!(w.journal_base(&mut locked).await, base_digest(&stored));

    // Another writer, behind the lock holder's back: the same length.
    let text = String::from_utf8(stored.clone()).unwrap();
    let intruded = text.replacen("\"id-1\"", "\"id-9\"", 1).into_bytes();
    assert_ne!(intruded, stored);
    assert_eq!(intruded.len(), stored.len());
    w.intrude(&intruded).await;
    locked.set_secrets_providers(SecretsProviders {
        kind: "passphrase".to_owned(),
        state: Some(r#"{"salt":"v1:AAAA"}"#.to_owned()),
    });
    let crypter: Arc<dyn converge_state::secrets::Crypter> = Arc::new(
        converge_state::secrets::SymmetricCrypter::from_key(&[7; 32]),
    );
    let err = locked.decrypt(crypter).await.unwrap_err();
    assert!(
        matches!(err, StackStateError::CheckpointChanged { .. }),
        "{err}"
    );
    assert_eq!(w.checkpoint_text().await, intruded);
    locked.release().await.unwrap();
}

#[tokio::test]
async fn an_update_that_finds_another_writers_journal_stops_and_changes_nothing() {
    let w = world().await;
    let mut first = w.state.lock(me()).await.unwrap();
    w.update(&mut first, 3).await;
    let before = w.stored().await.unwrap();
    first.release().await.unwrap();

    let mut locked = w.state.lock(me()).await.unwrap();
    // The other writer, behind the lock holder's back.
    let digest = base_digest(&w.checkpoint_text().await);
    w.backend
        .open_journal(w.state.stack(), &digest)
        .await
        .unwrap();
    let err = locked.start().await.unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, StackStateError::ConcurrentUpdate { .. })
            && msg.contains("another update of stack")
            && msg.contains("changed nothing")
            && !msg.contains("recover"),
        "{msg}"
    );
    // The other writer's journal and the checkpoint are as they were.
    let stored = w.backend.load_journal(w.state.stack()).await.unwrap();
    assert!(stored.is_some_and(|j| j.entries.is_empty() && j.base_digest == digest));
    assert_eq!(w.stored().await.unwrap(), before);
    locked.release().await.unwrap();
}

#[tokio::test]
async fn a_reader_sees_an_interrupted_update_and_compacts_it_once_its_writer_is_gone() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update_then_die(&mut locked, 10).await;
    // While the writer holds the lock, a reader sees its progress and
    // writes nothing.
    let (seen, status) = w.read_only().await;
    assert_eq!(seen.resources.len(), 12);
    assert!(matches!(status, JournalStatus::Live { .. }), "{status:?}");
    let compacting = ReadOptions {
        compact_as: Some(me()),
    };
    let current = w.state.read(&compacting).await.unwrap();
    assert!(matches!(current.journal, JournalStatus::Live { .. }));
    assert!(w.stored().await.is_none(), "a reader wrote a live journal");
    // The writer is gone (its lock released without compaction): the next
    // reader compacts, so the checkpoint itself holds the update.
    locked.release().await.unwrap();
    let current = w.state.read(&compacting).await.unwrap();
    assert!(
        matches!(
            current.journal,
            JournalStatus::Recovered(Recovery::Replayed { pending: 0, .. })
        ),
        "{:?}",
        current.journal
    );
    assert!(!w.journal_left().await);
    let stored = w.stored().await.unwrap();
    assert_eq!(stored.resources.len(), 12);
    check_cloud_tracked(&w.cloud, &stored, &[]);
    let locked = w.state.lock(me()).await.unwrap();
    assert_eq!(locked.recovery(), &Recovery::Clean);
    locked.release().await.unwrap();
}

/// An update that changes nothing journals its unchanged resources as
/// runs, a line for many of them; an interrupted one replays from those
/// lines to exactly what the update had done.
#[tokio::test]
async fn unchanged_resources_are_journaled_as_runs_and_replay_in_place() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update(&mut locked, 40).await;
    let before = w.stored().await.unwrap();
    locked.release().await.unwrap();

    let mut locked = w.state.lock(me()).await.unwrap();
    let journal = locked.start().await.unwrap();
    let result =
        converge_engine::update(w.context(locked.base(), journal), &numbered_things(40)).await;
    assert!(result.error.is_none(), "{:?}", result.error);
    let same = result
        .journal
        .iter()
        .filter(|e| e.same_old.is_some())
        .count();
    assert_eq!(same, before.resources.len());
    let lines = w
        .backend
        .load_journal(w.state.stack())
        .await
        .unwrap()
        .unwrap()
        .entries;
    assert!(
        lines.len() < result.journal.len() / 2,
        "{} lines for {} entries",
        lines.len(),
        result.journal.len()
    );
    assert!(lines
        .iter()
        .any(|l| String::from_utf8_lossy(l).contains("\"sameOlds\":[")));
    // The writer dies before compacting; the next lock replays the runs.
    locked.release().await.unwrap();
    let again = w.state.lock(me()).await.unwrap();
    assert!(
        matches!(again.recovery(), Recovery::Replayed { .. }),
        "{:?}",
        again.recovery()
    );
    assert_eq!(again.base().resources, before.resources);
    assert_eq!(w.stored().await.unwrap().resources, before.resources);
    again.release().await.unwrap();
}

#[tokio::test]
async fn a_reader_that_cannot_prove_the_writer_gone_changes_nothing() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update_then_die(&mut locked, 3).await;
    locked.release().await.unwrap();
    // Another host now holds the stack (its lock is never stale here).
    let theirs = w.backend.lock(w.state.stack(), other_host()).await.unwrap();
    let current = w
        .state
        .read(&ReadOptions {
            compact_as: Some(me()),
        })
        .await
        .unwrap();
    assert_eq!(current.checkpoint.latest.unwrap().resources.len(), 5);
    assert!(matches!(current.journal, JournalStatus::Live { .. }));
    assert!(w.journal_left().await);
    assert!(w.stored().await.is_none());
    theirs.release().await.unwrap();
}

#[tokio::test]
async fn a_journal_whose_base_is_no_longer_the_checkpoint_is_dropped() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update(&mut locked, 2).await;
    locked.release().await.unwrap();
    // A process that died between saving the checkpoint and closing the
    // journal leaves one whose base is an older checkpoint.
    w.backend
        .open_journal(w.state.stack(), &base_digest(b"an older checkpoint"))
        .await
        .unwrap();
    let (seen, _) = w.read_only().await;
    assert_eq!(seen.resources.len(), 4);
    let locked = w.state.lock(me()).await.unwrap();
    assert_eq!(locked.recovery(), &Recovery::AlreadyCompacted);
    assert_eq!(locked.base().resources.len(), 4);
    locked.release().await.unwrap();
}

#[tokio::test]
async fn base_changes_are_journal_entries() {
    let w = world().await;
    let provider = SecretsProviders {
        kind: "passphrase".to_owned(),
        state: Some(r#"{"salt":"v1:abc"}"#.to_owned()),
    };
    let mut locked = w.state.lock(me()).await.unwrap();
    locked.set_secrets_providers(provider.clone());
    // Setting the same provider again journals nothing more.
    locked.set_secrets_providers(provider.clone());
    w.update_then_die(&mut locked, 1).await;
    let stored = w
        .backend
        .load_journal(w.state.stack())
        .await
        .unwrap()
        .unwrap();
    let first: serde_json::Value = serde_json::from_slice(&stored.entries[0]).unwrap();
    assert_eq!(first["kind"], 6, "a SecretsManager entry first: {first}");
    assert!(stored
        .entries
        .iter()
        .skip(1)
        .all(|e| { serde_json::from_slice::<serde_json::Value>(e).unwrap()["kind"] != 6 }));
    // A reader sees the provider before any compaction.
    let (seen, _) = w.read_only().await;
    assert_eq!(seen.secrets_providers.as_ref(), Some(&provider));
    locked.release().await.unwrap();

    // Cleared pending operations: a Write entry, seen by the next reader.
    let mut locked = w.state.lock(me()).await.unwrap();
    assert!(matches!(locked.recovery(), Recovery::Replayed { .. }));
    let mut with_pending = locked.base().clone();
    with_pending
        .pending_operations
        .push(converge_state::PendingOperation {
            resource: with_pending.resources[1].clone(),
            kind: OperationType::Creating,
        });
    locked.replace_base(with_pending);
    locked.commit_changes().await.unwrap();
    assert_eq!(w.stored().await.unwrap().pending_operations.len(), 1);
    let cleared = locked.clear_pending_operations(|_| false);
    assert_eq!(cleared, 1);
    let journal = locked.start().await.unwrap();
    drop(journal);
    let (seen, _) = w.read_only().await;
    assert!(seen.pending_operations.is_empty());
    assert_eq!(seen.secrets_providers.as_ref(), Some(&provider));
    locked.release().await.unwrap();
}

#[tokio::test]
async fn an_aborted_update_leaves_pending_operations_that_track_every_object() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    let journal = locked.start().await.unwrap();
    let slow = MockProvider::new("pkg")
        .with_cloud(w.cloud.clone())
        .latency(std::time::Duration::from_millis(5));
    let mut ctx = w.context(locked.base(), journal);
    ctx.loader = Arc::new(MockLoader::single(slow));
    let task =
        tokio::spawn(async move { converge_engine::update(ctx, &numbered_things(1000)).await });
    // Abort mid-deployment, once some objects exist; a reader meanwhile
    // sees a prefix of the update that verifies.
    while w.cloud.len() < 5 {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let (live, _) = w.read_only().await;
    integrity::verify(&live).unwrap();
    task.abort();
    let _ = task.await;
    locked.release().await.unwrap();
    let (seen, _) = w.read_only().await;
    integrity::verify(&seen).unwrap();
    check_cloud_tracked(&w.cloud, &seen, &[]);
    assert!(seen.resources.len() >= live.resources.len());
}

#[tokio::test]
async fn a_state_edit_is_verified_journaled_and_seen_by_the_next_update() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update(&mut locked, 3).await;
    let deployed = locked.base().clone();

    // An edit that breaks integrity (a second live copy of a URN) is refused
    // and changes nothing.
    let mut broken = deployed.clone();
    broken.resources.push(broken.resources[1].clone());
    let err = locked.edit_base(broken).unwrap_err();
    assert!(
        matches!(err, converge_engine::StackStateError::Integrity { .. }),
        "{err}"
    );
    assert_eq!(locked.base(), &deployed);
    locked.commit_changes().await.unwrap();
    assert_eq!(w.stored().await.unwrap().resources, deployed.resources);

    // A valid edit (the last thing forgotten) is committed as a journal of
    // one Write entry, compacted at once.
    let mut edited = deployed.clone();
    let forgotten = edited.resources.pop().unwrap();
    locked.edit_base(edited.clone()).unwrap();
    locked.commit_changes().await.unwrap();
    assert!(!w.journal_left().await);
    assert_eq!(w.stored().await.unwrap().resources, edited.resources);
    assert_eq!(w.read_only().await.0.resources, edited.resources);

    // The next update creates the forgotten thing again (its object is a
    // second one in the cloud: the edit touched no object).
    let objects = w.cloud.len();
    w.update(&mut locked, 3).await;
    assert!(locked
        .base()
        .resources
        .iter()
        .any(|r| r.urn == forgotten.urn));
    assert_eq!(w.cloud.len(), objects + 1);
    locked.release().await.unwrap();
}

fn record() -> converge_engine::stack_state::UpdateRecord {
    converge_engine::stack_state::UpdateRecord {
        kind: converge_backend::UpdateKind::Update,
        start_time: 1_700_000_000,
        message: "m".to_owned(),
        environment: Default::default(),
        config: serde_json::from_str(r#"{"proj:s":{"secure":"v1:abc"}}"#).unwrap(),
    }
}

#[tokio::test]
async fn history_records_have_pulumis_shape_and_count_versions() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    for n in [2, 4] {
        let journal = locked.start().await.unwrap();
        let result = converge_engine::update(
            w.context(locked.base(), journal.clone()),
            &numbered_things(n),
        )
        .await;
        let finished = locked
            .finish(journal, &result, Some(record()))
            .await
            .unwrap();
        assert!(finished.history_error.is_none());
    }
    locked.release().await.unwrap();
    let history = w
        .backend
        .list_history(w.state.stack(), &Default::default())
        .await
        .unwrap();
    let records: Vec<serde_json::Value> = history
        .iter()
        .map(|h| serde_json::from_slice(&h.record).unwrap())
        .collect();
    assert_eq!(records[0]["version"], 2);
    assert_eq!(records[1]["version"], 1);
    let r = &records[1];
    assert_eq!(r["startTime"], 1_700_000_000);
    assert!(r["endTime"].is_i64(), "{r}");
    assert_eq!(r["config"]["proj:s"]["secure"], "v1:abc");
    assert!(r["environment"].is_object());
    assert_eq!(r["result"], "succeeded");
    // Two things and the stack resource; their default provider is not
    // counted, as Pulumi does not count it.
    assert_eq!(r["resourceChanges"], serde_json::json!({"create": 3}));
}

#[tokio::test]
async fn a_rename_moves_every_urn_and_the_next_update_changes_nothing() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update(&mut locked, 3).await;
    let objects = w.cloud.len();
    let taken = StackRef::new("proj", "taken").unwrap();
    StackState::new(w.backend.clone(), taken.clone())
        .create()
        .await
        .unwrap();
    // A taken name is refused and nothing changes.
    let before = w.stored().await.unwrap();
    let err = locked.rename(&taken).await.unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(w.stored().await.unwrap().resources, before.resources);

    let prod = StackRef::new("proj", "prod").unwrap();
    w.state
        .lock(me())
        .await
        .unwrap()
        .rename(&prod)
        .await
        .unwrap();
    assert!(!w.backend.stack_exists(w.state.stack()).await.unwrap());
    let moved = StackState::new(w.backend.clone(), prod.clone());
    let mut locked = moved.lock(me()).await.unwrap();
    integrity::verify(locked.base()).unwrap();
    assert_eq!(locked.base().resources.len(), before.resources.len());
    for r in &locked.base().resources {
        assert_eq!(r.urn.stack(), "prod", "{}", r.urn);
        for u in r.parent.iter().chain(&r.dependencies) {
            assert_eq!(u.stack(), "prod", "{u}");
        }
        if let Some(p) = &r.provider {
            assert_eq!(p.urn.stack(), "prod");
        }
    }
    // The same program in the new stack finds every resource: no change.
    let journal = locked.start().await.unwrap();
    let mut ctx = w.context(locked.base(), journal.clone());
    ctx.options = DeploymentOptions::new("prod", "proj");
    let result = converge_engine::update(ctx, &numbered_things(3)).await;
    assert!(result.error.is_none(), "{:?}", result.error);
    let counts = result.plan.counts();
    assert!(counts.keys().all(|op| op.as_str() == "same"), "{counts:?}");
    locked.finish(journal, &result, None).await.unwrap();
    locked.release().await.unwrap();
    assert_eq!(w.cloud.len(), objects);
}

#[tokio::test]
async fn a_secrets_provider_change_reencrypts_every_secret_through_the_journal() {
    use converge_model::PropertyValue;
    use converge_state::secrets::{Crypter, SymmetricCrypter};
    let w = world().await;
    let old: Arc<dyn Crypter> = Arc::new(SymmetricCrypter::from_key(&[1; 32]));
    let new: Arc<dyn Crypter> = Arc::new(SymmetricCrypter::from_key(&[2; 32]));
    let provider = |name: &str| SecretsProviders {
        kind: name.to_owned(),
        state: Some("{}".to_owned()),
    };

    // A deployed stack with a secret output, encrypted by `old`.
    let mut locked = w.state.lock(me()).await.unwrap();
    locked.decrypt(old.clone()).await.unwrap();
    w.update(&mut locked, 1).await;
    let mut with_secret = locked.base().clone();
    with_secret.resources[1].outputs.insert(
        "password".to_owned(),
        PropertyValue::secret(PropertyValue::String("hunter2".to_owned())),
    );
    locked.set_secrets_providers(provider("old"));
    locked.edit_base(with_secret).unwrap();
    locked.commit_changes().await.unwrap();
    locked.release().await.unwrap();

    let secret_of = |s: &Snapshot| s.resources[1].outputs["password"].clone();
    let stored_ciphertext = |s: &Snapshot| match secret_of(s) {
        PropertyValue::Secret(inner) => match *inner {
            PropertyValue::String(ct) => ct,
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };

    // The change, left in the journal as a process killed before compacting
    // it would: a reader already sees the new provider and ciphertext.
    let mut locked = w.state.lock(me()).await.unwrap();
    locked
        .change_secrets(old.clone(), new.clone(), provider("new"))
        .await
        .unwrap();
    drop(locked.start().await.unwrap());
    let (seen, _) = w.read_only().await;
    assert_eq!(seen.secrets_providers, Some(provider("new")));
    let ct = stored_ciphertext(&seen);
    assert!(!ct.contains("hunter2"));
    assert_eq!(new.decrypt(&ct).unwrap(), r#""hunter2""#);
    assert!(old.decrypt(&ct).is_err());
    locked.release().await.unwrap();

    // Committed on its own: the checkpoint holds only the new ciphertext.
    let mut locked = w.state.lock(me()).await.unwrap();
    locked
        .change_secrets(new.clone(), old.clone(), provider("old"))
        .await
        .unwrap();
    locked.commit_changes().await.unwrap();
    locked.release().await.unwrap();
    assert!(!w.journal_left().await);
    let stored = w.stored().await.unwrap();
    assert_eq!(stored.secrets_providers, Some(provider("old")));
    assert_eq!(
        old.decrypt(&stored_ciphertext(&stored)).unwrap(),
        r#""hunter2""#
    );

    // A wrong `from` key changes nothing.
    let mut locked = w.state.lock(me()).await.unwrap();
    assert!(locked
        .change_secrets(new.clone(), old.clone(), provider("x"))
        .await
        .is_err());
    locked.commit_changes().await.unwrap();
    locked.release().await.unwrap();
    assert_eq!(w.stored().await.unwrap(), stored);
}

/// A writer whose lock was broken under it (`converge cancel` from another
/// host) stops before its next write: its steps after that are not
/// journaled, its result is not compacted over the stack, and what it had
/// journaled before is the next holder's to recover.
#[tokio::test]
async fn a_writer_whose_lock_was_broken_writes_no_more() {
    let w = world().await;
    let mut first = w.state.lock(me()).await.unwrap();
    w.update(&mut first, 2).await;
    first.release().await.unwrap();
    let before = w.checkpoint_text().await;

    let mut locked = w.state.lock(me()).await.unwrap();
    let journal = locked.start().await.unwrap();
    // Broken meanwhile, as `converge cancel` breaks a lock held elsewhere.
    assert_eq!(w.backend.break_locks(w.state.stack()).await.unwrap(), 1);
    let result = converge_engine::update(
        w.context(locked.base(), journal.clone()),
        &numbered_things(4),
    )
    .await;
    let err = result.error.as_ref().expect("the update stops").to_string();
    assert!(err.contains("was taken from this operation"), "{err}");
    // Nothing of it was journaled, and its result is not compacted.
    let stored = w.backend.load_journal(w.state.stack()).await.unwrap();
    assert!(stored.is_some_and(|j| j.entries.is_empty()));
    let err = locked.finish(journal, &result, None).await.unwrap_err();
    assert!(
        matches!(&err, StackStateError::Backend(b) if b.is_lease_lost()),
        "{err}"
    );
    assert_eq!(w.checkpoint_text().await, before);
    drop(locked);
    // The next holder recovers the (empty) journal and goes on.
    let mut next = w.state.lock(me()).await.unwrap();
    w.update(&mut next, 4).await;
    next.release().await.unwrap();
    assert_eq!(w.stored().await.unwrap().resources.len(), 6);
}

mod edits;

//! Update leases: exclusion under concurrency, writes only by the holder,
//! expiry, and the server-side compaction of an abandoned update's journal.

use crate::common;

use std::time::Duration;

use common::Storage;
use converge_backend::conformance::test_digest;
use converge_backend::{
    BackendError, Bytes, HistoryStore, JournalStore, LockInfo, StackLocker, StackRef, StackStore,
};
use converge_model::{PropertyValue, ResourceState, Urn};
use converge_state::checkpoint::{read_checkpoint, write_checkpoint, StackCheckpoint};
use converge_state::journal::{entry_to_json, JournalEntry};
use converge_state::secrets::SecretsMode;
use converge_state::{OperationType, PendingOperation, Snapshot};

fn holder(pid: u32) -> LockInfo {
    LockInfo {
        pid,
        username: format!("user{pid}"),
        hostname: format!("host{pid}"),
        timestamp: "2024-05-01T10:00:00Z".to_owned(),
    }
}

async fn exactly_one_lock_wins(storage: Storage) {
    let Some(server) = common::start(storage).await else {
        return;
    };
    let stack = StackRef::with_organization(server.organization.clone(), "race", "dev").unwrap();
    server.backend().create_stack(&stack, b"{}").await.unwrap();
    let attempts: Vec<_> = (1..=8)
        .map(|pid| {
            // One backend per contender, as separate processes would have.
            let backend = server.backend();
            let stack = stack.clone();
            tokio::spawn(async move {
                let result = backend.lock(&stack, holder(pid)).await;
                (pid, result, backend)
            })
        })
        .collect();
    let mut winners = Vec::new();
    let mut refusals = Vec::new();
    let mut keep = Vec::new();
    for attempt in attempts {
        let (pid, result, backend) = attempt.await.unwrap();
        match result {
            Ok(guard) => winners.push((pid, guard)),
            Err(e) => refusals.push(e),
        }
        keep.push(backend);
    }
    assert_eq!(winners.len(), 1, "exactly one contender wins");
    let winner = holder(winners[0].0);
    assert_eq!(refusals.len(), 7);
    for err in &refusals {
        match err {
            BackendError::Locked { holder, .. } => assert_eq!(**holder, winner),
            other => panic!("want Locked, got {other}"),
        }
        assert!(err.to_string().contains(&winner.describe()), "{err}");
    }
    let (_, guard) = winners.pop().unwrap();
    guard.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_lock_attempts_on_sqlite_exactly_one_wins() {
    exactly_one_lock_wins(Storage::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_lock_attempts_on_postgres_exactly_one_wins() {
    exactly_one_lock_wins(Storage::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_lease_holder_writes() {
    let server = common::start(Storage::Sqlite).await.unwrap();
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    let (holder_backend, other) = (server.backend(), server.backend());
    holder_backend.create_stack(&stack, b"v1").await.unwrap();
    let guard = holder_backend.lock(&stack, holder(1)).await.unwrap();

    let options = converge_backend::SaveOptions::default();
    let err = other
        .save_checkpoint(&stack, Bytes::from_static(b"intruder"), &options)
        .await
        .unwrap_err();
    assert!(err.is_locked(), "{err}");
    let err = other
        .open_journal(&stack, &test_digest(1))
        .await
        .unwrap_err();
    assert!(err.is_locked(), "{err}");
    let err = other
        .remove_stack(&stack, &converge_backend::RemoveOptions::default())
        .await
        .unwrap_err();
    assert!(err.is_locked(), "{err}");
    holder_backend
        .save_checkpoint(&stack, Bytes::from_static(b"v2"), &options)
        .await
        .unwrap();
    guard.release().await.unwrap();

    other
        .save_checkpoint(&stack, Bytes::from_static(b"v3"), &options)
        .await
        .unwrap();
    assert_eq!(
        holder_backend
            .load_checkpoint(&stack)
            .await
            .unwrap()
            .as_deref(),
        Some(&b"v3"[..])
    );
}

/// A real checkpoint and a journal that creates a resource with a secret
/// output (ciphertext, as the service only ever sees it).
fn checkpoint_and_journal() -> (Vec<u8>, Vec<Vec<u8>>) {
    let base = StackCheckpoint {
        stack: "dev".to_owned(),
        config: None,
        latest: Some(Snapshot::empty("2024-05-01T10:00:00Z")),
    };
    let base = write_checkpoint(&base, SecretsMode::Opaque).unwrap();
    let urn = Urn::parse("urn:pulumi:dev::p::my:index:Component::c").unwrap();
    let mut state = ResourceState::new(urn, false);
    state.outputs.insert(
        "token".to_owned(),
        PropertyValue::Secret(Box::new(PropertyValue::string("v1:CIPHERTEXT"))),
    );
    let pending = PendingOperation {
        resource: state.clone(),
        kind: OperationType::Creating,
    };
    let entries = [
        JournalEntry::begin(1, 1, Some(pending)),
        JournalEntry::success(2, 1).with_state(state),
    ];
    let lines = entries
        .iter()
        .map(|e| entry_to_json(e, SecretsMode::Opaque).unwrap())
        .collect();
    (base, lines)
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_update_has_its_journal_compacted_by_the_service_on_sqlite() {
    broken_update_compacted(Storage::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_update_has_its_journal_compacted_by_the_service_on_postgres() {
    broken_update_compacted(Storage::Postgres).await;
}

async fn broken_update_compacted(storage: Storage) {
    let Some(server) = common::start(storage).await else {
        return;
    };
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    let (base, entries) = checkpoint_and_journal();
    let crashed = server.backend();
    crashed.create_stack(&stack, &base).await.unwrap();
    let guard = crashed.lock(&stack, holder(1)).await.unwrap();
    crashed
        .open_journal(&stack, &sha256_hex(&base))
        .await
        .unwrap();
    crashed.append_journal(&stack, &entries).await.unwrap();
    // The process dies: its lease is neither released nor renewed.
    std::mem::forget(guard);
    drop(crashed);

    // `converge cancel`: break the lease. The service replays the journal.
    let rescuer = server.backend();
    assert_eq!(rescuer.break_locks(&stack).await.unwrap(), 1);
    assert_eq!(
        rescuer.load_journal(&stack).await.unwrap(),
        None,
        "compacted"
    );
    let bytes = rescuer.load_checkpoint(&stack).await.unwrap().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.contains("v1:CIPHERTEXT"),
        "ciphertext carried through: {text}"
    );
    let cp = read_checkpoint(&bytes, SecretsMode::Opaque).unwrap();
    let snapshot = cp.latest.unwrap();
    assert_eq!(snapshot.resources.len(), 1);
    assert!(
        snapshot.pending_operations.is_empty(),
        "the create completed"
    );
    assert_eq!(
        rescuer.load_previous_checkpoint(&stack).await.unwrap(),
        Some(base),
        "the base is kept as the previous checkpoint"
    );
    rescuer
        .lock(&stack, holder(2))
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_is_taken_over_and_its_holder_can_no_longer_write() {
    let (mut options, dir) = common::options(Storage::Sqlite).unwrap();
    // Long enough for the holder's first writes on a loaded machine; the
    // taker below waits for it to pass (up to 20 s).
    options.lease_duration = Duration::from_secs(5);
    options.sweep_interval = Duration::from_secs(3600);
    let server = common::start_with(options, dir).await;
    let stack = StackRef::with_organization(server.organization.clone(), "p", "dev").unwrap();
    let (base, entries) = checkpoint_and_journal();
    server.backend().create_stack(&stack, &base).await.unwrap();
    // The holder runs in a runtime of its own, then dies with it: no
    // heartbeat, no release (a killed process).
    let stale = {
        let (stack, base, entries) = (stack.clone(), base.clone(), entries.clone());
        let stale = server.backend();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let guard = stale.lock(&stack, holder(1)).await.unwrap();
                stale
                    .open_journal(&stack, &sha256_hex(&base))
                    .await
                    .unwrap();
                stale.append_journal(&stack, &entries[..1]).await.unwrap();
                std::mem::forget(guard);
            });
            drop(runtime);
            stale
        })
        .join()
        .unwrap()
    };
    let next = server.backend();
    let mut attempts = 0;
    let taken = loop {
        match next.lock(&stack, holder(2)).await {
            Ok(guard) => break guard,
            Err(e) if e.is_locked() && attempts < 100 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("the expired lease was never taken over: {e}"),
        }
    };
    // The expired update's journal (a create begun, never ended) was
    // compacted: the pending create is on record.
    let bytes = next.load_checkpoint(&stack).await.unwrap().unwrap();
    let snapshot = read_checkpoint(&bytes, SecretsMode::Opaque)
        .unwrap()
        .latest
        .unwrap();
    assert_eq!(
        snapshot.pending_operations.len(),
        1,
        "the interrupted create is kept"
    );
    let err = stale
        .save_checkpoint(
            &stack,
            Bytes::from_static(b"late"),
            &converge_backend::SaveOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(err.is_locked(), "the old holder is refused: {err}");
    taken.release().await.unwrap();
}

/// Runs `work` with `backend` in a runtime of its own, then drops the
/// runtime: the backend's heartbeat dies with it, as a killed process's.
fn in_a_process_that_dies<F, Fut>(backend: converge_backend::http::HttpBackend, work: F)
where
    F: FnOnce(converge_backend::http::HttpBackend) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(work(backend));
    })
    .join()
    .unwrap();
}

async fn interrupted_updates_are_closed(storage: Storage) {
    let Some((mut options, dir)) = common::options(storage) else {
        return;
    };
    options.lease_duration = Duration::from_secs(2);
    options.sweep_interval = Duration::from_millis(200);
    // A second replica on the same database sweeps too (PostgreSQL).
    let replica = match storage {
        Storage::Postgres => Some(common::start_with(options.clone(), None).await),
        Storage::Sqlite => None,
    };
    let server = common::start_with(options, dir).await;
    let (base, entries) = checkpoint_and_journal();
    let died = StackRef::with_organization(server.organization.clone(), "p", "died").unwrap();
    let recorded =
        StackRef::with_organization(server.organization.clone(), "p", "recorded").unwrap();
    for stack in [&died, &recorded] {
        server.backend().create_stack(stack, &base).await.unwrap();
        let (stack, base, entries) = (stack.clone(), base.clone(), entries.clone());
        let records_first = stack == recorded;
        in_a_process_that_dies(server.backend(), move |b| async move {
            let guard = b.lock(&stack, holder(1)).await.unwrap();
            b.open_journal(&stack, &sha256_hex(&base)).await.unwrap();
            b.append_journal(&stack, &entries[..1]).await.unwrap();
            if records_first {
                // Its client recorded the update, then died.
                let record =
                    serde_json::json!({"kind": "update", "result": "succeeded", "version": 1});
                b.add_history(
                    &stack,
                    converge_backend::UpdateKind::Update,
                    record.to_string().as_bytes(),
                )
                .await
                .unwrap();
            }
            std::mem::forget(guard);
        });
    }
    // The sweeper closes both (a hang guard of 60 s, not a timing).
    let backend = server.backend();
    let opts = converge_backend::ListHistoryOptions::default();
    let mut waited = 0;
    while backend.load_journal(&died).await.unwrap().is_some()
        || backend.load_journal(&recorded).await.unwrap().is_some()
    {
        waited += 1;
        assert!(waited < 600, "the expired updates were never closed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let history = backend.list_history(&died, &opts).await.unwrap();
    assert_eq!(history.len(), 1, "one record for the update");
    let record: serde_json::Value = serde_json::from_slice(&history[0].record).unwrap();
    assert_eq!(record["result"], "failed");
    assert_eq!(record["message"], converge_server::INTERRUPTED_MESSAGE);
    assert_eq!(record["kind"], "update");
    assert_eq!(record["version"], 1);
    assert!(!converge_backend::is_cancelled(&record));
    // Its journal was compacted: the create it began is on record.
    let bytes = backend.load_checkpoint(&died).await.unwrap().unwrap();
    let snapshot = read_checkpoint(&bytes, SecretsMode::Opaque)
        .unwrap()
        .latest
        .unwrap();
    assert_eq!(snapshot.pending_operations.len(), 1);
    // The client's own record stands alone.
    let history = backend.list_history(&recorded, &opts).await.unwrap();
    assert_eq!(history.len(), 1, "not recorded twice");
    let record: serde_json::Value = serde_json::from_slice(&history[0].record).unwrap();
    assert_eq!(record["result"], "succeeded");
    // The audit log says the service closed them.
    let log: serde_json::Value = serde_json::from_slice(
        &reqwest::Client::new()
            .get(format!(
                "{}/api/orgs/{}/auditlog?action=update.interrupted",
                server.url(),
                server.organization
            ))
            .header("authorization", format!("token {}", server.token))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap(),
    )
    .unwrap();
    let records = log["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{log}");
    for r in records {
        assert_eq!(r["tokenName"], "converge serve");
        assert_eq!(r["detail"]["journal"], "compacted", "{r}");
    }
    drop(replica);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_whose_client_died_is_recorded_as_failed_on_sqlite() {
    interrupted_updates_are_closed(Storage::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_whose_client_died_is_recorded_as_failed_on_postgres() {
    interrupted_updates_are_closed(Storage::Postgres).await;
}

//! Journaled persistence on the file backend: an update journals each
//! step durably and compacts at the end; an interrupted update is recovered
//! on the next open by replaying its journal.

use std::sync::Arc;

use converge_backend::{Backend, FileBackend, StackRef};
use converge_engine::persistence::{self, BackendJournal, Recovery, Secrets};
use converge_engine::{DeploymentOptions, EventSink, OperationContext};
use converge_state::checkpoint::{self, StackCheckpoint};
use converge_state::integrity;
use converge_state::secrets::SecretsMode;
use converge_testkit::{check_cloud_tracked, numbered_things, MockCloud, MockLoader, MockProvider};

async fn setup() -> (tempfile::TempDir, Arc<dyn Backend>, StackRef, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = Arc::new(FileBackend::new(dir.path(), ""));
    let stack = StackRef::new("proj", "test").unwrap();
    let empty = checkpoint::write_checkpoint(
        &StackCheckpoint {
            stack: stack.to_string(),
            config: None,
            latest: None,
        },
        SecretsMode::Opaque,
    )
    .unwrap();
    backend.create_stack(&stack, &empty).await.unwrap();
    (dir, backend, stack, empty)
}

fn context(
    sink: Arc<dyn converge_engine::JournalSink>,
    cloud: &Arc<MockCloud>,
) -> OperationContext {
    let provider = MockProvider::new("pkg").with_cloud(cloud.clone());
    OperationContext {
        base: converge_state::Snapshot::empty("2026-01-01T00:00:00Z"),
        loader: Arc::new(MockLoader::single(provider)),
        sink,
        events: EventSink::discard(),
        options: DeploymentOptions::new("test", "proj"),
    }
}

#[tokio::test]
async fn an_update_journals_then_compacts() {
    let (_dir, backend, stack, base) = setup().await;
    let cloud = MockCloud::new();
    let journal = Arc::new(
        BackendJournal::open(backend.clone(), stack.clone(), &base, Secrets::Opaque)
            .await
            .unwrap(),
    );
    let result =
        converge_engine::update(context(journal.clone(), &cloud), &numbered_things(20)).await;
    assert!(result.error.is_none(), "{:?}", result.error);
    // Before compaction, the journal on disk replays to the same snapshot.
    let stored = backend.load_journal(&stack).await.unwrap().unwrap();
    assert_eq!(stored.entries.len(), result.journal.len());
    journal
        .complete(None, result.snapshot.clone())
        .await
        .unwrap();
    assert!(backend.load_journal(&stack).await.unwrap().is_none());
    let saved = backend.load_checkpoint(&stack).await.unwrap().unwrap();
    let cp = checkpoint::read_checkpoint(&saved, SecretsMode::Opaque).unwrap();
    let snapshot = cp.latest.unwrap();
    assert_eq!(snapshot.resources.len(), 22);
    integrity::verify(&snapshot).unwrap();
    assert_eq!(
        persistence::recover(backend.as_ref(), &stack, &Secrets::Opaque)
            .await
            .unwrap(),
        Recovery::Clean
    );
}

#[tokio::test]
async fn an_interrupted_update_is_recovered_from_its_journal() {
    let (_dir, backend, stack, base) = setup().await;
    let cloud = MockCloud::new();
    let journal = Arc::new(
        BackendJournal::open(backend.clone(), stack.clone(), &base, Secrets::Opaque)
            .await
            .unwrap(),
    );
    // The process "dies" after the update but before compaction.
    let result = converge_engine::update(context(journal, &cloud), &numbered_things(10)).await;
    assert!(result.error.is_none());
    let recovered = persistence::recover(backend.as_ref(), &stack, &Secrets::Opaque)
        .await
        .unwrap();
    assert!(
        matches!(recovered, Recovery::Replayed { pending: 0, .. }),
        "{recovered:?}"
    );
    let saved = backend.load_checkpoint(&stack).await.unwrap().unwrap();
    let snapshot = checkpoint::read_checkpoint(&saved, SecretsMode::Opaque)
        .unwrap()
        .latest
        .unwrap();
    assert_eq!(snapshot.resources.len(), 12);
    check_cloud_tracked(&cloud, &snapshot, &[]);
    // A journal whose base is no longer the checkpoint was compacted.
    backend
        .open_journal(&stack, &persistence::digest(&base))
        .await
        .unwrap();
    assert_eq!(
        persistence::recover(backend.as_ref(), &stack, &Secrets::Opaque)
            .await
            .unwrap(),
        Recovery::AlreadyCompacted
    );
}

#[tokio::test]
async fn an_aborted_update_leaves_pending_operations_that_track_every_object() {
    let (_dir, backend, stack, base) = setup().await;
    let cloud = MockCloud::new();
    let journal = Arc::new(
        BackendJournal::open(backend.clone(), stack.clone(), &base, Secrets::Opaque)
            .await
            .unwrap(),
    );
    let slow = MockProvider::new("pkg")
        .with_cloud(cloud.clone())
        .latency(std::time::Duration::from_millis(5));
    let mut ctx = context(journal, &cloud);
    ctx.loader = Arc::new(MockLoader::single(slow));
    let task =
        tokio::spawn(async move { converge_engine::update(ctx, &numbered_things(1000)).await });
    // Abort mid-deployment, once some objects exist.
    while cloud.len() < 5 {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    task.abort();
    let _ = task.await;
    persistence::recover(backend.as_ref(), &stack, &Secrets::Opaque)
        .await
        .unwrap();
    let saved = backend.load_checkpoint(&stack).await.unwrap().unwrap();
    let snapshot = checkpoint::read_checkpoint(&saved, SecretsMode::Opaque)
        .unwrap()
        .latest
        .unwrap();
    integrity::verify(&snapshot).unwrap();
    check_cloud_tracked(&cloud, &snapshot, &[]);
}

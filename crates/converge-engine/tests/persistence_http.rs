//! Journaled persistence on a state service (`converge serve`, in-process
//! on 127.0.0.1): the service compacts the journal itself when its replay
//! is the update's snapshot, and the snapshot is uploaded when it is not.

use std::sync::Arc;

use converge_backend::http::{HttpBackend, HttpBackendOptions, RetryPolicy};
use converge_backend::{Backend, StackRef};
use converge_engine::persistence::{self, BackendJournal, Completion, Recovery, Secrets};
use converge_engine::{DeploymentOptions, EventSink, OperationContext};
use converge_server::{RunningServer, Server, ServerOptions};
use converge_state::checkpoint::{self, StackCheckpoint};
use converge_state::secrets::SecretsMode;
use converge_state::{integrity, SecretsProviders, Snapshot};
use converge_testkit::{numbered_things, MockCloud, MockLoader, MockProvider};

struct World {
    _dir: tempfile::TempDir,
    _running: RunningServer,
    backend: Arc<dyn Backend>,
    stack: StackRef,
    cloud: Arc<MockCloud>,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::open(ServerOptions::sqlite_in(dir.path()).unwrap())
        .await
        .unwrap();
    let token = server
        .create_admin_token("acme", "engine tests")
        .await
        .unwrap()
        .token;
    let running = server.spawn("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let backend: Arc<dyn Backend> = Arc::new(
        HttpBackend::new(HttpBackendOptions {
            url: running.url(),
            token,
            organization: "acme".to_owned(),
            retry: RetryPolicy::default(),
        })
        .unwrap(),
    );
    let stack = StackRef::with_organization("acme", "proj", "test").unwrap();
    let empty = StackCheckpoint {
        stack: stack.to_string(),
        config: None,
        latest: None,
    };
    let empty = checkpoint::write_checkpoint(&empty, SecretsMode::Opaque).unwrap();
    backend.create_stack(&stack, &empty).await.unwrap();
    World {
        _dir: dir,
        _running: running,
        backend,
        stack,
        cloud: MockCloud::new(),
    }
}

impl World {
    /// Runs an update of `n` resources from the stored checkpoint, whose
    /// in-memory base is `base`; returns how it was compacted.
    async fn update(&self, n: usize, base: Snapshot) -> Completion {
        let stored = self
            .backend
            .load_checkpoint(&self.stack)
            .await
            .unwrap()
            .unwrap();
        let journal = Arc::new(
            BackendJournal::open(
                self.backend.clone(),
                self.stack.clone(),
                &stored,
                Secrets::Opaque,
            )
            .await
            .unwrap(),
        );
        let provider = MockProvider::new("pkg").with_cloud(self.cloud.clone());
        let context = OperationContext {
            base,
            loader: Arc::new(MockLoader::single(provider)),
            sink: journal.clone(),
            events: EventSink::discard(),
            options: DeploymentOptions::new("test", "proj"),
        };
        let result = converge_engine::update(context, &numbered_things(n)).await;
        assert!(result.error.is_none(), "{:?}", result.error);
        journal.complete(None, result.snapshot).await.unwrap()
    }

    async fn stored(&self) -> Snapshot {
        let bytes = self
            .backend
            .load_checkpoint(&self.stack)
            .await
            .unwrap()
            .unwrap();
        checkpoint::read_checkpoint(&bytes, SecretsMode::Opaque)
            .unwrap()
            .latest
            .unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_compacts_when_its_replay_is_the_snapshot() {
    let w = world().await;
    let completion = w.update(20, Snapshot::empty("2026-01-01T00:00:00Z")).await;
    assert_eq!(completion, Completion::CompactedByStore);
    let snapshot = w.stored().await;
    assert_eq!(snapshot.resources.len(), 22);
    integrity::verify(&snapshot).unwrap();
    assert!(w.backend.load_journal(&w.stack).await.unwrap().is_none());
    assert_eq!(
        persistence::recover(w.backend.as_ref(), &w.stack, &Secrets::Opaque)
            .await
            .unwrap(),
        Recovery::Clean
    );
    // A second update from that checkpoint: compacted by the service too,
    // the unchanged resources kept, the new ones added.
    let completion = w.update(25, w.stored().await).await;
    assert_eq!(completion, Completion::CompactedByStore);
    assert_eq!(w.stored().await.resources.len(), 27);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_changed_in_memory_is_uploaded_not_lost() {
    let w = world().await;
    // The caller set the secrets provider on the base without journaling
    // it (as the CLI does for a new stack): the service's replay would
    // lose it, so the snapshot is uploaded.
    let mut base = Snapshot::empty("2026-01-01T00:00:00Z");
    base.secrets_providers = Some(SecretsProviders {
        kind: "passphrase".to_owned(),
        state: Some(r#"{"salt":"v1:abc"}"#.to_owned()),
    });
    let completion = w.update(3, base).await;
    assert!(
        matches!(completion, Completion::Uploaded { .. }),
        "{completion:?}"
    );
    let snapshot = w.stored().await;
    assert_eq!(snapshot.resources.len(), 5);
    assert_eq!(snapshot.secrets_providers.unwrap().kind, "passphrase");
    assert!(w.backend.load_journal(&w.stack).await.unwrap().is_none());
}

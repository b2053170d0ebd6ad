//! Journaled persistence on a state service (`converge serve`, in-process
//! on 127.0.0.1): every change is a journal entry, so the service's replay
//! of the journal is the update's snapshot and it compacts every update
//! itself, base changes included.

use std::sync::Arc;

use converge_backend::http::{HttpBackend, HttpBackendOptions, RetryPolicy};
use converge_backend::{Backend, LockInfo, StackRef};
use converge_engine::stack_state::{Completion, StackState};
use converge_engine::{DeploymentOptions, EventSink, LockedStack, OperationContext};
use converge_server::{RunningServer, Server, ServerOptions};
use converge_state::checkpoint;
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
    StackState::new(backend.clone(), stack.clone())
        .create()
        .await
        .unwrap();
    World {
        _dir: dir,
        _running: running,
        backend,
        stack,
        cloud: MockCloud::new(),
    }
}

impl World {
    /// Runs an update of `n` resources with the stack's owner, after the
    /// base changes `change` makes; returns how it was compacted.
    async fn update(&self, n: usize, change: impl FnOnce(&mut LockedStack)) -> Completion {
        let state = StackState::new(self.backend.clone(), self.stack.clone());
        let mut locked = state.lock(LockInfo::current()).await.unwrap();
        change(&mut locked);
        let journal = locked.start().await.unwrap();
        let provider = MockProvider::new("pkg").with_cloud(self.cloud.clone());
        let context = OperationContext {
            base: locked.shared_base(),
            loader: Arc::new(MockLoader::single(provider)),
            sink: journal.clone(),
            events: EventSink::discard(),
            options: DeploymentOptions::new("test", "proj"),
        };
        let result = converge_engine::update(context, &numbered_things(n)).await;
        assert!(result.error.is_none(), "{:?}", result.error);
        let finished = locked.finish(journal, &result, None).await.unwrap();
        // The result is the new base, shared rather than copied.
        assert!(Arc::ptr_eq(&locked.shared_base(), &result.snapshot));
        locked.release().await.unwrap();
        finished.completion
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
async fn the_service_compacts_every_update_itself() {
    let w = world().await;
    let completion = w.update(20, |_| {}).await;
    assert_eq!(completion, Completion::CompactedByStore);
    let snapshot = w.stored().await;
    assert_eq!(snapshot.resources.len(), 22);
    integrity::verify(&snapshot).unwrap();
    assert!(w.backend.load_journal(&w.stack).await.unwrap().is_none());
    // A second update from that checkpoint: compacted by the service too,
    // the unchanged resources kept, the new ones added.
    let completion = w.update(25, |_| {}).await;
    assert_eq!(completion, Completion::CompactedByStore);
    assert_eq!(w.stored().await.resources.len(), 27);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_change_is_journaled_so_the_service_compacts_it_too() {
    let w = world().await;
    // The secrets provider of a new stack is a SecretsManager entry: the
    // service's replay holds it, nothing is uploaded.
    let provider = SecretsProviders {
        kind: "passphrase".to_owned(),
        state: Some(r#"{"salt":"v1:abc"}"#.to_owned()),
    };
    let completion = w
        .update(3, |locked| locked.set_secrets_providers(provider.clone()))
        .await;
    assert_eq!(completion, Completion::CompactedByStore);
    let snapshot = w.stored().await;
    assert_eq!(snapshot.resources.len(), 5);
    assert_eq!(snapshot.secrets_providers, Some(provider));
    assert!(w.backend.load_journal(&w.stack).await.unwrap().is_none());
}

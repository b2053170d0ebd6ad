//! What only the object-store backend guarantees: Pulumi's bucket layout
//! both ways, Pulumi's lock files respected, and leases (expiry, takeover,
//! renewal, breaking).

use std::sync::Arc;
use std::time::{Duration, Instant};

use converge_backend::{
    BackendError, Bytes, LockInfo, ObjectBackend, ObjectBackendOptions, StackLocker, StackRef,
    StackStore,
};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};

fn backend(store: &Arc<InMemory>, options: ObjectBackendOptions) -> ObjectBackend {
    ObjectBackend::new(store.clone(), "team", "memory://team", options).unwrap()
}

async fn put(store: &InMemory, key: &str, bytes: &[u8]) {
    store
        .put(&Path::from(key), PutPayload::from(bytes.to_vec()))
        .await
        .unwrap();
}

async fn get(store: &InMemory, key: &str) -> Option<Vec<u8>> {
    match store.get(&Path::from(key)).await {
        Ok(r) => Some(r.bytes().await.unwrap().to_vec()),
        Err(_) => None,
    }
}

fn dev() -> StackRef {
    StackRef::new("app", "dev").unwrap()
}

fn someone_elsewhere() -> LockInfo {
    LockInfo {
        pid: 77,
        username: "bob".into(),
        hostname: "ci-runner-3".into(),
        timestamp: "2026-01-01T00:00:00Z".into(),
    }
}

#[tokio::test]
async fn a_bucket_pulumi_wrote_opens_and_ours_is_where_pulumi_looks() {
    let store = Arc::new(InMemory::new());
    put(&store, "team/.pulumi/meta.yaml", b"version: 1\n").await;
    put(
        &store,
        "team/.pulumi/stacks/app/prod.json",
        b"{\"version\":3}",
    )
    .await;
    let b = backend(&store, ObjectBackendOptions::default());
    let prod = StackRef::new("app", "prod").unwrap();
    let listed: Vec<String> = b
        .list_stacks(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.stack_ref.stack)
        .collect();
    assert_eq!(listed, ["prod"]);
    assert_eq!(
        b.load_checkpoint(&prod).await.unwrap().unwrap(),
        b"{\"version\":3}"
    );

    b.create_stack(&dev(), b"{\"v\":1}").await.unwrap();
    b.save_checkpoint(
        &dev(),
        Bytes::from_static(b"{\"v\":2}"),
        &Default::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        get(&store, "team/.pulumi/stacks/app/dev.json")
            .await
            .unwrap(),
        b"{\"v\":2}"
    );
    assert_eq!(
        get(&store, "team/.pulumi/stacks/app/dev.json.bak")
            .await
            .unwrap(),
        b"{\"v\":1}"
    );
}

#[tokio::test]
async fn the_legacy_layout_is_refused_with_a_way_out() {
    let store = Arc::new(InMemory::new());
    put(&store, "team/.pulumi/meta.yaml", b"version: 0\n").await;
    let b = backend(&store, ObjectBackendOptions::default());
    let e = b.create_stack(&dev(), b"{}").await.unwrap_err().to_string();
    assert!(e.contains("pulumi state upgrade"), "{e}");
}

#[tokio::test]
async fn a_pulumi_lock_file_blocks_and_can_be_broken() {
    let store = Arc::new(InMemory::new());
    let b = backend(&store, ObjectBackendOptions::default());
    b.create_stack(&dev(), b"{}").await.unwrap();
    let pulumi_lock = serde_json::to_vec(&someone_elsewhere()).unwrap();
    put(
        &store,
        "team/.pulumi/locks/organization/app/dev/1b0d6e5f-0000-4000-8000-000000000001.json",
        &pulumi_lock,
    )
    .await;
    let e = b.lock(&dev(), LockInfo::current()).await.unwrap_err();
    assert!(
        matches!(&e, BackendError::Locked { holder, .. } if holder.hostname == "ci-runner-3"),
        "{e}"
    );
    assert_eq!(b.list_locks(&dev()).await.unwrap().len(), 1);
    assert_eq!(b.break_locks(&dev()).await.unwrap(), 1);
    b.lock(&dev(), LockInfo::current())
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

#[tokio::test]
async fn an_expired_lease_is_taken_over_and_a_live_one_is_not() {
    let store = Arc::new(InMemory::new());
    let b = backend(&store, ObjectBackendOptions::default());
    b.create_stack(&dev(), b"{}").await.unwrap();
    let key = "team/.pulumi/locks/organization/app/dev/converge-lease.json";
    let lease = |expires_at: u64| {
        let mut v = serde_json::to_value(someone_elsewhere()).unwrap();
        v["convergeLease"] = serde_json::json!({"id": "their-lease", "expiresAt": expires_at});
        serde_json::to_vec(&v).unwrap()
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    put(&store, key, &lease(now + 3600)).await;
    let e = b.lock(&dev(), LockInfo::current()).await.unwrap_err();
    assert!(e.to_string().contains("bob@ci-runner-3 (pid 77)"), "{e}");
    assert_eq!(b.list_locks(&dev()).await.unwrap().len(), 1);

    put(&store, key, &lease(now - 1)).await;
    assert!(
        b.list_locks(&dev()).await.unwrap().is_empty(),
        "an expired lease holds nothing"
    );
    let guard = b.lock(&dev(), LockInfo::current()).await.unwrap();
    let held = b.list_locks(&dev()).await.unwrap();
    assert_eq!(held[0].info.pid, std::process::id());
    guard.release().await.unwrap();
    assert!(
        get(&store, key).await.is_none(),
        "release deletes the lease"
    );
}

#[tokio::test]
async fn the_holder_renews_its_lease_until_it_is_broken() {
    let store = Arc::new(InMemory::new());
    let options = ObjectBackendOptions {
        lease_ttl: Duration::from_secs(2),
        ..ObjectBackendOptions::default()
    };
    let b = backend(&store, options);
    b.create_stack(&dev(), b"{}").await.unwrap();
    let key = "team/.pulumi/locks/organization/app/dev/converge-lease.json";
    let expiry = |bytes: Vec<u8>| {
        serde_json::from_slice::<serde_json::Value>(&bytes).unwrap()["convergeLease"]["expiresAt"]
            .as_u64()
            .unwrap()
    };
    let guard = b.lock(&dev(), LockInfo::current()).await.unwrap();
    let first = expiry(get(&store, key).await.unwrap());
    let start = Instant::now();
    loop {
        if expiry(get(&store, key).await.unwrap()) > first {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "never renewed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Broken by `converge cancel`: the holder's renewal fails and stops,
    // and its release does not delete a lease someone else took since.
    assert_eq!(b.break_locks(&dev()).await.unwrap(), 1);
    let other = backend(&store, ObjectBackendOptions::default());
    let theirs = other.lock(&dev(), someone_elsewhere()).await.unwrap();
    guard.release().await.unwrap();
    assert_eq!(
        other.list_locks(&dev()).await.unwrap()[0].info,
        someone_elsewhere()
    );
    theirs.release().await.unwrap();
}

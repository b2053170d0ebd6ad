//! The backend conformance suite, for the HTTP backend against a real
//! service: SQLite always, PostgreSQL when `CONVERGE_TEST_DATABASE_URL` is
//! set (required under CI).

use crate::common;

use common::Storage;
use converge_backend::conformance;

async fn conformance_on(storage: Storage) {
    let Some(server) = common::start(storage).await else {
        return;
    };
    let backend = server.backend();
    conformance::run_all(&backend).await;
    // Two instances: what one appended, a new process sees and recovers.
    conformance::journal_durable_across_instances(&backend, &server.backend()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_backend_on_sqlite_passes_conformance() {
    conformance_on(Storage::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_backend_on_postgres_passes_conformance() {
    conformance_on(Storage::Postgres).await;
}

/// A journal survives the service: acknowledged entries are in the
/// database, read back through a new service process on the same file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_is_durable_across_service_restarts() {
    use converge_backend::{JournalStore, StackRef, StackStore};
    let (options, dir) = common::options(Storage::Sqlite).unwrap();
    let first = common::start_with(options.clone(), None).await;
    let stack = StackRef::with_organization(first.organization.clone(), "restart", "dev").unwrap();
    let backend = first.backend();
    backend.create_stack(&stack, b"{}").await.unwrap();
    backend
        .open_journal(&stack, &conformance::test_digest(1))
        .await
        .unwrap();
    let entries: Vec<Vec<u8>> = (1..=5).map(conformance::test_entry).collect();
    backend.append_journal(&stack, &entries).await.unwrap();
    drop(backend);
    drop(first);

    let second = common::start_with(options, dir).await;
    let token = second
        .server
        .create_admin_token(&stack.organization, "after restart")
        .await
        .unwrap()
        .token;
    let backend = second.backend_with(&token, &stack.organization);
    let journal = backend.load_journal(&stack).await.unwrap().unwrap();
    assert_eq!(journal.base_digest, conformance::test_digest(1));
    assert_eq!(
        journal.entries, entries,
        "every acknowledged entry survives"
    );
    backend
        .append_journal(&stack, &[conformance::test_entry(6)])
        .await
        .unwrap();
    let journal = backend.load_journal(&stack).await.unwrap().unwrap();
    assert_eq!(journal.entries.len(), 6, "a new process appends after them");
}

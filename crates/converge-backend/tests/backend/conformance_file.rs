//! The backend conformance suite, run against the file backend.

use converge_backend::{conformance, FileBackend};

fn fresh() -> (tempfile::TempDir, FileBackend) {
    let dir = tempfile::tempdir().unwrap();
    let backend = FileBackend::new(dir.path(), "");
    (dir, backend)
}

#[tokio::test]
async fn stack_lifecycle() {
    let (_dir, b) = fresh();
    conformance::stack_lifecycle(&b).await;
}

#[tokio::test]
async fn checkpoint_round_trip() {
    let (_dir, b) = fresh();
    conformance::checkpoint_round_trip(&b).await;
}

#[tokio::test]
async fn previous_checkpoint_kept() {
    let (_dir, b) = fresh();
    conformance::previous_checkpoint_kept(&b).await;
}

#[tokio::test]
async fn checkpoint_text_saved_as_it_arrives() {
    let (_dir, b) = fresh();
    conformance::checkpoint_text_saved_as_it_arrives(&b).await;
}

#[tokio::test]
async fn lock_excludes_second_holder() {
    let (_dir, b) = fresh();
    conformance::lock_excludes_second_holder(&b).await;
}

#[tokio::test]
async fn lock_release_allows_relock() {
    let (_dir, b) = fresh();
    conformance::lock_release_allows_relock(&b).await;
}

#[tokio::test]
async fn broken_lock_fails_its_fence() {
    let (_dir, b) = fresh();
    conformance::broken_lock_fails_its_fence(&b).await;
}

#[tokio::test]
async fn history_round_trip() {
    let (_dir, b) = fresh();
    conformance::history_round_trip(&b).await;
}

#[tokio::test]
async fn history_keeps_each_update_checkpoint() {
    let (_dir, b) = fresh();
    conformance::history_keeps_each_update_checkpoint(&b).await;
}

#[tokio::test]
async fn tags_round_trip() {
    let (_dir, b) = fresh();
    conformance::tags_round_trip(&b).await;
}

#[tokio::test]
async fn rename_moves_checkpoint_history_and_tags() {
    let (_dir, b) = fresh();
    conformance::rename_moves_checkpoint_history_and_tags(&b).await;
}

#[tokio::test]
async fn journal_round_trip() {
    let (_dir, b) = fresh();
    conformance::journal_round_trip(&b).await;
}

#[tokio::test]
async fn journal_open_twice_fails() {
    let (_dir, b) = fresh();
    conformance::journal_open_twice_fails(&b).await;
}

#[tokio::test]
async fn journal_rejects_invalid_data() {
    let (_dir, b) = fresh();
    conformance::journal_rejects_invalid_data(&b).await;
}

#[tokio::test]
async fn journal_follows_its_stack() {
    let (_dir, b) = fresh();
    conformance::journal_follows_its_stack(&b).await;
}

/// A second `FileBackend` on the same directory stands for a new process.
#[tokio::test]
async fn journal_durable_across_instances() {
    let (dir, first) = fresh();
    let second = FileBackend::new(dir.path(), "");
    conformance::journal_durable_across_instances(&first, &second).await;
}

#[tokio::test]
async fn invalid_names_rejected_and_nothing_written() {
    // The backend root sits inside a private directory, so that anything
    // escaping it would show up there (not in a shared /tmp).
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let b = FileBackend::new(&root, "");
    conformance::invalid_names_rejected(&b).await;
    // Every call was refused before touching the disk.
    let mut left: Vec<_> = walk(outer.path());
    left.retain(|p| p != &root);
    left.sort();
    assert!(left.is_empty(), "invalid names wrote {left:?}");
}

/// The whole suite on one shared backend, from a multi-threaded runtime,
/// with the checks running concurrently.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_all_concurrently_on_one_backend() {
    let (_dir, b) = fresh();
    let (x, y) = (b.clone(), b.clone());
    let first = tokio::spawn(async move { conformance::run_all(&x).await });
    let second = tokio::spawn(async move { conformance::run_all(&y).await });
    first.await.unwrap();
    second.await.unwrap();
}

/// Behind `Box<dyn Backend>`, as the CLI holds it.
#[tokio::test]
async fn run_all_through_a_trait_object() {
    let dir = tempfile::tempdir().unwrap();
    let b: Box<dyn converge_backend::Backend> = Box::new(FileBackend::new(dir.path(), ""));
    conformance::run_all(b.as_ref()).await;
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

//! The backend conformance suite, run against the object-store backend:
//! on an in-memory store, and on a real S3-compatible server when
//! `CONVERGE_TEST_S3_ENDPOINT` names one (scripts/test starts one on
//! 127.0.0.1 and creates the bucket `CONVERGE_TEST_S3_BUCKET`; under CI the
//! S3 tests fail rather than skip without it).

use std::sync::Arc;

use converge_backend::{conformance, ObjectBackend, ObjectBackendOptions};
use object_store::memory::InMemory;

fn in_memory() -> ObjectBackend {
    ObjectBackend::new(
        Arc::new(InMemory::new()),
        "state",
        "memory://state",
        ObjectBackendOptions::default(),
    )
    .unwrap()
}

/// A backend on the test S3 server under a fresh prefix, or `None` (skip)
/// outside CI when there is no server.
fn s3(prefix: &str) -> Option<ObjectBackend> {
    conformance::test_s3_url(prefix).map(|url| ObjectBackend::open(&url).unwrap())
}

macro_rules! conformance_checks {
    ($make:expr) => {
        #[tokio::test]
        async fn stack_lifecycle() {
            let Some(b) = $make else { return };
            conformance::stack_lifecycle(&b).await;
        }

        #[tokio::test]
        async fn checkpoint_round_trip() {
            let Some(b) = $make else { return };
            conformance::checkpoint_round_trip(&b).await;
        }

        #[tokio::test]
        async fn previous_checkpoint_kept() {
            let Some(b) = $make else { return };
            conformance::previous_checkpoint_kept(&b).await;
        }

        #[tokio::test]
        async fn checkpoint_text_saved_as_it_arrives() {
            let Some(b) = $make else { return };
            conformance::checkpoint_text_saved_as_it_arrives(&b).await;
        }

        #[tokio::test]
        async fn lock_excludes_second_holder() {
            let Some(b) = $make else { return };
            conformance::lock_excludes_second_holder(&b).await;
        }

        #[tokio::test]
        async fn lock_release_allows_relock() {
            let Some(b) = $make else { return };
            conformance::lock_release_allows_relock(&b).await;
        }

        #[tokio::test]
        async fn broken_lock_fails_its_fence() {
            let Some(b) = $make else { return };
            conformance::broken_lock_fails_its_fence(&b).await;
        }

        #[tokio::test]
        async fn history_keeps_each_update_checkpoint() {
            let Some(b) = $make else { return };
            conformance::history_keeps_each_update_checkpoint(&b).await;
        }

        #[tokio::test]
        async fn history_round_trip() {
            let Some(b) = $make else { return };
            conformance::history_round_trip(&b).await;
        }

        #[tokio::test]
        async fn tags_round_trip() {
            let Some(b) = $make else { return };
            conformance::tags_round_trip(&b).await;
        }

        #[tokio::test]
        async fn rename_moves_checkpoint_history_and_tags() {
            let Some(b) = $make else { return };
            conformance::rename_moves_checkpoint_history_and_tags(&b).await;
        }

        #[tokio::test]
        async fn journal_round_trip() {
            let Some(b) = $make else { return };
            conformance::journal_round_trip(&b).await;
        }

        #[tokio::test]
        async fn journal_open_twice_fails() {
            let Some(b) = $make else { return };
            conformance::journal_open_twice_fails(&b).await;
        }

        #[tokio::test]
        async fn journal_rejects_invalid_data() {
            let Some(b) = $make else { return };
            conformance::journal_rejects_invalid_data(&b).await;
        }

        #[tokio::test]
        async fn journal_follows_its_stack() {
            let Some(b) = $make else { return };
            conformance::journal_follows_its_stack(&b).await;
        }

        #[tokio::test]
        async fn invalid_names_rejected() {
            let Some(b) = $make else { return };
            conformance::invalid_names_rejected(&b).await;
        }

        /// The whole suite on one shared backend, concurrently.
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn run_all_concurrently_on_one_backend() {
            let Some(b) = $make else { return };
            let (x, y) = (b.clone(), b.clone());
            let first = tokio::spawn(async move { conformance::run_all(&x).await });
            let second = tokio::spawn(async move { conformance::run_all(&y).await });
            first.await.unwrap();
            second.await.unwrap();
        }
    };
}

mod memory {
    use super::*;

    conformance_checks!(Some(in_memory()));

    /// A second backend on the same store stands for a new process.
    #[tokio::test]
    async fn journal_durable_across_instances() {
        let store = Arc::new(InMemory::new());
        let make = || {
            ObjectBackend::new(
                store.clone(),
                "p",
                "memory://p",
                ObjectBackendOptions::default(),
            )
            .unwrap()
        };
        conformance::journal_durable_across_instances(&make(), &make()).await;
    }
}

mod s3 {
    use super::*;

    conformance_checks!(s3("conformance"));

    #[tokio::test]
    async fn journal_durable_across_instances() {
        let Some(first) = s3("durable") else { return };
        let second = ObjectBackend::open(&converge_backend::Backend::url(&first)).unwrap();
        conformance::journal_durable_across_instances(&first, &second).await;
    }
}

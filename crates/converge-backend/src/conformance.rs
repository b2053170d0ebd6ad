//! The conformance suite every [`Backend`] must pass (after OpenTofu's
//! `statemgr/testing.go`).
//!
//! Each check takes a backend that is empty or shared: it works in a project
//! of its own (`conformance-<random>`), in the backend's default
//! organization, and panics with a message naming the broken contract.
//! Run [`run_all`] from a backend's tests, or each check as its own test:
//!
//! ```no_run
//! # async fn example() {
//! let dir = tempfile::tempdir().unwrap();
//! let backend = converge_backend::FileBackend::new(dir.path(), "");
//! converge_backend::conformance::run_all(&backend).await;
//! # }
//! ```
//!
//! Backend-specific guarantees (file layout, atomicity on disk, locking
//! across processes, a journal's torn last entry after a crash) are tested
//! beside each backend. [`journal_durable_across_instances`] needs two
//! instances on the same storage, so [`run_all`] does not run it.

mod journal;
mod stack_meta;

pub use journal::{
    journal_durable_across_instances, journal_follows_its_stack, journal_open_twice_fails,
    journal_rejects_invalid_data, journal_round_trip, test_digest, test_entry,
};
pub use stack_meta::{rename_moves_checkpoint_history_and_tags, tags_round_trip};

use std::io::Write;

use bytes::Bytes;

use crate::capabilities::{
    Backend, ListHistoryOptions, ListStacksOptions, RemoveOptions, SaveOptions, UpdateKind,
};
use crate::checkpoint_text::{checkpoint_text, PIECE_BYTES};
use crate::error::BackendError;
use crate::lock::LockInfo;
use crate::name::StackRef;

/// Runs every check, in order.
pub async fn run_all(backend: &dyn Backend) {
    stack_lifecycle(backend).await;
    checkpoint_round_trip(backend).await;
    previous_checkpoint_kept(backend).await;
    checkpoint_text_saved_as_it_arrives(backend).await;
    lock_excludes_second_holder(backend).await;
    lock_release_allows_relock(backend).await;
    broken_lock_fails_its_fence(backend).await;
    history_round_trip(backend).await;
    tags_round_trip(backend).await;
    rename_moves_checkpoint_history_and_tags(backend).await;
    journal_round_trip(backend).await;
    journal_open_twice_fails(backend).await;
    journal_rejects_invalid_data(backend).await;
    journal_follows_its_stack(backend).await;
    invalid_names_rejected(backend).await;
}

/// An `s3://` URL under a fresh prefix of the test S3 server's bucket
/// (`CONVERGE_TEST_S3_ENDPOINT`, `CONVERGE_TEST_S3_BUCKET`; scripts/test
/// starts the server on 127.0.0.1), or `None` to skip outside CI. Under CI
/// (`CI` set) a missing server is a failure, never a silent skip.
pub fn test_s3_url(prefix: &str) -> Option<String> {
    let Some(endpoint) = std::env::var_os("CONVERGE_TEST_S3_ENDPOINT") else {
        if std::env::var_os("CI").is_some() {
            panic!("CONVERGE_TEST_S3_ENDPOINT is not set: run scripts/test");
        }
        eprintln!("SKIPPED: set CONVERGE_TEST_S3_ENDPOINT (scripts/test does) for the S3 tests");
        return None;
    };
    let bucket =
        std::env::var("CONVERGE_TEST_S3_BUCKET").unwrap_or_else(|_| "converge-test".to_owned());
    Some(format!(
        "s3://{bucket}/{prefix}-{}?endpoint={}&disableSSL=true&s3ForcePathStyle=true&region=us-east-1",
        uuid::Uuid::new_v4().simple(),
        endpoint.to_string_lossy()
    ))
}

fn fresh_project() -> String {
    format!(
        "conformance-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

fn stack_in(backend: &dyn Backend, project: &str, stack: &str) -> StackRef {
    StackRef::with_organization(backend.default_organization(), project, stack)
        .expect("conformance names are valid")
}

fn holder(pid: u32, user: &str, host: &str) -> LockInfo {
    LockInfo {
        pid,
        username: user.to_owned(),
        hostname: host.to_owned(),
        timestamp: "2024-05-01T10:00:00Z".to_owned(),
    }
}

/// Create, list, exists and remove.
pub async fn stack_lifecycle(backend: &dyn Backend) {
    let project = fresh_project();
    let a = stack_in(backend, &project, "a");
    let b = stack_in(backend, &project, "b.prod-2");
    let only = |p: &str| ListStacksOptions {
        project: Some(p.to_owned()),
    };

    assert!(
        !backend.stack_exists(&a).await.unwrap(),
        "a new stack must not exist yet"
    );
    assert!(backend
        .list_stacks(&only(&project))
        .await
        .unwrap()
        .is_empty());

    backend.create_stack(&b, b"{}").await.expect("create b");
    backend.create_stack(&a, b"{}").await.expect("create a");
    let err = backend
        .create_stack(&a, b"{}")
        .await
        .expect_err("creating twice must fail");
    assert!(
        matches!(err, BackendError::StackAlreadyExists { .. }),
        "creating twice: want StackAlreadyExists, got {err}"
    );
    assert!(backend.stack_exists(&a).await.unwrap());

    let listed: Vec<StackRef> = backend
        .list_stacks(&only(&project))
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.stack_ref)
        .collect();
    assert_eq!(
        listed,
        [a.clone(), b.clone()],
        "list filtered by project, sorted"
    );
    let all = backend
        .list_stacks(&ListStacksOptions::default())
        .await
        .unwrap();
    assert!(
        all.iter().any(|s| s.stack_ref == a) && all.iter().any(|s| s.stack_ref == b),
        "an unfiltered list must include every project's stacks"
    );
    let other = fresh_project();
    assert!(backend.list_stacks(&only(&other)).await.unwrap().is_empty());

    backend
        .remove_stack(&a, &RemoveOptions::default())
        .await
        .expect("remove a");
    assert!(
        !backend.stack_exists(&a).await.unwrap(),
        "a removed stack must not exist"
    );
    let err = backend
        .remove_stack(&a, &RemoveOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.is_not_found(),
        "removing twice: want StackNotFound, got {err}"
    );
    let err = backend.load_checkpoint(&a).await.unwrap_err();
    assert!(
        err.is_not_found(),
        "loading a removed stack: want StackNotFound, got {err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("converge stack ls") && msg.contains("stack init"),
        "{msg}"
    );
    assert!(
        msg.contains(&a.stack),
        "the message must name the stack: {msg}"
    );

    backend
        .create_stack(&a, b"again")
        .await
        .expect("re-create a removed stack");
    assert_eq!(
        backend.load_checkpoint(&a).await.unwrap().as_deref(),
        Some(&b"again"[..])
    );
    let full = RemoveOptions {
        remove_backups: true,
    };
    backend.remove_stack(&a, &full).await.unwrap();
    backend.remove_stack(&b, &full).await.unwrap();
    assert!(backend
        .list_stacks(&only(&project))
        .await
        .unwrap()
        .is_empty());
}

/// Checkpoint bytes come back exactly as saved, whatever they hold.
pub async fn checkpoint_round_trip(backend: &dyn Backend) {
    let project = fresh_project();
    let s = stack_in(backend, &project, "dev");
    let missing = stack_in(backend, &project, "missing");

    backend.create_stack(&s, b"initial").await.unwrap();
    assert_eq!(
        backend.load_checkpoint(&s).await.unwrap().as_deref(),
        Some(&b"initial"[..])
    );

    let mut big: Vec<u8> = (0..(1 << 20)).map(|i: u32| (i % 251) as u8).collect();
    big.extend_from_slice(&[0xff, 0xfe, 0x00, b'\n']);
    backend
        .save_checkpoint(&s, Bytes::from(big.clone()), &SaveOptions::default())
        .await
        .unwrap();
    let loaded = backend
        .load_checkpoint(&s)
        .await
        .unwrap()
        .expect("a checkpoint");
    assert!(
        loaded == big,
        "a 1 MiB binary checkpoint must round-trip exactly"
    );

    backend
        .save_checkpoint(&s, Bytes::from_static(b""), &SaveOptions::default())
        .await
        .unwrap();
    assert_eq!(
        backend.load_checkpoint(&s).await.unwrap().as_deref(),
        Some(&b""[..])
    );

    for err in [
        backend
            .save_checkpoint(&missing, Bytes::from_static(b"x"), &SaveOptions::default())
            .await
            .unwrap_err(),
        backend.load_checkpoint(&missing).await.unwrap_err(),
        backend
            .load_previous_checkpoint(&missing)
            .await
            .unwrap_err(),
    ] {
        assert!(
            err.is_not_found(),
            "a missing stack: want StackNotFound, got {err}"
        );
    }
    assert!(
        !backend.stack_exists(&missing).await.unwrap(),
        "save must not create a stack"
    );
}

/// A checkpoint whose text arrives in pieces is stored whole, as
/// `save_checkpoint` stores bytes; a text that ends unfinished stores
/// nothing, the checkpoint and the previous one unchanged.
pub async fn checkpoint_text_saved_as_it_arrives(backend: &dyn Backend) {
    let s = stack_in(backend, &fresh_project(), "dev");
    backend.create_stack(&s, b"v1").await.unwrap();
    // Three pieces and a bit, in odd-sized writes as a serializer makes.
    let text: Vec<u8> = (0..3 * PIECE_BYTES + 4_321)
        .map(|i| (i % 241) as u8)
        .collect();
    let (mut writer, pieces) = checkpoint_text();
    let sent = text.clone();
    let serializer = tokio::task::spawn_blocking(move || {
        for chunk in sent.chunks(10_007) {
            writer.write_all(chunk)?;
        }
        writer.finish()
    });
    let length = backend
        .save_checkpoint_text(&s, pieces, &SaveOptions::default())
        .await
        .unwrap();
    assert_eq!(serializer.await.unwrap().unwrap(), text.len() as u64);
    assert_eq!(length, text.len() as u64, "the length stored");
    // The checkpoint is the text, whole and in order, and the one it
    // replaced is kept.
    let stored = || async {
        (
            backend.load_checkpoint(&s).await.unwrap(),
            backend.load_previous_checkpoint(&s).await.unwrap(),
        )
    };
    let saved = stored().await;
    assert!(saved.0.as_deref() == Some(&text[..]), "the text as stored");
    assert_eq!(saved.1.as_deref(), Some(&b"v1"[..]), "the previous one");

    let (mut writer, pieces) = checkpoint_text();
    let serializer = tokio::task::spawn_blocking(move || {
        writer.write_all(&[b'x'; 2 * PIECE_BYTES + 1]).unwrap();
        // The serializer fails here, and drops its writer unfinished.
    });
    let err = backend
        .save_checkpoint_text(&s, pieces, &SaveOptions::default())
        .await
        .unwrap_err();
    serializer.await.unwrap();
    assert!(
        matches!(err, BackendError::IncompleteCheckpoint { .. }),
        "an unfinished text: want IncompleteCheckpoint, got {err}"
    );
    assert!(
        stored().await == saved,
        "an unfinished text changes the checkpoint or the previous one"
    );

    let missing = stack_in(backend, &fresh_project(), "missing");
    let (writer, pieces) = checkpoint_text();
    let serializer = tokio::task::spawn_blocking(move || writer.finish());
    let err = backend
        .save_checkpoint_text(&missing, pieces, &SaveOptions::default())
        .await
        .unwrap_err();
    let _ = serializer.await.unwrap();
    assert!(
        err.is_not_found(),
        "a missing stack: want StackNotFound, got {err}"
    );
}

/// Each save keeps the checkpoint it replaced, unless told not to.
pub async fn previous_checkpoint_kept(backend: &dyn Backend) {
    let s = stack_in(backend, &fresh_project(), "dev");
    backend.create_stack(&s, b"v1").await.unwrap();
    let previous = || async { backend.load_previous_checkpoint(&s).await.unwrap() };
    assert_eq!(
        previous().await,
        None,
        "a new stack has no previous checkpoint"
    );

    backend
        .save_checkpoint(&s, Bytes::from_static(b"v2"), &SaveOptions::default())
        .await
        .unwrap();
    assert_eq!(previous().await.as_deref(), Some(&b"v1"[..]));
    backend
        .save_checkpoint(&s, Bytes::from_static(b"v3"), &SaveOptions::default())
        .await
        .unwrap();
    assert_eq!(previous().await.as_deref(), Some(&b"v2"[..]));

    let no_backup = SaveOptions { keep_backup: false };
    backend
        .save_checkpoint(&s, Bytes::from_static(b"v4"), &no_backup)
        .await
        .unwrap();
    assert_eq!(
        previous().await.as_deref(),
        Some(&b"v2"[..]),
        "keep_backup: false"
    );
    assert_eq!(
        backend.load_checkpoint(&s).await.unwrap().as_deref(),
        Some(&b"v4"[..])
    );
}

/// A held lock excludes everyone else and the refusal names the holder.
pub async fn lock_excludes_second_holder(backend: &dyn Backend) {
    let project = fresh_project();
    let s = stack_in(backend, &project, "dev");
    let other_stack = stack_in(backend, &project, "other");
    backend.create_stack(&s, b"{}").await.unwrap();
    let alice = holder(4242, "alice", "host-a");

    let guard = backend.lock(&s, alice.clone()).await.expect("first lock");
    assert_eq!(guard.info(), &alice);
    assert_eq!(guard.stack(), &s);

    let err = backend
        .lock(&s, holder(7, "bob", "host-b"))
        .await
        .expect_err("second lock");
    match &err {
        BackendError::Locked { stack, holder, .. } => {
            assert_eq!(**holder, alice, "the error must carry the holder");
            assert_eq!(stack, &s.to_string());
        }
        other => panic!("second lock: want Locked, got {other}"),
    }
    let msg = err.to_string();
    for want in ["alice@host-a", "4242", "2024-05-01T10:00:00Z", "stale"] {
        assert!(
            msg.contains(want),
            "the Locked message must contain {want:?}: {msg}"
        );
    }

    let held = backend.list_locks(&s).await.unwrap();
    assert_eq!(held.len(), 1, "one holder");
    assert_eq!(held[0].info, alice);

    let elsewhere = backend.lock(&other_stack, holder(8, "carol", "h")).await;
    let elsewhere = elsewhere.expect("locks are per stack");
    elsewhere.release().await.unwrap();
    guard.release().await.unwrap();
}

/// Release (explicit, by drop, or by breaking a stale lock) lets the next
/// holder in.
pub async fn lock_release_allows_relock(backend: &dyn Backend) {
    let s = stack_in(backend, &fresh_project(), "dev");
    backend.create_stack(&s, b"{}").await.unwrap();

    let first = backend.lock(&s, holder(1, "a", "h")).await.unwrap();
    first.release().await.unwrap();
    assert!(backend.list_locks(&s).await.unwrap().is_empty(), "released");

    let second = backend
        .lock(&s, holder(2, "b", "h"))
        .await
        .expect("re-lock after release");
    drop(second);
    let third = backend
        .lock(&s, holder(3, "c", "h"))
        .await
        .expect("re-lock after drop");

    // A holder that died without releasing leaves a stale lock.
    std::mem::forget(third);
    let err = backend.lock(&s, holder(4, "d", "h")).await.unwrap_err();
    assert!(err.is_locked(), "a stale lock still excludes: {err}");
    assert_eq!(
        backend.break_locks(&s).await.unwrap(),
        1,
        "break the stale lock"
    );
    let fourth = backend
        .lock(&s, holder(4, "d", "h"))
        .await
        .expect("lock after break");
    fourth.release().await.unwrap();
}

/// A lock broken under its holder (`converge cancel`) fails the holder's
/// fence, where the backend has one; a lock still held passes it.
pub async fn broken_lock_fails_its_fence(backend: &dyn Backend) {
    let s = stack_in(backend, &fresh_project(), "dev");
    backend.create_stack(&s, b"{}").await.unwrap();
    let guard = backend.lock(&s, holder(1, "a", "h")).await.unwrap();
    let Some(fence) = guard.fence() else {
        // The store refuses a broken holder's writes itself.
        guard.release().await.unwrap();
        return;
    };
    fence.check().await.expect("a held lock passes its fence");
    assert_eq!(backend.break_locks(&s).await.unwrap(), 1);
    let err = fence.check().await.unwrap_err();
    assert!(err.is_lease_lost(), "a broken lock fails its fence: {err}");
    // Somebody else's lock now: still not the first holder's.
    let other = backend.lock(&s, holder(2, "b", "h")).await.unwrap();
    assert!(fence.check().await.unwrap_err().is_lease_lost());
    other.release().await.unwrap();
    let _ = guard.release().await;
}

/// History records come back newest first, byte for byte.
pub async fn history_round_trip(backend: &dyn Backend) {
    let project = fresh_project();
    let s = stack_in(backend, &project, "dev");
    let missing = stack_in(backend, &project, "missing");
    backend.create_stack(&s, b"{}").await.unwrap();
    let all = ListHistoryOptions::default();
    assert!(backend.list_history(&s, &all).await.unwrap().is_empty());

    let kinds = [UpdateKind::Update, UpdateKind::Refresh, UpdateKind::Destroy];
    let mut records = Vec::new();
    for (n, kind) in kinds.iter().enumerate() {
        let record = format!(r#"{{"kind":"{kind}","n":{n},"message":"é"}}"#).into_bytes();
        backend
            .add_history(&s, kind.clone(), &record)
            .await
            .unwrap();
        records.push(record);
    }
    let got = backend.list_history(&s, &all).await.unwrap();
    assert_eq!(got.len(), 3);
    for (entry, n) in got.iter().zip([2usize, 1, 0]) {
        assert_eq!(
            entry.record, records[n],
            "records newest first, exact bytes"
        );
        assert_eq!(entry.kind.as_ref(), Some(&kinds[n]));
    }
    assert!(
        got.windows(2)
            .all(|w| w[0].recorded_at_unix_nanos > w[1].recorded_at_unix_nanos),
        "timestamps strictly decrease"
    );
    let two = ListHistoryOptions { limit: Some(2) };
    let got = backend.list_history(&s, &two).await.unwrap();
    assert_eq!(
        got.iter().map(|e| &e.record).collect::<Vec<_>>(),
        [&records[2], &records[1]]
    );

    for bad in [&b"not json"[..], b"[1]", br#"{"kind":"preview"}"#] {
        let err = backend
            .add_history(&s, UpdateKind::Update, bad)
            .await
            .unwrap_err();
        assert!(
            matches!(err, BackendError::InvalidHistoryRecord { .. }),
            "{bad:?}: want InvalidHistoryRecord, got {err}"
        );
    }
    let err = backend
        .add_history(&missing, UpdateKind::Update, b"{}")
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "history of a missing stack: {err}");
    let err = backend.list_history(&missing, &all).await.unwrap_err();
    assert!(err.is_not_found(), "history of a missing stack: {err}");

    backend
        .remove_stack(&s, &RemoveOptions::default())
        .await
        .unwrap();
    backend.create_stack(&s, b"{}").await.unwrap();
    assert!(
        backend.list_history(&s, &all).await.unwrap().is_empty(),
        "removing a stack removes its history"
    );
}

/// A backend that keeps each update's checkpoint beside its history
/// record (the DIY layouts; not part of [`run_all`], since a state service
/// keeps none): each record's is the checkpoint as it was when the record
/// was added, and a time no record has has none.
pub async fn history_keeps_each_update_checkpoint(backend: &dyn Backend) {
    let project = fresh_project();
    let s = stack_in(backend, &project, "dev");
    backend.create_stack(&s, b"{}").await.unwrap();
    for n in 1..=2 {
        let checkpoint = format!(r#"{{"n":{n}}}"#);
        backend
            .save_checkpoint(&s, Bytes::from(checkpoint), &SaveOptions::default())
            .await
            .unwrap();
        let record = format!(r#"{{"kind":"update","version":{n}}}"#);
        backend
            .add_history(&s, UpdateKind::Update, record.as_bytes())
            .await
            .unwrap();
    }
    let got = backend
        .list_history(&s, &ListHistoryOptions::default())
        .await
        .unwrap();
    for (entry, n) in got.iter().zip([2, 1]) {
        let copy = backend
            .load_history_checkpoint(&s, entry.recorded_at_unix_nanos)
            .await
            .unwrap();
        assert_eq!(copy, Some(format!(r#"{{"n":{n}}}"#).into_bytes()));
    }
    assert_eq!(
        backend.load_history_checkpoint(&s, 1).await.unwrap(),
        None,
        "no record was added at that time"
    );
}

/// Names that could escape a directory or confuse a URL, rejected by every
/// method before any storage is touched.
pub const INVALID_NAMES: &[&str] = &[
    "", ".", "..", "a/b", "../x", "a\\b", "a\0b", "a\nb", "a\x07b", "a\x7fb", "a b", "\u{e9}",
];

/// Every method rejects every invalid name with `InvalidName`.
pub async fn invalid_names_rejected(backend: &dyn Backend) {
    let project = fresh_project();
    let org = backend.default_organization();
    let too_long = "x".repeat(101);
    let mut refs = Vec::new();
    for bad in INVALID_NAMES.iter().copied().chain([too_long.as_str()]) {
        let mk = |o: &str, p: &str, s: &str| StackRef {
            organization: o.to_owned(),
            project: p.to_owned(),
            stack: s.to_owned(),
        };
        refs.push(mk(&org, &project, bad));
        refs.push(mk(&org, bad, "dev"));
        if !bad.is_empty() {
            refs.push(mk(bad, &project, "dev"));
        }
    }
    let kind = UpdateKind::Update;
    for r in &refs {
        let what = format!("{r:?}");
        let results: Vec<(&str, Option<BackendError>)> = vec![
            ("create_stack", backend.create_stack(r, b"{}").await.err()),
            ("stack_exists", backend.stack_exists(r).await.err()),
            (
                "remove_stack",
                backend
                    .remove_stack(r, &RemoveOptions::default())
                    .await
                    .err(),
            ),
            ("load_checkpoint", backend.load_checkpoint(r).await.err()),
            (
                "load_previous_checkpoint",
                backend.load_previous_checkpoint(r).await.err(),
            ),
            (
                "save_checkpoint",
                backend
                    .save_checkpoint(r, Bytes::from_static(b"{}"), &SaveOptions::default())
                    .await
                    .err(),
            ),
            ("lock", backend.lock(r, holder(1, "u", "h")).await.err()),
            ("list_locks", backend.list_locks(r).await.err()),
            ("break_locks", backend.break_locks(r).await.err()),
            (
                "add_history",
                backend.add_history(r, kind.clone(), b"{}").await.err(),
            ),
            (
                "list_history",
                backend
                    .list_history(r, &ListHistoryOptions::default())
                    .await
                    .err(),
            ),
            (
                "open_journal",
                backend.open_journal(r, &test_digest(1)).await.err(),
            ),
            (
                "append_journal",
                backend.append_journal(r, &[test_entry(1)]).await.err(),
            ),
            ("load_journal", backend.load_journal(r).await.err()),
            ("close_journal", backend.close_journal(r).await.err()),
        ];
        for (method, err) in results {
            match err {
                Some(BackendError::InvalidName { .. }) => {}
                Some(other) => panic!("{method}({what}): want InvalidName, got {other}"),
                None => panic!("{method}({what}) accepted an invalid name"),
            }
        }
    }
    for bad in INVALID_NAMES.iter().copied().chain([too_long.as_str()]) {
        let options = ListStacksOptions {
            project: Some(bad.to_owned()),
        };
        let err = backend.list_stacks(&options).await.err();
        assert!(
            matches!(err, Some(BackendError::InvalidName { .. })),
            "list_stacks(project {bad:?}): want InvalidName, got {err:?}"
        );
    }
}

//! Conformance checks of [`JournalStore`](crate::JournalStore). How a torn
//! last entry is stored and dropped depends on the storage, so each backend
//! tests that beside itself.

use super::{fresh_project, stack_in};
use crate::capabilities::{Backend, RemoveOptions};
use crate::error::BackendError;
use crate::journal_store::StoredJournal;

/// A well-formed base digest (64 lowercase hex digits) numbered `n`.
pub fn test_digest(n: u32) -> String {
    format!("{n:064x}")
}

/// Entry `n` of a test journal: one line of JSON, with non-ASCII text and
/// an escaped newline, growing with `n`.
pub fn test_entry(n: usize) -> Vec<u8> {
    let pad = "x".repeat(n % 97);
    format!(r#"{{"sequenceID":{n},"text":"é ✓ \n {pad}"}}"#).into_bytes()
}

fn journal(digest: &str, entries: &[Vec<u8>]) -> Option<StoredJournal> {
    Some(StoredJournal {
        base_digest: digest.to_owned(),
        entries: entries.to_vec(),
    })
}

/// Open, append batches, load them back in order, close.
pub async fn journal_round_trip(backend: &dyn Backend) {
    let s = stack_in(backend, &fresh_project(), "dev");
    backend.create_stack(&s, b"{}").await.unwrap();
    assert_eq!(
        backend.load_journal(&s).await.unwrap(),
        None,
        "a new stack has no journal"
    );

    let base = test_digest(1);
    backend.open_journal(&s, &base).await.expect("open");
    assert_eq!(
        backend.load_journal(&s).await.unwrap(),
        journal(&base, &[]),
        "an open journal starts empty"
    );

    let all: Vec<Vec<u8>> = (1..=25).map(test_entry).collect();
    backend
        .append_journal(&s, &all[..1])
        .await
        .expect("append one");
    backend
        .append_journal(&s, &[])
        .await
        .expect("append nothing");
    backend
        .append_journal(&s, &all[1..20])
        .await
        .expect("a batch");
    for entry in &all[20..] {
        backend
            .append_journal(&s, std::slice::from_ref(entry))
            .await
            .unwrap();
    }
    assert_eq!(
        backend.load_journal(&s).await.unwrap(),
        journal(&base, &all),
        "entries come back in append order, byte for byte"
    );
    let big = format!(r#"{{"blob":"{}"}}"#, "y".repeat(1 << 20)).into_bytes();
    backend
        .append_journal(&s, std::slice::from_ref(&big))
        .await
        .expect("a 1 MiB entry");
    let loaded = backend.load_journal(&s).await.unwrap().unwrap();
    assert!(
        loaded.entries.len() == all.len() + 1 && loaded.entries.last() == Some(&big),
        "a 1 MiB entry round-trips"
    );

    backend.close_journal(&s).await.expect("close");
    assert_eq!(backend.load_journal(&s).await.unwrap(), None, "closed");
    backend
        .close_journal(&s)
        .await
        .expect("closing twice succeeds");
    let err = backend.append_journal(&s, &all[..1]).await.unwrap_err();
    assert!(
        matches!(err, BackendError::NoJournal { .. }),
        "append after close: want NoJournal, got {err}"
    );
    assert_eq!(
        backend.load_checkpoint(&s).await.unwrap().as_deref(),
        Some(&b"{}"[..]),
        "the journal never touches the checkpoint"
    );
}

/// A second open fails until the journal is closed; a new journal starts
/// empty with its own base.
pub async fn journal_open_twice_fails(backend: &dyn Backend) {
    let s = stack_in(backend, &fresh_project(), "dev");
    backend.create_stack(&s, b"{}").await.unwrap();
    backend.open_journal(&s, &test_digest(1)).await.unwrap();
    backend.append_journal(&s, &[test_entry(1)]).await.unwrap();

    let err = backend
        .open_journal(&s, &test_digest(2))
        .await
        .expect_err("opening twice must fail");
    assert!(
        matches!(err, BackendError::JournalExists { .. }),
        "opening twice: want JournalExists, got {err}"
    );
    let msg = err.to_string();
    assert!(msg.contains(&s.stack) && msg.contains("recover"), "{msg}");
    assert_eq!(
        backend.load_journal(&s).await.unwrap(),
        journal(&test_digest(1), &[test_entry(1)]),
        "a refused open leaves the journal as it was"
    );

    backend.close_journal(&s).await.unwrap();
    backend.open_journal(&s, &test_digest(2)).await.unwrap();
    assert_eq!(
        backend.load_journal(&s).await.unwrap(),
        journal(&test_digest(2), &[]),
        "a new journal has none of the old entries"
    );
    backend.close_journal(&s).await.unwrap();
}

/// Entries that are not one line of JSON, and malformed digests, are
/// refused; a refused batch stores nothing.
pub async fn journal_rejects_invalid_data(backend: &dyn Backend) {
    let s = stack_in(backend, &fresh_project(), "dev");
    backend.create_stack(&s, b"{}").await.unwrap();
    for digest in [
        String::new(),
        "abc".to_owned(),
        test_digest(1).to_uppercase().replace('0', "A"),
        format!("{}\n", &test_digest(1)[..63]),
        format!("{}\"", &test_digest(1)[..63]),
    ] {
        let err = backend.open_journal(&s, &digest).await.unwrap_err();
        assert!(
            matches!(err, BackendError::InvalidJournal { .. }),
            "digest {digest:?}: want InvalidJournal, got {err}"
        );
    }
    assert_eq!(backend.load_journal(&s).await.unwrap(), None);

    backend.open_journal(&s, &test_digest(3)).await.unwrap();
    backend.append_journal(&s, &[test_entry(1)]).await.unwrap();
    let bad: [&[u8]; 5] = [
        b"{\"a\":1}\n",
        b"{\"a\":\n1}",
        b"",
        b"not json",
        b"{\"a\":1}{}",
    ];
    for entry in bad {
        let batch = vec![test_entry(2), entry.to_vec(), test_entry(3)];
        let err = backend.append_journal(&s, &batch).await.unwrap_err();
        assert!(
            matches!(err, BackendError::InvalidJournal { .. }),
            "entry {entry:?}: want InvalidJournal, got {err}"
        );
    }
    assert_eq!(
        backend.load_journal(&s).await.unwrap(),
        journal(&test_digest(3), &[test_entry(1)]),
        "refused batches store nothing"
    );
    backend.close_journal(&s).await.unwrap();
}

/// A journal belongs to an existing stack and goes away with it.
pub async fn journal_follows_its_stack(backend: &dyn Backend) {
    let project = fresh_project();
    let s = stack_in(backend, &project, "dev");
    let missing = stack_in(backend, &project, "missing");
    let err = backend
        .open_journal(&missing, &test_digest(1))
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "open on a missing stack: {err}");
    let err = backend.load_journal(&missing).await.unwrap_err();
    assert!(err.is_not_found(), "load on a missing stack: {err}");
    let err = backend
        .append_journal(&missing, &[test_entry(1)])
        .await
        .unwrap_err();
    assert!(
        matches!(err, BackendError::NoJournal { .. }),
        "append on a missing stack: want NoJournal, got {err}"
    );
    backend
        .close_journal(&missing)
        .await
        .expect("closing a journal that does not exist succeeds");

    // Journals are per stack.
    let other = stack_in(backend, &project, "other");
    backend.create_stack(&s, b"{}").await.unwrap();
    backend.create_stack(&other, b"{}").await.unwrap();
    backend.open_journal(&s, &test_digest(1)).await.unwrap();
    backend.append_journal(&s, &[test_entry(1)]).await.unwrap();
    assert_eq!(backend.load_journal(&other).await.unwrap(), None);
    backend.open_journal(&other, &test_digest(2)).await.unwrap();
    backend.close_journal(&other).await.unwrap();
    assert!(backend.load_journal(&s).await.unwrap().is_some());

    backend
        .remove_stack(&s, &RemoveOptions::default())
        .await
        .unwrap();
    backend.create_stack(&s, b"{}").await.unwrap();
    assert_eq!(
        backend.load_journal(&s).await.unwrap(),
        None,
        "removing a stack removes its journal"
    );
    backend
        .open_journal(&s, &test_digest(3))
        .await
        .expect("a re-created stack can open a journal");
    backend.close_journal(&s).await.unwrap();
}

/// What one instance appended, another instance on the same storage (a new
/// process) loads; and it can close it. Not part of [`super::run_all`],
/// which has one instance: call it with two.
pub async fn journal_durable_across_instances(first: &dyn Backend, second: &dyn Backend) {
    let s = stack_in(first, &fresh_project(), "dev");
    first.create_stack(&s, b"{}").await.unwrap();
    first.open_journal(&s, &test_digest(7)).await.unwrap();
    let entries: Vec<Vec<u8>> = (1..=10).map(test_entry).collect();
    first.append_journal(&s, &entries[..4]).await.unwrap();
    first.append_journal(&s, &entries[4..]).await.unwrap();

    assert_eq!(
        second.load_journal(&s).await.unwrap(),
        journal(&test_digest(7), &entries),
        "another instance sees every acknowledged entry"
    );
    let err = second.open_journal(&s, &test_digest(8)).await.unwrap_err();
    assert!(
        matches!(err, BackendError::JournalExists { .. }),
        "another instance must recover first: {err}"
    );
    second.close_journal(&s).await.unwrap();
    assert_eq!(first.load_journal(&s).await.unwrap(), None);
}

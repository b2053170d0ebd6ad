//! Conformance checks for stack tags and stack rename.

use super::{fresh_project, stack_in};
use crate::capabilities::{Backend, ListHistoryOptions, RemoveOptions, StackTags, UpdateKind};

/// Tags are empty at first, replaced as a whole, kept apart per stack,
/// refused for a missing stack and gone with their stack.
pub async fn tags_round_trip(backend: &dyn Backend) {
    let project = fresh_project();
    let a = stack_in(backend, &project, "a");
    let b = stack_in(backend, &project, "b");
    let missing = stack_in(backend, &project, "missing");
    backend.create_stack(&a, b"{}").await.unwrap();
    backend.create_stack(&b, b"{}").await.unwrap();
    assert!(backend.load_tags(&a).await.unwrap().is_empty());
    let mut tags = StackTags::new();
    tags.insert("env".into(), "dev é".into());
    tags.insert("pulumi:project".into(), project.clone());
    tags.insert("empty".into(), String::new());
    backend.save_tags(&a, &tags).await.unwrap();
    assert_eq!(backend.load_tags(&a).await.unwrap(), tags);
    assert!(backend.load_tags(&b).await.unwrap().is_empty(), "per stack");
    tags.remove("env");
    backend.save_tags(&a, &tags).await.unwrap();
    assert_eq!(backend.load_tags(&a).await.unwrap(), tags, "replaced whole");
    assert!(backend
        .load_tags(&missing)
        .await
        .unwrap_err()
        .is_not_found());
    assert!(backend
        .save_tags(&missing, &tags)
        .await
        .unwrap_err()
        .is_not_found());
    backend
        .remove_stack(&a, &RemoveOptions::default())
        .await
        .unwrap();
    backend.create_stack(&a, b"{}").await.unwrap();
    assert!(
        backend.load_tags(&a).await.unwrap().is_empty(),
        "removing a stack removes its tags"
    );
}

/// A rename stores the given checkpoint under the new name and moves the
/// history and tags; a taken or missing name changes nothing.
pub async fn rename_moves_checkpoint_history_and_tags(backend: &dyn Backend) {
    let project = fresh_project();
    let old = stack_in(backend, &project, "old");
    let new = stack_in(backend, &project, "new");
    let taken = stack_in(backend, &project, "taken");
    let elsewhere = stack_in(backend, &fresh_project(), "moved");
    backend.create_stack(&old, br#"{"n":1}"#).await.unwrap();
    backend.create_stack(&taken, br#"{"t":1}"#).await.unwrap();
    backend
        .add_history(&old, UpdateKind::Update, br#"{"kind":"update","n":1}"#)
        .await
        .unwrap();
    let mut tags = StackTags::new();
    tags.insert("owner".into(), "me".into());
    backend.save_tags(&old, &tags).await.unwrap();

    let err = backend
        .rename_stack(&old, &taken, br#"{"n":2}"#)
        .await
        .unwrap_err();
    assert!(
        matches!(err, crate::BackendError::StackAlreadyExists { ref stack, .. } if stack.contains("taken")),
        "renaming onto an existing stack: {err}"
    );
    assert_eq!(
        backend.load_checkpoint(&taken).await.unwrap().unwrap(),
        br#"{"t":1}"#
    );
    assert_eq!(
        backend.load_checkpoint(&old).await.unwrap().unwrap(),
        br#"{"n":1}"#,
        "a refused rename changes nothing"
    );
    let missing = stack_in(backend, &project, "missing");
    assert!(backend
        .rename_stack(&missing, &stack_in(backend, &project, "x"), b"{}")
        .await
        .unwrap_err()
        .is_not_found());

    backend
        .rename_stack(&old, &new, br#"{"n":2}"#)
        .await
        .unwrap();
    assert!(!backend.stack_exists(&old).await.unwrap());
    assert!(backend.stack_exists(&new).await.unwrap());
    assert_eq!(
        backend.load_checkpoint(&new).await.unwrap().unwrap(),
        br#"{"n":2}"#
    );
    let history = backend
        .list_history(&new, &ListHistoryOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 1, "history follows the rename");
    assert_eq!(history[0].record, br#"{"kind":"update","n":1}"#);
    assert_eq!(backend.load_tags(&new).await.unwrap(), tags);

    // Into another project of the same organization.
    backend
        .rename_stack(&new, &elsewhere, br#"{"n":3}"#)
        .await
        .unwrap();
    assert!(!backend.stack_exists(&new).await.unwrap());
    assert_eq!(
        backend.load_checkpoint(&elsewhere).await.unwrap().unwrap(),
        br#"{"n":3}"#
    );
    assert_eq!(
        backend
            .list_history(&elsewhere, &ListHistoryOptions::default())
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(backend.load_tags(&elsewhere).await.unwrap(), tags);
    backend
        .create_stack(&old, b"{}")
        .await
        .expect("the old name is free again");
    assert!(backend
        .list_history(&old, &ListHistoryOptions::default())
        .await
        .unwrap()
        .is_empty());
}

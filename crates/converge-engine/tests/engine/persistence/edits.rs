//! State edits that meet a damaged store: a checkpoint that cannot be
//! written once the edit is journaled, and one that cannot be read.

use super::*;

/// A state edit whose journal entry is durable holds even when the
/// checkpoint cannot be rewritten from it: `commit_changes` says
/// `NotCompacted` (the change holds), never a failure that reads as
/// "nothing changed", and the next reader sees the edit.
#[tokio::test]
async fn a_journaled_edit_holds_when_its_checkpoint_cannot_be_written() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update(&mut locked, 3).await;
    let mut edited = locked.base().clone();
    edited.resources.pop().unwrap();
    locked.edit_base(edited.clone()).unwrap();

    let bak = w._dir.path().join(".pulumi/stacks/proj/test.json.bak");
    let _ = std::fs::remove_file(&bak);
    std::fs::create_dir_all(bak.join("in-the-way")).unwrap();
    let err = locked.commit_changes().await.unwrap_err();
    assert!(err.change_holds(), "{err}");
    assert!(
        matches!(err, converge_engine::StackStateError::NotCompacted { .. }),
        "{err}"
    );
    locked.release().await.unwrap();
    std::fs::remove_dir_all(&bak).unwrap();

    assert_eq!(w.read_only().await.0.resources, edited.resources);
    let locked = w.state.lock(me()).await.unwrap();
    assert_eq!(locked.base().resources, edited.resources);
    locked.release().await.unwrap();
}

/// `lock_replacing` (`stack import --force`): a damaged checkpoint is no
/// error there — it says what could not be read, gives an empty base, and
/// the deployment put in its place is the state the next reader sees.
/// A readable stack opens as `lock` opens it.
#[tokio::test]
async fn a_damaged_checkpoint_can_be_replaced_under_the_lock() {
    let w = world().await;
    let mut locked = w.state.lock(me()).await.unwrap();
    w.update(&mut locked, 3).await;
    let good = locked.base().clone();
    locked.release().await.unwrap();

    let (locked, unreadable) = w.state.lock_replacing(me()).await.unwrap();
    assert!(unreadable.is_none());
    assert_eq!(locked.base().resources, good.resources);
    locked.release().await.unwrap();

    let file = w._dir.path().join(".pulumi/stacks/proj/test.json");
    std::fs::write(&file, b"{ \"version\": 3, \"deployment\": {").unwrap();
    let err = w.state.lock(me()).await.unwrap_err();
    assert!(
        matches!(err, converge_engine::StackStateError::Checkpoint { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("stack import --force"), "{err}");

    let (mut locked, unreadable) = w.state.lock_replacing(me()).await.unwrap();
    assert!(unreadable.is_some());
    assert!(locked.base().resources.is_empty());
    locked.replace_base(good.clone());
    locked.commit_changes().await.unwrap();
    locked.release().await.unwrap();
    assert!(!w.journal_left().await);
    assert_eq!(w.read_only().await.0.resources, good.resources);
}

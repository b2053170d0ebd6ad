//! `requires_replace` (seed 004): a changed attribute the plan lists makes
//! a replacement — the new object created before the old one is deleted —
//! and a changed attribute it does not list an update in place; an
//! attribute listed but unchanged replaces nothing.

use std::sync::{Arc, Mutex};

use converge_engine::StepOp;
use converge_testkit::MockCloud;

use super::*;

/// A provider whose every plan from a prior state lists `name` in
/// `requires_replace`, changed or not (as a provider may); each delete
/// notes how many objects the cloud held just before it.
fn provider(cloud: &Arc<MockCloud>, before_delete: Arc<Mutex<Vec<usize>>>) -> TfMock {
    mock(cloud)
        .on_plan(|m, call| {
            let mut r = m.default_plan(call);
            if call.prior_state.is_some() {
                r.requires_replace = vec!["name".to_owned()];
            }
            r
        })
        .on_apply(move |m, call| {
            if call.is_delete() {
                before_delete.lock().unwrap().push(m.cloud().len());
            }
            m.default_apply(call)
        })
}

#[tokio::test]
async fn a_listed_attribute_that_changes_replaces_and_others_update() {
    let cloud = MockCloud::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (mut w, server) = world(provider(&cloud, seen.clone())).await;
    let tf = server.mock();
    expect_ok(&w.up(&one(&[("name", "first"), ("note", "n1")])).await);
    let first_id = thing_a(&w).id.clone().unwrap();

    // `note` changes, `name` (listed) does not: an update in place.
    let r = w.up(&one(&[("name", "first"), ("note", "n2")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(thing_a(&w).id.as_deref(), Some(first_id.as_str()));
    assert_eq!(cloud.get(&first_id).unwrap().properties["note"], s("n2"));
    let (last_plan, _) = tf.plans().pop().unwrap();
    assert!(last_plan.prior_state.is_some());

    // Nothing changes: the same, though `name` is still listed.
    let r = w.up(&one(&[("name", "first"), ("note", "n2")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);

    // `name` changes: a replacement, create before delete.
    tf.clear_calls();
    let r = w.up(&one(&[("name", "second"), ("note", "n2")])).await;
    expect_ok(&r);
    let ops = ops_of(&r, "a");
    assert!(
        ops.contains(&StepOp::CreateReplacement) && ops.contains(&StepOp::DeleteReplaced),
        "{ops:?}"
    );
    let applies = tf.applies();
    let created = applies
        .iter()
        .position(|(q, _)| q.prior_state.is_none())
        .expect("the replacement was created");
    let deleted = applies
        .iter()
        .position(|(q, _)| q.is_delete())
        .expect("the original was deleted");
    assert!(created < deleted, "created before deleted: {applies:?}");
    let (delete, _) = &applies[deleted];
    assert_eq!(
        delete.prior_state.as_ref().unwrap()["id"],
        s(&first_id),
        "the delete is of the original"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![2],
        "both objects existed when the original was deleted"
    );
    let a = thing_a(&w);
    let new_id = a.id.clone().unwrap();
    assert_ne!(new_id, first_id);
    assert_eq!(a.outputs.get("name"), Some(&s("second")));
    assert!(cloud.get(&first_id).is_none());
    assert_eq!(cloud.ids(), vec![new_id]);
}

#[tokio::test]
async fn a_previewed_replacement_is_shown_as_one_and_changes_nothing() {
    let cloud = MockCloud::new();
    let (mut w, _server) = world(provider(&cloud, Arc::default())).await;
    expect_ok(&w.up(&one(&[("name", "first")])).await);
    let objects = cloud.objects();
    let r = w.preview(&one(&[("name", "second")])).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    let r = w.preview(&one(&[("name", "first"), ("note", "x")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(cloud.objects(), objects);
}

#[tokio::test]
async fn a_replacement_applies_with_its_previews_plan() {
    let cloud = MockCloud::new();
    let (mut w, _server) = world(provider(&cloud, Arc::default())).await;
    expect_ok(&w.up(&one(&[("name", "first")])).await);
    let first_id = thing_a(&w).id.clone().unwrap();
    let program = one(&[("name", "second")]);
    let preview = w.preview(&program).await;
    expect_ok(&preview);
    w.options.plan = Some(preview_constraint(&preview));
    let r = w.up(&program).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    let a = thing_a(&w);
    assert_ne!(a.id.as_deref(), Some(first_id.as_str()));
    assert_eq!(cloud.ids(), vec![a.id.clone().unwrap()]);
}

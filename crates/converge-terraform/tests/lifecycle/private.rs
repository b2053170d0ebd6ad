//! Provider private data (seed 004): the bytes ApplyResourceChange returns
//! are opaque to Core, kept in state (`__meta`) and given back unchanged
//! as `prior_private` to the next plan, as `planned_private` (what that
//! plan returned) to the next apply, as `private` to the next read and as
//! `planned_private` to the delete; a refresh keeps them.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use converge_engine::StepOp;
use converge_testkit::MockCloud;

use super::*;

/// Bytes no text codec would carry: the `n`th apply's private data.
fn private_of_apply(n: u8) -> Vec<u8> {
    vec![0, 0xff, 0xfe, b'p', n]
}

/// What the mock's plans return as `planned_private`: the prior private
/// data with a suffix, so that an apply shows which plan's bytes it got.
fn planned(prior: &[u8]) -> Vec<u8> {
    let mut p = prior.to_vec();
    p.extend_from_slice(b"+planned");
    p
}

#[tokio::test]
async fn private_data_goes_back_to_the_provider_unchanged_on_every_later_call() {
    let cloud = MockCloud::new();
    let applies = Arc::new(AtomicU8::new(0));
    let counter = applies.clone();
    let mock = mock(&cloud)
        .on_plan(|m, call| {
            let mut r = m.default_plan(call);
            r.planned_private = planned(&call.prior_private);
            r
        })
        .on_apply(move |m, call| {
            let mut r = m.default_apply(call);
            if !call.is_delete() {
                r.private = private_of_apply(counter.fetch_add(1, Ordering::SeqCst) + 1);
            }
            r
        });
    let (mut w, server) = world(mock).await;
    let tf = server.mock();

    // Create: the first plan has no prior private data; the apply is
    // given what the plan returned; the state holds what the apply returned.
    expect_ok(&w.up(&one(&[("name", "a"), ("note", "n1")])).await);
    let (plan, _) = &tf.plans()[0];
    assert!(plan.prior_private.is_empty());
    let (apply, _) = &tf.applies()[0];
    assert_eq!(apply.planned_private, planned(b""));
    let p1 = private_of_apply(1);
    assert_eq!(meta(thing_a(&w)).private, p1);

    // Update: every plan gets p1 as prior_private, the apply gets that
    // plan's planned_private; the state then holds p2.
    tf.clear_calls();
    let r = w.up(&one(&[("name", "a"), ("note", "n2")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    let plans = tf.plans();
    assert!(!plans.is_empty());
    for (plan, _) in &plans {
        assert_eq!(plan.prior_private, p1);
    }
    let (apply, _) = tf.applies().pop().unwrap();
    assert_eq!(
        apply.planned_private,
        plans.last().unwrap().1.planned_private
    );
    assert_eq!(apply.planned_private, planned(&p1));
    let p2 = private_of_apply(2);
    assert_eq!(meta(thing_a(&w)).private, p2);

    // An update with nothing to change keeps them.
    expect_ok(&w.up(&one(&[("name", "a"), ("note", "n2")])).await);
    assert_eq!(meta(thing_a(&w)).private, p2);

    // Refresh: the read gets p2 and returns it; the state keeps it.
    tf.clear_calls();
    expect_ok(&w.refresh().await);
    let reads = tf.reads();
    assert_eq!(reads.len(), 1, "{:?}", tf.rpcs());
    assert_eq!(reads[0].0.private, p2);
    assert_eq!(meta(thing_a(&w)).private, p2);

    // Delete: the apply of the delete gets p2.
    tf.clear_calls();
    expect_ok(&w.destroy().await);
    let (delete, _) = tf.applies().pop().unwrap();
    assert!(delete.is_delete());
    assert_eq!(delete.planned_private, p2);
    assert!(cloud.is_empty());
}

#[tokio::test]
async fn private_data_a_read_returns_replaces_the_recorded_one() {
    let cloud = MockCloud::new();
    let mock = mock(&cloud)
        .on_apply(|m, call| {
            let mut r = m.default_apply(call);
            if !call.is_delete() {
                r.private = b"from-apply".to_vec();
            }
            r
        })
        .on_read(|m, call| {
            let mut r = m.default_read(call);
            r.private = b"from-read".to_vec();
            r
        });
    let (mut w, server) = world(mock).await;
    expect_ok(&w.up(&one(&[("name", "a")])).await);
    assert_eq!(meta(thing_a(&w)).private, b"from-apply");
    expect_ok(&w.refresh().await);
    assert_eq!(meta(thing_a(&w)).private, b"from-read");
    server.mock().clear_calls();
    expect_ok(&w.destroy().await);
    let (delete, _) = server.mock().applies().pop().unwrap();
    assert_eq!(delete.planned_private, b"from-read");
}

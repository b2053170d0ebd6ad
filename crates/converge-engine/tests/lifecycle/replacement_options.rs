//! `replacementTrigger`, `replaceWith` and `hideDiffs`: a changed trigger
//! replaces a resource (only when the recorded trigger and the new one are
//! both present; secrets compared by value; an unknown one shows a
//! replacement in a preview); a resource is replaced with any resource its
//! `replaceWith` names; all three are recorded in the state.

use converge_engine::StepOp;
use converge_model::PropertyValue;
use converge_testkit::{custom, program, register_stack, TestProgram};

use super::*;

fn triggered(trigger: Option<PropertyValue>) -> TestProgram {
    program(move |m| {
        let trigger = trigger.clone();
        async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "a", inputs(&[("k", "fixed")]));
            g.options.replacement_trigger = trigger;
            reg(&m, &stack, g).await?;
            Ok(())
        }
    })
}

fn numbers(ns: &[f64]) -> PropertyValue {
    PropertyValue::Array(ns.iter().map(|n| PropertyValue::Number(*n)).collect())
}

const REPLACED: [StepOp; 2] = [StepOp::CreateReplacement, StepOp::DeleteReplaced];

#[tokio::test]
async fn a_changed_trigger_replaces_and_only_when_both_are_present() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&triggered(Some(s("one")))).await);
    let first_id = w.resource("a").unwrap().id.clone();
    assert_eq!(w.resource("a").unwrap().replacement_trigger, Some(s("one")));

    let r = w.up(&triggered(Some(s("one")))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), [StepOp::Same]);

    let r = w.up(&triggered(Some(s("two")))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), REPLACED);
    assert_ne!(w.resource("a").unwrap().id, first_id);
    assert_eq!(w.resource("a").unwrap().replacement_trigger, Some(s("two")));
    assert_eq!(cloud.len(), 1);

    // Dropping the trigger, then setting one again: neither replaces.
    let r = w.up(&triggered(None)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), [StepOp::Same]);
    assert_eq!(w.resource("a").unwrap().replacement_trigger, None);
    let r = w.up(&triggered(Some(s("three")))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), [StepOp::Same]);
    assert_eq!(
        w.resource("a").unwrap().replacement_trigger,
        Some(s("three"))
    );
}

#[tokio::test]
async fn a_secret_trigger_is_compared_by_its_value() {
    let (mut w, _cloud) = world(provider());
    let secret = |ns: &[f64]| Some(PropertyValue::secret(numbers(ns)));
    expect_ok(&w.up(&triggered(secret(&[1.0, 2.0, 3.0]))).await);
    assert!(w
        .resource("a")
        .unwrap()
        .replacement_trigger
        .as_ref()
        .is_some_and(PropertyValue::is_secret));

    // The same value, no longer secret: no replacement.
    let r = w.up(&triggered(Some(numbers(&[1.0, 2.0, 3.0])))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), [StepOp::Same]);

    let r = w.up(&triggered(secret(&[3.0, 2.0, 1.0]))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), REPLACED);
}

#[tokio::test]
async fn an_unknown_trigger_previews_a_replacement() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&triggered(Some(s("one")))).await);
    let r = w.preview(&triggered(Some(PropertyValue::Unknown))).await;
    expect_ok(&r);
    assert!(
        ops_of(&r, "a").contains(&StepOp::CreateReplacement),
        "{:?}",
        ops_of(&r, "a")
    );
}

/// `a` (replaced by its trigger), `b` replaced with it, `c` beside them
/// untouched; `hideDiffs` and `replaceWith` kept in the state.
fn with_replace_with(trigger: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut a = custom(T, "a", inputs(&[("k", "1")]));
        a.options.replacement_trigger = Some(s(trigger));
        let a = reg(&m, &stack, a).await?;
        let mut b = custom(T, "b", inputs(&[("k", "1")]));
        b.options.replace_with = vec![a.urn.clone()];
        b.options.hide_diffs = vec!["k".to_owned()];
        reg(&m, &stack, b).await?;
        reg(&m, &stack, custom(T, "c", inputs(&[("k", "1")]))).await?;
        Ok(())
    })
}

#[tokio::test]
async fn replace_with_replaces_a_resource_with_the_one_it_names() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&with_replace_with("one")).await);
    let a_urn = w.resource("a").unwrap().urn.clone();
    let b = w.resource("b").unwrap();
    assert_eq!(b.replace_with, [a_urn]);
    assert_eq!(b.hide_diff, ["k"]);
    let b_id = b.id.clone();

    // Nothing replaced: b stays.
    let r = w.up(&with_replace_with("one")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "b"), [StepOp::Same]);

    let r = w.preview(&with_replace_with("two")).await;
    expect_ok(&r);
    assert!(ops_of(&r, "b").contains(&StepOp::CreateReplacement));

    let r = w.up(&with_replace_with("two")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), REPLACED);
    assert_eq!(ops_of(&r, "b"), REPLACED);
    assert_eq!(ops_of(&r, "c"), [StepOp::Same]);
    assert_ne!(w.resource("b").unwrap().id, b_id);
    assert_eq!(cloud.len(), 3);
}

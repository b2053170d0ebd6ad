//! Providers that break seed 003/004's contract: each broken rule is an
//! error with the seeds' meaning naming the attribute; nothing that does
//! not exist is recorded, and what does exist is.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use converge_engine::StepOp;
use converge_testkit::MockCloud;

use super::*;

/// A switch a test flips to make the provider misbehave from then on.
fn switch() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

fn on(s: &AtomicBool) -> bool {
    s.load(Ordering::SeqCst)
}

/// Plans `note` = "surprise" whatever the configuration says (`note` is
/// optional, not computed) once `broken` is on.
fn plans_a_non_computed_value(cloud: &Arc<MockCloud>, broken: Arc<AtomicBool>) -> TfMock {
    mock(cloud).on_plan(move |m, call| {
        let mut r = m.default_plan(call);
        if on(&broken) {
            if let Some(p) = &mut r.planned_state {
                p.insert("note".to_owned(), s("surprise"));
            }
        }
        r
    })
}

#[tokio::test]
async fn a_planned_value_for_a_non_computed_attribute_fails_a_create_and_records_nothing() {
    let cloud = MockCloud::new();
    let broken = switch();
    broken.store(true, Ordering::SeqCst);
    let (mut w, server) = world(plans_a_non_computed_value(&cloud, broken)).await;
    let r = w.up(&one(&[("name", "a"), ("note", "mine")])).await;
    let e = error_of(&r);
    assert!(
        e.contains("planned value for a non-computed attribute"),
        "{e}"
    );
    assert!(e.contains("attribute note"), "{e}");
    assert!(w.resource("a").is_none());
    assert!(cloud.is_empty());
    assert!(server.mock().applies().is_empty());
}

#[tokio::test]
async fn a_planned_value_for_a_non_computed_attribute_fails_an_update_and_keeps_the_object() {
    let cloud = MockCloud::new();
    let broken = switch();
    let (mut w, server) = world(plans_a_non_computed_value(&cloud, broken.clone())).await;
    expect_ok(&w.up(&one(&[("name", "a"), ("note", "n1")])).await);
    let before = thing_a(&w).clone();
    let objects = cloud.objects();
    broken.store(true, Ordering::SeqCst);
    server.mock().clear_calls();

    let r = w.up(&one(&[("name", "a"), ("note", "n2")])).await;
    let e = error_of(&r);
    assert!(
        e.contains("planned value for a non-computed attribute"),
        "{e}"
    );
    assert!(e.contains("attribute note"), "{e}");
    assert_eq!(thing_a(&w), &before, "the recorded object is unchanged");
    assert_eq!(cloud.objects(), objects);
    assert!(server.mock().applies().is_empty());

    // Preview says the same, and changes nothing either.
    let r = w.preview(&one(&[("name", "a"), ("note", "n2")])).await;
    assert!(error_of(&r).contains("attribute note"));
}

/// Plans `revision` (computed) as a known value that differs between one
/// plan and the next once `broken` is on, so the final plan disagrees
/// with the first.
fn plans_a_moving_revision(cloud: &Arc<MockCloud>, broken: Arc<AtomicBool>) -> TfMock {
    let n = AtomicUsize::new(0);
    mock(cloud).on_plan(move |m, call| {
        let mut r = m.default_plan(call);
        if on(&broken) {
            if let Some(p) = &mut r.planned_state {
                let k = n.fetch_add(1, Ordering::SeqCst) + 1;
                p.insert("revision".to_owned(), s(&format!("r{k}")));
            }
        }
        r
    })
}

#[tokio::test]
async fn a_final_plan_that_disagrees_with_the_previews_plan_fails_and_creates_nothing() {
    let cloud = MockCloud::new();
    let broken = switch();
    broken.store(true, Ordering::SeqCst);
    let (mut w, server) = world(plans_a_moving_revision(&cloud, broken)).await;
    let program = one(&[("name", "a")]);
    let preview = w.preview(&program).await;
    expect_ok(&preview);
    // As the CLI's `up` does: the preview's plan, for consistency.
    w.options.plan = Some(preview_constraint(&preview));
    let r = w.up(&program).await;
    let e = error_of(&r);
    assert!(e.contains("produced an inconsistent final plan"), "{e}");
    assert!(e.contains("attribute revision"), "{e}");
    assert!(e.contains("r1") && e.contains("r2"), "{e}");
    assert!(w.resource("a").is_none());
    assert!(cloud.is_empty());
    assert!(server.mock().applies().is_empty());
}

#[tokio::test]
async fn a_final_plan_that_agrees_with_the_previews_plan_applies() {
    let cloud = MockCloud::new();
    let n = Arc::new(AtomicUsize::new(0));
    let (mut w, _server) = world(mock(&cloud).on_plan(move |m, call| {
        // A known computed value that every plan repeats.
        let mut r = m.default_plan(call);
        n.fetch_add(1, Ordering::SeqCst);
        if let Some(p) = &mut r.planned_state {
            p.insert("revision".to_owned(), s("r-fixed"));
        }
        r
    }))
    .await;
    let program = one(&[("name", "a")]);
    let preview = w.preview(&program).await;
    expect_ok(&preview);
    w.options.plan = Some(preview_constraint(&preview));
    expect_ok(&w.up(&program).await);
    assert_eq!(thing_a(&w).outputs.get("revision"), Some(&s("r-fixed")));
}

#[tokio::test]
async fn a_final_plan_that_disagrees_with_the_diffs_plan_fails_an_update() {
    let cloud = MockCloud::new();
    let broken = switch();
    let (mut w, server) = world(plans_a_moving_revision(&cloud, broken.clone())).await;
    expect_ok(&w.up(&one(&[("name", "a"), ("note", "n1")])).await);
    let before = thing_a(&w).clone();
    let objects = cloud.objects();
    broken.store(true, Ordering::SeqCst);
    server.mock().clear_calls();

    // A plain `up` (no preview's plan): the engine's Diff plans first,
    // the update plans again.
    let r = w.up(&one(&[("name", "a"), ("note", "n2")])).await;
    let e = error_of(&r);
    assert!(e.contains("produced an inconsistent final plan"), "{e}");
    assert!(e.contains("attribute revision"), "{e}");
    assert_eq!(server.mock().plans().len(), 2, "{:?}", server.mock().rpcs());
    assert!(server.mock().applies().is_empty());
    assert_eq!(thing_a(&w), &before);
    assert_eq!(cloud.objects(), objects);
}

/// Returns `note` = "changed" after applying, whatever was planned, once
/// `broken` is on (the cloud keeps what the provider says it did).
fn applies_another_note(cloud: &Arc<MockCloud>, broken: Arc<AtomicBool>) -> TfMock {
    mock(cloud).on_apply(move |m, call| {
        let mut r = m.default_apply(call);
        if on(&broken) {
            if let Some(state) = &mut r.new_state {
                state.insert("note".to_owned(), s("changed"));
                let id = state["id"].as_str().unwrap().to_owned();
                m.cloud().set_properties(&id, state.clone()).unwrap();
            }
        }
        r
    })
}

#[tokio::test]
async fn an_inconsistent_result_after_a_create_is_recorded_with_the_error_and_destroyable() {
    let cloud = MockCloud::new();
    let broken = switch();
    broken.store(true, Ordering::SeqCst);
    let (mut w, _server) = world(applies_another_note(&cloud, broken)).await;
    let r = w.up(&one(&[("name", "a"), ("note", "mine")])).await;
    let e = error_of(&r);
    assert!(
        e.contains("produced an inconsistent result after apply"),
        "{e}"
    );
    assert!(e.contains("attribute note"), "{e}");

    // The object exists, so it is recorded, as the provider returned it.
    let a = thing_a(&w);
    let id = a.id.clone().unwrap();
    assert_eq!(cloud.ids(), vec![id.clone()]);
    assert_eq!(a.outputs.get("note"), Some(&s("changed")));
    assert!(
        a.init_errors
            .iter()
            .any(|m| m.contains("inconsistent result after apply") && m.contains("note")),
        "{:?}",
        a.init_errors
    );

    expect_ok(&w.destroy().await);
    assert!(cloud.is_empty());
    assert!(w.resource("a").is_none());
}

#[tokio::test]
async fn an_inconsistent_result_after_an_update_is_recorded_as_the_provider_left_it() {
    let cloud = MockCloud::new();
    let broken = switch();
    let (mut w, _server) = world(applies_another_note(&cloud, broken.clone())).await;
    expect_ok(&w.up(&one(&[("name", "a"), ("note", "n1")])).await);
    let id = thing_a(&w).id.clone();
    broken.store(true, Ordering::SeqCst);
    let r = w.up(&one(&[("name", "a"), ("note", "n2")])).await;
    let e = error_of(&r);
    assert!(
        e.contains("produced an inconsistent result after apply"),
        "{e}"
    );
    assert!(e.contains("attribute note"), "{e}");
    let a = thing_a(&w);
    assert_eq!(a.id, id);
    assert_eq!(a.outputs.get("note"), Some(&s("changed")));
    // Reported as a failed step, not a done one.
    assert_eq!(ops_of(&r, "a"), Vec::<StepOp>::new());
}

#[tokio::test]
async fn an_unknown_left_in_the_new_state_is_an_error_and_the_object_is_recorded() {
    let cloud = MockCloud::new();
    let (mut w, _server) = world(mock(&cloud).on_apply(|m, call| {
        let mut r = m.default_apply(call);
        if let Some(state) = &mut r.new_state {
            state.insert("revision".to_owned(), PropertyValue::Unknown);
        }
        r
    }))
    .await;
    let r = w.up(&one(&[("name", "a")])).await;
    let e = error_of(&r);
    assert!(
        e.contains("produced an inconsistent result after apply"),
        "{e}"
    );
    assert!(e.contains("attribute revision"), "{e}");
    assert!(e.contains("unknown"), "{e}");

    let a = thing_a(&w);
    assert_eq!(cloud.ids(), vec![a.id.clone().unwrap()]);
    assert!(
        !a.outputs.values().any(PropertyValue::contains_unknowns),
        "no unknown is recorded as state: {:?}",
        a.outputs
    );
    assert_eq!(a.outputs.get("revision"), Some(&PropertyValue::Null));
    expect_ok(&w.destroy().await);
    assert!(cloud.is_empty());
}

#[tokio::test]
async fn a_replacements_final_plan_answers_to_the_create_plan_made_at_diff() {
    // `name` changes and the provider lists it: Diff plans the
    // replacement's create (as Terraform Core does); the create plans
    // again at apply and must agree with it, preview or not.
    let cloud = MockCloud::new();
    let broken = switch();
    let n = AtomicUsize::new(0);
    let flag = broken.clone();
    let tf = mock(&cloud).on_plan(move |m, call| {
        let mut r = m.default_plan(call);
        if call.prior_state.is_some() {
            r.requires_replace = vec!["name".to_owned()];
        } else if on(&flag) {
            if let Some(p) = &mut r.planned_state {
                let k = n.fetch_add(1, Ordering::SeqCst) + 1;
                p.insert("label".to_owned(), s(&format!("l{k}")));
            }
        }
        r
    });
    let (mut w, server) = world(tf).await;
    expect_ok(&w.up(&one(&[("name", "a")])).await);
    let before = thing_a(&w).clone();
    let objects = cloud.objects();
    broken.store(true, Ordering::SeqCst);
    server.mock().clear_calls();

    let r = w.up(&one(&[("name", "b")])).await;
    let e = error_of(&r);
    assert!(e.contains("produced an inconsistent final plan"), "{e}");
    assert!(e.contains("attribute label"), "{e}");
    assert!(
        server.mock().applies().is_empty(),
        "{:?}",
        server.mock().rpcs()
    );
    assert_eq!(thing_a(&w), &before);
    assert_eq!(cloud.objects(), objects);
}

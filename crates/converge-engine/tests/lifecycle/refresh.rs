//! Refresh: drift versus normalisation (seed 004, "ReadResource"). After a
//! Read, the provider's Diff is asked with the refreshed state as the olds
//! and the prior inputs — what the program asked for — as the news: no
//! diff is normalisation (recorded, shown unchanged), a diff is drift
//! (the refresh step, with the keys). A provider that cannot tell gets the
//! engine's comparison of inputs; a vanished object leaves the state.

use converge_engine::StepOp;
use converge_model::PropertyValue;
use converge_plugin::{DiffChanges, DiffResponse, ReadResponse};
use converge_testkit::{custom, program, register_stack, MockProvider};

use super::*;

fn one(v: &'static str) -> converge_testkit::TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("v", v)]))).await?;
        Ok(())
    })
}

/// A provider whose Read reports the cloud object's properties as its
/// inputs too, as providers that read inputs back from the cloud do.
fn reading_inputs(p: MockProvider) -> MockProvider {
    let cloud = p.cloud().clone();
    p.on_read(move |req| {
        Ok(match cloud.get(&req.id) {
            Some(o) => ReadResponse {
                id: o.id,
                inputs: o.properties.clone(),
                properties: o.properties,
            },
            None => ReadResponse::default(),
        })
    })
}

fn step_diff(r: &converge_engine::OperationResult, name: &str) -> Vec<String> {
    r.plan
        .steps
        .iter()
        .find(|s| s.urn.ends_with(&format!("::{name}")))
        .map(|s| s.diff.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn drift_is_the_refresh_step_with_the_keys_the_provider_names() {
    let seen = log();
    let l = seen.clone();
    let p = reading_inputs(provider()).on_diff(move |req| {
        l.lock().unwrap().push(format!(
            "{:?} -> {:?}",
            req.old_inputs.get("v"),
            req.new_inputs.get("v")
        ));
        Ok(if req.old_inputs == req.new_inputs {
            DiffResponse::none()
        } else {
            DiffResponse {
                changes: DiffChanges::Some,
                changed_keys: vec!["v".into()],
                ..DiffResponse::default()
            }
        })
    });
    let (mut w, cloud) = world(p);
    expect_ok(&w.up(&one("1")).await);
    seen.lock().unwrap().clear();
    let id = w.resource("a").unwrap().id.clone().unwrap();
    cloud
        .set_properties(&id, inputs(&[("v", "drifted")]))
        .unwrap();

    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Refresh]);
    assert_eq!(step_diff(&r, "a"), vec!["v".to_owned()]);
    // Refreshed state as the olds, the program's inputs as the news.
    assert_eq!(
        entries(&seen),
        vec![format!("{:?} -> {:?}", Some(s("drifted")), Some(s("1")))]
    );
    assert_eq!(
        w.resource("a").unwrap().outputs.get("v"),
        Some(&s("drifted"))
    );
    // The next update puts it back.
    let r = w.up(&one("1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
}

#[tokio::test]
async fn normalisation_is_recorded_but_shown_unchanged() {
    // The cloud answers in upper case; the provider's Diff ignores case.
    let p = reading_inputs(provider()).on_diff(|req| {
        let norm = |m: &converge_model::PropertyMap| match m.get("v") {
            Some(PropertyValue::String(v)) => v.to_lowercase(),
            _ => String::new(),
        };
        Ok(if norm(&req.old_inputs) == norm(&req.new_inputs) {
            DiffResponse::none()
        } else {
            DiffResponse {
                changes: DiffChanges::Some,
                changed_keys: vec!["v".into()],
                ..DiffResponse::default()
            }
        })
    });
    let (mut w, cloud) = world(p);
    expect_ok(&w.up(&one("abc")).await);
    let id = w.resource("a").unwrap().id.clone().unwrap();
    cloud.set_properties(&id, inputs(&[("v", "ABC")])).unwrap();

    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert!(
        r.plan.counts().iter().all(|(op, _)| *op == StepOp::Same),
        "{:?}",
        r.plan.counts()
    );
    // Recorded all the same.
    assert_eq!(w.resource("a").unwrap().outputs.get("v"), Some(&s("ABC")));
}

#[tokio::test]
async fn a_provider_that_cannot_tell_gets_the_inputs_compared() {
    let p = reading_inputs(provider()).on_diff(|_| Ok(DiffResponse::default()));
    let (mut w, cloud) = world(p);
    expect_ok(&w.up(&one("1")).await);
    let id = w.resource("a").unwrap().id.clone().unwrap();

    // Same inputs: unchanged.
    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);

    cloud.set_properties(&id, inputs(&[("v", "2")])).unwrap();
    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Refresh]);
    assert_eq!(step_diff(&r, "a"), vec!["v".to_owned()]);
}

#[tokio::test]
async fn a_vanished_object_leaves_the_state_and_counts_as_deleted() {
    let (mut w, cloud) = world(reading_inputs(provider()));
    expect_ok(&w.up(&one("1")).await);
    let id = w.resource("a").unwrap().id.clone().unwrap();
    cloud.remove(&id).unwrap();
    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Delete]);
    assert_eq!(r.plan.counts().get(&StepOp::Delete), Some(&1));
    assert_eq!(r.plan.counts().get(&StepOp::Refresh), None);
    assert!(w.resource("a").is_none());
}

#[tokio::test]
async fn drift_the_state_already_records_is_no_change() {
    // The provider reads back outputs only, so the state's inputs stay
    // what the program asked for and its Diff (outputs against desired
    // inputs) keeps seeing the difference until an update.
    let p = provider().on_diff(|req| {
        Ok(if req.old_outputs.get("v") == req.new_inputs.get("v") {
            DiffResponse::none()
        } else {
            DiffResponse {
                changes: DiffChanges::Some,
                changed_keys: vec!["v".into()],
                ..DiffResponse::default()
            }
        })
    });
    let (mut w, cloud) = world(p);
    expect_ok(&w.up(&one("1")).await);
    let id = w.resource("a").unwrap().id.clone().unwrap();
    cloud
        .set_properties(&id, inputs(&[("v", "drifted")]))
        .unwrap();

    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Refresh]);
    // Nothing new to read: the second refresh changes nothing.
    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert!(
        r.plan.counts().iter().all(|(op, _)| *op == StepOp::Same),
        "{:?}",
        r.plan.counts()
    );
}

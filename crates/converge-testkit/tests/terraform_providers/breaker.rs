//! terraform-provider-breaker 1.0.0: each rule breaks the contract as it
//! promises, and every object it creates can still be deleted.

use std::path::Path;

use converge_model::PropertyValue;
use converge_testkit::terraform_mirror::TestProvider;
use serde_json::json;

use crate::session::{errors, get, pv, with, Session};

const THING: &str = "breaker_thing";
const NULL: &PropertyValue = &PropertyValue::Null;

fn exists(dir: &Path, name: &str) -> bool {
    dir.join(format!("{name}.json")).is_file()
}

async fn start(objects: &Path) -> Option<Session> {
    let mut session = Session::start(TestProvider::Breaker, "1.0.0", &[]).await?;
    let configured = session.configure(json!({"directory": objects})).await;
    assert_eq!(errors(&configured), Vec::<String>::new());
    Some(session)
}

fn config(name: &str, rule: &str) -> PropertyValue {
    pv(json!({"name": name, "rule": rule, "value": "x"}))
}

/// Deletes what `state` describes and checks the object file is gone.
async fn delete(session: &mut Session, objects: &Path, state: &PropertyValue) {
    let name = match get(state, "name") {
        PropertyValue::String(name) => name.clone(),
        other => panic!("no name in {other:?}"),
    };
    assert!(exists(objects, &name), "{name} was created");
    let plan = session.plan(THING, state, NULL, b"").await;
    assert_eq!(errors(&plan.diagnostics), Vec::<String>::new());
    assert_eq!(plan.state, PropertyValue::Null);
    let deleted = session.apply(THING, state, NULL, NULL, b"").await;
    assert_eq!(errors(&deleted.diagnostics), Vec::<String>::new());
    assert_eq!(deleted.state, PropertyValue::Null);
    assert!(!exists(objects, &name), "{name} was deleted");
}

#[tokio::test]
async fn ok_behaves() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut breaker) = start(objects.path()).await else {
        return;
    };
    let config = config("fine", "ok");
    let (planned, applied) = breaker.plan_and_apply(THING, NULL, &config, b"").await;
    let expected = pv(
        json!({"id": "fine", "name": "fine", "rule": "ok", "value": "x", "computed_value": "planned"}),
    );
    assert_eq!(planned.state, expected);
    assert_eq!(applied.state, expected);
    assert_eq!(errors(&applied.diagnostics), Vec::<String>::new());
    let read = breaker.read(THING, &applied.state, &applied.private).await;
    assert_eq!(read.state, expected);
    // A plan that changes nothing is the prior state, and a new name
    // replaces the thing.
    let same = breaker.plan(THING, &applied.state, &config, b"").await;
    assert_eq!(same.state, expected);
    let renamed = breaker
        .plan(
            THING,
            &applied.state,
            &with(&config, "name", pv(json!("other"))),
            b"",
        )
        .await;
    assert_eq!(renamed.requires_replace, ["name"]);
    delete(&mut breaker, objects.path(), &applied.state).await;
    breaker.shutdown().await;
}

#[tokio::test]
async fn plan_noncomputed_plans_a_value_for_a_non_computed_attribute() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut breaker) = start(objects.path()).await else {
        return;
    };
    let config = config("nc", "plan_noncomputed");
    let planned = breaker.plan(THING, NULL, &config, b"").await;
    assert_eq!(errors(&planned.diagnostics), Vec::<String>::new());
    assert_eq!(get(&planned.state, "value"), &pv(json!("x-changed")));
    assert_eq!(get(&config, "value"), &pv(json!("x")));
    // Applied anyway, the object exists and can be deleted.
    let applied = breaker
        .apply(THING, NULL, &planned.state, &config, &planned.private)
        .await;
    assert_eq!(errors(&applied.diagnostics), Vec::<String>::new());
    delete(&mut breaker, objects.path(), &applied.state).await;
    breaker.shutdown().await;
}

#[tokio::test]
async fn plan_unstable_plans_a_different_known_value_each_time() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut breaker) = start(objects.path()).await else {
        return;
    };
    let config = config("unstable", "plan_unstable");
    let first = breaker.plan(THING, NULL, &config, b"").await;
    let second = breaker.plan(THING, NULL, &config, b"").await;
    let (a, b) = (
        get(&first.state, "computed_value"),
        get(&second.state, "computed_value"),
    );
    assert!(matches!(a, PropertyValue::String(_)), "known: {a:?}");
    assert!(matches!(b, PropertyValue::String(_)), "known: {b:?}");
    assert_ne!(a, b);
    // The thing applied from the second plan is stable afterwards.
    let applied = breaker
        .apply(THING, NULL, &second.state, &config, &second.private)
        .await;
    assert_eq!(applied.state, second.state);
    let same = breaker.plan(THING, &applied.state, &config, b"").await;
    assert_eq!(same.state, applied.state);
    delete(&mut breaker, objects.path(), &applied.state).await;
    breaker.shutdown().await;
}

#[tokio::test]
async fn apply_inconsistent_applies_another_value_than_planned() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut breaker) = start(objects.path()).await else {
        return;
    };
    let config = config("inconsistent", "apply_inconsistent");
    let (planned, applied) = breaker.plan_and_apply(THING, NULL, &config, b"").await;
    assert_eq!(get(&planned.state, "computed_value"), &pv(json!("planned")));
    assert_eq!(get(&applied.state, "computed_value"), &pv(json!("applied")));
    assert_eq!(errors(&applied.diagnostics), Vec::<String>::new());
    delete(&mut breaker, objects.path(), &applied.state).await;
    breaker.shutdown().await;
}

#[tokio::test]
async fn apply_unknown_leaves_an_unknown_in_the_new_state() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut breaker) = start(objects.path()).await else {
        return;
    };
    let config = config("unknown", "apply_unknown");
    let (planned, applied) = breaker.plan_and_apply(THING, NULL, &config, b"").await;
    assert_eq!(
        get(&planned.state, "computed_value"),
        &PropertyValue::Unknown
    );
    assert_eq!(
        get(&applied.state, "computed_value"),
        &PropertyValue::Unknown
    );
    assert_eq!(get(&applied.state, "id"), &pv(json!("unknown")));
    // Deleted from a state whose unknown was replaced by null.
    let state = with(&applied.state, "computed_value", PropertyValue::Null);
    delete(&mut breaker, objects.path(), &state).await;
    breaker.shutdown().await;
}

#[tokio::test]
async fn apply_error_with_state_creates_the_object_and_fails() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut breaker) = start(objects.path()).await else {
        return;
    };
    let config = config("half", "apply_error_with_state");
    let (planned, applied) = breaker.plan_and_apply(THING, NULL, &config, b"").await;
    assert_eq!(
        errors(&applied.diagnostics),
        ["simulated failure after create"]
    );
    assert_eq!(applied.state, planned.state);
    assert_eq!(get(&applied.state, "id"), &pv(json!("half")));
    delete(&mut breaker, objects.path(), &applied.state).await;
    breaker.shutdown().await;
}

#[tokio::test]
async fn an_unknown_rule_is_refused_by_validation_and_plan() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut breaker) = start(objects.path()).await else {
        return;
    };
    let message = "unknown rule 'explode'; one of ok, plan_noncomputed, plan_unstable, apply_inconsistent, apply_unknown, apply_error_with_state";
    let bad = config("x", "explode");
    assert_eq!(errors(&breaker.validate(THING, &bad).await), [message]);
    assert_eq!(
        errors(&breaker.validate(THING, &config("x", "ok")).await),
        Vec::<String>::new()
    );
    let planned = breaker.plan(THING, NULL, &bad, b"").await;
    assert_eq!(errors(&planned.diagnostics), [message]);
    breaker.shutdown().await;
}

//! Contract violations, end to end: `breaker`'s `breaker_thing` breaks the
//! rule of seeds 003/004 its `rule` attribute names. Each `up` fails with
//! the seeds' wording, naming the attribute and the resource. A broken
//! plan changes nothing (the last good state stays as it was); an object
//! an apply made is recorded anyway, and a `destroy` deletes it.

use converge_testkit::terraform_mirror::TestProvider;
use serde_json::Value;

use super::world::{providers_available, TfWorld};

const BAD_URN: &str = "urn:pulumi:dev::tfbreak::breaker:index/thing:Thing::bad";

fn things(rules: &[(&str, &str)]) -> String {
    let mut program = String::from("resources:\n");
    for (name, rule) in rules {
        program.push_str(&format!(
            "  {name}:\n    type: breaker:Thing\n    properties:\n      name: {name}\n      rule: {rule}\n      value: v\n"
        ));
    }
    program
}

/// A stack holding the well-behaved thing `good`, then a program adding
/// `bad`, which breaks `rule`; the failed `up`'s output, with the state
/// from before it.
fn break_rule(rule: &str) -> (TfWorld, String, Vec<Value>) {
    let w = TfWorld::yaml("tfbreak", &things(&[("good", "ok")]));
    w.install(TestProvider::Breaker, "1.0.0");
    w.configure_directory("breaker");
    w.run(&["up", "--yes"]);
    assert_eq!(w.object_names(), ["good"]);
    let good_state = w.resources();

    w.set_yaml(&things(&[("good", "ok"), ("bad", rule)]));
    let failed = w.fails(&["up", "--yes"]);
    assert!(
        failed.contains(BAD_URN),
        "the resource is not named:\n{failed}"
    );
    (w, failed, good_state)
}

/// A broken plan: nothing was created and the state is the last good one.
fn assert_nothing_applied(w: &TfWorld, good_state: &[Value]) {
    assert_eq!(w.object_names(), ["good"]);
    assert!(w.resource("bad").is_none());
    assert_eq!(w.resources(), good_state, "the last good state changed");
}

/// A broken apply: the object exists, the state tracks it, and a destroy
/// deletes it.
fn assert_recorded_then_destroyed(w: &TfWorld) {
    assert_eq!(w.object_names(), ["bad", "good"]);
    let bad = w
        .resource("bad")
        .expect("the object the apply made is recorded");
    assert_eq!(bad["id"], "bad");
    assert_eq!(bad["urn"], BAD_URN);
    w.run(&["destroy", "--yes"]);
    assert!(w.object_names().is_empty(), "{:?}", w.object_names());
    assert!(w.resources().is_empty());
}

#[test]
fn a_planned_value_for_a_non_computed_attribute_fails_the_plan() {
    if !providers_available() {
        return;
    }
    let (w, failed, good_state) = break_rule("plan_noncomputed");
    assert!(
        failed.contains("planned value for a non-computed attribute"),
        "{failed}"
    );
    assert!(
        failed.contains(r#"attribute value: planned "v", but got "v-changed""#),
        "{failed}"
    );
    assert_nothing_applied(&w, &good_state);
}

#[test]
fn a_final_plan_that_disagrees_with_the_first_fails_before_applying() {
    if !providers_available() {
        return;
    }
    let (w, failed, good_state) = break_rule("plan_unstable");
    assert!(failed.contains("inconsistent final plan"), "{failed}");
    assert!(failed.contains("attribute computedValue"), "{failed}");
    assert_nothing_applied(&w, &good_state);
}

#[test]
fn an_applied_value_other_than_the_planned_one_is_recorded_and_reported() {
    if !providers_available() {
        return;
    }
    let (w, failed, _) = break_rule("apply_inconsistent");
    assert!(
        failed.contains("inconsistent result after apply"),
        "{failed}"
    );
    assert!(
        failed.contains(r#"attribute computedValue (Terraform computed_value): planned "planned", but got "applied""#),
        "{failed}"
    );
    let bad = w.outputs("bad");
    assert_eq!(bad["computedValue"], "applied", "recorded as returned");
    assert_recorded_then_destroyed(&w);
}

#[test]
fn a_value_still_unknown_after_apply_is_recorded_and_reported() {
    if !providers_available() {
        return;
    }
    let (w, failed, _) = break_rule("apply_unknown");
    assert!(
        failed.contains("inconsistent result after apply"),
        "{failed}"
    );
    assert!(failed.contains("attribute computedValue"), "{failed}");
    assert!(
        failed.contains("still unknown in the new state"),
        "{failed}"
    );
    assert_recorded_then_destroyed(&w);
}

#[test]
fn an_apply_error_that_returns_the_object_keeps_track_of_it() {
    if !providers_available() {
        return;
    }
    let (w, failed, _) = break_rule("apply_error_with_state");
    assert!(
        failed.contains("simulated failure after create"),
        "{failed}"
    );
    assert_eq!(w.object("bad").unwrap()["rule"], "apply_error_with_state");
    assert_recorded_then_destroyed(&w);
}

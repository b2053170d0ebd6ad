//! Outputs a provider reads in a newer form (`DiffResponse::
//! upgraded_outputs`: a Terraform provider's state after
//! UpgradeResourceState, seed 004's Upgraded State). When the diff finds
//! no change, the Same step records them and hands them to the program;
//! a preview hands them over too but records nothing; with a change, the
//! update's result is recorded as always.

use converge_engine::StepOp;
use converge_model::PropertyMap;
use converge_plugin::{DiffChanges, DiffResponse};
use converge_state::journal::JournalEntryKind;
use converge_testkit::{custom, program, register_stack, MockProvider, TestProgram};

use super::*;

/// stack + Thing `a` with input `v`; the program logs the `text` output
/// it gets back.
fn one(v: &'static str, seen: &Log) -> TestProgram {
    let seen = seen.clone();
    program(move |m| {
        let seen = seen.clone();
        async move {
            let stack = register_stack(&m).await?;
            let a = reg(&m, &stack, custom(T, "a", inputs(&[("v", v)]))).await?;
            seen.lock()
                .unwrap()
                .push(format!("{:?}", a.outputs.get("text")));
            Ok(())
        }
    })
}

/// The newer form of recorded outputs: `v` is now `text`, and a schema
/// version says so.
fn upgrade(old: &PropertyMap) -> PropertyMap {
    let mut up = old.clone();
    if let Some(v) = up.remove("v") {
        up.insert("text".into(), v);
    }
    up.insert("schema".into(), s("2"));
    up
}

/// A provider whose Diff upgrades the old outputs and compares inputs.
fn upgrading() -> MockProvider {
    provider().on_diff(|req| {
        let upgraded_outputs = Some(upgrade(&req.old_outputs));
        Ok(if req.old_inputs == req.new_inputs {
            DiffResponse {
                changes: DiffChanges::None,
                upgraded_outputs,
                ..DiffResponse::default()
            }
        } else {
            DiffResponse {
                changes: DiffChanges::Some,
                changed_keys: vec!["v".into()],
                upgraded_outputs,
                ..DiffResponse::default()
            }
        })
    })
}

fn upgraded_one() -> PropertyMap {
    [("text".to_owned(), s("1")), ("schema".to_owned(), s("2"))].into()
}

/// The Success entry of the Same step for `a`.
fn same_entry(r: &OperationResult) -> converge_state::journal::JournalEntry {
    r.journal
        .iter()
        .find(|e| {
            e.kind == JournalEntryKind::Success
                && e.state.as_ref().is_some_and(|st| st.urn.name() == "a")
        })
        .cloned()
        .expect("a Success entry for a")
}

#[tokio::test]
async fn no_change_records_the_upgraded_outputs_and_the_program_gets_them() {
    let seen = log();
    let (mut w, cloud) = world(upgrading());
    expect_ok(&w.up(&one("1", &seen)).await);
    assert_eq!(w.resource("a").unwrap().outputs.get("v"), Some(&s("1")));

    let r = w.up(&one("1", &seen)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert_eq!(w.resource("a").unwrap().outputs, upgraded_one());
    // A changed state is a write, not elided.
    assert!(!same_entry(&r).elide_write);
    assert_eq!(
        entries(&seen),
        vec!["None".to_owned(), format!("{:?}", Some(s("1")))]
    );
    assert_eq!(cloud.counts().updates, 0, "nothing was applied");

    // Already in the newer form: the same again, nothing to write, and
    // the journal carries the base state over by index (a compact entry).
    let base_index = w
        .snapshot
        .resources
        .iter()
        .position(|r| r.urn.name() == "a");
    let r = w.up(&one("1", &seen)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert_eq!(w.resource("a").unwrap().outputs, upgraded_one());
    let compact = r
        .journal
        .iter()
        .find(|e| e.same_old.is_some() && e.same_old == base_index)
        .expect("a compact Same entry for a");
    assert!(compact.elide_write && compact.state.is_none());
}

#[tokio::test]
async fn a_preview_hands_them_to_the_program_and_records_nothing() {
    let seen = log();
    let (mut w, _cloud) = world(upgrading());
    expect_ok(&w.up(&one("1", &seen)).await);
    let before = w.snapshot.clone();

    let r = w.preview(&one("1", &seen)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert_eq!(entries(&seen).last(), Some(&format!("{:?}", Some(s("1")))));
    assert_eq!(w.snapshot, before);
}

#[tokio::test]
async fn with_a_change_the_update_result_is_recorded() {
    let seen = log();
    let (mut w, cloud) = world(upgrading());
    expect_ok(&w.up(&one("1", &seen)).await);

    let r = w.up(&one("2", &seen)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(cloud.counts().updates, 1);
    let outputs = &w.resource("a").unwrap().outputs;
    assert_eq!(outputs.get("v"), Some(&s("2")));
    assert_eq!(outputs.get("schema"), None);
}

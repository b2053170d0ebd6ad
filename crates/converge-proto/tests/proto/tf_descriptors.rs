//! The tfplugin6 compatibility test: every message, field, enum value,
//! service and method of our `proto/tfplugin6/tfplugin6.proto` must match
//! the descriptor that PyPI's `tf` framework (1.2.0) ships as
//! `tf/gen/tfplugin.proto`, exactly, and the other way round (names,
//! numbers, types, type names, labels, oneofs, proto3 `optional`, map
//! entries, reserved numbers and names, streaming flags).
//!
//! The `tf` schema is read by `tests/tf_descriptors.py` with the Python
//! interpreter named by `CONVERGE_TEST_TF_PYTHON` (`scripts/test` sets it to
//! a virtualenv with the pinned `tf` wheel). Only the file's name differs:
//! theirs is renamed to ours before comparing. Not compared: comments and
//! file options such as `go_package`.

use crate::common;

use common::flatten::{compare, our_schema, Flat};
use serde_json::Value;

const OUR_FILE: &str = "tfplugin6/tfplugin6.proto";
const THEIR_FILE: &str = "tf/gen/tfplugin.proto";

#[test]
fn our_tfplugin6_matches_the_tf_framework() {
    let Some(theirs) = tf_schema() else { return };
    let ours = our_schema(|file| file == OUR_FILE);
    assert!(
        ours.len() > 200,
        "our tfplugin6 schema looks empty: {} elements",
        ours.len()
    );
    let theirs = renamed(theirs);

    let (mut problems, left_out) = compare(&ours, &theirs);
    problems.extend(
        left_out
            .iter()
            .map(|key| format!("{key}: the tf framework has it, we do not")),
    );
    println!(
        "compared {} elements of ours with {} of the tf framework",
        ours.len(),
        theirs.len()
    );
    assert!(
        problems.is_empty(),
        "{} difference(s) from the tf framework (theirs):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// `theirs` with their file's name replaced by ours, in keys and facts.
fn renamed(theirs: Flat) -> Flat {
    theirs
        .into_iter()
        .map(|(key, mut facts)| {
            let key = match key.strip_prefix("file ") {
                Some(THEIR_FILE) => format!("file {OUR_FILE}"),
                _ => key,
            };
            if let Some(file) = facts.get_mut("file") {
                if file == THEIR_FILE {
                    *file = Value::from(OUR_FILE);
                }
            }
            (key, facts)
        })
        .collect()
}

/// The `tf` framework's flattened schema, or `None` when no interpreter is
/// configured outside CI.
fn tf_schema() -> Option<Flat> {
    let python = common::test_python(&common::TF_PYTHON, "the tfplugin6 schema")?;
    let stdout = common::run_script(&python, "tf_descriptors.py", &[]);
    Some(serde_json::from_slice(&stdout).expect("the script prints a JSON object"))
}

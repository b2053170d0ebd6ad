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

use common::flatten::{assert_file_matches, Flat};

const OUR_FILE: &str = "tfplugin6/tfplugin6.proto";
const THEIR_FILE: &str = "tf/gen/tfplugin.proto";

#[test]
fn our_tfplugin6_matches_the_tf_framework() {
    let Some(theirs) = tf_schema() else { return };
    assert_file_matches(OUR_FILE, THEIR_FILE, theirs, "the tf framework");
}

/// The `tf` framework's flattened schema, or `None` when no interpreter is
/// configured outside CI.
fn tf_schema() -> Option<Flat> {
    let python = common::test_python(&common::TF_PYTHON, "the tfplugin6 schema")?;
    let stdout = common::run_script(&python, "tf_descriptors.py", &[]);
    Some(serde_json::from_slice(&stdout).expect("the script prints a JSON object"))
}

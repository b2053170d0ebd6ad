//! The tfplugin5 compatibility test: every message, field, enum value,
//! service and method of our `proto/tfplugin5/tfplugin5.proto` must match
//! the protocol 5.5 descriptor that PyPI's `tfplugin-proto-all` (0.1.0)
//! ships as `tfplugin5_5.proto`, exactly, and the other way round (names,
//! numbers, types, type names, labels, oneofs, proto3 `optional`, map
//! entries, reserved numbers and names, streaming flags).
//!
//! Read by `tests/tfplugin5_descriptors.py` with the interpreter named by
//! `CONVERGE_TEST_TF_PYTHON` (`scripts/lib/tf-venv.sh` installs the pinned
//! wheel beside `tf`). Only the file's name differs: theirs is renamed to
//! ours before comparing. Not compared: comments and file options.

use crate::common;

use common::flatten::{assert_file_matches, Flat};

const OUR_FILE: &str = "tfplugin5/tfplugin5.proto";
const THEIR_FILE: &str = "tfplugin5_5.proto";

#[test]
fn our_tfplugin5_matches_protocol_5_5() {
    let Some(theirs) = schema() else { return };
    assert_file_matches(OUR_FILE, THEIR_FILE, theirs, "protocol 5.5");
}

/// The flattened protocol 5.5 schema, or `None` when no interpreter is
/// configured outside CI.
fn schema() -> Option<Flat> {
    let python = common::test_python(&common::TF_PYTHON, "the tfplugin5 schema")?;
    let stdout = common::run_script(&python, "tfplugin5_descriptors.py", &[]);
    Some(serde_json::from_slice(&stdout).expect("the script prints a JSON object"))
}

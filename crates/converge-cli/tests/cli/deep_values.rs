//! Values nested a thousand levels deep, end to end: a Python program
//! (the published SDK) asks the test plugin, a real provider process, for
//! a resource whose answer holds objects nested 1,000 levels deep; the
//! value crosses gRPC twice (provider to engine, engine to program), is
//! written to the checkpoint, and the next commands read it back. An
//! answer nested past the gRPC limit (10,000 levels of messages, as
//! Pulumi) fails with an error naming the limit and leaves the state as
//! it was.

use crate::common;
use crate::common::python::{venv, PythonWorld as World};

/// The Python SDK's own limits are lower than Pulumi's engine's: its
/// protobuf runtime (upb) decodes 100 levels of messages unless told to
/// allow more, and Python recurses once per level when it deserializes a
/// value. A program that receives deep values raises both, as it would
/// with Pulumi.
const PROGRAM: &str = r#"
import sys
sys.setrecursionlimit(100_000)
from google._upb import _message
_message.SetAllowOversizeProtos(True)

import pulumi

config = pulumi.Config()

def deep(name, levels):
    return pulumi.CustomResource("convergetest:index:Thing", name,
                                 {"value": name, "nest": levels, "nested": None})

def bottom(value):
    levels = 0
    while isinstance(value, dict):
        value = value["level"]
        levels += 1
    return f"{levels} levels, then {value}"

thing = deep("deep", config.require_int("levels"))
pulumi.export("reached", thing.nested.apply(bottom))
extra = config.get_int("extra")
if extra is not None:
    deep("deeper", extra)
"#;

/// How many levels deep `value` nests objects under the key `level`.
fn levels_of(mut value: &serde_json::Value) -> usize {
    let mut levels = 0;
    while let Some(inner) = value.get("level") {
        value = inner;
        levels += 1;
    }
    levels
}

/// The JSON of a `stack export`, read without serde_json's recursion limit
/// (on a thread with room for it).
fn export_of(text: String) -> serde_json::Value {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut de = serde_json::Deserializer::from_str(&text);
            de.disable_recursion_limit();
            let value: serde_json::Value = serde::Deserialize::deserialize(&mut de).unwrap();
            value
        })
        .unwrap()
        .join()
        .unwrap()
}

/// Drops `value` on a thread with room for its depth.
fn drop_deep(value: serde_json::Value) {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || drop(value))
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_provider_answer_nested_a_thousand_levels_deep_is_deployed_and_read_back() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PROGRAM);
    let bin = common::convergetest_bin_dir(w.scratch.dir.path());
    let run = |args: &[&str]| common::stdout_of(w.scratch.with_test_plugin(&bin), args);
    let fails = |args: &[&str]| common::failure_of(w.scratch.with_test_plugin(&bin), args);

    run(&["config", "set", "levels", "1000"]);
    let up = run(&["up", "--yes"]);
    assert!(up.contains("+ 2 created"), "{up}");
    assert_eq!(
        run(&["stack", "output", "reached"]).trim(),
        "1000 levels, then bottom"
    );

    // The next commands read the checkpoint back.
    let export = run(&["stack", "export"]);
    let state = export_of(export.clone());
    let resources = state["deployment"]["resources"].as_array().unwrap();
    let thing = resources
        .iter()
        .find(|r| r["type"] == "convergetest:index:Thing")
        .unwrap();
    assert_eq!(levels_of(&thing["outputs"]["nested"]), 1_000);
    drop_deep(state);
    let preview = run(&["preview"]);
    assert!(preview.contains("2 unchanged"), "{preview}");
    let refresh = run(&["refresh", "--yes"]);
    // The stack counts, as in Pulumi's refresh.
    assert!(refresh.contains("2 unchanged"), "{refresh}");
    let again = run(&["up", "--yes"]);
    assert!(again.contains("2 unchanged"), "{again}");

    // An answer costs three levels of messages per level of objects:
    // 3,340 levels are past 10,000. The update fails naming the limit,
    // and the stack's resources are as they were.
    let resources = |export: String| {
        let state = export_of(export);
        let resources = state["deployment"]["resources"].to_string();
        drop_deep(state);
        resources
    };
    let before = resources(run(&["stack", "export"]));
    run(&["config", "set", "extra", "3340"]);
    let failed = fails(&["up", "--yes", "--skip-preview"]);
    assert!(
        failed.contains("create of urn:pulumi:dev::pyproj::convergetest:index:Thing::deeper")
            && failed.contains("decodes at most 10000 levels"),
        "{failed}"
    );
    assert_eq!(resources(run(&["stack", "export"])), before);

    run(&["config", "rm", "extra"]);
    let preview = run(&["preview"]);
    assert!(preview.contains("2 unchanged"), "{preview}");
}

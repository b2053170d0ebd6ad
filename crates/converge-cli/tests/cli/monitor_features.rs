//! The monitor features the SDKs ask for beyond the basics, end to end
//! with the published Python and Node.js SDKs and the test plugin: what
//! each feature changes in what the SDK sends, handled by `converge`.

use std::ffi::OsString;
use std::path::Path;

use crate::common;

use common::nodejs::{node_modules, NodeWorld};
use common::python::{venv, PythonWorld};

/// Runs `converge args…` in a Python world with `env` (the test plugin
/// on PATH and its cloud); its stdout.
fn run_python(w: &PythonWorld, env: &[(OsString, OsString)], args: &[&str]) -> String {
    let mut cmd = w.scratch.command("pw");
    cmd.envs(env.iter().cloned());
    common::stdout_of(cmd, args)
}

/// The test plugin on PATH and its cloud in `dir` (call once per world:
/// it makes the plugin's directory).
fn plugin_env(dir: &Path) -> Vec<(OsString, OsString)> {
    let bin = common::convergetest_bin_dir(dir);
    vec![
        ("PATH".into(), common::path_with(&bin)),
        (
            "CONVERGE_TEST_CLOUD_FILE".into(),
            dir.join("cloud.json").into(),
        ),
    ]
}

fn node_world(program: &str) -> Option<NodeWorld> {
    let modules = node_modules()?;
    let mut w = NodeWorld::new(&modules, program);
    w.env = plugin_env(w.scratch.dir.path());
    Some(w)
}

/// What the program's invoke saw, one line per run of it (the program
/// appends the count of cloud objects to `invoked.txt`).
fn invoked(project: &Path) -> String {
    std::fs::read_to_string(project.join("invoked.txt")).unwrap_or_default()
}

const INVOKE_DEPENDS_ON_PY: &str = r#"
import pulumi

a = pulumi.CustomResource("convergetest:index:Thing", "a", {"value": "x", "length": None})
count = pulumi.runtime.invoke_output(
    "convergetest:index:count", {}, opts=pulumi.InvokeOutputOptions(depends_on=[a]))

def seen(r):
    with open("invoked.txt", "a") as f:
        f.write(f"{int(r['count'])}\n")
    return r["count"]

pulumi.export("count", count.apply(seen))
"#;

const INVOKE_DEPENDS_ON_JS: &str = r#"
const fs = require("fs");
const pulumi = require("@pulumi/pulumi");

const a = new pulumi.CustomResource("convergetest:index:Thing", "a", { value: "x", length: undefined });
const count = pulumi.runtime.invokeOutput("convergetest:index:count", {}, { dependsOn: [a] });
exports.count = count.apply(r => {
    fs.appendFileSync("invoked.txt", `${r.count}\n`);
    return r.count;
});
"#;

/// `invokeDependsOn`: the SDK sends an output-form invoke's `dependsOn`
/// and lets the engine gate it. A preview of a new stack does not run the
/// invoke (its dependency is still to be created: the result is
/// unknown); the update runs it once the dependency exists; a later
/// preview, with the dependency there, runs it.
fn check_invoke_depends_on(project: &Path, run: &dyn Fn(&[&str]) -> String) {
    run(&["preview"]);
    assert_eq!(invoked(project), "", "a preview ran the invoke too early");
    run(&["up", "--yes", "--skip-preview"]);
    assert_eq!(invoked(project), "1\n");
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["count"], 1.0, "{outputs}");
    run(&["preview"]);
    assert_eq!(invoked(project), "1\n1\n");
}

#[test]
fn python_invoke_depends_on_waits_for_creation() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, INVOKE_DEPENDS_ON_PY);
    let env = plugin_env(w.scratch.dir.path());
    check_invoke_depends_on(&w.scratch.project, &|args| run_python(&w, &env, args));
}

#[test]
fn nodejs_invoke_depends_on_waits_for_creation() {
    let Some(w) = node_world(INVOKE_DEPENDS_ON_JS) else {
        return;
    };
    check_invoke_depends_on(&w.scratch.project, &|args| w.run(args));
}

const FEATURES_PY: &str = r#"
import pulumi
from pulumi.runtime.proto import resource_pb2
from pulumi.runtime.settings import monitor_supports_feature

names = ["SECRETS", "RESOURCE_REFERENCES", "OUTPUT_VALUES", "ALIAS_SPECS", "DELETED_WITH",
         "REPLACE_WITH", "REPLACEMENT_TRIGGER", "TRANSFORMS", "INVOKE_TRANSFORMS",
         "RESOURCE_HOOKS", "ERROR_HOOKS", "SENDS_OPTIONS_TO_HOOKS", "INVOKE_DEPENDS_ON",
         "INVOKE_PARENT", "INVOKE_OUTPUT_VALUES", "CALL_OUTPUT_VALUES", "BYTE_STRING",
         "STATE_MIGRATIONS", "PARAMETERIZATION"]
for name in names:
    feature = getattr(resource_pb2, f"RESOURCE_MONITOR_FEATURE_{name}")
    pulumi.export(name, monitor_supports_feature(feature))
"#;

/// What the published Python SDK learns from `GetDeploymentInfo`: every
/// feature Converge implements, and not the one it does not
/// (`byteString`, which no published SDK uses yet).
#[test]
fn the_python_sdk_sees_the_features_converge_implements() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, FEATURES_PY);
    w.run(&["up", "--yes", "--skip-preview"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    for (name, supported) in outputs.as_object().unwrap() {
        let want = name != "BYTE_STRING";
        assert_eq!(supported, want, "{name}: {outputs}");
    }
    assert_eq!(outputs.as_object().unwrap().len(), 19, "{outputs}");
}

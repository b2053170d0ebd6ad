//! Provider configuration over gRPC, end to end with the published Python
//! and Node.js SDKs and the test plugin, which logs what its `CheckConfig`
//! and `Configure` received (secrets redacted): an explicit provider's
//! inputs arrive as the program gave them — nested objects and lists as
//! such — in `CheckConfig`'s news and `Configure`'s args (secrets as
//! secrets there, once the plugin has said it takes them), with `Configure`'s variables holding each as text (JSON for
//! anything but a string); a default provider gets the stack's
//! configuration for its package as Pulumi sends it: strings, secrets as
//! secrets, structured values as their JSON text. No secret is written in
//! plaintext to the state.

use std::path::Path;

use serde_json::{json, Value};

use crate::common;

use common::nodejs::{node_modules, NodeWorld};
use common::python::{venv, PythonWorld};

const PROGRAM_PY: &str = r#"
import pulumi

explicit = pulumi.ProviderResource("convergetest", "explicit", {
    "nested": {"a": {"b": "c"}, "list": [1, "two"]},
    "token": pulumi.Output.secret("s3cret-token"),
})
pulumi.CustomResource("convergetest:index:Thing", "viaExplicit", {"value": "e", "length": None},
                      opts=pulumi.ResourceOptions(provider=explicit))
pulumi.CustomResource("convergetest:index:Thing", "viaDefault", {"value": "d", "length": None})
"#;

const PROGRAM_JS: &str = r#"
const pulumi = require("@pulumi/pulumi");

const explicit = new pulumi.ProviderResource("convergetest", "explicit", {
    nested: { a: { b: "c" }, list: [1, "two"] },
    token: pulumi.secret("s3cret-token"),
});
new pulumi.CustomResource("convergetest:index:Thing", "viaExplicit", { value: "e", length: undefined },
                          { provider: explicit });
new pulumi.CustomResource("convergetest:index:Thing", "viaDefault", { value: "d", length: undefined });
"#;

/// The plugin's log entries of `kind` (`checkConfig`, `configureArgs`),
/// parsed.
fn entries(cloud_file: &Path, kind: &str) -> Vec<Value> {
    let cloud: Value = serde_json::from_str(&std::fs::read_to_string(cloud_file).unwrap()).unwrap();
    cloud["log"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str()?.strip_prefix(&format!("{kind} ")))
        .map(|j| serde_json::from_str(j).unwrap())
        .collect()
}

/// The entry of `kind` that has `key` (in `args` for `configureArgs`).
fn entry_with(cloud_file: &Path, kind: &str, key: &str) -> Value {
    let all = entries(cloud_file, kind);
    all.iter()
        .find(|e| {
            let inputs = if kind == "configureArgs" {
                &e["args"]
            } else {
                e
            };
            inputs.get(key).is_some()
        })
        .unwrap_or_else(|| panic!("no {kind} with {key}: {all:#?}"))
        .clone()
}

fn check(cloud_file: &Path, run: &dyn Fn(&[&str]) -> String) {
    run(&["config", "set", "convergetest:plain", "v"]);
    run(&[
        "config",
        "set",
        "--secret",
        "convergetest:password",
        "hunter2-pw",
    ]);
    run(&["config", "set", "--path", "convergetest:obj.inner", "x"]);
    run(&["up", "--yes", "--skip-preview"]);

    let secret = json!({"secret": "[redacted]"});
    let nested = json!({"a": {"b": "c"}, "list": [1.0, "two"]});

    // The explicit provider: its inputs as the program gave them.
    let checked = entry_with(cloud_file, "checkConfig", "nested");
    assert_eq!(checked["nested"], nested, "{checked:#}");
    // Before `Configure` the plugin has not said it takes secrets: the
    // value arrives, its secretness kept by the engine.
    assert!(checked.get("token").is_some(), "{checked:#}");
    let configured = entry_with(cloud_file, "configureArgs", "nested");
    assert_eq!(configured["args"]["nested"], nested, "{configured:#}");
    assert_eq!(configured["args"]["token"], secret, "{configured:#}");
    let vars = &configured["variables"];
    let text: Value =
        serde_json::from_str(vars["convergetest:config:nested"].as_str().unwrap()).unwrap();
    assert_eq!(
        text,
        json!({"a": {"b": "c"}, "list": [1, "two"]}),
        "{vars:#}"
    );
    assert_eq!(vars["convergetest:config:token"], "[redacted]", "{vars:#}");

    // The default provider: the stack's configuration for its package.
    let checked = entry_with(cloud_file, "checkConfig", "plain");
    assert_eq!(checked["plain"], "v", "{checked:#}");
    assert!(checked.get("password").is_some(), "{checked:#}");
    let obj: Value = serde_json::from_str(checked["obj"].as_str().unwrap()).unwrap();
    assert_eq!(obj, json!({"inner": "x"}), "{checked:#}");
    let configured = entry_with(cloud_file, "configureArgs", "plain");
    assert_eq!(configured["args"]["password"], secret, "{configured:#}");
    assert_eq!(configured["variables"]["convergetest:config:plain"], "v");

    // Neither secret is in the state in plaintext.
    let export = run(&["stack", "export"]);
    assert!(!export.contains("s3cret-token") && !export.contains("hunter2-pw"));
}

#[test]
fn python_provider_configuration_reaches_check_config_and_configure() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, PROGRAM_PY);
    let env = common::ConvergetestCloud::new(&w.scratch).env();
    let cloud_file = w.scratch.dir.path().join("cloud.json");
    check(&cloud_file, &|args| {
        let mut cmd = w.scratch.command("pw");
        cmd.envs(env.iter().cloned());
        common::stdout_of(cmd, args)
    });
}

#[test]
fn nodejs_provider_configuration_reaches_check_config_and_configure() {
    let Some(modules) = node_modules() else {
        return;
    };
    let mut w = NodeWorld::new(&modules, PROGRAM_JS);
    w.env = common::ConvergetestCloud::new(&w.scratch).env();
    let cloud_file = w.scratch.dir.path().join("cloud.json");
    check(&cloud_file, &|args| w.run(args));
}

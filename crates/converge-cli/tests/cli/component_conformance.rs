//! Pulumi's conformance areas for components and provider functions, end
//! to end with the published Python and Node.js SDKs and the test plugin:
//! a method (`Call`) on a remote component built by an explicit provider
//! runs on that provider; a component's inputs and outputs may hold
//! resource references to another component, and its inputs' property
//! dependencies are recorded as the SDK reports them; a remote component
//! may return a reference to a resource it registered.

use crate::common;

use common::nodejs::{node_modules, NodeWorld};
use common::python::{venv, PythonWorld};

const PROGRAM_PY: &str = r#"
import pulumi

class Remote(pulumi.ComponentResource):
    def __init__(self, name, value, opts=None):
        props = {"value": value, "childId": None, "childLength": None}
        super().__init__("convergetest:index:Component", name, props, opts, remote=True)

    def describe(self, greeting):
        return pulumi.runtime.call("convergetest:index:Component/describe",
                                   {"__self__": self, "greeting": greeting}, self)

class Local(pulumi.ComponentResource):
    def __init__(self, name, source, other, opts=None):
        super().__init__("compat:index:Local", name, {"source": source, "other": other}, opts)
        self.register_outputs({"source": source, "other": other})

explicit = pulumi.ProviderResource("convergetest", "explicit", {})
thing = pulumi.CustomResource("convergetest:index:Thing", "thing", {"value": "x", "length": None},
                              opts=pulumi.ResourceOptions(provider=explicit))
comp = Remote("comp", thing.value, pulumi.ResourceOptions(provider=explicit))
local = Local("local", thing.length, comp)
pulumi.export("description", comp.describe("Hi").apply(lambda r: r["description"]))
pulumi.export("thing", thing)
pulumi.export("comp", comp)
"#;

const PROGRAM_JS: &str = r#"
const pulumi = require("@pulumi/pulumi");

class Remote extends pulumi.ComponentResource {
    constructor(name, value, opts) {
        super("convergetest:index:Component", name,
              { value, childId: undefined, childLength: undefined }, opts, true);
    }
    describe(greeting) {
        return pulumi.runtime.call("convergetest:index:Component/describe",
                                   { __self__: this, greeting }, this);
    }
}

class Local extends pulumi.ComponentResource {
    constructor(name, source, other, opts) {
        super("compat:index:Local", name, { source, other }, opts);
        this.registerOutputs({ source, other });
    }
}

const explicit = new pulumi.ProviderResource("convergetest", "explicit", {});
const thing = new pulumi.CustomResource("convergetest:index:Thing", "thing",
    { value: "x", length: undefined }, { provider: explicit });
const comp = new Remote("comp", thing.value, { provider: explicit });
const local = new Local("local", thing.length, comp);
exports.description = comp.describe("Hi").apply(r => r.description);
exports.thing = thing;
exports.comp = comp;
"#;

/// The state's resources, from `stack export`.
fn resources(export: &str) -> Vec<serde_json::Value> {
    let state: serde_json::Value = serde_json::from_str(export).unwrap();
    state["deployment"]["resources"].as_array().unwrap().clone()
}

fn find<'a>(resources: &'a [serde_json::Value], suffix: &str) -> &'a serde_json::Value {
    resources
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(suffix))
        .unwrap_or_else(|| panic!("no resource …{suffix} in {resources:#?}"))
}

/// A resource reference as the state holds it: Pulumi's signature, the
/// URN (and the ID of a custom resource).
fn reference_urn(value: &serde_json::Value) -> &str {
    assert_eq!(
        value["4dabf18193072939515e22adb298388d"], "5cf8f73096256a8f31e491e813e4eb8e",
        "not a resource reference: {value}"
    );
    value["urn"].as_str().unwrap()
}

fn check(run: &dyn Fn(&[&str]) -> String) {
    run(&["up", "--yes", "--skip-preview"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    // The method ran on the explicit provider's plugin.
    assert_eq!(outputs["description"], "Hi, comp!", "{outputs}");
    let resources = resources(&run(&["stack", "export"]));
    assert!(
        !resources.iter().any(|r| r["urn"]
            .as_str()
            .unwrap()
            .contains("pulumi:providers:convergetest::default")),
        "nothing needed a default provider: {resources:#?}"
    );
    let thing = find(&resources, "::thing")["urn"]
        .as_str()
        .unwrap()
        .to_owned();
    let comp = find(&resources, "convergetest:index:Component::comp")["urn"]
        .as_str()
        .unwrap()
        .to_owned();
    let local = find(&resources, "compat:index:Local::local");
    // The component's inputs' dependencies, as the SDK reported them.
    assert_eq!(
        local["propertyDependencies"]["source"],
        serde_json::json!([thing]),
        "{local:#}"
    );
    assert_eq!(
        local["propertyDependencies"]["other"],
        serde_json::json!([comp]),
        "{local:#}"
    );
    // Its inputs and outputs keep the reference to the other component.
    assert_eq!(reference_urn(&local["inputs"]["other"]), comp);
    assert_eq!(reference_urn(&local["outputs"]["other"]), comp);
    // The stack's outputs hold a program resource and a component as the
    // SDK exports them (their outputs, with their URN).
    let stack = resources
        .iter()
        .find(|r| r["type"] == "pulumi:pulumi:Stack")
        .unwrap();
    assert_eq!(stack["outputs"]["thing"]["urn"], thing.as_str());
    assert_eq!(stack["outputs"]["thing"]["value"], "x");
    assert_eq!(stack["outputs"]["comp"]["urn"], comp.as_str());
    // Nothing changes on a second run.
    let again = run(&["up", "--yes", "--skip-preview"]);
    assert!(
        !again.contains("updated") && !again.contains("created"),
        "{again}"
    );
}

#[test]
fn python_components_reference_resources_and_call_on_explicit_providers() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, PROGRAM_PY);
    let env = common::ConvergetestCloud::new(&w.scratch).env();
    check(&|args| {
        let mut cmd = w.scratch.command("pw");
        cmd.envs(env.iter().cloned());
        common::stdout_of(cmd, args)
    });
}

#[test]
fn nodejs_components_reference_resources_and_call_on_explicit_providers() {
    let Some(modules) = node_modules() else {
        return;
    };
    let mut w = NodeWorld::new(&modules, PROGRAM_JS);
    w.env = common::ConvergetestCloud::new(&w.scratch).env();
    check(&|args| w.run(args));
}

/// A remote component whose `Construct` returns a resource reference to a
/// resource it registered: the SDK rebuilds the resource from the
/// reference (its type's resource module, then `getResource` for its
/// outputs), and the component's state keeps the reference.
const CHILD_REF_PY: &str = r#"
import pulumi

class Thing(pulumi.CustomResource):
    value: pulumi.Output[str]

    def __init__(self, name, opts=None):
        super().__init__("convergetest:index:Thing", name, {"value": None, "length": None}, opts)

class Module(pulumi.runtime.ResourceModule):
    def version(self):
        return None

    def construct(self, name, typ, urn):
        return Thing(name, pulumi.ResourceOptions(urn=urn))

pulumi.runtime.register_resource_module("convergetest", "index", Module())

class Remote(pulumi.ComponentResource):
    child: pulumi.Output[Thing]

    def __init__(self, name, value, opts=None):
        props = {"value": value, "childRef": True, "child": None, "childId": None,
                 "childLength": None}
        super().__init__("convergetest:index:Component", name, props, opts, remote=True)

comp = Remote("comp", "hello")
pulumi.export("childIsThing", comp.child.apply(lambda c: isinstance(c, Thing)))
pulumi.export("childUrn", comp.child.apply(lambda c: c.urn))
pulumi.export("childValue", comp.child.apply(lambda c: c.value))
"#;

#[test]
fn python_a_remote_component_returns_a_reference_to_its_child() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, CHILD_REF_PY);
    let env = common::ConvergetestCloud::new(&w.scratch).env();
    let run = |args: &[&str]| {
        let mut cmd = w.scratch.command("pw");
        cmd.envs(env.iter().cloned());
        common::stdout_of(cmd, args)
    };
    run(&["up", "--yes", "--skip-preview"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    let resources = resources(&run(&["stack", "export"]));
    let child = find(&resources, "convergetest:index:Thing::comp-child");
    assert_eq!(outputs["childIsThing"], true, "{outputs}");
    assert_eq!(outputs["childUrn"], child["urn"], "{outputs}");
    assert_eq!(outputs["childValue"], "hello", "{outputs}");
    let comp = find(&resources, "convergetest:index:Component::comp");
    assert_eq!(
        reference_urn(&comp["outputs"]["child"]),
        child["urn"].as_str().unwrap()
    );
    let again = run(&["up", "--yes", "--skip-preview"]);
    assert!(
        !again.contains("updated") && !again.contains("created"),
        "{again}"
    );
}

//! The invoke and call features of the monitor protocol that the
//! published SDKs ask for but do not send yet, end to end: `invokeParent`,
//! `invokeOutputValues` and `callOutputValues`, through `converge` and the
//! test plugin's real processes.
//!
//! The published Python SDK asks the monitor whether these features are
//! supported, but its high-level API (`pulumi.runtime.invoke`,
//! `pulumi.runtime.call`) does not send a parent, output values or
//! `accept_output_values` yet. So each program speaks through the SDK's
//! own monitor connection (`pulumi.runtime.settings.get_monitor()`) and
//! its generated stubs (`resource_pb2.ResourceInvokeRequest`,
//! `ResourceCallRequest`), building the requests as a newer SDK would,
//! and records what came back in `wire.json` for the test to check.

use crate::common;

/// What every program shares: the monitor, requests run off the event
/// loop as the SDK runs its own, output values on the wire, and
/// `record`, which writes what `main()` returns to `wire.json`.
const PRELUDE_PY: &str = r#"
import asyncio
import json

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import settings
from pulumi.runtime.proto import resource_pb2

SIGNATURE = "4dabf18193072939515e22adb298388d"


def output_value(value, dependencies):
    return {SIGNATURE: "d0e6a833031e9bbcd3f4e8bde6ca49a4", "value": value,
            "dependencies": dependencies}


def resource_reference(urn):
    return {SIGNATURE: "5cf8f73096256a8f31e491e813e4eb8e", "urn": urn}


def struct(fields):
    s = struct_pb2.Struct()
    s.update(fields)
    return s


def plain(s):
    return json_format.MessageToDict(s)


async def rpc(method, request):
    monitor = settings.get_monitor()
    return await asyncio.get_running_loop().run_in_executor(
        None, lambda: getattr(monitor, method)(request))


def record(main):
    async def run():
        got = await main()
        with open("wire.json", "w") as f:
            json.dump(got, f)
        return "recorded"
    pulumi.export("recorded", pulumi.Output.from_input(run()))
"#;

/// A Python project running `PRELUDE_PY` + `program`, with the test
/// plugin at versions 1.0.0 and 2.0.0.
struct World(common::python::TwoPluginVersions);

impl World {
    /// `None` (skip) without the test venv.
    fn new(program: &str) -> Option<World> {
        common::python::TwoPluginVersions::new("wire", &format!("{PRELUDE_PY}\n{program}"))
            .map(World)
    }

    fn run(&self, args: &[&str]) -> String {
        self.0.run(args)
    }

    /// Runs `converge args…` (the program records afresh) and returns what
    /// the program recorded.
    fn recorded(&self, args: &[&str]) -> serde_json::Value {
        let file = self.0.scratch.project.join("wire.json");
        let _ = std::fs::remove_file(&file);
        let out = self.run(args);
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("the program recorded nothing ({e}):\n{out}"));
        serde_json::from_str(&text).unwrap()
    }
}

const INVOKE_PARENT_PY: &str = r#"
p = pulumi.ProviderResource("convergetest", "p", {}, opts=pulumi.ResourceOptions(version="1.0.0"))


class Comp(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("wire:index:Comp", name, {}, opts)
        self.register_outputs({})


comp = Comp("comp", pulumi.ResourceOptions(providers={"convergetest": p}))


async def version_from(parent):
    got = await rpc("Invoke", resource_pb2.ResourceInvokeRequest(
        tok="convergetest:index:count", args=struct({}), parent=parent, acceptResources=True))
    if got.failures:
        raise Exception(f"count failed: {got.failures}")
    return plain(getattr(got, "return"))["version"]


async def main():
    comp_urn = await comp.urn.future()
    # A component under it registered with no providers of its own (the
    # SDK would copy its parent's into the request): the engine must find
    # the provider through the parent chain.
    inner = await rpc("RegisterResource", resource_pb2.RegisterResourceRequest(
        type="wire:index:Inner", name="inner", parent=comp_urn, custom=False,
        object=struct({})))
    return {
        "parented": await version_from(comp_urn),
        "grandchild": await version_from(inner.urn),
        "unparented": await version_from(""),
    }


record(main)
"#;

/// `invokeParent`: an invoke whose `parent` is a component registered
/// with `providers={"convergetest": p}` (p at plugin version 1.0.0) and no
/// `provider` of its own runs on `p`; so does one parented to a component
/// under it that names no provider; one without a parent runs on the
/// default provider (the newest installed plugin, 2.0.0). The count
/// function answers the version of the plugin that served it.
#[test]
fn an_invoke_runs_on_the_provider_its_parent_names() {
    let Some(w) = World::new(INVOKE_PARENT_PY) else {
        return;
    };
    for args in [&["preview"][..], &["up", "--yes", "--skip-preview"]] {
        let got = w.recorded(args);
        assert_eq!(got["parented"], "1.0.0", "{args:?}: {got}");
        assert_eq!(got["grandchild"], "1.0.0", "{args:?}: {got}");
        assert_eq!(got["unparented"], "2.0.0", "{args:?}: {got}");
    }
}

const INVOKE_OUTPUT_VALUES_PY: &str = r#"
t = pulumi.CustomResource("convergetest:index:Thing", "t", {"value": "x", "length": None})


async def invoke(tok, t_urn):
    # `tag` is an output value depending on `t`.
    got = await rpc("Invoke", resource_pb2.ResourceInvokeRequest(
        tok=tok, args=struct({"tag": output_value("hello", [t_urn])}),
        acceptResources=True, accept_output_values=True))
    ret = plain(getattr(got, "return")) if got.HasField("return") else None
    return {"unknown": got.unknown, "return": ret}


async def main():
    t_urn = await t.urn.future()
    try:
        # A function the plugin does not have: asked, it refuses.
        missing = await invoke("convergetest:index:nothing", t_urn)
    except Exception as e:
        missing = {"error": str(e)}
    return {"count": await invoke("convergetest:index:count", t_urn), "missing": missing}


record(main)
"#;

/// `invokeOutputValues`: an invoke whose argument is an output value
/// depending on a Thing the program registered. In the preview of a new
/// stack (the Thing is still to be created) the result is unknown and the
/// provider is not asked: an invoke of a function the plugin does not
/// have comes back unknown too, where asked it would fail. In the update,
/// and in a preview once the Thing exists, the provider gets the plain
/// value (the count function gives its `tag` back) and is asked.
#[test]
fn an_invoke_with_output_values_waits_for_their_dependencies() {
    let Some(w) = World::new(INVOKE_OUTPUT_VALUES_PY) else {
        return;
    };
    let got = w.recorded(&["preview"]);
    assert_eq!(got["count"]["unknown"], true, "{got}");
    assert!(got["count"]["return"].is_null(), "{got}");
    assert_eq!(got["missing"]["unknown"], true, "{got}");

    for args in [&["up", "--yes", "--skip-preview"][..], &["preview"]] {
        let got = w.recorded(args);
        assert_eq!(got["count"]["unknown"], false, "{args:?}: {got}");
        assert_eq!(got["count"]["return"]["tag"], "hello", "{args:?}: {got}");
        let error = got["missing"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("unknown function"), "{args:?}: {got}");
    }
}

const CALL_OUTPUT_VALUES_PY: &str = r#"
class Remote(pulumi.ComponentResource):
    def __init__(self, name, value, opts=None):
        props = {"value": value, "childId": None, "childLength": None}
        super().__init__("convergetest:index:Component", name, props, opts, remote=True)


t = pulumi.CustomResource("convergetest:index:Thing", "t", {"value": "x", "length": None})
comp = Remote("comp", "v")


async def main():
    comp_urn = await comp.urn.future()
    t_urn = await t.urn.future()
    deps = resource_pb2.ResourceCallRequest.ArgumentDependencies
    # `greeting` is an output value depending on `t`; the request's own
    # argument dependencies name only the component, for `__self__`.
    got = await rpc("Call", resource_pb2.ResourceCallRequest(
        tok="convergetest:index:Component/describe",
        args=struct({"__self__": resource_reference(comp_urn),
                     "greeting": output_value("Hi", [t_urn])}),
        argDependencies={"__self__": deps(urns=[comp_urn])}))
    if got.failures:
        raise Exception(f"describe failed: {got.failures}")
    return {"t": t_urn, "comp": comp_urn, "return": plain(getattr(got, "return"))}


record(main)
"#;

/// `callOutputValues`: a call of the test plugin's component method whose
/// argument is an output value depending on a Thing: the provider is told
/// (in `CallRequest.argDependencies`) that the argument depends on the
/// Thing, beside what the request named, and gets the plain value.
#[test]
fn a_calls_output_values_reach_the_provider_as_argument_dependencies() {
    let Some(w) = World::new(CALL_OUTPUT_VALUES_PY) else {
        return;
    };
    let got = w.recorded(&["up", "--yes", "--skip-preview"]);
    let ret = &got["return"];
    assert_eq!(ret["description"], "Hi, comp!", "{got}");
    let told = &ret["argDependencies"];
    assert_eq!(told["greeting"], serde_json::json!([got["t"]]), "{got}");
    assert_eq!(told["__self__"], serde_json::json!([got["comp"]]), "{got}");
}

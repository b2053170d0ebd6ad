//! Pulumi's language-conformance behaviours, end to end with the published
//! Python SDK and real plugin processes: each test is a program the SDK
//! runs through `converge`, and what Pulumi's own tests assert of it.

use crate::common;

/// A Python project with the test plugin at two versions.
type World = common::python::TwoPluginVersions;

fn world(program: &str) -> Option<World> {
    World::new("compat", program)
}

/// The resource named `name` in an exported state.
fn resource<'a>(state: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    state["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
        .unwrap_or_else(|| panic!("no resource {name}"))
}

const TWO_VERSIONS: &str = r#"
import pulumi

p1 = pulumi.ProviderResource("convergetest", "p1", {}, opts=pulumi.ResourceOptions(version="1.0.0"))
p2 = pulumi.ProviderResource("convergetest", "p2", {}, opts=pulumi.ResourceOptions(version="2.0.0"))
a = pulumi.CustomResource("convergetest:index:Thing", "a", {"value": "x", "pluginVersion": None},
                          opts=pulumi.ResourceOptions(provider=p1))
b = pulumi.CustomResource("convergetest:index:Thing", "b", {"value": "y", "pluginVersion": None},
                          opts=pulumi.ResourceOptions(provider=p2))
pulumi.export("a", a.pluginVersion)
pulumi.export("b", b.pluginVersion)
"#;

/// Explicit providers with the `version` option, two versions of one
/// package side by side: each loads its own plugin, whose version the
/// provider's inputs record.
#[test]
fn explicit_providers_of_two_versions_each_load_their_own_plugin() {
    let Some(w) = world(TWO_VERSIONS) else {
        return;
    };
    w.run(&["up", "--yes"]);
    let outputs = w.outputs();
    assert_eq!(outputs["a"], "1.0.0", "{outputs}");
    assert_eq!(outputs["b"], "2.0.0", "{outputs}");
    let state = w.state();
    assert_eq!(resource(&state, "p1")["inputs"]["version"], "1.0.0");
    assert_eq!(resource(&state, "p2")["inputs"]["version"], "2.0.0");
    let again = w.run(&["up", "--yes"]);
    assert!(
        !again.contains("updated") && !again.contains("created"),
        "{again}"
    );
}

const TRANSFORMS: &str = r#"
import pulumi
from pulumi import ResourceOptions, ResourceTransformResult
from pulumi.runtime import register_resource_transform, register_invoke_transform
from pulumi.invoke import InvokeTransformResult


def appending(word):
    def transform(args):
        if args.type_ != "convergetest:index:Thing":
            return None
        props = dict(args.props)
        props["value"] = pulumi.Output.from_input(props["value"]).apply(lambda v: f"{v}+{word}")
        return ResourceTransformResult(props, args.opts)
    return transform


def protecting(args):
    return ResourceTransformResult(args.props, ResourceOptions.merge(args.opts, ResourceOptions(protect=True)))


def tagging(args):
    return InvokeTransformResult({**args.args, "tag": "transformed"}, args.opts)


register_resource_transform(appending("stack"))
register_invoke_transform(tagging)


class Group(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("compat:index:Group", name, {}, opts)
        self.member = pulumi.CustomResource(
            "convergetest:index:Thing", f"{name}-member", {"value": "m", "length": None},
            opts=ResourceOptions(parent=self, transforms=[appending("own")]))
        self.register_outputs({})


group = Group("group", opts=ResourceOptions(transforms=[appending("parent"), protecting]))
plain = pulumi.CustomResource("convergetest:index:Thing", "plain", {"value": "p", "length": None})
count = pulumi.runtime.invoke("convergetest:index:count", {"tag": "original"})
pulumi.export("member", group.member.value)
pulumi.export("plain", plain.value)
pulumi.export("tag", count.value["tag"])
"#;

/// Transforms with the published SDK: a stack transform that changes
/// every resource, a component's transforms (a property and an option)
/// reaching its children, in Pulumi's order — the resource's own, its
/// parent's, the stack's — and an invoke transform that changes an
/// invoke's arguments.
#[test]
fn stack_resource_and_invoke_transforms_run_in_pulumis_order() {
    let Some(w) = world(TRANSFORMS) else {
        return;
    };
    let out = w.run(&["up", "--yes"]);
    let outputs = w.outputs();
    assert_eq!(outputs["member"], "m+own+parent+stack", "{outputs}\n{out}");
    assert_eq!(outputs["plain"], "p+stack", "{outputs}");
    assert_eq!(outputs["tag"], "transformed", "{outputs}");
    let state = w.state();
    assert_eq!(resource(&state, "group-member")["protect"], true);
    assert_eq!(resource(&state, "group")["protect"], true);
    assert!(resource(&state, "plain")["protect"].is_null());
    // Unchanged on the next run: the transforms give the same inputs.
    let again = w.run(&["up", "--yes"]);
    assert!(!again.contains("updated"), "{again}");
}

const CONTINUE_ON_ERROR: &str = r#"
import time
import pulumi

def thing(name, value, **props):
    return pulumi.CustomResource("convergetest:index:Thing", name, {"value": value, "length": None, **props})

def late(length):
    # Registered well after `a` failed.
    time.sleep(1)
    return f"late-{length}"

a = thing("a", "a", fail="create")
b = thing("b", "b")
after = thing("after", b.length.apply(late))
dependent = thing("dependent", a.length.apply(lambda l: f"of-{l}"))
pulumi.export("after", after.length)
"#;

/// `--continue-on-error` with the published SDK: the failed resource's
/// error reaches the program as that resource's failure, independent and
/// later resources are created, what depends on the failed one is
/// skipped, and the update exits non-zero naming each failure.
#[test]
fn continue_on_error_creates_what_does_not_depend_on_a_failure() {
    let Some(w) = world(CONTINUE_ON_ERROR) else {
        return;
    };
    let out = w
        .command()
        .args(["up", "--yes", "--continue-on-error"])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("create failed on purpose"), "{text}");
    assert!(
        text.contains("skipped urn:pulumi:dev::compat::convergetest:index:Thing::dependent"),
        "{text}"
    );
    let state = w.state();
    let names: Vec<&str> = state["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["urn"].as_str().unwrap().rsplit("::").next().unwrap())
        .collect();
    for name in ["b", "after"] {
        assert!(names.contains(&name), "{name} created: {names:?}\n{text}");
    }
    for name in ["a", "dependent"] {
        assert!(!names.contains(&name), "{name} not created: {names:?}");
    }
}

const REPLACEMENT_OPTIONS: &str = r#"
import pulumi
from pulumi.runtime.settings import monitor_supports_feature
from pulumi.runtime.proto import resource_pb2

cfg = pulumi.Config()

def thing(name, value, opts=None):
    return pulumi.CustomResource("convergetest:index:Thing", name, {"value": value}, opts=opts)

a = thing("a", "a", pulumi.ResourceOptions(
    replacement_trigger=pulumi.Output.secret(cfg.get("trigger") or "one")))
b = thing("b", "b", pulumi.ResourceOptions(replace_with=[a]))
c = thing("c", "c")
hidden = thing("hidden", cfg.get("hidden") or "first-value", pulumi.ResourceOptions(hide_diffs=["value"]))
pulumi.export("features", [
    monitor_supports_feature(resource_pb2.RESOURCE_MONITOR_FEATURE_REPLACEMENT_TRIGGER),
    monitor_supports_feature(resource_pb2.RESOURCE_MONITOR_FEATURE_REPLACE_WITH),
])
"#;

/// `replacementTrigger`, `replaceWith` and `hideDiffs` with the published
/// SDK: the features are reported; a changed (secret) trigger replaces its
/// resource and the one that names it in `replaceWith`, nothing else; the
/// options are recorded in the state under Pulumi's names, the trigger's
/// secret encrypted; a hidden property's diff is named without its values.
#[test]
fn replacement_trigger_replace_with_and_hide_diffs() {
    let Some(w) = world(REPLACEMENT_OPTIONS) else {
        return;
    };
    let out = w.run(&["up", "--yes"]);
    assert_eq!(
        w.outputs()["features"],
        serde_json::json!([true, true]),
        "{out}"
    );
    let state = w.state();
    let id = |state: &serde_json::Value, name: &str| resource(state, name)["id"].clone();
    let a = resource(&state, "a");
    assert!(
        a["replacementTrigger"]["ciphertext"].is_string(),
        "the trigger is a secret in the state: {a}"
    );
    assert!(!state.to_string().contains("\"one\""), "{state}");
    assert_eq!(
        resource(&state, "b")["replaceWith"],
        serde_json::json!([a["urn"]])
    );
    assert_eq!(
        resource(&state, "hidden")["hideDiff"],
        serde_json::json!(["value"])
    );

    let again = w.run(&["up", "--yes"]);
    assert!(!again.contains("replaced"), "{again}");
    assert_eq!(id(&w.state(), "a"), id(&state, "a"));

    w.run(&["config", "set", "trigger", "two"]);
    let out = w.run(&["up", "--yes"]);
    let after = w.state();
    for name in ["a", "b"] {
        assert_ne!(id(&after, name), id(&state, name), "{name} replaced\n{out}");
    }
    for name in ["c", "hidden"] {
        assert_eq!(id(&after, name), id(&state, name), "{name} kept\n{out}");
    }

    w.run(&["config", "set", "hidden", "second-value"]);
    let preview = w.run(&["preview", "--diff"]);
    assert!(preview.contains("value: (diff hidden)"), "{preview}");
    assert!(
        !preview.contains("first-value") && !preview.contains("second-value"),
        "{preview}"
    );
}

const HOOKS: &str = r#"
import os
import pulumi
from pulumi.runtime.settings import monitor_supports_feature
from pulumi.runtime.proto import resource_pb2

cfg = pulumi.Config()
LOG = os.path.join(os.getcwd(), "hooks.log")
MARKER = os.path.join(os.getcwd(), "ready")

def write(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")

def logger(kind):
    def hook(args):
        new = dict(args.new_inputs or {})
        old = dict(args.old_inputs or {})
        length = dict(args.new_outputs or {}).get("length")
        length = None if length is None else int(length)
        write(f"{kind} {args.name} {args.type} id={bool(args.id)} new={new.get('value')} "
              f"old={old.get('value')} length={length}")
    return hook

hooks = {k: pulumi.ResourceHook(k, logger(k)) for k in
         ["before-create", "after-create", "before-update", "after-update", "before-delete", "after-delete"]}

def deny(args):
    raise Exception("denied by the hook")

def after_fail(args):
    raise Exception("the after hook broke")

def retry(args):
    write(f"on-error {args.name} {args.failed_operation} {args.errors[0]}")
    open(MARKER, "w").close()
    return True

deny_hook = pulumi.ResourceHook("deny", deny)
after_fail_hook = pulumi.ResourceHook("after-fail", after_fail)
retry_hook = pulumi.ErrorHook("retry", retry)

def thing(name, value, hooks, **props):
    return pulumi.CustomResource("convergetest:index:Thing", name, {"value": value, "length": None, **props},
                                 opts=pulumi.ResourceOptions(hooks=hooks))

if cfg.get("keep") != "no":
    thing("a", cfg.get("value") or "v1", pulumi.ResourceHookBinding(
        before_create=[hooks["before-create"]], after_create=[hooks["after-create"]],
        before_update=[hooks["before-update"]], after_update=[hooks["after-update"]],
        before_delete=[hooks["before-delete"]], after_delete=[hooks["after-delete"]]))
thing("flaky", "f", pulumi.ResourceHookBinding(on_error=[retry_hook], after_create=[after_fail_hook]),
      fail=f"create-until:{MARKER}")
if cfg.get("deny") == "yes":
    thing("denied", "d", pulumi.ResourceHookBinding(before_create=[deny_hook]))
pulumi.export("features", [monitor_supports_feature(f) for f in [
    resource_pb2.RESOURCE_MONITOR_FEATURE_RESOURCE_HOOKS,
    resource_pb2.RESOURCE_MONITOR_FEATURE_ERROR_HOOKS,
    resource_pb2.RESOURCE_MONITOR_FEATURE_SENDS_OPTIONS_TO_HOOKS,
]])
"#;

/// Resource hooks and error hooks with the published SDK: hooks run
/// around create, update and delete with what each kind sees (a resource
/// the program dropped is deleted with the hooks its state names, while
/// the program waits); an error hook has a failed create tried again; an
/// after hook's failure is a warning; a before hook's fails the step.
#[test]
fn resource_hooks_and_error_hooks() {
    let Some(w) = world(HOOKS) else {
        return;
    };
    let log_path = w.scratch.project.join("hooks.log");
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let take = || {
        let text = log();
        std::fs::remove_file(&log_path).ok();
        text
    };
    let ty = "convergetest:index:Thing";

    let out = w.run(&["up", "--yes"]);
    assert_eq!(
        w.outputs()["features"],
        serde_json::json!([true, true, true]),
        "{out}"
    );
    let text = take();
    assert!(
        text.contains(&format!(
            "before-create a {ty} id=False new=v1 old=None length=None"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "after-create a {ty} id=True new=v1 old=None length=2"
        )),
        "{text}"
    );
    assert!(
        text.contains("on-error flaky create ") && text.contains("does not exist"),
        "{text}"
    );
    assert!(
        out.contains("after-create hook \"after-fail\" failed"),
        "{out}"
    );
    assert!(out.contains("the after hook broke"), "{out}");
    let state = w.state();
    assert_eq!(
        resource(&state, "a")["resourceHooks"]["before-delete"],
        serde_json::json!(["before-delete"])
    );
    assert_eq!(
        resource(&state, "flaky")["resourceHooks"]["on-error"],
        serde_json::json!(["retry"])
    );

    // A preview runs no hook (none is registered to run on previews).
    w.run(&["config", "set", "value", "v22"]);
    w.run(&["preview"]);
    assert_eq!(take(), "");
    w.run(&["up", "--yes"]);
    let text = take();
    assert!(
        text.contains(&format!(
            "before-update a {ty} id=True new=v22 old=v1 length=None"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "after-update a {ty} id=True new=v22 old=v1 length=3"
        )),
        "{text}"
    );

    w.run(&["config", "set", "keep", "no"]);
    let out = w.run(&["up", "--yes"]);
    let text = take();
    assert!(
        text.contains(&format!("before-delete a {ty} id=True new=None old=v22")),
        "{text}\n{out}"
    );
    assert!(
        text.contains(&format!("after-delete a {ty} id=True new=None old=v22")),
        "{text}\n{out}"
    );

    w.run(&["config", "set", "deny", "yes"]);
    let out = w.command().args(["up", "--yes"]).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("before-create hook \"deny\" failed"),
        "{text}"
    );
    assert!(text.contains("denied by the hook"), "{text}");
    let names: Vec<String> = w.state()["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["urn"]
                .as_str()
                .unwrap()
                .rsplit("::")
                .next()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(!names.contains(&"denied".to_owned()), "{names:?}");
}

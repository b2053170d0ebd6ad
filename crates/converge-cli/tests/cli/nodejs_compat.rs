//! Pulumi's language-conformance behaviours, end to end with the published
//! Node.js SDK and the test plugin: the Node.js halves of
//! `python_compat`'s tests.

use crate::common;

use common::nodejs::{node_modules, NodeWorld};

/// A world running `program` with the test plugin on PATH and its cloud.
fn world(program: &str) -> Option<NodeWorld> {
    let modules = node_modules()?;
    let mut w = NodeWorld::new(&modules, program);
    let bin = common::convergetest_bin_dir(w.scratch.dir.path());
    w.env = vec![
        ("PATH".into(), common::path_with(&bin)),
        (
            "CONVERGE_TEST_CLOUD_FILE".into(),
            w.scratch.dir.path().join("cloud.json").into(),
        ),
    ];
    Some(w)
}

fn outputs(w: &NodeWorld) -> serde_json::Value {
    serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap()
}

fn state(w: &NodeWorld) -> serde_json::Value {
    serde_json::from_str(&w.run(&["stack", "export"])).unwrap()
}

fn resource<'a>(state: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    state["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
        .unwrap_or_else(|| panic!("no resource {name}"))
}

const TRANSFORMS: &str = r#"
const pulumi = require("@pulumi/pulumi");

const appending = word => args => {
    if (args.type !== "convergetest:index:Thing") {
        return undefined;
    }
    const value = pulumi.output(args.props.value).apply(v => `${v}+${word}`);
    return { props: { ...args.props, value }, opts: args.opts };
};
const protecting = args => ({ props: args.props, opts: pulumi.mergeOptions(args.opts, { protect: true }) });

pulumi.runtime.registerResourceTransform(appending("stack"));
pulumi.runtime.registerInvokeTransform(args => ({ args: { ...args.args, tag: "transformed" }, opts: args.opts }));

class Group extends pulumi.ComponentResource {
    constructor(name, opts) {
        super("compat:index:Group", name, {}, opts);
        this.member = new pulumi.CustomResource("convergetest:index:Thing", `${name}-member`,
            { value: "m", length: undefined }, { parent: this, transforms: [appending("own")] });
        this.registerOutputs({});
    }
}

const group = new Group("group", { transforms: [appending("parent"), protecting] });
const plain = new pulumi.CustomResource("convergetest:index:Thing", "plain", { value: "p", length: undefined });
const count = pulumi.runtime.invokeOutput("convergetest:index:count", { tag: "original" });
exports.member = group.member.value;
exports.plain = plain.value;
exports.tag = count.apply(c => c.tag);
"#;

/// Transforms with the published Node.js SDK, as
/// `python_compat::stack_resource_and_invoke_transforms_run_in_pulumis_order`.
#[test]
fn stack_resource_and_invoke_transforms_run_in_pulumis_order() {
    let Some(w) = world(TRANSFORMS) else {
        return;
    };
    let out = w.run(&["up", "--yes"]);
    let outputs = outputs(&w);
    assert_eq!(outputs["member"], "m+own+parent+stack", "{outputs}\n{out}");
    assert_eq!(outputs["plain"], "p+stack", "{outputs}");
    assert_eq!(outputs["tag"], "transformed", "{outputs}");
    let state = state(&w);
    assert_eq!(resource(&state, "group-member")["protect"], true);
    assert_eq!(resource(&state, "group")["protect"], true);
    let again = w.run(&["up", "--yes"]);
    assert!(!again.contains("updated"), "{again}");
}

const CONTINUE_ON_ERROR: &str = r#"
const pulumi = require("@pulumi/pulumi");

const thing = (name, value, extra) =>
    new pulumi.CustomResource("convergetest:index:Thing", name, { value, length: undefined, ...extra });
const late = length => new Promise(resolve => setTimeout(() => resolve(`late-${length}`), 1000));

const a = thing("a", "a", { fail: "create" });
const b = thing("b", "b");
const after = thing("after", b.length.apply(late));
const dependent = thing("dependent", a.length.apply(l => `of-${l}`));
exports.after = after.length;
"#;

/// `--continue-on-error` with the published Node.js SDK, as
/// `python_compat::continue_on_error_creates_what_does_not_depend_on_a_failure`.
#[test]
fn continue_on_error_creates_what_does_not_depend_on_a_failure() {
    let Some(w) = world(CONTINUE_ON_ERROR) else {
        return;
    };
    let mut cmd = w.scratch.command("pw");
    cmd.envs(w.env.iter().cloned())
        .args(["up", "--yes", "--continue-on-error"]);
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("create failed on purpose"), "{text}");
    // The Node.js SDK itself refuses to serialize what depends on a
    // failed resource: the dependent never reaches the engine.
    assert!(text.contains("failed to register"), "{text}");
    let state = state(&w);
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

const HOOKS: &str = r#"
const pulumi = require("@pulumi/pulumi");
const fs = require("fs");
const path = require("path");

const config = new pulumi.Config();
const LOG = path.join(process.cwd(), "hooks.log");
const MARKER = path.join(process.cwd(), "ready");
const write = line => fs.appendFileSync(LOG, line + "\n");
const logger = kind => args => {
    const length = args.newOutputs ? args.newOutputs.length : undefined;
    const value = m => (m ? m.value : undefined);
    write(`${kind} ${args.name} id=${Boolean(args.id)} new=${value(args.newInputs)} old=${value(args.oldInputs)} length=${length}`);
};
const hooks = {};
for (const k of ["before-create", "after-create", "before-update", "after-update", "before-delete", "after-delete"]) {
    hooks[k] = new pulumi.ResourceHook(k, logger(k));
}
const retry = new pulumi.ErrorHook("retry", async args => {
    write(`on-error ${args.name} ${args.failedOperation} ${args.errors[0]}`);
    fs.writeFileSync(MARKER, "");
    return true;
});
const deny = new pulumi.ResourceHook("deny", () => { throw new Error("denied by the hook"); });

const thing = (name, value, hooks, extra) =>
    new pulumi.CustomResource("convergetest:index:Thing", name, { value, length: undefined, ...extra }, { hooks });

if (config.get("keep") !== "no") {
    thing("a", config.get("value") || "v1", {
        beforeCreate: [hooks["before-create"]], afterCreate: [hooks["after-create"]],
        beforeUpdate: [hooks["before-update"]], afterUpdate: [hooks["after-update"]],
        beforeDelete: [hooks["before-delete"]], afterDelete: [hooks["after-delete"]],
    });
}
thing("flaky", "f", { onError: [retry] }, { fail: `create-until:${MARKER}` });
if (config.get("deny") === "yes") {
    thing("denied", "d", { beforeCreate: [deny] });
}
"#;

/// Resource hooks and error hooks with the published Node.js SDK, as
/// `python_compat::resource_hooks_and_error_hooks`.
#[test]
fn resource_hooks_and_error_hooks() {
    let Some(w) = world(HOOKS) else {
        return;
    };
    let log_path = w.scratch.project.join("hooks.log");
    let take = || {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        std::fs::remove_file(&log_path).ok();
        text
    };
    let out = w.run(&["up", "--yes"]);
    let text = take();
    assert!(
        text.contains("before-create a id=false new=v1 old=undefined length=undefined"),
        "{text}\n{out}"
    );
    assert!(
        text.contains("after-create a id=true new=v1 old=undefined length=2"),
        "{text}"
    );
    assert!(
        text.contains("on-error flaky create ") && text.contains("does not exist"),
        "{text}"
    );
    assert_eq!(
        resource(&state(&w), "a")["resourceHooks"]["after-delete"],
        serde_json::json!(["after-delete"])
    );

    let run = |args: &[&str]| {
        let mut cmd = w.scratch.command("pw");
        cmd.envs(w.env.iter().cloned()).args(args);
        cmd.output().unwrap()
    };
    assert!(run(&["config", "set", "value", "v22"]).status.success());
    w.run(&["up", "--yes"]);
    let text = take();
    assert!(
        text.contains("before-update a id=true new=v22 old=v1 length=undefined"),
        "{text}"
    );
    assert!(
        text.contains("after-update a id=true new=v22 old=v1 length=3"),
        "{text}"
    );

    assert!(run(&["config", "set", "keep", "no"]).status.success());
    let out = w.run(&["up", "--yes"]);
    let text = take();
    assert!(
        text.contains("before-delete a id=true new=undefined old=v22"),
        "{text}\n{out}"
    );
    assert!(
        text.contains("after-delete a id=true new=undefined old=v22"),
        "{text}\n{out}"
    );

    assert!(run(&["config", "set", "deny", "yes"]).status.success());
    let out = run(&["up", "--yes"]);
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
}

const PLAIN_TRANSFORMS: &str = r#"
const pulumi = require("@pulumi/pulumi");

pulumi.runtime.registerResourceTransform(args => {
    if (args.type !== "command:local:Command") {
        return undefined;
    }
    const environment = { ...args.props.environment, TEAM: "infra" };
    return { props: { ...args.props, environment }, opts: args.opts };
});
new pulumi.CustomResource("command:local:Command", "tagged",
    { create: "true", environment: { APP: "web" } });
const doubled = new pulumi.CustomResource("random:index/randomString:RandomString", "doubled",
    { length: 5, special: false, result: undefined },
    { transforms: [async ({ props, opts }) => {
        props["length"] = props["length"] * 2;
        return { props, opts };
    }] });
exports.result = doubled.result;
"#;

/// A transform sees a property without dependencies as the plain value
/// the program gave, as in Pulumi's own transform tests: it can double a
/// number and spread an object into a new one.
#[test]
fn transforms_see_plain_values_they_can_compute_with() {
    let Some(w) = world(PLAIN_TRANSFORMS) else {
        return;
    };
    let out = w.run(&["up", "--yes"]);
    let state = state(&w);
    assert_eq!(
        resource(&state, "tagged")["inputs"]["environment"],
        serde_json::json!({"APP": "web", "TEAM": "infra"}),
        "{out}"
    );
    assert_eq!(resource(&state, "doubled")["inputs"]["length"], 10, "{out}");
    assert_eq!(outputs(&w)["result"].as_str().unwrap().len(), 10);
}

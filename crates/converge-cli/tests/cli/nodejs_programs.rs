//! The `converge` binary running a real Node.js program with the published
//! `@pulumi/pulumi` SDK (installed by scripts/test;
//! CONVERGE_TEST_NODE_MODULES names its node_modules).

use crate::common;

use common::nodejs::{node_modules, NodeWorld};

const PROGRAM: &str = r#"
const pulumi = require("@pulumi/pulumi");

class Group extends pulumi.ComponentResource {
    constructor(name, opts) {
        super("app:index:Group", name, {}, opts);
        this.member = new pulumi.CustomResource("random:index/randomString:RandomString",
            `${name}-member`, { length: 8, result: undefined }, { parent: this });
        this.registerOutputs({ member: this.member.result });
    }
}

const pet = new pulumi.CustomResource("random:index/randomPet:RandomPet", "pet", { length: 2, id: undefined });
const pw = new pulumi.CustomResource("random:index/randomPassword:RandomPassword", "pw", { length: 14, result: undefined });
const group = new Group("group", { dependsOn: [pet] });

exports.pet = pet.id;
exports.password = pw.result;
exports.member = group.member.result;
exports.values = { n: 7, list: ["a", 2], flag: false };
"#;

#[test]
fn a_nodejs_program_deploys_and_destroys() {
    let Some(modules) = node_modules() else {
        return;
    };
    let w = NodeWorld::new(&modules, PROGRAM);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 5 created"), "{up}");
    assert!(up.contains("password: [secret]"), "{up}");
    let outputs: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["values"]["n"], 7);
    assert_eq!(outputs["member"].as_str().unwrap().len(), 8);
    let again = w.run(&["up", "--yes"]);
    assert!(again.contains("5 unchanged"), "{again}");
    let down = w.run(&["destroy", "--yes"]);
    assert!(down.contains("- 5 deleted"), "{down}");
}

const DYNAMIC: &str = r#"
const pulumi = require("@pulumi/pulumi");

const fileProvider = {
    async create(inputs) {
        const fs = require("fs");
        const path = require("path");
        const p = path.join(inputs.dir, inputs.name);
        fs.writeFileSync(p, inputs.content);
        return { id: p, outs: { ...inputs, size: inputs.content.length } };
    },
    async diff(id, olds, news) {
        const replaces = ["dir", "name"].filter((k) => olds[k] !== news[k]);
        return {
            changes: replaces.length > 0 || olds.content !== news.content,
            replaces,
            deleteBeforeReplace: true,
        };
    },
    async update(id, olds, news) {
        require("fs").writeFileSync(id, news.content);
        return { outs: { ...news, size: news.content.length } };
    },
    async delete(id) {
        require("fs").unlinkSync(id);
    },
};

class File extends pulumi.dynamic.Resource {
    constructor(name, args, opts) {
        super(fileProvider, name, { ...args, size: undefined }, opts);
    }
}

const config = new pulumi.Config();
const f = new File("note", {
    dir: config.require("dir"),
    name: config.require("name"),
    content: config.require("content"),
});
exports.size = f.size;
"#;

/// A dynamic provider written in the Node.js program, served by the SDK's
/// `cmd/dynamic-provider`: created, updated, replaced and deleted across
/// successive runs, with real files as its objects.
#[test]
fn a_nodejs_dynamic_provider_creates_updates_replaces_and_deletes() {
    let Some(modules) = node_modules() else {
        return;
    };
    let w = NodeWorld::new(&modules, DYNAMIC);
    let files = w.scratch.dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    w.run(&["config", "set", "dir", files.to_str().unwrap()]);
    w.run(&["config", "set", "name", "a.txt"]);
    w.run(&["config", "set", "content", "hello"]);

    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 2 created"), "{up}");
    assert_eq!(
        std::fs::read_to_string(files.join("a.txt")).unwrap(),
        "hello"
    );
    assert_eq!(w.run(&["stack", "output", "size"]).trim(), "5");

    w.run(&["config", "set", "content", "hello, node"]);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("~ 1 updated"), "{up}");
    assert_eq!(w.run(&["stack", "output", "size"]).trim(), "11");

    w.run(&["config", "set", "name", "b.txt"]);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+-1 replaced"), "{up}");
    assert!(!files.join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(files.join("b.txt")).unwrap(),
        "hello, node"
    );

    let down = w.run(&["destroy", "--yes"]);
    assert!(down.contains("- 2 deleted"), "{down}");
    assert!(!files.join("b.txt").exists());
}

/// A remote component of the `convergetest` plugin (Construct in the
/// plugin process, which registers the component and its child through
/// the engine's monitor) and a Call of its method, from Node.js.
#[test]
fn a_nodejs_remote_component_and_call() {
    let Some(modules) = node_modules() else {
        return;
    };
    let program = r#"
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

const comp = new Remote("comp", "node");
exports.childId = comp.childId;
exports.childLength = comp.childLength;
exports.description = comp.describe("Hello").apply(r => r.description);
"#;
    let mut w = NodeWorld::new(&modules, program);
    let bin = common::convergetest_bin_dir(w.scratch.dir.path());
    let cloud_file = w.scratch.dir.path().join("cloud.json");
    w.env = vec![
        ("PATH".into(), common::path_with(&bin)),
        ("CONVERGE_TEST_CLOUD_FILE".into(), cloud_file.clone().into()),
    ];
    let run = |args: &[&str]| w.run(args);
    let up = run(&["up", "--yes"]);
    assert!(up.contains("+ 3 created"), "{up}");
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["childLength"], 4);
    assert_eq!(outputs["description"], "Hello, comp!");
    let child_id = outputs["childId"].as_str().unwrap().to_owned();
    let cloud: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cloud_file).unwrap()).unwrap();
    assert_eq!(
        cloud["objects"][&child_id]["urn"],
        "urn:pulumi:dev::nodeproj::convergetest:index:Component$convergetest:index:Thing::comp-child"
    );
    let down = run(&["destroy", "--yes"]);
    assert!(down.contains("- 3 deleted"), "{down}");
}

/// Project-level configuration (`config:` in Pulumi.yaml) reaches a
/// Node.js program: defaults where the stack sets nothing, typed values,
/// another namespace's value; a stack value of the wrong type is refused
/// before the program runs.
#[test]
fn a_nodejs_program_reads_project_config_with_defaults_and_types() {
    let Some(modules) = node_modules() else {
        return;
    };
    let program = r#"
const pulumi = require("@pulumi/pulumi");
const c = new pulumi.Config();
exports.name = c.require("name");
exports.replicas = c.requireNumber("replicas");
exports.enabled = c.requireBoolean("enabled");
exports.tags = c.requireObject("tags");
exports.password = c.requireSecret("dbPassword");
exports.region = new pulumi.Config("aws").require("region");
"#;
    let w = NodeWorld::new(&modules, program);
    std::fs::write(
        w.scratch.project.join("Pulumi.yaml"),
        "name: nodeproj
runtime: nodejs
config:
  name: {type: string, default: hello}
  replicas: {type: integer, default: 3}
  enabled: {type: boolean, default: false}
  tags: {type: array, items: {type: integer}, default: [1, 2]}
  dbPassword: {type: string, secret: true}
  aws:region: us-west-2
",
    )
    .unwrap();
    w.run(&["config", "set", "--secret", "dbPassword", "s3cr3t"]);
    w.run(&["config", "set", "enabled", "true"]);
    w.run(&["up", "--yes"]);
    let out: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json", "--show-secrets"])).unwrap();
    assert_eq!(
        out,
        serde_json::json!({
            "name": "hello",
            "replicas": 3,
            "enabled": true,
            "tags": [1, 2],
            "password": "s3cr3t",
            "region": "us-west-2",
        })
    );

    w.run(&["config", "set", "--path", "tags[0]", "x"]);
    let out = w
        .scratch
        .command("pw")
        .args(["up", "--yes"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Stack 'dev' with configuration key 'tags' must be of type 'array<integer>'"),
        "{err}"
    );
}

/// The runtime option `nodeargs` reaches Node itself: here a heap limit
/// and a `--require` hook the program sees.
#[test]
fn nodeargs_are_nodes_own_flags() {
    let Some(modules) = node_modules() else {
        return;
    };
    let w = NodeWorld::new(
        &modules,
        r#"
const v8 = require("v8");
exports.execArgv = process.execArgv.join(" ");
exports.heapMB = Math.round(v8.getHeapStatistics().heap_size_limit / 1048576);
exports.hooked = global.hooked === true;
"#,
    );
    std::fs::write(w.scratch.project.join("hook.js"), "global.hooked = true;\n").unwrap();
    std::fs::write(
        w.scratch.project.join("Pulumi.yaml"),
        "name: nodeproj\nruntime:\n  name: nodejs\n  options:\n    \
         nodeargs: \"--max-old-space-size=200 --require ./hook.js\"\n",
    )
    .unwrap();
    w.run(&["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(
        outputs["execArgv"],
        "--max-old-space-size=200 --require ./hook.js"
    );
    assert!(outputs["heapMB"].as_u64().unwrap() < 400, "{outputs}");
    assert_eq!(outputs["hooked"], true);
}

/// A type token of more than three segments, as Pulumi accepts: a Node.js
/// dynamic resource whose module holds a colon
/// (`pulumi-nodejs:dynamic/custom:LocalFile:Resource`).
#[test]
fn a_type_with_more_than_three_segments_deploys() {
    let Some(modules) = node_modules() else {
        return;
    };
    let w = NodeWorld::new(
        &modules,
        r#"
const pulumi = require("@pulumi/pulumi");
const provider = {
    async create(inputs) { return { id: "f-1", outs: { value: inputs.value } }; },
};
const f = new pulumi.dynamic.Resource(provider, "f", { value: "v" }, {}, "custom:LocalFile");
exports.urn = f.urn;
"#,
    );
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 2 created"), "{up}");
    let urn = w.run(&["stack", "output", "urn"]);
    assert!(
        urn.trim()
            .ends_with("::pulumi-nodejs:dynamic/custom:LocalFile:Resource::f"),
        "{urn}"
    );
    assert!(w.run(&["preview"]).contains("unchanged"));
}

/// A TypeScript program that throws: its stack trace is shown without
/// the colour escapes Node writes into it (Converge's output has no
/// colour; they showed as `^[[90m`).
#[test]
fn a_thrown_errors_trace_has_no_colour_escapes() {
    let Some(modules) = node_modules() else {
        return;
    };
    let w = NodeWorld::new(&modules, "");
    let dir = &w.scratch.project;
    std::fs::remove_file(dir.join("index.js")).unwrap();
    std::fs::write(
        dir.join("index.ts"),
        "import * as pulumi from \"@pulumi/pulumi\";\nconst n: number = 1;\nthrow new Error(\"boom-7f3\");\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("package.json"),
        r#"{"name":"nodeproj","main":"index.ts"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("tsconfig.json"),
        r#"{"compilerOptions":{"strict":true}}"#,
    )
    .unwrap();
    let out = w
        .scratch
        .command("pw")
        .args(["up", "--yes", "--color", "never"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("boom-7f3") && all.contains("index.ts:3"),
        "{all}"
    );
    assert!(
        !all.contains('\u{1b}'),
        "colour escapes in the output: {all:?}"
    );
}

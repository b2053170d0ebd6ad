//! The `converge` binary running a real Node.js program with the published
//! `@pulumi/pulumi` SDK (installed by scripts/test;
//! CONVERGE_TEST_NODE_MODULES names its node_modules).

mod common;

use std::path::PathBuf;

fn node_modules() -> Option<PathBuf> {
    match std::env::var_os("CONVERGE_TEST_NODE_MODULES") {
        Some(dir) => Some(PathBuf::from(dir)),
        None if std::env::var_os("CI").is_some() => {
            panic!("CONVERGE_TEST_NODE_MODULES is not set: run scripts/test")
        }
        None => {
            eprintln!("SKIPPED: set CONVERGE_TEST_NODE_MODULES (scripts/test does) to run Node.js programs");
            None
        }
    }
}

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
    let scratch = common::Scratch::new("name: nodeproj\nruntime: nodejs\n");
    let project = scratch.project.clone();
    std::fs::write(project.join("index.js"), PROGRAM).unwrap();
    std::fs::write(
        project.join("package.json"),
        r#"{"name":"nodeproj","main":"index.js"}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(&modules, project.join("node_modules")).unwrap();
    let run = |args: &[&str]| {
        let out = scratch.command("pw").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "converge {args:?}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["stack", "init", "dev"]);
    let up = run(&["up", "--yes"]);
    assert!(up.contains("+ 6 created"), "{up}");
    assert!(up.contains("password: [secret]"), "{up}");
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["values"]["n"], 7);
    assert_eq!(outputs["member"].as_str().unwrap().len(), 8);
    let again = run(&["up", "--yes"]);
    assert!(again.contains("6 unchanged"), "{again}");
    let down = run(&["destroy", "--yes"]);
    assert!(down.contains("- 6 deleted"), "{down}");
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
    let scratch = common::Scratch::new("name: nodeproj\nruntime: nodejs\n");
    let project = scratch.project.clone();
    std::fs::write(project.join("index.js"), program).unwrap();
    std::fs::write(
        project.join("package.json"),
        r#"{"name":"nodeproj","main":"index.js"}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(&modules, project.join("node_modules")).unwrap();
    let bin = common::convergetest_bin_dir(scratch.dir.path());
    let cloud_file = scratch.dir.path().join("cloud.json");
    let run = |args: &[&str]| {
        let out = scratch
            .command("pw")
            .env("PATH", common::path_with(&bin))
            .env("CONVERGE_TEST_CLOUD_FILE", &cloud_file)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "converge {args:?}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    run(&["stack", "init", "dev"]);
    let up = run(&["up", "--yes"]);
    assert!(up.contains("+ 4 created"), "{up}");
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
    assert!(down.contains("- 4 deleted"), "{down}");
}

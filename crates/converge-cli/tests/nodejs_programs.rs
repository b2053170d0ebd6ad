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

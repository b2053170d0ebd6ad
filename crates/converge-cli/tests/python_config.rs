//! `converge config set --path` types values as Pulumi does, and a Python
//! program (published `pulumi` SDK; CONVERGE_TEST_PYTHON names the venv's
//! interpreter) reads them typed with `require_object`.

mod common;

use common::python::{venv, PythonWorld as World};

const PROGRAM: &str = r#"
import pulumi

config = pulumi.Config()
a = config.require_object("a")
pulumi.export("a", a)
pulumi.export("types", {k: type(v).__name__ for k, v in a.items()})
pulumi.export("first", type(a["list"][0]).__name__)
pulumi.export("tokenLength", len(config.require_object("s")["token"]))
"#;

#[test]
fn path_values_reach_the_program_typed() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PROGRAM);
    for (key, value) in [
        ("a.b", "1"),
        ("a.negative", "-7"),
        ("a.flag", "true"),
        ("a.off", "false"),
        ("a.name", "hello"),
        ("a.ratio", "1.5"),
        ("a.list[0]", "2"),
    ] {
        w.run(&["config", "set", "--path", key, "--", value]);
    }
    w.run(&["config", "set", "--path", "--secret", "s.token", "s3cr3t"]);
    let settings = std::fs::read_to_string(w.scratch.project.join("Pulumi.dev.yaml")).unwrap();
    assert!(
        settings.contains("b: 1\n") && settings.contains("flag: true\n"),
        "{settings}"
    );
    assert!(!settings.contains("s3cr3t"), "{settings}");

    w.run(&["up", "--yes"]);
    let out: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(out["a"]["b"], 1);
    assert_eq!(out["a"]["negative"], -7);
    assert_eq!(out["a"]["flag"], true);
    assert_eq!(out["a"]["list"][0], 2);
    assert_eq!(
        out["types"],
        serde_json::json!({
            "b": "int", "negative": "int", "flag": "bool", "off": "bool",
            "name": "str", "ratio": "str", "list": "list",
        })
    );
    assert_eq!(out["first"], "int");
    assert_eq!(out["tokenLength"], 6);
}

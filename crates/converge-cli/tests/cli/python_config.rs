//! `converge config set --path` types values as Pulumi does, and a Python
//! program (published `pulumi` SDK; CONVERGE_TEST_PYTHON names the venv's
//! interpreter) reads them typed with `require_object`; project-level
//! config (Pulumi.yaml's `config:`) reaches it with its defaults, and
//! stack values that break its declarations are refused.

use crate::common;

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

const PROJECT_CONFIG: &str = "config:
  name: {type: string, default: hello}
  replicas: {type: integer, default: 3, description: how many}
  enabled: {type: boolean}
  tags: {type: array, items: {type: string}}
  dbPassword: {type: string, secret: true}
  aws:region: us-west-2
  pkg:settings: {value: {tier: gold, size: 2}}
";

const TYPED_PROGRAM: &str = r#"
import pulumi

c = pulumi.Config()
pulumi.export("name", c.require("name"))
pulumi.export("replicas", c.require_int("replicas"))
pulumi.export("enabled", c.require_bool("enabled"))
pulumi.export("tags", c.require_object("tags"))
pulumi.export("password", c.require_secret("dbPassword"))
pulumi.export("region", pulumi.Config("aws").require("region"))
pulumi.export("settings", pulumi.Config("pkg").require_object("settings"))
"#;

#[test]
fn project_config_reaches_the_program_typed_with_its_defaults() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, TYPED_PROGRAM);
    let project_file = w.scratch.project.join("Pulumi.yaml");
    let mut text = std::fs::read_to_string(&project_file).unwrap();
    text.push_str(PROJECT_CONFIG);
    std::fs::write(&project_file, text).unwrap();
    let state = w.state();

    let e = w.fails(&["up", "--yes"]);
    assert!(
        e.contains(
            "Stack 'dev' is missing configuration values 'dbPassword', 'enabled' and 'tags'"
        ),
        "{e}"
    );
    w.run(&["config", "set", "enabled", "true"]);
    w.run(&["config", "set", "--path", "tags[0]", "web"]);
    w.run(&["config", "set", "dbPassword", "in-the-clear"]);
    let e = w.fails(&["up", "--yes"]);
    assert!(
        e.contains("configuration key 'dbPassword' must be encrypted as it's secret")
            && e.contains("--secret")
            && !e.contains("in-the-clear"),
        "{e}"
    );
    w.run(&["config", "set", "--secret", "dbPassword", "s3cr3t"]);
    w.run(&["config", "set", "replicas", "three"]);
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("Stack 'dev' with configuration key 'replicas' must be of type 'integer'"),
        "{e}"
    );
    assert_eq!(w.state(), state, "a refused operation changed the state");

    w.run(&["config", "rm", "replicas"]);
    w.run(&["up", "--yes"]);
    let out: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json", "--show-secrets"])).unwrap();
    assert_eq!(
        out,
        serde_json::json!({
            "name": "hello",
            "replicas": 3,
            "enabled": true,
            "tags": ["web"],
            "password": "s3cr3t",
            "region": "us-west-2",
            "settings": {"tier": "gold", "size": 2},
        })
    );
    // The declared secret stays secret.
    let out: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(out["password"], "[secret]");
}

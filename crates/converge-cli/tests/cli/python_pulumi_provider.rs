//! The builtin `pulumi` provider and component resources end to end with
//! the published Python SDK: `pulumi.Stash` keeps the value it was created
//! with, a resource rehydrated by URN (`pulumi:pulumi:getResource`) has
//! its outputs, the provider is recorded as `pulumi:providers:pulumi`
//! named `default`; an alias carries a component over to a custom
//! resource without any provider `Delete`.

use crate::common;

use common::python::{venv, PythonWorld as World};

/// The exported deployment's resources.
fn resources(w: &World) -> Vec<serde_json::Value> {
    let export: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "export"])).expect("stack export is JSON");
    // An empty stack's deployment has no resources at all.
    export["deployment"]["resources"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn named<'a>(resources: &'a [serde_json::Value], suffix: &str) -> &'a serde_json::Value {
    resources
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(suffix))
        .unwrap_or_else(|| panic!("no resource ending {suffix}: {resources:?}"))
}

const STASH: &str = r#"
import pulumi

value = pulumi.Config().get("value")
stashed = pulumi.Stash("myStash", input=value or {"key": ["value", "s"], "": False})
pulumi.export("stashInput", stashed.input)
pulumi.export("stashOutput", stashed.output)
"#;

#[test]
fn a_stash_keeps_its_first_value() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, STASH);
    w.run(&["up", "--yes"]);
    let first = r#"{"":false,"key":["value","s"]}"#;
    let output = |key: &str| {
        let text = w.run(&["stack", "output", key, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON output");
        v.to_string()
    };
    assert_eq!(output("stashInput"), first);
    assert_eq!(output("stashOutput"), first);
    let all = resources(&w);
    assert_eq!(all.len(), 3, "{all:?}");
    let provider = named(&all, "::pulumi:providers:pulumi::default");
    assert!(provider["id"].as_str().is_some_and(|id| !id.is_empty()));
    let stash = named(&all, "::pulumi:index:Stash::myStash");
    assert_eq!(
        stash["inputs"].to_string(),
        format!(r#"{{"input":{first}}}"#)
    );

    // A new input is recorded; the stashed value stays.
    w.run(&["config", "set", "value", "ignored"]);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("~ 1 updated"), "{up}");
    assert_eq!(output("stashInput"), r#""ignored""#);
    assert_eq!(output("stashOutput"), first);
    // Until the stash is replaced.
    w.run(&["up", "--yes", "--replace", "**::myStash"]);
    assert_eq!(output("stashOutput"), r#""ignored""#);
    let down = w.run(&["destroy", "--yes"]);
    assert!(down.contains("deleted"), "{down}");
}

#[test]
fn get_resource_rehydrates_a_resource_by_urn() {
    let Some(venv) = venv() else { return };
    let w = World::new(
        &venv,
        r#"
import pulumi
import pulumi_random as random

pet = random.RandomPet("pet", length=2)
pulumi.export("urn", pet.urn)
pulumi.export("pet", pet.id)
"#,
    );
    w.run(&["up", "--yes"]);
    let urn = w.run(&["stack", "output", "urn"]).trim().to_owned();
    let pet = w.run(&["stack", "output", "pet"]).trim().to_owned();
    std::fs::write(
        w.scratch.project.join("__main__.py"),
        format!(
            r#"
import pulumi
import pulumi_random as random

pet = random.RandomPet("pet", length=2)
again = random.RandomPet("again", opts=pulumi.ResourceOptions(urn="{urn}"))
pulumi.export("again", again.id)
pulumi.export("length", again.length)
"#
        ),
    )
    .unwrap();
    w.run(&["up", "--yes"]);
    assert_eq!(w.run(&["stack", "output", "again"]).trim(), pet);
    assert_eq!(w.run(&["stack", "output", "length"]).trim(), "2");
    let all = resources(&w);
    named(&all, "::pulumi:providers:pulumi::default");
}

#[test]
fn an_alias_carries_a_component_over_to_a_custom_resource() {
    let Some(venv) = venv() else { return };
    let w = World::new(
        &venv,
        r#"
import pulumi
import pulumi_random as random

if pulumi.Config().get_bool("custom"):
    random.RandomPet("res", length=2,
                     opts=pulumi.ResourceOptions(aliases=[pulumi.Alias(type_="my:index:Holder")]))
else:
    holder = pulumi.ComponentResource("my:index:Holder", "res")
    random.RandomPet("inner", length=2, opts=pulumi.ResourceOptions(parent=holder))
"#,
    );
    w.run(&["up", "--yes"]);
    w.run(&["config", "set", "custom", "true"]);
    let up = w.run(&["up", "--yes"]);
    assert!(!up.contains("error"), "{up}");
    let all = resources(&w);
    let res = named(&all, "::random:index/randomPet:RandomPet::res");
    assert!(res["id"].as_str().is_some_and(|id| !id.is_empty()), "{res}");
    assert!(
        !all.iter()
            .any(|r| r["urn"].as_str().unwrap().contains("my:index:Holder")),
        "{all:?}"
    );
    w.run(&["config", "set", "custom", "false"]);
    w.run(&["up", "--yes"]);
    let down = w.run(&["destroy", "--yes"]);
    assert!(down.contains("deleted"), "{down}");
    assert_eq!(resources(&w).len(), 0);
}

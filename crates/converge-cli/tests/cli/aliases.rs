//! Aliases end to end: a program is deployed, then changed to rename,
//! retype and reparent its resources — plain resources and a component
//! with a child and a grandchild — each change carried by an alias in one
//! of the forms the published SDKs send (Python's `Alias(...)` and URN
//! strings; Node.js's `{ name, type, parent }` and URN strings). `up`
//! changes nothing (every resource unchanged, no create, no delete),
//! `stack export` has the new URNs with the old IDs, and a `preview` of
//! the same program afterwards has nothing to do.

use crate::common;

use std::collections::BTreeMap;

use common::nodejs::{node_modules, NodeWorld};
use common::python::{venv, PythonWorld};

/// Every resource of the exported deployment: URN → ID.
fn exported(run: &dyn Fn(&[&str]) -> String) -> BTreeMap<String, Option<String>> {
    let export: serde_json::Value =
        serde_json::from_str(&run(&["stack", "export"])).expect("stack export is JSON");
    export["deployment"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            (
                r["urn"].as_str().unwrap().to_owned(),
                r["id"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// How many of `resources` a summary counts: all but default providers.
fn counted(resources: &BTreeMap<String, Option<String>>) -> usize {
    resources
        .keys()
        .filter(|urn| {
            !urn.contains("::pulumi:providers:")
                || !urn
                    .rsplit("::")
                    .next()
                    .unwrap_or_default()
                    .starts_with("default")
        })
        .count()
}

/// What the display says of a change to a resource (its steps and the
/// summary), as opposed to the headers ("Updating (dev)").
const CHANGES: [&str; 6] = [
    "create",
    "delete",
    "replace",
    "updated",
    "updating",
    "to update",
];

/// Runs the change: `up` of the program now in place must leave every
/// resource unchanged; each old URN of `moves` must be gone from the state
/// and its new URN hold the same ID (`None` for components); a `preview`
/// afterwards must have nothing to do.
fn check_moves(
    run: &dyn Fn(&[&str]) -> String,
    before: &BTreeMap<String, Option<String>>,
    prefix: &str,
    moves: &[(&str, &str)],
) {
    let up = run(&["up", "--yes"]);
    let after = exported(run);
    assert_eq!(after.len(), before.len(), "{up}\n{after:#?}");
    for word in CHANGES {
        assert!(!up.contains(word), "`up` did more than keep: {word}\n{up}");
    }
    assert!(
        up.contains(&format!("{} unchanged", counted(before))),
        "{up}"
    );
    for (old, new) in moves {
        let (old, new) = (format!("{prefix}{old}"), format!("{prefix}{new}"));
        let id = before
            .get(&old)
            .unwrap_or_else(|| panic!("{old} was not deployed: {before:#?}"));
        assert!(
            !after.contains_key(&old),
            "{old} is still there: {after:#?}"
        );
        assert_eq!(
            after.get(&new),
            Some(id),
            "{new} is not {old}'s object: {after:#?}"
        );
    }
    // The state names the URN each was found under as its alias, as
    // Pulumi's does.
    let export: serde_json::Value = serde_json::from_str(&run(&["stack", "export"])).unwrap();
    for (old, new) in moves {
        let (old, new) = (format!("{prefix}{old}"), format!("{prefix}{new}"));
        let state = export["deployment"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["urn"] == new.as_str())
            .unwrap();
        assert_eq!(state["aliases"], serde_json::json!([old]), "{state}");
    }
    let preview = run(&["preview"]);
    for word in CHANGES {
        assert!(!preview.contains(word), "{preview}");
    }
    assert!(
        preview.contains(&format!("{} unchanged", counted(before))),
        "{preview}"
    );
}

const PET: &str = "random:index/randomPet:RandomPet";

/// The old and new URNs (after the stack's prefix) of what both programs
/// move, in the same order as the programs' comments.
fn moves() -> Vec<(String, String)> {
    let pet = |name: &str| format!("{PET}::{name}");
    let under = |parents: &str, name: &str| format!("{parents}${PET}::{name}");
    vec![
        // A rename.
        (pet("old-name"), pet("new-name")),
        // A retype.
        (
            "random:index/randomString:RandomString::retyped".to_owned(),
            "random:index/randomPassword:RandomPassword::retyped".to_owned(),
        ),
        // From the top into component `b` (no parent before).
        (pet("top"), under("my:index:GroupB", "top")),
        // Component `a` retyped, with its child and grandchild; and a
        // resource moved from it to component `b`, its alias naming `a` as
        // it is now.
        (
            "my:index:GroupA::a".to_owned(),
            "my:index:GroupA2::a".to_owned(),
        ),
        (
            under("my:index:GroupA", "a-pet"),
            under("my:index:GroupA2", "a-pet"),
        ),
        (
            under(&format!("my:index:GroupA${PET}"), "a-pet-leaf"),
            under(&format!("my:index:GroupA2${PET}"), "a-pet-leaf"),
        ),
        (
            under("my:index:GroupA", "in-a"),
            under("my:index:GroupB", "in-a"),
        ),
        // A whole former URN.
        (pet("by-urn"), pet("by-urn-2")),
        // A component renamed and retyped, its child and grandchild (named
        // after their parents) following it.
        (
            "my:index:Web::web".to_owned(),
            "my:index:Site::site".to_owned(),
        ),
        (
            under("my:index:Web", "web-pet"),
            under("my:index:Site", "site-pet"),
        ),
        (
            under(&format!("my:index:Web${PET}"), "web-pet-leaf"),
            under(&format!("my:index:Site${PET}"), "site-pet-leaf"),
        ),
    ]
}

const PY_COMMON: &str = r#"
import pulumi
from pulumi import Alias, ResourceOptions

PET = "random:index/randomPet:RandomPet"
STRING = "random:index/randomString:RandomString"
PASSWORD = "random:index/randomPassword:RandomPassword"

def pet(name, opts=None):
    return pulumi.CustomResource(PET, name, {"length": 2, "id": None}, opts)

class Group(pulumi.ComponentResource):
    def __init__(self, t, name, opts=None):
        super().__init__(t, name, None, opts)
        child = pet(f"{name}-pet", ResourceOptions(parent=self))
        pet(f"{name}-pet-leaf", ResourceOptions(parent=child))
        self.register_outputs({})

b = Group("my:index:GroupB", "b")
"#;

const PY_BEFORE: &str = r#"
a = Group("my:index:GroupA", "a")
pet("old-name")
pulumi.CustomResource(STRING, "retyped", {"length": 8, "result": None})
pet("top")
pet("in-a", ResourceOptions(parent=a))
pet("by-urn")
Group("my:index:Web", "web")
"#;

const PY_AFTER: &str = r#"
a = Group("my:index:GroupA2", "a", ResourceOptions(aliases=[Alias(type_="my:index:GroupA")]))
pet("new-name", ResourceOptions(aliases=[Alias(name="old-name")]))
pulumi.CustomResource(PASSWORD, "retyped", {"length": 8, "result": None},
                      ResourceOptions(aliases=[Alias(type_=STRING)]))
pet("top", ResourceOptions(parent=b, aliases=[Alias(parent=pulumi.ROOT_STACK_RESOURCE)]))
pet("in-a", ResourceOptions(parent=b, aliases=[Alias(parent=a)]))
pet("by-urn-2", ResourceOptions(aliases=[
    f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{PET}::by-urn"]))
Group("my:index:Site", "site", ResourceOptions(aliases=[Alias(name="web", type_="my:index:Web")]))
"#;

#[test]
fn python_aliases_rename_retype_and_reparent_without_replacing() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, &format!("{PY_COMMON}{PY_BEFORE}"));
    w.run(&["up", "--yes"]);
    let run = |args: &[&str]| w.run(args);
    let before = exported(&run);
    std::fs::write(
        w.scratch.project.join("__main__.py"),
        format!("{PY_COMMON}{PY_AFTER}"),
    )
    .unwrap();
    let moves = moves();
    let moves: Vec<(&str, &str)> = moves.iter().map(|(o, n)| (&o[..], &n[..])).collect();
    check_moves(&run, &before, "urn:pulumi:dev::pyproj::", &moves);
}

const JS_COMMON: &str = r#"
const pulumi = require("@pulumi/pulumi");

const PET = "random:index/randomPet:RandomPet";
const STRING = "random:index/randomString:RandomString";
const PASSWORD = "random:index/randomPassword:RandomPassword";

const pet = (name, opts) => new pulumi.CustomResource(PET, name, { length: 2, id: undefined }, opts);

class Group extends pulumi.ComponentResource {
    constructor(t, name, opts) {
        super(t, name, {}, opts);
        const child = pet(`${name}-pet`, { parent: this });
        pet(`${name}-pet-leaf`, { parent: child });
        this.registerOutputs({});
    }
}

const b = new Group("my:index:GroupB", "b");
"#;

const JS_BEFORE: &str = r#"
const a = new Group("my:index:GroupA", "a");
pet("old-name");
new pulumi.CustomResource(STRING, "retyped", { length: 8, result: undefined });
pet("top");
pet("in-a", { parent: a });
pet("by-urn");
new Group("my:index:Web", "web");
"#;

const JS_AFTER: &str = r#"
const a = new Group("my:index:GroupA2", "a", { aliases: [{ type: "my:index:GroupA" }] });
pet("new-name", { aliases: [{ name: "old-name" }] });
new pulumi.CustomResource(PASSWORD, "retyped", { length: 8, result: undefined },
    { aliases: [{ type: STRING }] });
pet("top", { parent: b, aliases: [{ parent: pulumi.rootStackResource }] });
pet("in-a", { parent: b, aliases: [{ parent: a }] });
pet("by-urn-2", { aliases: [
    `urn:pulumi:${pulumi.getStack()}::${pulumi.getProject()}::${PET}::by-urn`] });
new Group("my:index:Site", "site", { aliases: [{ name: "web", type: "my:index:Web" }] });
"#;

#[test]
fn nodejs_aliases_rename_retype_and_reparent_without_replacing() {
    let Some(modules) = node_modules() else {
        return;
    };
    let w = NodeWorld::new(&modules, &format!("{JS_COMMON}{JS_BEFORE}"));
    w.run(&["up", "--yes"]);
    let run = |args: &[&str]| w.run(args);
    let before = exported(&run);
    w.write_program(&format!("{JS_COMMON}{JS_AFTER}"));
    let moves = moves();
    let moves: Vec<(&str, &str)> = moves.iter().map(|(o, n)| (&o[..], &n[..])).collect();
    check_moves(&run, &before, "urn:pulumi:dev::nodeproj::", &moves);
}

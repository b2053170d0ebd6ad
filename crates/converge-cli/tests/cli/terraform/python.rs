//! A Python program (the published `pulumi` SDK) using `store` 2.0.0,
//! found under `TF_PLUGIN_CACHE_DIR`, through the generic
//! `pulumi.CustomResource` and `pulumi.runtime.invoke`: create, update,
//! replace, refresh with drift, the `import` option, delete.

use converge_testkit::terraform_mirror::TestProvider;
use serde_json::json;

use super::world::{is_secret, meta, providers_available, python_venv, Mirror, TfWorld};
use super::yaml::private_of;

const SECRET: &str = "python-secret-51c0";

fn program() -> String {
    format!(
        r#"import pulumi

config = pulumi.Config()
item = pulumi.CustomResource(
    "store:index/item:Item",
    "item",
    {{
        "key": config.require("key"),
        "value": config.require("value"),
        "secretValue": pulumi.Output.secret("{SECRET}"),
        "description": None,
        "size": None,
        "revision": None,
    }},
)
adopt = config.get("adopt")
if adopt:
    pulumi.CustomResource(
        "store:index/item:Item",
        "adopted",
        {{"key": adopt, "value": "existing", "description": "made by hand"}},
        opts=pulumi.ResourceOptions(import_=adopt),
    )
seeded = pulumi.runtime.invoke("store:index/getItem:getItem", {{"key": "seed"}})
pulumi.export("seeded", seeded.value["value"])
pulumi.export("size", item.size)
pulumi.export("revision", item.revision)
pulumi.export("description", item.description)
pulumi.export("shout", pulumi.Output.all(item.key, item.size).apply(lambda a: f"{{a[0]}}:{{int(a[1])}}"))
"#
    )
}

#[test]
fn a_python_program_manages_store_items() {
    if !providers_available() {
        return;
    }
    let Some(venv) = python_venv() else { return };
    let mut w = TfWorld::python("tfpython", &venv, &program(), Mirror::PluginCacheDir);
    w.secret(SECRET);
    w.install(TestProvider::Store, "2.0.0");
    w.configure_directory("store");
    w.write_object(
        "seed",
        &json!({"key": "seed", "value": "seeded text", "revision": 1}),
    );
    let set = |k: &str, v: &str| {
        w.run(&["config", "set", k, v]);
    };

    // Create.
    set("key", "one");
    set("value", "v1");
    let up = w.run(&["up", "--yes"]);
    assert!(!up.contains("warning"), "{up}");
    let one = w.object("one").expect("one.json was created");
    assert_eq!(one["value"], "v1");
    assert_eq!(one["secret_value"], SECRET);
    let outputs = w.stack_outputs();
    assert_eq!(outputs["seeded"], "seeded text");
    assert_eq!(outputs["size"], 2);
    assert_eq!(outputs["revision"], 1);
    assert_eq!(outputs["description"], "managed by store");
    assert_eq!(outputs["shout"], "one:2");
    let item = w.resource("item").unwrap();
    assert_eq!(item["id"], "one");
    assert!(is_secret(&item["outputs"]["secretValue"]), "{item}");
    assert_eq!(meta(&item["outputs"]), ("2".to_owned(), private_of(1)));

    // Update in place.
    set("value", "v22");
    w.run(&["up", "--yes"]);
    let one = w.object("one").unwrap();
    assert_eq!(one["value"], "v22");
    assert_eq!(one["revision"], 2);
    assert_eq!(w.stack_outputs()["size"], 3);
    assert_eq!(w.outputs("item")["revision"], 2);

    // Replace: a new key.
    set("key", "two");
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("replaced"), "{up}");
    assert_eq!(w.object_names(), ["seed", "two"]);
    assert_eq!(w.resource("item").unwrap()["id"], "two");
    assert_eq!(w.stack_outputs()["shout"], "two:3");

    // Drift: refresh records it, up puts the program's value back.
    let mut two = w.object("two").unwrap();
    two["value"] = json!("drifted!");
    w.write_object("two", &two);
    let refresh = w.run(&["refresh", "--yes"]);
    assert!(refresh.contains("[diff: ~value]"), "{refresh}");
    assert_eq!(w.outputs("item")["value"], "drifted!");
    w.run(&["up", "--yes"]);
    assert_eq!(w.object("two").unwrap()["value"], "v22");
    assert_eq!(w.outputs("item")["value"], "v22");

    // The import option adopts an existing object as it is.
    w.write_object(
        "pre",
        &json!({"key": "pre", "value": "existing", "description": "made by hand", "revision": 5}),
    );
    set("adopt", "pre");
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("imported"), "{up}");
    let adopted = w.resource("adopted").expect("adopted is in the state");
    assert_eq!(adopted["id"], "pre");
    assert_eq!(adopted["outputs"]["revision"], 5);
    assert_eq!(meta(&adopted["outputs"]), ("2".to_owned(), private_of(5)));
    assert_eq!(w.object("pre").unwrap()["revision"], 5, "not rewritten");

    // `converge import --out` in Python writes code that needs the
    // package's SDK, which a Terraform provider does not have: said before
    // anything is imported.
    let before = w.resources().len();
    let (out, text) = w.output(&[
        "import",
        "store:index/item:Item",
        "byhand",
        "seed",
        "--preview-only",
        "--out",
        "imported.py",
    ]);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("the project's Python cannot import pulumi_store"),
        "{text}"
    );
    assert_eq!(w.resources().len(), before, "a preview imports nothing");

    // Delete: out of the program, its object is deleted.
    w.run(&["config", "rm", "adopt"]);
    w.run(&["up", "--yes"]);
    assert_eq!(w.object_names(), ["seed", "two"]);
    assert!(w.resource("adopted").is_none());

    w.run(&["destroy", "--yes"]);
    assert_eq!(w.object_names(), ["seed"]);
    assert!(w.resources().is_empty());
}

/// A Python program whose store item names its text attribute by config
/// (`content` for 1.0.0, `value` for 2.0.0), and which, when config
/// `rule` is set, adds a `breaker` thing breaking that rule.
const UPGRADE_AND_RULES: &str = r#"import pulumi

config = pulumi.Config()
pulumi.CustomResource(
    "store:index/item:Item",
    "item",
    {"key": "doc", config.require("attribute"): "same text"},
)
rule = config.get("rule")
if rule:
    pulumi.CustomResource(
        "breaker:index/thing:Thing",
        "bad",
        {"name": "bad", "rule": rule, "value": "v"},
    )
"#;

#[test]
fn a_python_program_survives_a_schema_upgrade_and_gets_each_contract_error() {
    if !providers_available() {
        return;
    }
    let Some(venv) = python_venv() else { return };
    let w = TfWorld::python("tfpyrules", &venv, UPGRADE_AND_RULES, Mirror::HomePlugins);
    w.install(TestProvider::Store, "1.0.0");
    w.configure_directory("store");
    w.run(&["config", "set", "attribute", "content"]);
    w.run(&["up", "--yes"]);
    assert_eq!(meta(&w.outputs("item")).0, "1");
    assert_eq!(w.object("doc").unwrap()["content"], "same text");

    // 2.0.0 beside it: the state is upgraded (UpgradeResourceState), the
    // object kept, and the program follows the new schema.
    w.install(TestProvider::Store, "2.0.0");
    w.run(&["config", "set", "attribute", "value"]);
    let up = w.run(&["up", "--yes"]);
    assert!(!up.contains("replaced"), "{up}");
    let item = w.outputs("item");
    assert_eq!(meta(&item).0, "2");
    assert_eq!(item["value"], "same text");
    // Nothing to change: the object itself was not touched.
    assert_eq!(w.object("doc").unwrap()["content"], "same text");

    // Each broken rule is an error in the seeds' words, naming the
    // attribute; an object an apply made is tracked and destroyable.
    w.install(TestProvider::Breaker, "1.0.0");
    w.configure_directory("breaker");
    for (rule, words, attribute, created) in [
        (
            "plan_noncomputed",
            "planned value for a non-computed attribute",
            "attribute value",
            false,
        ),
        (
            "plan_unstable",
            "produced an inconsistent final plan",
            "attribute computedValue",
            false,
        ),
        (
            "apply_inconsistent",
            "produced an inconsistent result after apply",
            "attribute computedValue",
            true,
        ),
    ] {
        w.run(&["config", "set", "rule", rule]);
        let e = w.fails(&["up", "--yes"]);
        assert!(e.contains(words), "{rule}: {e}");
        assert!(e.contains(attribute), "{rule}: {e}");
        assert_eq!(w.object("bad").is_some(), created, "{rule}");
        assert_eq!(w.resource("bad").is_some(), created, "{rule}");
        if created {
            w.run(&["destroy", "--yes"]);
            assert!(w.object("bad").is_none());
            assert!(w.resource("bad").is_none());
            // Back to the upgraded store item for the next rule.
            w.run(&["config", "rm", "rule"]);
            w.run(&["up", "--yes"]);
        }
    }
}

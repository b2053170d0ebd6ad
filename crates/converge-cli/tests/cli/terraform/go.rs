//! The Go test provider (`gostore`, built with HashiCorp's go-plugin: its
//! own handshake, AutoMTLS with its P-521 certificate, protocols 5 and 6)
//! through the `converge` binary, from YAML and from Python: create,
//! update, replace, refresh with drift, import, a data source, delete,
//! schema upgrade; at each protocol version. Every command starts one
//! configured provider process, and every process ends through
//! go-plugin's `Shutdown` (its `exit` event), none killed, none left.

use converge_testkit::go_provider;
use serde_json::json;

use super::world::{is_secret, meta, python_venv, Mirror, TfWorld};

const ITEM: &str = "gostore:index/item:Item";

fn program(key: &str, value: &str) -> String {
    format!(
        "resources:
  item:
    type: gostore:Item
    properties:
      key: {key}
      value: {value}
variables:
  seeded:
    fn::invoke:
      function: gostore:index/getItem:getItem
      arguments:
        key: seed
outputs:
  size: ${{item.size}}
  revision: ${{item.revision}}
  seeded: ${{seeded.value}}
"
    )
}

/// A YAML world with gostore `version` installed, configured with the
/// objects' directory, serving only `protocol`, and the object `seed`.
fn world(name: &str, program: &str, version: &str, protocol: &str) -> TfWorld {
    let mut w = TfWorld::yaml(name, program);
    w.install_go(version);
    w.configure_directory(go_provider::TYPE);
    w.set_env(go_provider::PROTOCOLS_ENV, protocol);
    w.write_object(
        "seed",
        &json!({"key": "seed", "value": "seeded text", "revision": 1}),
    );
    w
}

/// Checks the processes the last commands started: each spoke `protocol`,
/// at most `configured` of them were configured per command, and every
/// one ended through Shutdown and is gone. Forgets the events.
pub(super) fn assert_processes(w: &TfWorld, protocol: &str) {
    let events = w.events();
    let started = events.pids("start");
    assert!(!started.is_empty(), "no provider process started");
    assert!(
        events.protocols().iter().all(|p| p == protocol),
        "a process spoke another protocol than {protocol}: {events:?}"
    );
    let exited = events.pids("exit");
    for pid in &started {
        assert!(
            exited.contains(pid),
            "provider process {pid} did not end through Shutdown: {events:?}"
        );
        assert!(gone(*pid), "provider process {pid} is still running");
    }
    w.clear_events();
}

/// The process is gone (or a zombie nobody reaped yet).
pub(super) fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn lifecycle(name: &str, protocol: &str) {
    if !go_provider::available() {
        return;
    }
    let w = world(name, &program("alpha", "hello"), "2.0.0", protocol);

    // Create, and the data source.
    let up = w.run(&["up", "--yes"]);
    assert!(!up.contains("warning"), "{up}");
    let alpha = w.object("alpha").expect("alpha.json was created");
    assert_eq!(alpha["value"], "hello");
    assert_eq!(alpha["revision"], 1);
    let outputs = w.stack_outputs();
    assert_eq!(outputs["size"], 5);
    assert_eq!(outputs["revision"], 1);
    assert_eq!(outputs["seeded"], "seeded text");
    let item = w.resource("item").expect("item is in the state");
    assert_eq!(item["id"], "alpha");
    assert_eq!(item["type"], ITEM);
    assert_eq!(meta(&item["outputs"]).0, "2");
    assert_processes(&w, protocol);

    // Update in place.
    w.set_yaml(&program("alpha", "hello world"));
    let preview = w.run(&["preview", "--diff"]);
    assert!(
        preview.contains(&format!("~  {ITEM} item update")),
        "{preview}"
    );
    w.run(&["up", "--yes"]);
    assert_eq!(w.object("alpha").unwrap()["revision"], 2);
    assert_eq!(w.outputs("item")["size"], 11);
    assert_processes(&w, protocol);

    // A new key replaces.
    w.set_yaml(&program("beta", "hello world"));
    let preview = w.run(&["preview", "--diff"]);
    assert!(
        preview.contains(&format!("+- {ITEM} item replace")),
        "{preview}"
    );
    w.run(&["up", "--yes"]);
    assert_eq!(w.object_names(), ["beta", "seed"]);
    assert_eq!(w.resource("item").unwrap()["id"], "beta");

    // Drift: refresh records it, up puts the value back.
    let mut edited = w.object("beta").unwrap();
    edited["value"] = json!("edited outside");
    w.write_object("beta", &edited);
    let refresh = w.run(&["refresh", "--yes"]);
    assert!(refresh.contains("[diff: ~value]"), "{refresh}");
    assert_eq!(w.outputs("item")["value"], "edited outside");
    w.run(&["up", "--yes"]);
    assert_eq!(w.object("beta").unwrap()["value"], "hello world");
    let preview = w.run(&["preview"]);
    assert!(!preview.contains("to update"), "{preview}");
    assert_processes(&w, protocol);

    // Import an object made by hand.
    w.write_object(
        "pre",
        &json!({"key": "pre", "value": "existing", "revision": 3}),
    );
    w.run(&["import", ITEM, "adopted", "pre", "--yes", "--protect=false"]);
    let adopted = w.resource("adopted").expect("adopted is in the state");
    assert_eq!(adopted["id"], "pre");
    assert_eq!(adopted["outputs"]["value"], "existing");
    assert_eq!(adopted["outputs"]["revision"], 3);
    assert_eq!(w.object("pre").unwrap()["revision"], 3);
    assert_processes(&w, protocol);

    // Destroy: every object the stack manages is gone.
    w.run(&["destroy", "--yes"]);
    assert_eq!(w.object_names(), ["seed"]);
    assert!(w.resources().is_empty());
    assert_processes(&w, protocol);
}

#[test]
fn a_go_provider_at_protocol_6_runs_the_whole_lifecycle() {
    lifecycle("golife6", "6");
}

#[test]
fn a_go_provider_at_protocol_5_runs_the_whole_lifecycle() {
    lifecycle("golife5", "5");
}

#[test]
fn a_go_provider_serving_both_protocols_is_driven_at_6() {
    if !go_provider::available() {
        return;
    }
    let w = world("goboth", &program("k", "v"), "2.0.0", "");
    w.run(&["up", "--yes"]);
    assert_eq!(w.object("k").unwrap()["value"], "v");
    assert_processes(&w, "6");
}

fn item(attribute: &str, text: &str) -> String {
    format!(
        "resources:
  item:
    type: gostore:Item
    properties:
      key: doc
      {attribute}: {text}
outputs:
  text: ${{item.{attribute}}}
"
    )
}

#[test]
fn a_go_provider_upgrades_state_of_its_earlier_schema() {
    if !go_provider::available() {
        return;
    }
    let w = world("goupgrade", &item("content", "same text"), "1.0.0", "5");
    w.run(&["up", "--yes"]);
    let doc = w.object("doc").unwrap();
    assert_eq!(meta(&w.outputs("item")).0, "1");
    assert_eq!(w.outputs("item")["content"], "same text");

    w.install_go("2.0.0");
    w.set_yaml(&item("value", "same text"));
    let preview = w.run(&["preview", "--diff"]);
    assert!(!preview.contains("to update"), "{preview}");
    assert!(!preview.contains("to replace"), "{preview}");
    w.run(&["up", "--yes"]);
    let v2 = w.outputs("item");
    assert_eq!(meta(&v2).0, "2");
    assert_eq!(v2["value"], "same text");
    assert_eq!(v2.get("content"), None, "{v2}");
    assert_eq!(w.object("doc").unwrap(), doc, "the object was not touched");
    assert_processes(&w, "5");
}

#[test]
fn a_python_program_drives_the_go_provider() {
    if !go_provider::available() {
        return;
    }
    let Some(venv) = python_venv() else { return };
    let program = r#"import pulumi

config = pulumi.Config()
item = pulumi.CustomResource(
    "gostore:index/item:Item",
    "item",
    {
        "key": config.require("key"),
        "value": config.require("value"),
        "note": pulumi.Output.secret("a private note"),
        "size": None,
        "revision": None,
    },
)
seeded = pulumi.runtime.invoke("gostore:index/getItem:getItem", {"key": "seed"})
pulumi.export("seeded", seeded.value["value"])
pulumi.export("size", item.size)
pulumi.export("revision", item.revision)
"#;
    for protocol in ["5", "6"] {
        let mut w = TfWorld::python(
            &format!("gopython{protocol}"),
            &venv,
            program,
            Mirror::PluginCacheDir,
        );
        w.secret("a private note");
        w.install_go("2.0.0");
        w.configure_directory(go_provider::TYPE);
        w.set_env(go_provider::PROTOCOLS_ENV, protocol);
        w.write_object(
            "seed",
            &json!({"key": "seed", "value": "seeded", "revision": 1}),
        );
        w.run(&["config", "set", "key", "one"]);
        w.run(&["config", "set", "value", "v1"]);
        w.run(&["up", "--yes"]);
        assert_eq!(w.object("one").unwrap()["note"], "a private note");
        let outputs = w.stack_outputs();
        assert_eq!(outputs["seeded"], "seeded");
        assert_eq!(outputs["size"], 2);
        assert!(is_secret(&w.resource("item").unwrap()["outputs"]["note"]));

        w.run(&["config", "set", "value", "v22"]);
        w.run(&["up", "--yes"]);
        assert_eq!(w.object("one").unwrap()["revision"], 2);
        assert_eq!(w.stack_outputs()["size"], 3);

        w.run(&["config", "set", "key", "two"]);
        w.run(&["up", "--yes"]);
        assert_eq!(w.object_names(), ["seed", "two"]);

        w.run(&["destroy", "--yes"]);
        assert_eq!(w.object_names(), ["seed"]);
        assert_processes(&w, protocol);
    }
}

#[test]
fn a_provider_speaking_another_protocol_is_named_with_the_versions() {
    if !go_provider::available() {
        return;
    }
    let w = world("goproto4", &program("k", "v"), "2.0.0", "4");
    let out = w.fails(&["up", "--yes"]);
    let line = out
        .lines()
        .find(|l| l.contains("speaks plugin protocol 4"))
        .unwrap_or_else(|| panic!("no protocol error:\n{out}"));
    assert!(line.contains("and Converge speaks 5 and 6"), "{line}");
    assert!(!out.contains("bad handshake line"), "{out}");
    assert!(
        !out.contains("|grpc|"),
        "the handshake line is not dumped: {out}"
    );
    assert_eq!(w.object_names(), ["seed"]);
}

/// Twenty resources of one provider: each command (up with its preview,
/// preview, refresh, destroy) starts one configured provider process and
/// the unconfigured one that answers schema and validation; all of them
/// end through Shutdown.
#[test]
fn twenty_resources_share_one_configured_process_per_command() {
    if !go_provider::available() {
        return;
    }
    let mut body = String::from("resources:\n");
    for i in 0..20 {
        body.push_str(&format!(
            "  item{i}:\n    type: gostore:Item\n    properties:\n      key: k{i}\n      value: v{i}\n"
        ));
    }
    let w = world("gotwenty", &body, "2.0.0", "");
    let check = |args: &[&str]| {
        w.run(args);
        let events = w.events();
        assert_eq!(
            events.pids("configure").len(),
            1,
            "converge {args:?}: one configured process: {events:?}"
        );
        assert_eq!(
            events.pids("start").len(),
            2,
            "converge {args:?}: the configured process and the schema connection: {events:?}"
        );
        assert_processes(&w, "6");
    };
    check(&["up", "--yes"]);
    assert_eq!(w.object_names().len(), 21);
    check(&["preview"]);
    check(&["refresh", "--yes"]);
    check(&["up", "--yes"]);
    check(&["destroy", "--yes"]);
    assert_eq!(w.object_names(), ["seed"]);
}

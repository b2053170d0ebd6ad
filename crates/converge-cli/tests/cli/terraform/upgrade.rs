//! State across provider releases and provider private data, end to end:
//! an object created by `store` 1.0.0 (schema version 1, its text in
//! `content`) is used by 2.0.0 (schema version 2, `value`) through
//! `UpgradeResourceState`, kept rather than replaced; 2.0.0's private data
//! (an etag it checks on every call) survives in state across updates and
//! refreshes.

use converge_testkit::terraform_mirror::TestProvider;
use serde_json::json;

use super::world::{meta, providers_available, TfWorld};
use super::yaml::private_of;

fn item(attribute: &str, text: &str) -> String {
    format!(
        "resources:
  item:
    type: store:Item
    properties:
      key: doc
      {attribute}: {text}
outputs:
  text: ${{item.{attribute}}}
  revision: ${{item.revision}}
"
    )
}

#[test]
fn state_written_by_schema_version_1_is_upgraded_and_the_object_kept() {
    if !providers_available() {
        return;
    }
    let w = TfWorld::yaml("tfupgrade", &item("content", "same text"));
    w.install(TestProvider::Store, "1.0.0");
    w.configure_directory("store");
    w.run(&["up", "--yes"]);
    let doc = w.object("doc").unwrap();
    assert_eq!(doc["content"], "same text");
    assert_eq!(doc.get("value"), None);
    let v1 = w.outputs("item");
    assert_eq!(meta(&v1), ("1".to_owned(), None));
    assert_eq!(v1["content"], "same text");

    // 2.0.0 is installed beside 1.0.0 (the newest is used), and the
    // program follows its schema: the same text, now in `value`.
    w.install(TestProvider::Store, "2.0.0");
    w.set_yaml(&item("value", "same text"));
    let preview = w.run(&["preview", "--diff"]);
    assert!(!preview.contains("to update"), "{preview}");
    assert!(!preview.contains("to replace"), "{preview}");
    assert!(preview.contains("2 unchanged"), "{preview}");

    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("2 unchanged"), "{up}");
    // The upgraded state is recorded: schema version 2, `value`, no
    // `content`; the program sees it.
    let v2 = w.resource("item").unwrap();
    assert_eq!(v2["id"], "doc");
    assert_eq!(meta(&v2["outputs"]).0, "2");
    assert_eq!(v2["outputs"]["value"], "same text");
    assert_eq!(v2["outputs"].get("content"), None, "{v2}");
    assert_eq!(v2["outputs"]["revision"], 1);
    assert_eq!(w.stack_outputs()["text"], "same text");
    // The object was neither replaced nor rewritten.
    assert_eq!(w.object("doc").unwrap(), doc);
    assert_eq!(w.object_names(), ["doc"]);

    // A change now goes through 2.0.0: an update in place.
    w.set_yaml(&item("value", "new text"));
    w.run(&["up", "--yes"]);
    let doc = w.object("doc").unwrap();
    assert_eq!(doc["value"], "new text");
    assert_eq!(doc["revision"], 2);
    let outputs = w.outputs("item");
    assert_eq!(meta(&outputs), ("2".to_owned(), private_of(2)));

    // Back to 1.0.0 alone (and a program for its schema): state of schema
    // version 2 is refused, naming the resource and the versions.
    w.uninstall(TestProvider::Store, "2.0.0");
    w.set_yaml(&item("content", "new text"));
    let refused = w.fails(&["preview"]);
    assert!(
        refused.contains("could not upgrade its state from schema version 2 to 1"),
        "{refused}"
    );
    assert!(refused.contains("store:index/item:Item::item"), "{refused}");
    assert_eq!(w.outputs("item"), outputs, "the state is unchanged");
}

#[test]
fn private_data_survives_updates_and_refreshes() {
    if !providers_available() {
        return;
    }
    let w = TfWorld::yaml("tfprivate", &item("value", "one"));
    w.install(TestProvider::Store, "2.0.0");
    w.configure_directory("store");

    w.run(&["up", "--yes"]);
    assert_eq!(meta(&w.outputs("item")), ("2".to_owned(), private_of(1)));

    w.set_yaml(&item("value", "two"));
    w.run(&["up", "--yes"]);
    assert_eq!(meta(&w.outputs("item")), ("2".to_owned(), private_of(2)));

    // The provider fails any call whose private data is not the object's
    // last etag: a refresh and an update still work.
    w.run(&["refresh", "--yes"]);
    assert_eq!(meta(&w.outputs("item")), ("2".to_owned(), private_of(2)));
    w.set_yaml(&item("value", "three"));
    w.run(&["up", "--yes"]);
    assert_eq!(w.object("doc").unwrap()["revision"], 3);
    assert_eq!(meta(&w.outputs("item")), ("2".to_owned(), private_of(3)));

    // Someone else writes the object (a new revision): the etag in state
    // no longer matches, and the provider says so.
    let mut doc = w.object("doc").unwrap();
    doc["revision"] = json!(7);
    w.write_object("doc", &doc);
    let before = w.outputs("item");
    w.set_yaml(&item("value", "four"));
    let lost = w.fails(&["up", "--yes"]);
    assert!(lost.contains("private data lost"), "{lost}");
    assert_eq!(w.outputs("item"), before, "the state is unchanged");
    assert_eq!(w.object("doc").unwrap()["value"], "three");
}

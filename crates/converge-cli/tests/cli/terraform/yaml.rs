//! A YAML program with `store` 2.0.0: its resource `store_item` as the
//! short token `store:Item`, the provider configured from stack config
//! (a directory, and a secret token), the data source `store_item` as the
//! function `store:index/getItem:getItem`.

use std::io::{Read, Write};
use std::process::Stdio;

use converge_testkit::terraform_mirror::TestProvider;
use serde_json::json;
use sha2::Digest;

use super::world::{is_secret, meta, providers_available, TfWorld};

const SECRET: &str = "secret-value-6b1d";
const TOKEN: &str = "provider-token-93ae";
const ITEM: &str = "store:index/item:Item";

/// The private data store 2.0.0 gives an object at `revision`, as
/// `__meta` records it (base64 of `{"etag":"rN"}`).
pub(crate) fn private_of(revision: u64) -> Option<String> {
    use base64::Engine as _;
    Some(base64::engine::general_purpose::STANDARD.encode(format!("{{\"etag\":\"r{revision}\"}}")))
}

/// A program with one item (`key`, `value`, the secret) and a data source
/// reading the pre-existing object `seed`.
fn program(key: &str, value: &str) -> String {
    format!(
        "resources:
  item:
    type: store:Item
    properties:
      key: {key}
      value: {value}
      secretValue:
        fn::secret: {SECRET}
variables:
  seeded:
    fn::invoke:
      function: store:index/getItem:getItem
      arguments:
        key: seed
  short:
    fn::store:getItem:
      key: seed
outputs:
  size: ${{item.size}}
  revision: ${{item.revision}}
  description: ${{item.description}}
  seededValue: ${{seeded.value}}
  seededDescription: ${{seeded.description}}
  shortValue: ${{short.value}}
"
    )
}

/// A world with store 2.0.0 installed and configured (directory, secret
/// token), the object `seed` in place and `program` as the program.
fn world(name: &str, program: &str) -> TfWorld {
    let mut w = TfWorld::yaml(name, program);
    w.secret(SECRET);
    w.secret(TOKEN);
    w.install(TestProvider::Store, "2.0.0");
    w.configure_directory("store");
    w.run(&["config", "set", "--secret", "store:token", TOKEN]);
    w.write_object(
        "seed",
        &json!({"key": "seed", "value": "seeded text", "description": "made by the test", "revision": 1}),
    );
    w
}

#[test]
fn create_update_replace_and_destroy_an_item() {
    if !providers_available() {
        return;
    }
    let w = world("tfyaml", &program("alpha", "hello"));

    // Create: the object exists, its outputs are in the stack outputs and
    // the state; the provider got the token (only its hash reaches the
    // object) and the secret value.
    let up = w.run(&["up", "--yes"]);
    assert!(!up.contains("warning"), "{up}");
    let alpha = w.object("alpha").expect("alpha.json was created");
    assert_eq!(alpha["value"], "hello");
    assert_eq!(alpha["revision"], 1);
    assert_eq!(alpha["description"], "managed by store");
    assert_eq!(alpha["secret_value"], SECRET);
    assert_eq!(
        alpha["token_hash"],
        hex::encode(sha2::Sha256::digest(TOKEN.as_bytes()))
    );
    assert_eq!(w.object_names(), ["alpha", "seed"]);
    let outputs = w.stack_outputs();
    assert_eq!(outputs["size"], 5);
    assert_eq!(outputs["revision"], 1);
    assert_eq!(outputs["description"], "managed by store");
    assert_eq!(outputs["seededValue"], "seeded text");
    assert_eq!(outputs["seededDescription"], "made by the test");
    assert_eq!(outputs["shortValue"], "seeded text");
    let item = w.resource("item").expect("item is in the state");
    assert_eq!(item["id"], "alpha");
    assert_eq!(item["type"], ITEM);
    assert_eq!(item["outputs"]["value"], "hello");
    assert_eq!(item["outputs"]["size"], 5);
    assert_eq!(item["outputs"]["revision"], 1);
    assert!(is_secret(&item["inputs"]["secretValue"]), "{item}");
    assert!(is_secret(&item["outputs"]["secretValue"]), "{item}");
    assert_eq!(meta(&item["outputs"]), ("2".to_owned(), private_of(1)));
    let provider = w
        .resources()
        .into_iter()
        .find(|r| r["type"] == "pulumi:providers:store")
        .expect("the default provider is in the state");
    assert!(is_secret(&provider["inputs"]["token"]), "{provider}");

    // Update in place: the same object, a new revision.
    w.set_yaml(&program("alpha", "hello world"));
    let preview = w.run(&["preview", "--diff"]);
    assert!(
        preview.contains("~  store:index/item:Item item update"),
        "{preview}"
    );
    assert!(
        preview.contains(r#"~ value: "hello" => "hello world""#),
        "{preview}"
    );
    let up = w.run(&["up", "--yes"]);
    assert!(!up.contains("warning"), "{up}");
    let alpha = w.object("alpha").unwrap();
    assert_eq!(alpha["value"], "hello world");
    assert_eq!(alpha["revision"], 2);
    assert_eq!(w.object_names(), ["alpha", "seed"]);
    let item = w.outputs("item");
    assert_eq!(item["revision"], 2);
    assert_eq!(item["size"], 11);
    assert_eq!(meta(&item), ("2".to_owned(), private_of(2)));
    assert_eq!(w.stack_outputs()["revision"], 2);

    // A new key requires replacement: a new object, the old one gone.
    w.set_yaml(&program("beta", "hello world"));
    let preview = w.run(&["preview", "--diff"]);
    assert!(
        preview.contains("+- store:index/item:Item item replace"),
        "{preview}"
    );
    assert!(
        preview.contains("(replaced because of changes to: key)"),
        "{preview}"
    );
    let up = w.run(&["up", "--yes"]);
    assert!(!up.contains("warning"), "{up}");
    assert_eq!(w.object_names(), ["beta", "seed"]);
    assert_eq!(w.object("beta").unwrap()["revision"], 1);
    let item = w.resource("item").unwrap();
    assert_eq!(item["id"], "beta");
    assert_eq!(item["outputs"]["key"], "beta");
    assert_eq!(meta(&item["outputs"]), ("2".to_owned(), private_of(1)));

    // Nothing left to do.
    let preview = w.run(&["preview"]);
    assert!(!preview.contains("to update"), "{preview}");
    assert!(!preview.contains("to replace"), "{preview}");

    // Destroy: every object the stack made is gone, the stack is empty.
    w.run(&["destroy", "--yes"]);
    assert_eq!(w.object_names(), ["seed"]);
    assert!(w.resources().is_empty(), "{:?}", w.resources());
}

#[test]
fn refresh_records_drift_and_up_puts_the_value_back() {
    if !providers_available() {
        return;
    }
    let w = world("tfdrift", &program("gamma", "as written"));
    w.run(&["up", "--yes"]);

    // Someone edits the object.
    let mut edited = w.object("gamma").unwrap();
    edited["value"] = json!("edited outside");
    w.write_object("gamma", &edited);

    let refresh = w.run(&["refresh", "--yes"]);
    // A slow step's line also shows its duration, as in `refreshed (1s)`.
    assert!(
        refresh
            .lines()
            .any(|l| l.contains("store:index/item:Item item refreshed")
                && l.ends_with("[diff: ~value]")),
        "{refresh}"
    );
    let item = w.resource("item").unwrap();
    assert_eq!(item["outputs"]["value"], "edited outside");
    assert_eq!(item["outputs"]["size"], 14);
    // The program's inputs are kept.
    assert_eq!(item["inputs"]["value"], "as written");
    // The private data still matches the object (the provider checks it).
    assert_eq!(meta(&item["outputs"]), ("2".to_owned(), private_of(1)));

    let preview = w.run(&["preview", "--diff"]);
    assert!(
        preview.contains("~  store:index/item:Item item update"),
        "{preview}"
    );
    assert!(preview.contains("~ value"), "{preview}");
    assert_eq!(w.object("gamma").unwrap()["value"], "edited outside");

    w.run(&["up", "--yes"]);
    let gamma = w.object("gamma").unwrap();
    assert_eq!(gamma["value"], "as written");
    assert_eq!(gamma["revision"], 2);
    assert_eq!(w.outputs("item")["value"], "as written");
    let preview = w.run(&["preview"]);
    assert!(!preview.contains("to update"), "{preview}");
}

#[test]
fn import_adopts_an_existing_object_and_its_code_previews_clean() {
    if !providers_available() {
        return;
    }
    let w = world("tfimport", "");
    w.write_object(
        "pre",
        &json!({"key": "pre", "value": "existing", "tags": {"team": "a"},
                "description": "made by hand", "revision": 3}),
    );

    // An ID naming no object fails, naming it, and changes nothing.
    let missing = w.fails(&["import", ITEM, "ghost", "nothere", "--yes"]);
    assert!(missing.contains("nothere"), "{missing}");
    assert!(missing.contains("does not exist"), "{missing}");
    assert!(w.resource("ghost").is_none());

    let generated = w.scratch.dir.path().join("generated.yaml");
    let generated_arg = generated.display().to_string();
    w.run(&[
        "import",
        ITEM,
        "adopted",
        "pre",
        "--yes",
        "--protect=false",
        "--out",
        &generated_arg,
    ]);
    let adopted = w.resource("adopted").expect("adopted is in the state");
    assert_eq!(adopted["id"], "pre");
    assert_eq!(adopted["type"], ITEM);
    assert_eq!(adopted["outputs"]["value"], "existing");
    assert_eq!(adopted["outputs"]["revision"], 3);
    assert_eq!(adopted["outputs"]["tags"], json!({"team": "a"}));
    assert_eq!(
        adopted["inputs"],
        json!({"key": "pre", "value": "existing", "tags": {"team": "a"},
               "description": "made by hand"})
    );
    // ImportResourceState + ReadResource: the private data the provider
    // gave the imported object, kept for its next call.
    assert_eq!(meta(&adopted["outputs"]), ("2".to_owned(), private_of(3)));
    // Importing changed nothing in the object.
    assert_eq!(w.object("pre").unwrap()["revision"], 3);

    // The generated program previews with no changes.
    let code = std::fs::read_to_string(&generated).unwrap();
    assert!(code.contains("type: store:index/item:Item"), "{code}");
    w.set_yaml(&code);
    let preview = w.run(&["preview", "--diff"]);
    assert!(!preview.contains("to update"), "{preview}");
    assert!(!preview.contains("to replace"), "{preview}");
    assert!(!preview.contains("to create"), "{preview}");

    // Managed from now on: an update, then a destroy deletes it.
    w.set_yaml(&code.replace("value: existing", "value: changed"));
    w.run(&["up", "--yes"]);
    let pre = w.object("pre").unwrap();
    assert_eq!(pre["value"], "changed");
    assert_eq!(pre["revision"], 4);
    w.run(&["destroy", "--yes"]);
    assert_eq!(w.object_names(), ["seed"]);
}

/// An explicit provider resource: its own configuration (directory,
/// secret token) rather than the stack's, for resources and an invoke.
#[test]
fn an_explicit_provider_resource_configures_its_own_provider() {
    if !providers_available() {
        return;
    }
    const OWN_TOKEN: &str = "explicit-token-4f2e";
    let program = |value: &str, w: &TfWorld| {
        format!(
            "resources:
  own:
    type: pulumi:providers:store
    properties:
      directory: {dir}
      token:
        fn::secret: {OWN_TOKEN}
  item:
    type: store:Item
    properties:
      key: mine
      value: {value}
    options:
      provider: ${{own}}
variables:
  read:
    fn::invoke:
      function: store:getItem
      arguments:
        key: seed
      options:
        provider: ${{own}}
outputs:
  read: ${{read.value}}
",
            dir = w.scratch.dir.path().join("own").display()
        )
    };
    // The stack's configuration names another directory.
    let mut w = world("tfexplicit", "");
    w.secret(OWN_TOKEN);
    let own = w.scratch.dir.path().join("own");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(
        own.join("seed.json"),
        json!({"key": "seed", "value": "own seed"}).to_string(),
    )
    .unwrap();
    w.set_yaml(&program("first", &w));
    w.run(&["up", "--yes"]);
    let mine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(own.join("mine.json")).unwrap()).unwrap();
    assert_eq!(mine["value"], "first");
    assert_eq!(
        mine["token_hash"],
        hex::encode(sha2::Sha256::digest(OWN_TOKEN.as_bytes()))
    );
    assert_eq!(
        w.object_names(),
        ["seed"],
        "nothing in the stack's directory"
    );
    assert_eq!(w.stack_outputs()["read"], "own seed");
    let item = w.resource("item").unwrap();
    assert!(
        item["provider"]
            .as_str()
            .unwrap()
            .starts_with("urn:pulumi:dev::tfexplicit::pulumi:providers:store::own::"),
        "{item}"
    );

    w.set_yaml(&program("second", &w));
    w.run(&["up", "--yes"]);
    let mine: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(own.join("mine.json")).unwrap()).unwrap();
    assert_eq!(mine["value"], "second");
    assert_eq!(mine["revision"], 2);

    w.run(&["destroy", "--yes"]);
    assert!(!own.join("mine.json").exists());
    assert!(w.resources().is_empty());
}

/// The journal, read while the update is paused: the data source's object
/// is a named pipe, which the provider's read blocks on until the test
/// writes it. By then the item before it (whose key the data source
/// reads) is created and journaled.
#[test]
fn the_journal_never_holds_a_secret_in_plaintext() {
    if !providers_available() {
        return;
    }
    let w = world(
        "tfjournal",
        &format!(
            "resources:
  item:
    type: store:Item
    properties:
      key: first
      value: v
      description: pause
      secretValue:
        fn::secret: {SECRET}
variables:
  peek:
    fn::invoke:
      function: store:index/getItem:getItem
      arguments:
        key: ${{item.description}}
outputs:
  peeked: ${{peek.value}}
"
        ),
    );
    let pipe = w.objects.join("pause.json");
    let status = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo failed");

    let journal = w.journal_path();
    let writer = {
        let pipe = pipe.clone();
        std::thread::spawn(move || {
            // Opening for writing waits for the provider to open it for
            // reading; it then waits for what is written.
            let mut f = std::fs::OpenOptions::new().write(true).open(&pipe).unwrap();
            let journaled = std::fs::read_to_string(&journal).ok();
            f.write_all(br#"{"key": "pause", "value": "unpaused"}"#)
                .unwrap();
            journaled
        })
    };
    // No preview: the data source would read the pipe there too.
    let mut child = w
        .cmd(&["up", "--yes", "--skip-preview"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let status = child.wait().unwrap();
    if !writer.is_finished() {
        // converge ended without reading the pipe: release the writer.
        drop(std::fs::File::open(&pipe));
    }
    let journaled = writer.join().unwrap();
    assert!(status.success(), "converge up failed:\n{text}");
    assert!(!text.contains(SECRET) && !text.contains(TOKEN), "{text}");
    let journaled = journaled.expect("the journal existed while the update was paused");
    assert!(
        journaled.contains("store:index/item:Item::item"),
        "the journal does not hold the item yet:\n{journaled}"
    );
    assert!(journaled.contains("ciphertext"), "{journaled}");
    assert!(!journaled.contains(SECRET), "{journaled}");
    assert!(!journaled.contains(TOKEN), "{journaled}");
    assert_eq!(w.stack_outputs()["peeked"], "unpaused");
    w.assert_no_plaintext_secrets();
}

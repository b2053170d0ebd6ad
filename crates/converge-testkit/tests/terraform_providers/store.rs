//! terraform-provider-store 1.0.0 and 2.0.0 over the real protocol.

use std::path::Path;

use converge_model::PropertyValue;
use converge_testkit::terraform_mirror::TestProvider;
use serde_json::json;
use sha2::Digest;

use crate::session::{error_attribute, errors, get, pv, with, Session};

const ITEM: &str = "store_item";
const NULL: &PropertyValue = &PropertyValue::Null;

fn etag(revision: u32) -> Vec<u8> {
    format!(r#"{{"etag":"r{revision}"}}"#).into_bytes()
}

fn object_file(dir: &Path, key: &str) -> Option<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join(format!("{key}.json"))).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// A model value as the JSON Terraform stores a state in (numbers as
/// floats, as a client holding f64s writes them).
fn to_json(value: &PropertyValue) -> serde_json::Value {
    match value {
        PropertyValue::Null => serde_json::Value::Null,
        PropertyValue::Bool(b) => json!(b),
        PropertyValue::Number(n) => json!(n),
        PropertyValue::String(s) => json!(s),
        PropertyValue::Array(items) => items.iter().map(to_json).collect(),
        PropertyValue::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), to_json(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => panic!("no JSON for {other:?}"),
    }
}

/// (name, type JSON, required, optional, computed, sensitive) of each
/// attribute of a block.
fn flags(
    block: &converge_proto::tfplugin6::schema::Block,
) -> Vec<(String, String, bool, bool, bool, bool)> {
    block
        .attributes
        .iter()
        .map(|a| {
            (
                a.name.clone(),
                String::from_utf8(a.r#type.clone()).unwrap(),
                a.required,
                a.optional,
                a.computed,
                a.sensitive,
            )
        })
        .collect()
}

fn flag_rows(
    rows: &[(&str, &str, bool, bool, bool, bool)],
) -> Vec<(String, String, bool, bool, bool, bool)> {
    rows.iter()
        .map(|&(n, t, r, o, c, s)| (n.to_owned(), t.to_owned(), r, o, c, s))
        .collect()
}

#[tokio::test]
async fn the_schemas_of_both_releases() {
    let Some(v1) = Session::start(TestProvider::Store, "1.0.0", &[]).await else {
        return;
    };
    let v2 = Session::start(TestProvider::Store, "2.0.0", &[])
        .await
        .unwrap();
    assert_eq!(v1.resource_version(ITEM), 1);
    assert_eq!(v2.resource_version(ITEM), 2);
    let string = r#""string""#;
    let common = [
        ("id", string, false, false, true, false),
        ("key", string, true, false, false, false),
    ];
    let tail = [
        ("tags", r#"["map","string"]"#, false, true, false, false),
        ("description", string, false, true, true, false),
        ("size", r#""number""#, false, false, true, false),
        ("revision", r#""number""#, false, false, true, false),
    ];
    let mut expected_v1 = common.to_vec();
    expected_v1.push(("content", string, true, false, false, false));
    expected_v1.extend(tail);
    assert_eq!(flags(v1.resource_block(ITEM)), flag_rows(&expected_v1));
    let mut expected_v2 = common.to_vec();
    expected_v2.push(("value", string, true, false, false, false));
    expected_v2.extend(tail);
    expected_v2.push(("secret_value", string, false, true, false, true));
    assert_eq!(flags(v2.resource_block(ITEM)), flag_rows(&expected_v2));

    for session in [&v1, &v2] {
        let provider = session
            .schema
            .provider
            .as_ref()
            .unwrap()
            .block
            .as_ref()
            .unwrap();
        assert_eq!(
            flags(provider),
            flag_rows(&[
                ("directory", string, false, true, false, false),
                ("token", string, false, true, false, true),
            ])
        );
        let data = session.schema.data_source_schemas[ITEM]
            .block
            .as_ref()
            .unwrap();
        assert_eq!(
            flags(data),
            flag_rows(&[
                ("key", string, true, false, false, false),
                ("value", string, false, false, true, false),
                ("tags", r#"["map","string"]"#, false, false, true, false),
                ("description", string, false, false, true, false),
            ])
        );
    }
    v1.shutdown().await;
    v2.shutdown().await;
}

#[tokio::test]
async fn metadata_lists_the_types_and_stop_provider_does_not_end_the_process() {
    let Some(mut store) = Session::start(TestProvider::Store, "2.0.0", &[]).await else {
        return;
    };
    assert_eq!(
        store.metadata().await,
        (vec![ITEM.to_owned()], vec![ITEM.to_owned()])
    );
    assert_eq!(store.stop_provider().await, "");
    // Still serving: StopProvider cancels operations, Shutdown ends the process.
    assert_eq!(store.metadata().await.0, [ITEM]);
    store.shutdown().await;
}

#[tokio::test]
async fn create_read_drift_update_replace_import_and_delete_with_private_data() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut store) = Session::start(TestProvider::Store, "2.0.0", &[]).await else {
        return;
    };
    let configured = store
        .configure(json!({"directory": objects.path(), "token": "hunter2"}))
        .await;
    assert_eq!(errors(&configured), Vec::<String>::new());

    // Create: size and revision known at plan time.
    let config = pv(
        json!({"key": "alpha", "value": "hello", "tags": {"team": "a"}, "secret_value": "s3cret"}),
    );
    let unknown_value = store
        .plan(
            ITEM,
            NULL,
            &with(&config, "value", PropertyValue::Unknown),
            b"",
        )
        .await;
    assert_eq!(get(&unknown_value.state, "size"), &PropertyValue::Unknown);
    assert_eq!(get(&unknown_value.state, "revision"), &pv(json!(1)));
    let (planned, created) = store.plan_and_apply(ITEM, NULL, &config, b"").await;
    let expected = pv(json!({
        "id": "alpha", "key": "alpha", "value": "hello", "tags": {"team": "a"},
        "description": "managed by store", "size": 5, "revision": 1, "secret_value": "s3cret",
    }));
    assert_eq!(planned.state, expected);
    assert!(planned.requires_replace.is_empty());
    assert_eq!(errors(&created.diagnostics), Vec::<String>::new());
    assert_eq!(created.state, expected);
    assert_eq!(created.private, etag(1));
    let file = object_file(objects.path(), "alpha").unwrap();
    assert_eq!(file["value"], "hello");
    assert_eq!(file["revision"], 1);
    assert_eq!(
        file["token_hash"],
        hex::encode(sha2::Sha256::digest(b"hunter2")).as_str()
    );
    let file_text = std::fs::read_to_string(objects.path().join("alpha.json")).unwrap();
    assert!(!file_text.contains("hunter2"), "{file_text}");

    // Read hands back the private data it was given; a plan that changes
    // nothing keeps the revision.
    let read = store.read(ITEM, &created.state, &created.private).await;
    assert_eq!((&read.state, &read.private), (&expected, &etag(1)));
    let same = store.plan(ITEM, &read.state, &config, &read.private).await;
    assert_eq!(same.state, expected);
    assert_eq!(same.private, etag(1));

    // Drift: the file's value edited behind the provider's back.
    let mut drifted = file.clone();
    drifted["value"] = json!("drifted");
    std::fs::write(objects.path().join("alpha.json"), drifted.to_string()).unwrap();
    let refreshed = store.read(ITEM, &created.state, &created.private).await;
    assert_eq!(get(&refreshed.state, "value"), &pv(json!("drifted")));
    assert_eq!(get(&refreshed.state, "size"), &pv(json!(7)));

    // Update: the revision is unknown in the plan and bumped by the apply.
    let config = with(&config, "value", pv(json!("bye")));
    let update = store
        .plan(ITEM, &refreshed.state, &config, &refreshed.private)
        .await;
    assert_eq!(errors(&update.diagnostics), Vec::<String>::new());
    assert_eq!(get(&update.state, "revision"), &PropertyValue::Unknown);
    assert_eq!(get(&update.state, "size"), &pv(json!(3)));
    assert!(update.requires_replace.is_empty());
    assert_eq!(update.private, etag(1));
    let updated = store
        .apply(
            ITEM,
            &refreshed.state,
            &update.state,
            &config,
            &update.private,
        )
        .await;
    assert_eq!(errors(&updated.diagnostics), Vec::<String>::new());
    assert_eq!(get(&updated.state, "revision"), &pv(json!(2)));
    assert_eq!(get(&updated.state, "value"), &pv(json!("bye")));
    assert_eq!(updated.private, etag(2));
    assert_eq!(object_file(objects.path(), "alpha").unwrap()["revision"], 2);

    // A new key replaces the item; creating one that exists is refused.
    let rekeyed = with(&config, "key", pv(json!("beta")));
    let replace = store
        .plan(ITEM, &updated.state, &rekeyed, &updated.private)
        .await;
    assert_eq!(replace.requires_replace, ["key"]);
    let again = store.plan(ITEM, NULL, &config, b"").await;
    let duplicate = store.apply(ITEM, NULL, &again.state, &config, b"").await;
    assert_eq!(
        errors(&duplicate.diagnostics),
        ["store_item alpha already exists; import it"]
    );

    // Import: a stub, then a read that fills it in with fresh private data.
    let (imported, diagnostics) = store.import(ITEM, "alpha").await;
    assert_eq!(errors(&diagnostics), Vec::<String>::new());
    assert_eq!(imported.len(), 1);
    let (type_name, stub, private) = &imported[0];
    assert_eq!(type_name, ITEM);
    assert_eq!(get(stub, "id"), &pv(json!("alpha")));
    assert_eq!(get(stub, "key"), &pv(json!("alpha")));
    assert_eq!(get(stub, "value"), NULL);
    assert!(private.is_empty());
    let filled = store.read(ITEM, stub, private).await;
    assert_eq!(errors(&filled.diagnostics), Vec::<String>::new());
    assert_eq!(filled.state, updated.state);
    assert_eq!(filled.private, etag(2));
    let (_, missing) = store.import(ITEM, "nope").await;
    assert_eq!(
        errors(&missing),
        ["cannot import store_item nope: it does not exist"]
    );

    // Delete, planned and applied; then the object is gone.
    let delete = store.plan(ITEM, &filled.state, NULL, &filled.private).await;
    assert_eq!(errors(&delete.diagnostics), Vec::<String>::new());
    assert_eq!(delete.state, PropertyValue::Null);
    assert_eq!(delete.private, etag(2));
    let deleted = store
        .apply(ITEM, &filled.state, NULL, NULL, &delete.private)
        .await;
    assert_eq!(errors(&deleted.diagnostics), Vec::<String>::new());
    assert_eq!(deleted.state, PropertyValue::Null);
    assert!(object_file(objects.path(), "alpha").is_none());
    let gone = store.read(ITEM, &filled.state, &filled.private).await;
    assert_eq!(gone.state, PropertyValue::Null);
    store.shutdown().await;
}

#[tokio::test]
async fn lost_or_stale_private_data_is_an_error_in_plan_apply_and_read() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut store) = Session::start(TestProvider::Store, "2.0.0", &[]).await else {
        return;
    };
    store.configure(json!({"directory": objects.path()})).await;
    let config = pv(json!({"key": "k", "value": "v"}));
    let (_, created) = store.plan_and_apply(ITEM, NULL, &config, b"").await;
    assert_eq!(created.private, etag(1));
    let lost = "store_item k: private data lost (expected etag r1, got nothing)";

    let changed = with(&config, "value", pv(json!("w")));
    let plan = store.plan(ITEM, &created.state, &changed, b"").await;
    assert_eq!(errors(&plan.diagnostics), [lost]);
    let stale = store
        .plan(ITEM, &created.state, &changed, br#"{"etag":"r0"}"#)
        .await;
    assert_eq!(
        errors(&stale.diagnostics),
        [r#"store_item k: private data lost (expected etag r1, got '{"etag":"r0"}')"#]
    );

    let good = store
        .plan(ITEM, &created.state, &changed, &created.private)
        .await;
    let apply = store
        .apply(ITEM, &created.state, &good.state, &changed, b"")
        .await;
    assert_eq!(errors(&apply.diagnostics), [lost]);
    assert_eq!(object_file(objects.path(), "k").unwrap()["value"], "v");

    let read = store.read(ITEM, &created.state, b"").await;
    assert_eq!(errors(&read.diagnostics), [lost]);

    let delete = store.apply(ITEM, &created.state, NULL, NULL, b"").await;
    assert_eq!(errors(&delete.diagnostics), [lost]);
    assert!(object_file(objects.path(), "k").is_some(), "not deleted");
    store.shutdown().await;
}

#[tokio::test]
async fn state_of_1_0_0_upgrades_to_2_0_0() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut v1) = Session::start(TestProvider::Store, "1.0.0", &[]).await else {
        return;
    };
    v1.configure(json!({"directory": objects.path()})).await;
    let config = pv(json!({"key": "old", "content": "abc", "description": "kept"}));
    let (_, created) = v1.plan_and_apply(ITEM, NULL, &config, b"").await;
    assert_eq!(errors(&created.diagnostics), Vec::<String>::new());
    assert!(created.private.is_empty(), "1.0.0 has no private data");
    assert_eq!(
        object_file(objects.path(), "old").unwrap()["content"],
        "abc"
    );
    v1.shutdown().await;

    let mut v2 = Session::start(TestProvider::Store, "2.0.0", &[])
        .await
        .unwrap();
    v2.configure(json!({"directory": objects.path()})).await;
    let raw = to_json(&created.state);
    assert_eq!(raw["revision"].to_string(), "1.0", "stored as a float");
    let (upgraded, diagnostics) = v2.upgrade(ITEM, 1, &raw).await;
    assert_eq!(errors(&diagnostics), Vec::<String>::new());
    let expected = pv(json!({
        "id": "old", "key": "old", "value": "abc", "tags": null, "description": "kept",
        "size": 3, "revision": 1, "secret_value": null,
    }));
    assert_eq!(upgraded, expected);

    // 1.0.0 gave the object no private data, so none is expected until
    // 2.0.0 writes it.
    let read = v2.read(ITEM, &upgraded, b"").await;
    assert_eq!(errors(&read.diagnostics), Vec::<String>::new());
    assert_eq!(read.state, expected);
    let config = pv(json!({"key": "old", "value": "abcd", "description": "kept"}));
    let (_, updated) = v2
        .plan_and_apply(ITEM, &read.state, &config, &read.private)
        .await;
    assert_eq!(errors(&updated.diagnostics), Vec::<String>::new());
    assert_eq!(updated.private, etag(2));
    let file = object_file(objects.path(), "old").unwrap();
    assert_eq!(
        (&file["value"], file.get("content")),
        (&json!("abcd"), None)
    );

    // Version 2 state as is; a newer one, or unknown attributes, refused.
    let current = to_json(&updated.state);
    let (same, diagnostics) = v2.upgrade(ITEM, 2, &current).await;
    assert_eq!(errors(&diagnostics), Vec::<String>::new());
    assert_eq!(same, updated.state);
    let (_, newer) = v2.upgrade(ITEM, 3, &current).await;
    assert_eq!(
        errors(&newer),
        ["store_item state has schema version 3, newer than store provider 2.0.0's 2"]
    );
    let (_, strange) = v2
        .upgrade(ITEM, 2, &json!({"key": "old", "colour": "red"}))
        .await;
    assert_eq!(
        errors(&strange),
        ["store_item state (schema version 2) has attributes this release does not know: colour"]
    );
    v2.shutdown().await;
}

#[tokio::test]
async fn the_directory_comes_from_config_or_the_environment() {
    let Some(mut unset) = Session::start(TestProvider::Store, "2.0.0", &[]).await else {
        return;
    };
    let diagnostics = unset.configure(json!({})).await;
    assert_eq!(errors(&diagnostics), ["directory is not set"]);
    assert_eq!(error_attribute(&diagnostics).as_deref(), Some("directory"));
    let config = pv(json!({"key": "k", "value": "v"}));
    let planned = unset.plan(ITEM, NULL, &config, b"").await;
    let refused = unset.apply(ITEM, NULL, &planned.state, &config, b"").await;
    assert_eq!(
        errors(&refused.diagnostics),
        ["the store provider is not configured (ConfigureProvider was not called or failed)"]
    );
    unset.shutdown().await;

    let objects = tempfile::tempdir().unwrap();
    let env = [("STORE_DIRECTORY", objects.path().as_os_str().to_owned())];
    let mut from_env = Session::start(TestProvider::Store, "2.0.0", &env)
        .await
        .unwrap();
    assert_eq!(
        errors(&from_env.configure(json!({})).await),
        Vec::<String>::new()
    );
    let (_, created) = from_env.plan_and_apply(ITEM, NULL, &config, b"").await;
    assert_eq!(errors(&created.diagnostics), Vec::<String>::new());
    let file = object_file(objects.path(), "k").unwrap();
    assert_eq!(
        (&file["value"], &file["token_hash"]),
        (&json!("v"), &json!(null))
    );
    from_env.shutdown().await;
}

#[tokio::test]
async fn the_data_source_reads_an_object_file() {
    let objects = tempfile::tempdir().unwrap();
    let Some(mut store) = Session::start(TestProvider::Store, "2.0.0", &[]).await else {
        return;
    };
    store.configure(json!({"directory": objects.path()})).await;
    std::fs::write(
        objects.path().join("made-by-hand.json"),
        json!({"key": "made-by-hand", "value": "x", "tags": {"a": "b"}, "description": "d"})
            .to_string(),
    )
    .unwrap();
    let (state, diagnostics) = store
        .read_data(ITEM, &pv(json!({"key": "made-by-hand"})))
        .await;
    assert_eq!(errors(&diagnostics), Vec::<String>::new());
    assert_eq!(
        state,
        pv(json!({"key": "made-by-hand", "value": "x", "tags": {"a": "b"}, "description": "d"}))
    );
    let (_, missing) = store.read_data(ITEM, &pv(json!({"key": "nope"}))).await;
    assert_eq!(
        errors(&missing),
        ["data source store_item: nope does not exist"]
    );
    assert_eq!(error_attribute(&missing).as_deref(), Some("key"));
    store.shutdown().await;
}

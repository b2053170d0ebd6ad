use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use converge_model::{DiffKind, PropertyDiff, PropertyValue, Urn};

use super::*;
use crate::cloud::CallCounts;

fn urn(name: &str) -> Urn {
    Urn::parse(&format!("urn:pulumi:s::p::pkg:m:T::{name}")).unwrap()
}

fn map<const N: usize>(entries: [(&str, PropertyValue); N]) -> PropertyMap {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

fn check_req(news: PropertyMap) -> CheckRequest {
    CheckRequest {
        urn: urn("a"),
        olds: PropertyMap::new(),
        news,
        random_seed: Vec::new(),
    }
}

fn diff_req(old: PropertyMap, new: PropertyMap) -> DiffRequest {
    DiffRequest {
        urn: urn("a"),
        id: "id-1".to_owned(),
        old_inputs: old.clone(),
        old_outputs: old,
        new_inputs: new,
        ignore_changes: Vec::new(),
    }
}

fn create_req(name: &str, properties: PropertyMap, preview: bool) -> CreateRequest {
    CreateRequest {
        urn: urn(name),
        properties,
        timeout: None,
        preview,
        planned: None,
    }
}

fn read_req(name: &str, id: &str, inputs: Option<PropertyMap>) -> ReadRequest {
    ReadRequest {
        urn: urn(name),
        id: id.to_owned(),
        inputs,
        state: None,
        timeout: None,
    }
}

fn update_req(id: &str, old: PropertyMap, new: PropertyMap, preview: bool) -> UpdateRequest {
    UpdateRequest {
        urn: urn("a"),
        id: id.to_owned(),
        old_inputs: old.clone(),
        old_outputs: old,
        new_inputs: new,
        timeout: None,
        ignore_changes: Vec::new(),
        preview,
        planned: None,
    }
}

fn delete_req(id: &str) -> DeleteRequest {
    DeleteRequest {
        urn: urn("a"),
        id: id.to_owned(),
        inputs: PropertyMap::new(),
        outputs: PropertyMap::new(),
        timeout: None,
    }
}

fn configure_req() -> ConfigureRequest {
    ConfigureRequest {
        urn: None,
        inputs: map([("region", "x".into())]),
        accept_secrets: true,
        accept_resources: true,
    }
}

/// `(path, kind)` of a detailed diff, every entry an input diff.
fn detailed(response: &DiffResponse) -> Vec<(String, DiffKind)> {
    let d = response.detailed_diff.clone().unwrap_or_default();
    assert!(d.values().all(|p| p.input_diff));
    d.into_iter().map(|(p, d)| (p, d.kind)).collect()
}

#[tokio::test]
async fn check_returns_the_new_inputs() {
    let p = MockProvider::new("pkg");
    let news = map([("a", 1.0.into())]);
    let r = p.check(check_req(news.clone())).await.unwrap();
    assert_eq!(
        r,
        CheckResponse {
            inputs: news.clone(),
            failures: vec![]
        }
    );
    let r = p.check_config(check_req(news.clone())).await.unwrap();
    assert_eq!(r.inputs, news);
}

#[tokio::test]
async fn default_diff_compares_inputs() {
    let p = MockProvider::new("pkg");
    let old = map([("a", 1.0.into()), ("b", "x".into())]);
    let r = p.diff(diff_req(old.clone(), old.clone())).await.unwrap();
    assert_eq!(r, DiffResponse::none());

    let new = map([("a", 2.0.into()), ("c", true.into())]);
    let r = p.diff(diff_req(old, new)).await.unwrap();
    assert_eq!(r.changes, DiffChanges::Some);
    assert_eq!(r.changed_keys, ["a", "b", "c"]);
    assert!(r.replace_keys.is_empty());
    assert!(!r.requires_replacement());
    let expected = [
        ("a".to_owned(), DiffKind::Update),
        ("b".to_owned(), DiffKind::Delete),
        ("c".to_owned(), DiffKind::Add),
    ];
    assert_eq!(detailed(&r), expected);
}

#[tokio::test]
async fn default_diff_goes_deep_and_names_top_level_keys() {
    let p = MockProvider::new("pkg");
    let tags = |v: &str| PropertyValue::Object(map([("Name", v.into()), ("Env", "dev".into())]));
    let old = map([("tags", tags("a"))]);
    let new = map([("tags", tags("b"))]);
    let r = p.diff(diff_req(old, new)).await.unwrap();
    assert_eq!(r.changed_keys, ["tags"]);
    assert_eq!(detailed(&r), [("tags.Name".to_owned(), DiffKind::Update)]);
}

#[tokio::test]
async fn default_diff_leaves_out_ignored_changes() {
    let p = MockProvider::new("pkg");
    let old = map([("a", 1.0.into()), ("b", 1.0.into())]);
    let new = map([("a", 2.0.into()), ("b", 1.0.into())]);
    let mut req = diff_req(old.clone(), new.clone());
    req.ignore_changes = vec!["a".to_owned()];
    assert_eq!(p.diff(req).await.unwrap(), DiffResponse::none());

    let mut req = diff_req(old, new);
    req.ignore_changes = vec!["a[".to_owned()];
    let err = p.diff(req).await.unwrap_err();
    assert!(err.to_string().contains("ignoreChanges"), "{err}");
}

#[tokio::test]
async fn replace_on_changes_marks_replacements() {
    let p = MockProvider::new("pkg").replace_on_changes(["size", "tags.Name"]);
    let old = map([("size", 1.0.into()), ("name", "a".into())]);
    let new = map([
        ("size", 2.0.into()),
        ("name", "b".into()),
        ("tags", PropertyValue::Object(map([("Name", "n".into())]))),
    ]);
    let r = p.diff(diff_req(old, new)).await.unwrap();
    assert!(r.requires_replacement());
    assert_eq!(r.replace_keys, ["size", "tags"]);
    assert_eq!(r.changed_keys, ["name", "size", "tags"]);
    let expected = [
        ("name".to_owned(), DiffKind::Update),
        ("size".to_owned(), DiffKind::UpdateReplace),
        ("tags".to_owned(), DiffKind::AddReplace),
    ];
    assert_eq!(detailed(&r), expected);

    // The config diff never asks for replacement by default.
    let old = map([("size", 1.0.into())]);
    let new = map([("size", 2.0.into())]);
    let r = p.diff_config(diff_req(old, new)).await.unwrap();
    assert_eq!(r.changes, DiffChanges::Some);
    assert!(!r.requires_replacement());
}

#[tokio::test]
async fn create_read_update_delete_keep_the_cloud_consistent() {
    let cloud = MockCloud::new();
    let p = MockProvider::new("pkg").with_cloud(cloud.clone());
    let v1 = map([("v", 1.0.into())]);
    let v2 = map([("v", 2.0.into())]);

    let created = p.create(create_req("a", v1.clone(), false)).await.unwrap();
    assert_eq!(
        created,
        CreateResponse {
            id: "id-1".to_owned(),
            properties: v1.clone()
        }
    );
    let object = cloud.get("id-1").unwrap();
    assert_eq!(
        (object.urn, object.package, object.properties),
        (urn("a"), "pkg".to_owned(), v1.clone())
    );

    let read = p
        .read(read_req("a", "id-1", Some(v1.clone())))
        .await
        .unwrap();
    assert_eq!(
        read,
        ReadResponse {
            id: "id-1".to_owned(),
            inputs: v1.clone(),
            properties: v1.clone()
        }
    );

    let updated = p
        .update(update_req("id-1", v1.clone(), v2.clone(), false))
        .await
        .unwrap();
    assert_eq!(updated.properties, v2);
    assert_eq!(cloud.get("id-1").unwrap().properties, v2);

    p.delete(delete_req("id-1")).await.unwrap();
    assert!(cloud.is_empty());
    let expected = CallCounts {
        creates: 1,
        reads: 1,
        updates: 1,
        deletes: 1,
    };
    assert_eq!(cloud.counts(), expected);
}

#[tokio::test]
async fn previews_touch_nothing() {
    let cloud = MockCloud::new();
    let p = MockProvider::new("pkg").with_cloud(cloud.clone());
    let v1 = map([("v", 1.0.into())]);
    let unknown = map([("v", PropertyValue::Unknown)]);

    let r = p
        .create(create_req("a", unknown.clone(), true))
        .await
        .unwrap();
    assert_eq!(
        r,
        CreateResponse {
            id: String::new(),
            properties: unknown.clone()
        }
    );
    assert!(cloud.is_empty());

    let id = cloud.insert(&urn("a"), "pkg", v1.clone());
    let r = p
        .update(update_req(&id, v1.clone(), unknown.clone(), true))
        .await
        .unwrap();
    assert_eq!(r.properties, unknown);
    assert_eq!(cloud.get(&id).unwrap().properties, v1);
    // A preview of an update of a vanished object cannot know it is gone.
    p.update(update_req("id-9", v1.clone(), v1, true))
        .await
        .unwrap();
    assert_eq!(cloud.counts(), CallCounts::default());
}

#[tokio::test]
async fn read_of_a_missing_object_has_an_empty_id() {
    let cloud = MockCloud::new();
    let p = MockProvider::new("pkg").with_cloud(cloud.clone());
    let r = p.read(read_req("a", "id-1", None)).await.unwrap();
    assert_eq!(r, ReadResponse::default());

    // An object of another type is not found either.
    let other = Urn::parse("urn:pulumi:s::p::pkg:m:Other::a").unwrap();
    let id = cloud.insert(&other, "pkg", PropertyMap::new());
    assert_eq!(p.read(read_req("a", &id, None)).await.unwrap().id, "");
}

#[tokio::test]
async fn import_reads_inputs_from_the_object() {
    let cloud = MockCloud::new();
    let p = MockProvider::new("pkg").with_cloud(cloud.clone());
    let props = map([("v", "drifted".into())]);
    let id = cloud.insert(&urn("a"), "pkg", props.clone());
    let r = p.read(read_req("a", &id, None)).await.unwrap();
    assert_eq!(
        r,
        ReadResponse {
            id,
            inputs: props.clone(),
            properties: props
        }
    );
}

#[tokio::test]
async fn update_and_delete_of_a_missing_object_fail() {
    let p = MockProvider::new("pkg");
    let err = p.delete(delete_req("id-7")).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Failed(m) if m.contains("id-7")),
        "{err}"
    );
    let v = map([("v", 1.0.into())]);
    let err = p
        .update(update_req("id-7", v.clone(), v, false))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Failed(m) if m.contains("id-7")),
        "{err}"
    );
}

#[tokio::test]
async fn closures_replace_the_defaults() {
    let cloud = MockCloud::new();
    let seen = Arc::new(AtomicUsize::new(0));
    let c = cloud.clone();
    let s = seen.clone();
    let p = MockProvider::new("pkg")
        .with_cloud(cloud.clone())
        .on_check(|_| {
            Ok(CheckResponse {
                inputs: PropertyMap::new(),
                failures: vec![converge_plugin::CheckFailure {
                    property: "v".to_owned(),
                    reason: "bad".to_owned(),
                }],
            })
        })
        .on_diff(|_| {
            Ok(DiffResponse {
                replace_keys: vec!["v".to_owned()],
                ..DiffResponse::default()
            })
        })
        .on_create(move |req| {
            let mut properties = req.properties.clone();
            properties.insert("arn".to_owned(), "arn:1".into());
            let id = c.insert(&req.urn, "pkg", properties.clone());
            Ok(CreateResponse { id, properties })
        })
        .on_read(|_| Err(ProviderError::failed("read denied")))
        .on_update(|_| {
            Err(ProviderError::PartialFailure {
                id: "id-1".to_owned(),
                properties: PropertyMap::new(),
                reasons: vec!["half done".to_owned()],
            })
        })
        .on_delete(move |_| {
            s.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .on_check_config(|_| Err(ProviderError::failed("bad config")))
        .on_diff_config(|_| Ok(DiffResponse::none()))
        .on_configure(|_| Err(ProviderError::failed("cannot configure")))
        .on_invoke(|req| {
            Ok(InvokeResponse {
                outputs: req.args,
                failures: vec![],
            })
        });

    let v = map([("v", 1.0.into())]);
    assert_eq!(
        p.check(check_req(v.clone())).await.unwrap().failures.len(),
        1
    );
    assert!(p
        .diff(diff_req(v.clone(), v.clone()))
        .await
        .unwrap()
        .requires_replacement());
    let created = p.create(create_req("a", v.clone(), false)).await.unwrap();
    assert_eq!(
        cloud.get(&created.id).unwrap().properties["arn"],
        "arn:1".into()
    );
    assert_eq!(
        p.read(read_req("a", "id-1", None))
            .await
            .unwrap_err()
            .to_string(),
        "read denied"
    );
    let err = p
        .update(update_req("id-1", v.clone(), v.clone(), false))
        .await
        .unwrap_err();
    assert!(matches!(err, ProviderError::PartialFailure { .. }));
    p.delete(delete_req("id-1")).await.unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 1);
    assert_eq!(cloud.len(), 1, "the custom delete left the object alone");
    assert!(p.check_config(check_req(v.clone())).await.is_err());
    assert_eq!(
        p.diff_config(diff_req(PropertyMap::new(), v.clone()))
            .await
            .unwrap(),
        DiffResponse::none()
    );
    assert!(p.configure(configure_req()).await.is_err());
    assert_eq!(
        p.configured_with(),
        None,
        "a failed Configure is not recorded"
    );
    let invoked = p
        .invoke(InvokeRequest {
            token: "pkg:index:f".to_owned(),
            args: v.clone(),
        })
        .await
        .unwrap();
    assert_eq!(invoked.outputs, v);
}

#[tokio::test]
async fn invoke_is_unimplemented_by_default() {
    let p = MockProvider::new("pkg");
    let req = InvokeRequest {
        token: "pkg:index:f".to_owned(),
        args: PropertyMap::new(),
    };
    assert_eq!(
        p.invoke(req).await.unwrap_err(),
        ProviderError::Unimplemented("Invoke")
    );
}

#[tokio::test]
async fn faults_fail_calls_before_they_change_anything() {
    let cloud = MockCloud::new();
    let p = MockProvider::new("pkg").with_cloud(cloud.clone());
    let v = map([("v", 1.0.into())]);
    cloud.fail_when(|op, _| op == CloudOp::Create);
    let err = p
        .create(create_req("a", v.clone(), false))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("injected fault"), "{err}");
    assert!(cloud.is_empty());
    // Previews never reach the cloud, so they do not fail.
    p.create(create_req("a", v.clone(), true)).await.unwrap();

    cloud.fail_when(|op, urn| op == CloudOp::Delete && urn.name() == "a");
    let id = p.create(create_req("a", v, false)).await.unwrap().id;
    assert!(p.delete(delete_req(&id)).await.is_err());
    assert_eq!(cloud.ids(), std::slice::from_ref(&id));
    cloud.heal();
    p.delete(delete_req(&id)).await.unwrap();
    assert_eq!(
        cloud.counts(),
        CallCounts {
            creates: 2,
            reads: 0,
            updates: 0,
            deletes: 2
        }
    );
}

#[tokio::test]
async fn plugin_info_reports_the_version() {
    let p = MockProvider::new("pkg");
    assert_eq!(
        p.plugin_info().await.unwrap().version,
        Some(semver::Version::new(1, 0, 0))
    );
    let p = p.with_version(semver::Version::parse("2.3.4-beta.1").unwrap());
    let info = p.plugin_info().await.unwrap();
    assert_eq!(info.version.unwrap().to_string(), "2.3.4-beta.1");
    assert_eq!(p.version().major, 2);
    assert_eq!(p.package(), "pkg");
}

#[tokio::test]
async fn configure_is_recorded_and_strict_lifecycle_enforced() {
    let p = MockProvider::new("pkg").strict_lifecycle();
    let v = map([("v", 1.0.into())]);
    let err = p
        .create(create_req("a", v.clone(), false))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("before Configure"), "{err}");
    assert!(p.cloud().is_empty());
    // Provider-resource RPCs come before Configure by design.
    p.check_config(check_req(v.clone())).await.unwrap();
    p.diff_config(diff_req(v.clone(), v.clone())).await.unwrap();
    p.configure(configure_req()).await.unwrap();
    assert_eq!(p.configured_with(), Some(configure_req().inputs));
    p.create(create_req("a", v, false)).await.unwrap();
}

#[tokio::test]
async fn calls_are_logged_in_order() {
    let p = MockProvider::new("pkg");
    let v = map([("v", 1.0.into())]);
    p.configure(configure_req()).await.unwrap();
    p.check(check_req(v.clone())).await.unwrap();
    let id = p
        .create(create_req("a", v.clone(), false))
        .await
        .unwrap()
        .id;
    p.check(check_req(v)).await.unwrap();
    p.delete(delete_req(&id)).await.unwrap();
    let expected = [
        Rpc::Configure,
        Rpc::Check,
        Rpc::Create,
        Rpc::Check,
        Rpc::Delete,
    ];
    assert_eq!(p.calls(), expected);
    assert_eq!(p.call_count(Rpc::Check), 2);
    assert_eq!(p.call_count(Rpc::Update), 0);
}

#[tokio::test]
async fn latency_delays_every_call() {
    let latency = Duration::from_millis(30);
    let p = MockProvider::new("pkg").latency(latency);
    let start = Instant::now();
    p.check(check_req(PropertyMap::new())).await.unwrap();
    p.plugin_info().await.unwrap();
    assert!(start.elapsed() >= latency * 2, "{:?}", start.elapsed());
}

#[tokio::test]
async fn debug_names_the_closures() {
    let p = MockProvider::new("pkg").on_diff(|_| Ok(DiffResponse::none()));
    let printed = format!("{p:?}");
    assert!(
        printed.contains("\"pkg\"") && printed.contains("\"diff\""),
        "{printed}"
    );
}

#[test]
fn property_diffs_from_the_default_diff_are_input_diffs() {
    let req = diff_req(map([("a", 1.0.into())]), PropertyMap::new());
    let r = default_diff(&req, &[]).unwrap();
    let d = r.detailed_diff.unwrap();
    assert_eq!(
        d["a"],
        PropertyDiff {
            kind: DiffKind::Delete,
            input_diff: true
        }
    );
}

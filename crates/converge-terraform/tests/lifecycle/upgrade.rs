//! Schema versions (seed 004's UpgradeResourceState): state recorded under
//! an older schema version is given to the provider with that version and
//! its raw JSON in Terraform's names before any plan, read or delete; what
//! the provider upgrades it to is what those calls get; the state the
//! operation records carries the new version.

use std::sync::Arc;

use converge_engine::StepOp;
use converge_model::PropertyMap;
use converge_plugin::terraform::values::CtyType;
use converge_proto::tfplugin6 as tf;
use converge_testkit::tf_mock::schema::{computed, optional, provider_schema, required, resource};
use converge_testkit::tf_mock::{error, TfCall, TfMock, TfServer, UpgradeResult};
use converge_testkit::{Lifecycle, MockCloud};

use super::*;

/// `mock_thing` at `version`, its title attribute named `title`.
fn schema(version: i64, title: &str) -> tf::get_provider_schema::Response {
    let s = CtyType::String;
    provider_schema(
        Vec::new(),
        vec![(
            THING,
            resource(
                version,
                vec![
                    computed("id", &s),
                    required("name", &s),
                    optional(title, &s),
                    optional("note", &s),
                    computed("revision", &s),
                ],
            ),
        )],
        Vec::new(),
    )
}

/// Renames `old_title` to `display_name` in a JSON object.
fn rename_in_json(raw: &mut serde_json::Value) {
    if let Some(o) = raw.as_object_mut() {
        if let Some(t) = o.remove("old_title") {
            o.insert("display_name".to_owned(), t);
        }
    }
}

/// Version 2 of the provider: `old_title` is now `display_name`, and its
/// UpgradeResourceState moves version 1 state over.
fn version_2(cloud: &Arc<MockCloud>) -> TfMock {
    TfMock::new(PKG, schema(2, "display_name"))
        .with_cloud(cloud.clone())
        .on_upgrade(|m, call| {
            let mut call = call.clone();
            if call.version == 1 {
                rename_in_json(&mut call.raw_json);
            }
            m.default_upgrade(&call)
        })
}

/// A world whose resource `a` was created by version 1 of the provider;
/// also the JSON of the object version 1 returned.
async fn at_version_1() -> (Lifecycle, Arc<MockCloud>, serde_json::Value) {
    let cloud = MockCloud::new();
    let v1 = TfMock::new(PKG, schema(1, "old_title")).with_cloud(cloud.clone());
    let (mut w, server) = world(v1).await;
    expect_ok(&w.up(&one(&[("name", "a"), ("oldTitle", "hello")])).await);
    let a = thing_a(&w);
    assert_eq!(meta(a).schema_version, Some(1));
    assert_eq!(a.outputs.get("oldTitle"), Some(&s("hello")));
    let (_, applied) = server.mock().applies().pop().unwrap();
    let json = json_of(&applied.new_state.unwrap());
    assert_eq!(json["old_title"], "hello");
    (w, cloud, json)
}

/// Installs `mock` as the provider of the world (a provider upgrade); the
/// cloud's API now answers in the new schema's shape.
async fn install(w: &mut Lifecycle, cloud: &MockCloud, mock: TfMock) -> TfServer {
    for o in cloud.objects() {
        let mut p: PropertyMap = o.properties.clone();
        if let Some(t) = p.remove("old_title") {
            p.insert("display_name".to_owned(), t);
        }
        cloud.set_properties(&o.id, p).unwrap();
    }
    let server = mock.serve().await.unwrap();
    w.loader = Arc::new(server.loader());
    server
}

/// Every plan from a prior state, every read and every delete comes after
/// an UpgradeResourceState (none of them reuses an earlier one), and gets
/// exactly the state that upgrade returned; so does an update's apply.
fn assert_each_use_follows_an_upgrade(mock: &TfMock) {
    // The last upgrade's result, and whether a use has consumed it.
    let mut last: Option<Option<PropertyMap>> = None;
    let mut fresh = false;
    let mut used = 0;
    for call in mock.calls() {
        let (rpc, prior, needs_fresh) = match &call {
            TfCall::UpgradeResourceState(_, r) => {
                last = Some(r.state.clone());
                fresh = true;
                continue;
            }
            TfCall::PlanResourceChange(q, _) if q.prior_state.is_some() => {
                ("PlanResourceChange", q.prior_state.clone(), true)
            }
            TfCall::ReadResource(q, _) => ("ReadResource", q.current_state.clone(), true),
            TfCall::ApplyResourceChange(q, _) if q.is_delete() => {
                ("ApplyResourceChange (delete)", q.prior_state.clone(), true)
            }
            TfCall::ApplyResourceChange(q, _) if q.prior_state.is_some() => {
                ("ApplyResourceChange (update)", q.prior_state.clone(), false)
            }
            _ => continue,
        };
        used += 1;
        let Some(upgraded) = &last else {
            panic!(
                "{rpc} came before any UpgradeResourceState: {:?}",
                mock.rpcs()
            );
        };
        if needs_fresh {
            assert!(
                fresh,
                "{rpc} reused an earlier UpgradeResourceState: {:?}",
                mock.rpcs()
            );
            fresh = false;
        }
        assert_eq!(&prior, upgraded, "{rpc} did not get the upgraded state");
    }
    assert!(used > 0, "no call used a prior state: {:?}", mock.rpcs());
}

#[tokio::test]
async fn an_update_plans_from_the_upgraded_state_and_records_the_new_version() {
    let (mut w, cloud, v1_json) = at_version_1().await;
    let v2 = install(&mut w, &cloud, version_2(&cloud)).await;
    let r = w
        .up(&one(&[
            ("name", "a"),
            ("displayName", "hello"),
            ("note", "n2"),
        ]))
        .await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);

    let upgrades = v2.mock().upgrades();
    let (first, _) = &upgrades[0];
    assert_eq!(first.type_name, THING);
    assert_eq!(first.version, 1);
    assert_eq!(
        first.raw_json, v1_json,
        "the raw state is the object version 1 returned, in Terraform's names"
    );
    assert_each_use_follows_an_upgrade(v2.mock());
    for (plan, _) in v2.mock().plans() {
        let prior = plan.prior_state.unwrap();
        assert_eq!(prior["display_name"], s("hello"));
        assert_eq!(prior["note"], PropertyValue::Null);
    }

    let a = thing_a(&w);
    assert_eq!(meta(a).schema_version, Some(2));
    assert_eq!(a.outputs.get("displayName"), Some(&s("hello")));
    assert_eq!(a.outputs.get("note"), Some(&s("n2")));
    assert!(!a.outputs.contains_key("oldTitle"), "{:?}", a.outputs);

    // The recorded version is what the provider is told from now on.
    v2.mock().clear_calls();
    expect_ok(&w.destroy().await);
    let upgrades = v2.mock().upgrades();
    assert!(!upgrades.is_empty());
    for (u, _) in &upgrades {
        assert_eq!(u.version, 2);
        assert_eq!(u.raw_json["display_name"], "hello");
        assert_eq!(u.raw_json["note"], "n2");
    }
    assert_each_use_follows_an_upgrade(v2.mock());
    assert!(cloud.is_empty());
}

#[tokio::test]
async fn a_refresh_reads_from_the_upgraded_state_and_records_the_new_version() {
    let (mut w, cloud, v1_json) = at_version_1().await;
    let v2 = install(&mut w, &cloud, version_2(&cloud)).await;
    expect_ok(&w.refresh().await);
    let (first, _) = &v2.mock().upgrades()[0];
    assert_eq!((first.version, &first.raw_json), (1, &v1_json));
    assert_each_use_follows_an_upgrade(v2.mock());
    let (read, _) = v2.mock().reads().pop().unwrap();
    assert_eq!(read.current_state.unwrap()["display_name"], s("hello"));

    let a = thing_a(&w);
    assert_eq!(meta(a).schema_version, Some(2));
    assert_eq!(a.outputs.get("displayName"), Some(&s("hello")));
    assert!(!a.outputs.contains_key("oldTitle"), "{:?}", a.outputs);

    // The program under the new schema: nothing to change.
    v2.mock().clear_calls();
    let r = w.up(&one(&[("name", "a"), ("displayName", "hello")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert!(v2.mock().upgrades().iter().all(|(u, _)| u.version == 2));
}

#[tokio::test]
async fn a_destroy_deletes_with_the_upgraded_state() {
    let (mut w, cloud, v1_json) = at_version_1().await;
    let v2 = install(&mut w, &cloud, version_2(&cloud)).await;
    expect_ok(&w.destroy().await);
    let (first, _) = &v2.mock().upgrades()[0];
    assert_eq!((first.version, &first.raw_json), (1, &v1_json));
    assert_each_use_follows_an_upgrade(v2.mock());
    let (delete, _) = v2.mock().applies().pop().unwrap();
    assert!(delete.is_delete());
    assert_eq!(delete.prior_state.unwrap()["display_name"], s("hello"));
    assert!(cloud.is_empty());
    assert!(w.resource("a").is_none());
}

#[tokio::test]
async fn a_failed_upgrade_fails_the_operation_and_changes_nothing() {
    let (mut w, cloud, _) = at_version_1().await;
    let before = w.snapshot.clone();
    let objects = cloud.objects();
    let broken = version_2(&cloud).on_upgrade(|_, call| UpgradeResult {
        state: None,
        diagnostics: vec![error(&format!(
            "no upgrade path from version {}",
            call.version
        ))],
    });
    let v2 = install(&mut w, &cloud, broken).await;
    let objects_now = cloud.objects();
    let r = w
        .up(&one(&[
            ("name", "a"),
            ("displayName", "hello"),
            ("note", "n2"),
        ]))
        .await;
    let e = error_of(&r);
    assert!(
        e.contains("could not upgrade its state from schema version 1 to 2"),
        "{e}"
    );
    assert!(e.contains("no upgrade path from version 1"), "{e}");
    assert_eq!(
        w.snapshot.resources, before.resources,
        "the state is unchanged"
    );
    assert_eq!(objects.len(), objects_now.len());
    assert_eq!(cloud.objects(), objects_now, "the cloud is unchanged");
    let rpcs = v2.mock().rpcs();
    assert!(
        !rpcs.contains(&"PlanResourceChange") && !rpcs.contains(&"ApplyResourceChange"),
        "{rpcs:?}"
    );
}

#[tokio::test]
async fn an_unchanged_resource_keeps_a_version_that_matches_its_recorded_shape() {
    let (mut w, cloud, v1_json) = at_version_1().await;
    let v2 = install(&mut w, &cloud, version_2(&cloud)).await;
    let r = w.up(&one(&[("name", "a"), ("displayName", "hello")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    let (first, _) = &v2.mock().upgrades()[0];
    assert_eq!((first.version, &first.raw_json), (1, &v1_json));
    assert_each_use_follows_an_upgrade(v2.mock());
    // Whichever state the step keeps, its version says how it is shaped,
    // so the next upgrade starts from the right version.
    let a = thing_a(&w);
    match meta(a).schema_version {
        Some(1) => assert_eq!(a.outputs.get("oldTitle"), Some(&s("hello"))),
        Some(2) => assert_eq!(a.outputs.get("displayName"), Some(&s("hello"))),
        other => panic!("schema version {other:?}"),
    }
    v2.mock().clear_calls();
    expect_ok(&w.destroy().await);
    assert!(cloud.is_empty());
}

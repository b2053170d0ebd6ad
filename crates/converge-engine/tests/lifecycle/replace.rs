//! Replacement: create-before-delete, delete-before-replace, the dependent
//! replacements example of seed 000, provider replacement via DiffConfig.

use converge_engine::StepOp;
use converge_model::{DiffKind, PropertyDiff};
use converge_plugin::{DiffChanges, DiffResponse};
use converge_testkit::{custom, program, register_stack, MockProvider, TestProgram};

use super::*;

/// A provider whose Diff asks for replacement whenever `key` changes, and
/// for delete-before-replace when `dbr`; it logs creates and deletes.
fn replacing(key: &'static str, dbr: bool, events: Log) -> MockProvider {
    let on_create = events.clone();
    let on_delete = events;
    let cloud = MockCloud::new();
    let create_cloud = cloud.clone();
    let delete_cloud = cloud.clone();
    MockProvider::new("pkg")
        .with_cloud(cloud)
        .on_diff(move |req| {
            let changed: Vec<String> = req
                .new_inputs
                .iter()
                .filter(|(k, v)| req.old_inputs.get(*k) != Some(*v))
                .map(|(k, _)| k.clone())
                .collect();
            if changed.is_empty() {
                return Ok(DiffResponse::none());
            }
            let replace: Vec<String> = changed.iter().filter(|k| *k == key).cloned().collect();
            let detailed = changed
                .iter()
                .map(|k| {
                    let kind = if k == key {
                        DiffKind::UpdateReplace
                    } else {
                        DiffKind::Update
                    };
                    (
                        k.clone(),
                        PropertyDiff {
                            kind,
                            input_diff: true,
                        },
                    )
                })
                .collect();
            Ok(DiffResponse {
                changes: DiffChanges::Some,
                replace_keys: replace,
                changed_keys: changed,
                detailed_diff: Some(detailed),
                delete_before_replace: dbr,
                ..DiffResponse::default()
            })
        })
        .on_create(move |req| {
            if req.preview {
                return Ok(converge_plugin::CreateResponse {
                    id: String::new(),
                    properties: req.properties,
                });
            }
            let id = create_cloud.insert(&req.urn, "pkg", req.properties.clone());
            on_create
                .lock()
                .unwrap()
                .push(format!("create {}", req.urn.name()));
            Ok(converge_plugin::CreateResponse {
                id,
                properties: req.properties,
            })
        })
        .on_delete(move |req| {
            delete_cloud.remove(&req.id)?;
            on_delete
                .lock()
                .unwrap()
                .push(format!("delete {}", req.urn.name()));
            Ok(())
        })
}

fn single(v: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("k", v)]))).await?;
        Ok(())
    })
}

#[tokio::test]
async fn create_before_delete_replacement() {
    let events = log();
    let (mut w, cloud) = world(replacing("k", false, events.clone()));
    expect_ok(&w.up(&single("1")).await);
    let old_id = w.resource("a").unwrap().id.clone();
    let r = w.up(&single("2")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_eq!(entries(&events), vec!["create a", "create a", "delete a"]);
    assert_eq!(cloud.len(), 1);
    assert_ne!(w.resource("a").unwrap().id, old_id);
    assert_eq!(copies(&w, "a"), 1);
}

#[tokio::test]
async fn delete_before_replace_from_the_provider_and_from_the_option() {
    let events = log();
    let (mut w, cloud) = world(replacing("k", true, events.clone()));
    expect_ok(&w.up(&single("1")).await);
    let r = w.up(&single("2")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_eq!(entries(&events), vec!["create a", "delete a", "create a"]);
    assert_eq!(cloud.len(), 1);

    // The deleteBeforeReplace option forces the order for a provider that
    // would create first.
    let events = log();
    let (mut w, _cloud) = world(replacing("k", false, events.clone()));
    let p = |v: &'static str| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "a", inputs(&[("k", v)]));
            g.options.delete_before_replace = Some(true);
            reg(&m, &stack, g).await?;
            Ok(())
        })
    };
    expect_ok(&w.up(&p("1")).await);
    expect_ok(&w.up(&p("2")).await);
    assert_eq!(entries(&events), vec!["create a", "delete a", "create a"]);
}

/// A resource `name` whose `input` is `from`'s `input` output: a
/// dependency and a property dependency on `from`.
fn fed_by(name: &str, from: &converge_engine::RegisterResult) -> converge_engine::ResourceGoal {
    let value = from
        .outputs
        .get("input")
        .cloned()
        .unwrap_or(converge_model::PropertyValue::Null);
    let mut goal = custom(T, name, [("input".to_owned(), value)].into_iter().collect());
    goal.dependencies = vec![from.urn.clone()];
    goal.property_dependencies = [("input".to_owned(), vec![from.urn.clone()])]
        .into_iter()
        .collect();
    goal
}

/// Seed 000's example: b dependsOn a, c takes a's output, d takes b's
/// output. When a is replaced delete-before-replace, c is replaced with
/// it (its input comes from a); b and d are not.
#[tokio::test]
async fn dependent_replacements_follow_seed_000() {
    let events = log();
    let (mut w, cloud) = world(replacing("input", true, events.clone()));
    let p = |v: &'static str| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            let a = reg(&m, &stack, custom(T, "a", inputs(&[("input", v)]))).await?;
            let mut b = custom(T, "b", inputs(&[("input", "fixed")]));
            b.dependencies = vec![a.urn.clone()];
            let b = reg(&m, &stack, b).await?;
            reg(&m, &stack, fed_by("c", &a)).await?;
            reg(&m, &stack, fed_by("d", &b)).await?;
            Ok(())
        })
    };
    expect_ok(&w.up(&p("1")).await);
    events.lock().unwrap().clear();
    let r = w.up(&p("2")).await;
    expect_ok(&r);
    // c is deleted before a; both are recreated; b and d are untouched.
    assert_eq!(
        entries(&events),
        vec!["delete c", "delete a", "create a", "create c"]
    );
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Same]);
    assert_eq!(ops_of(&r, "d"), vec![StepOp::Same]);
    assert_eq!(cloud.len(), 4);
}

#[tokio::test]
async fn provider_replacement_through_diff_config_replaces_its_resources() {
    let events = log();
    let prov = replacing("k", false, events.clone()).on_diff_config(|req| {
        let region_changed = req.old_inputs.get("region") != req.new_inputs.get("region");
        Ok(DiffResponse {
            changes: if region_changed {
                DiffChanges::Some
            } else {
                DiffChanges::None
            },
            replace_keys: if region_changed {
                vec!["region".to_owned()]
            } else {
                vec![]
            },
            ..DiffResponse::default()
        })
    });
    let (mut w, cloud) = world(prov);
    let p = |region: &'static str| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            let mut pg = custom(
                "pulumi:providers:pkg",
                "explicit",
                inputs(&[("region", region)]),
            );
            pg.parent = Some(stack.clone());
            let provider = m.register_resource(pg).await.map_err(|e| e.to_string())?;
            let mut g = custom(T, "a", inputs(&[("k", "same")]));
            g.provider = Some(format!(
                "{}::{}",
                provider.urn,
                provider.id.unwrap_or_default()
            ));
            reg(&m, &stack, g).await?;
            Ok(())
        })
    };
    expect_ok(&w.up(&p("eu")).await);
    let first_provider = w.resource("explicit").unwrap().id.clone();
    events.lock().unwrap().clear();
    let r = w.up(&p("us")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "explicit"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_ne!(w.resource("explicit").unwrap().id, first_provider);
    assert_eq!(entries(&events), vec!["create a", "delete a"]);
    assert_eq!(cloud.len(), 1);
    // A config change that DiffConfig does not flag is an update, and the
    // resource stays.
    let r = w.up(&p("us")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
}

#[tokio::test]
async fn forced_replacement_with_replace_option() {
    let events = log();
    let (mut w, _cloud) = world(replacing("k", false, events.clone()));
    expect_ok(&w.up(&single("1")).await);
    let urn = w.resource("a").unwrap().urn.clone();
    w.options.replace = vec![urn.into()];
    let r = w.up(&single("1")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
}

#[tokio::test]
async fn a_tainted_resource_is_replaced_by_the_next_update_and_the_taint_cleared() {
    let events = log();
    let (mut w, cloud) = world(replacing("k", false, events.clone()));
    expect_ok(&w.up(&single("1")).await);
    let old_id = w.resource("a").unwrap().id.clone();
    let index = w
        .snapshot
        .resources
        .iter()
        .position(|r| r.urn.name() == "a")
        .unwrap();
    w.snapshot.resources[index].taint = true;
    // The preview shows the replacement; the same program replaces it.
    let p = w.preview(&single("1")).await;
    expect_ok(&p);
    assert_eq!(
        ops_of(&p, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    let r = w.up(&single("1")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    let a = w.resource("a").unwrap();
    assert_ne!(a.id, old_id);
    assert!(!a.taint);
    assert_eq!(cloud.len(), 1);
    // Untainted now: the next update leaves it alone.
    let again = w.up(&single("1")).await;
    expect_ok(&again);
    assert_eq!(ops_of(&again, "a"), vec![StepOp::Same]);
}

fn versioned(version: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut g = custom(T, "a", inputs(&[("k", "1")]));
        g.version = Some(version.to_owned());
        reg(&m, &stack, g).await?;
        Ok(())
    })
}

fn two_versions(v2_replaces: bool) -> (converge_testkit::Lifecycle, Arc<MockCloud>) {
    let cloud = MockCloud::new();
    let v1 = MockProvider::new("pkg").with_cloud(cloud.clone());
    let v2 = MockProvider::new("pkg")
        .with_cloud(cloud.clone())
        .with_version(semver::Version::new(2, 0, 0))
        .on_diff_config(move |_| {
            Ok(if v2_replaces {
                DiffResponse {
                    changes: DiffChanges::Some,
                    replace_keys: vec!["version".to_owned()],
                    ..DiffResponse::default()
                }
            } else {
                DiffResponse::none()
            })
        });
    let loader = Arc::new(MockLoader::new().with_provider(v1).with_provider(v2));
    (
        converge_testkit::Lifecycle::new(cloud.clone(), loader),
        cloud,
    )
}

/// Resources registered at once at two versions of one package: each
/// version's default provider is registered once, and every resource names
/// its own version's, by the ID it was given.
#[tokio::test]
async fn concurrent_resources_share_the_default_provider_of_their_version() {
    let (mut w, _cloud) = two_versions(false);
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..40 {
            let (m, stack) = (m.clone(), stack.clone());
            tasks.spawn(async move {
                let mut g = custom(T, &format!("r{i}"), inputs(&[("k", "1")]));
                if i % 2 == 1 {
                    g.version = Some("2.0.0".to_owned());
                }
                reg(&m, &stack, g).await.map(|_| ())
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.map_err(|e| e.to_string())??;
        }
        Ok(())
    });
    let r = w.up(&p).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "default"), vec![StepOp::Create]);
    assert_eq!(ops_of(&r, "default_2_0_0"), vec![StepOp::Create]);
    for i in 0..40 {
        let provider = w.resource(&format!("r{i}")).unwrap().provider.clone();
        let provider = provider.expect("a provider reference");
        let want = if i % 2 == 1 {
            "default_2_0_0"
        } else {
            "default"
        };
        assert_eq!(provider.urn.name(), want, "r{i}");
        let default = w.resource(want).expect("the default provider");
        assert_eq!(default.id.as_deref(), Some(provider.id.as_str()), "r{i}");
    }
}

#[tokio::test]
async fn upgrading_a_default_provider_does_not_replace_its_resources() {
    let (mut w, cloud) = two_versions(false);
    expect_ok(&w.up(&versioned("1.0.0")).await);
    let r = w.up(&versioned("2.0.0")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert_eq!(ops_of(&r, "default_2_0_0"), vec![StepOp::Create]);
    assert_eq!(ops_of(&r, "default_1_0_0"), vec![StepOp::Delete]);
    assert_eq!(cloud.counts().creates, 1);
    assert!(
        w.resource("a")
            .unwrap()
            .provider
            .as_ref()
            .unwrap()
            .urn
            .name()
            == "default_2_0_0"
    );
}

#[tokio::test]
async fn a_default_provider_whose_config_diff_replaces_replaces_its_resources() {
    let (mut w, cloud) = two_versions(true);
    expect_ok(&w.up(&versioned("1.0.0")).await);
    let r = w.up(&versioned("2.0.0")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_eq!(cloud.counts().creates, 2);
    assert_eq!(cloud.len(), 1);
}

/// A forced replacement (`--replace`, a taint) goes in the order the
/// provider's Diff asks for: an object that keeps its identity (a file at
/// the same path) is deleted before its replacement is created, so the
/// delete never removes the new object.
#[tokio::test]
async fn a_forced_replacement_deletes_first_when_the_provider_asks() {
    let events = log();
    let always_dbr = replacing("k", false, events.clone()).on_diff(|_| {
        Ok(DiffResponse {
            delete_before_replace: true,
            ..DiffResponse::none()
        })
    });
    let (mut w, cloud) = world(always_dbr);
    expect_ok(&w.up(&single("1")).await);
    let urn = w.resource("a").unwrap().urn.clone();
    w.options.replace = vec![urn.into()];
    let r = w.up(&single("1")).await;
    expect_ok(&r);
    assert_eq!(entries(&events), vec!["create a", "delete a", "create a"]);
    assert_eq!(cloud.len(), 1);

    // And a taint.
    w.options.replace = Vec::new();
    for r in &mut w.snapshot.resources {
        if r.urn.name() == "a" {
            r.taint = true;
        }
    }
    let r = w.up(&single("1")).await;
    expect_ok(&r);
    assert_eq!(
        entries(&events),
        vec!["create a", "delete a", "create a", "delete a", "create a"]
    );
    assert_eq!(cloud.len(), 1);
}

/// An original a failed update left behind (its replacement was created,
/// then the program failed before deletions) is deleted by the next
/// update as an ordinary deletion: previewed, shown, counted and
/// announced, as Pulumi's pending deletes are. Never silently.
#[tokio::test]
async fn an_original_a_failed_update_left_is_deleted_as_an_ordinary_deletion_next_time() {
    use converge_engine::{EventSink, Severity};

    let events = log();
    let (mut w, cloud) = world(replacing("k", false, events.clone()));
    expect_ok(&w.up(&single("1")).await);
    let failing = program(|m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("k", "2")]))).await?;
        Err("the program failed after the replacement".to_string())
    });
    let r = w.up(&failing).await;
    assert!(r.error.is_some());
    assert_eq!(cloud.len(), 2, "the original is still there");
    let pending: Vec<bool> = w
        .snapshot
        .resources
        .iter()
        .filter(|r| r.urn.name() == "a")
        .map(|r| r.delete)
        .collect();
    assert_eq!(
        pending,
        vec![false, true],
        "the original is pending deletion"
    );

    for preview in [true, false] {
        let (sink, mut rx) = EventSink::channel();
        w.events = sink;
        let r = if preview {
            w.preview(&single("2")).await
        } else {
            w.up(&single("2")).await
        };
        expect_ok(&r);
        assert_eq!(ops_of(&r, "a"), vec![StepOp::Same, StepOp::Delete]);
        assert_eq!(r.plan.counts().get(&StepOp::Delete), Some(&1));
        assert_eq!(
            diagnostics(&mut rx, Severity::Info),
            ["completing deletion from previous update"]
        );
        assert_eq!(cloud.len(), if preview { 2 } else { 1 });
    }
    assert_eq!(
        entries(&events),
        vec!["create a", "create a", "delete a"],
        "the original deleted once, by the update"
    );
    assert_eq!(copies(&w, "a"), 1);
}

/// `a` (input `input`, replaced delete-before-replace when it changes) and
/// `c`, whose input comes from `a` and is replaced with it.
fn a_and_dependent(v: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let a = reg(&m, &stack, custom(T, "a", inputs(&[("input", v)]))).await?;
        reg(&m, &stack, fed_by("c", &a)).await?;
        Ok(())
    })
}

/// A targeted delete-before-replace whose dependent must be replaced with
/// it, but is not targeted, is refused before anything is deleted: the
/// dependent's object would be gone while its state says it is there.
/// With the dependent targeted too, both are replaced, dependent first.
#[tokio::test]
async fn a_targeted_delete_before_replace_never_deletes_an_untargeted_dependent() {
    let events = log();
    let (mut w, cloud) = world(replacing("input", true, events.clone()));
    expect_ok(&w.up(&a_and_dependent("1")).await);
    events.lock().unwrap().clear();
    let before = w.snapshot.clone();
    let a_urn = w.resource("a").unwrap().urn.clone();
    w.options.targets = Some(vec![
        converge_model::UrnPattern::parse(a_urn.as_str()).unwrap()
    ]);
    for preview in [true, false] {
        let r = if preview {
            w.preview(&a_and_dependent("2")).await
        } else {
            w.up(&a_and_dependent("2")).await
        };
        let err = r
            .error
            .clone()
            .expect("the targeted replacement is refused");
        assert!(
            matches!(
                &err,
                converge_engine::EngineError::ReplacementDependentNotTargeted { dependent, .. }
                    if dependent.name() == "c"
            ),
            "{err}"
        );
        assert!(err.to_string().contains("--target-dependents"), "{err}");
        assert!(entries(&events).is_empty(), "{:?}", entries(&events));
        assert_eq!(cloud.len(), 2);
        assert_eq!(w.snapshot.resources, before.resources);
    }

    w.options.target_dependents = true;
    expect_ok(&w.up(&a_and_dependent("2")).await);
    assert_eq!(
        entries(&events),
        vec!["delete c", "delete a", "create a", "create c"]
    );
}

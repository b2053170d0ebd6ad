//! Create, same, update, read, components, preview, refresh,
//! destroy, failures.

use converge_engine::{ReadGoal, StepOp};
use converge_model::PropertyValue;
use converge_plugin::{CreateResponse, ProviderError};
use converge_testkit::{component, custom, program, register_stack, CloudOp};

use super::*;

/// stack + one Thing named `a` with input `v`.
fn one(v: &'static str) -> converge_testkit::TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("v", v)]))).await?;
        Ok(())
    })
}

/// Each step's finish event: an update carries the state before and
/// after; a Same step only the state carried over, not a copy of it as
/// its old state too.
#[tokio::test]
async fn finish_events_carry_old_states_for_changes_only() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&one("1")).await);
    let (events, mut rx) = converge_engine::EventSink::channel();
    w.events = events;
    expect_ok(&w.up(&one("2")).await);
    let (events, mut same_rx) = converge_engine::EventSink::channel();
    w.events = events;
    expect_ok(&w.up(&one("2")).await);
    let finished = |rx: &mut tokio::sync::mpsc::UnboundedReceiver<converge_engine::EngineEvent>| {
        let mut out = Vec::new();
        while let Ok(event) = rx.try_recv() {
            if let converge_engine::EngineEvent::StepFinished {
                op, urn, old, new, ..
            } = event
            {
                if urn.name() == "a" {
                    out.push((op, old, new));
                }
            }
        }
        out
    };
    let updated = finished(&mut rx);
    assert_eq!(updated.len(), 1);
    let (op, old, new) = &updated[0];
    assert_eq!(*op, StepOp::Update);
    assert_eq!(old.as_ref().unwrap().inputs.get("v"), Some(&s("1")));
    assert_eq!(new.as_ref().unwrap().inputs.get("v"), Some(&s("2")));
    let same = finished(&mut same_rx);
    assert_eq!(same.len(), 1);
    let (op, old, new) = &same[0];
    assert_eq!(*op, StepOp::Same);
    assert!(old.is_none(), "a Same step's event copies the old state");
    assert_eq!(new.as_ref().unwrap().inputs.get("v"), Some(&s("2")));
}

#[tokio::test]
async fn create_then_same_then_update() {
    let (mut w, cloud) = world(provider());
    let r = w.up(&one("1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Create]);
    assert_eq!(ops_of(&r, "default"), vec![StepOp::Create]);
    assert_eq!(cloud.len(), 1);
    let a = w.resource("a").unwrap();
    assert_eq!(a.outputs.get("v"), Some(&s("1")));
    assert!(a
        .provider
        .as_ref()
        .unwrap()
        .urn
        .as_str()
        .ends_with("pulumi:providers:pkg::default"));

    let r = w.up(&one("1")).await;
    expect_ok(&r);
    assert!(
        all_ops(&r).iter().all(|(_, op)| *op == StepOp::Same),
        "{:?}",
        all_ops(&r)
    );
    assert_eq!(cloud.counts().creates, 1);

    let r = w.up(&one("2")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(cloud.len(), 1);
    assert_eq!(cloud.objects()[0].properties.get("v"), Some(&s("2")));
    assert_eq!(w.resource("a").unwrap().outputs.get("v"), Some(&s("2")));
}

/// Without the in-memory journal (the CLI's way), every operation's result
/// is still the persisted journal replayed onto its base (the world checks
/// it after each), with creates, sames, an update and a delete.
#[tokio::test]
async fn results_without_a_kept_journal_are_the_persisted_journal_replayed() {
    let (mut w, cloud) = world(provider());
    w.options.keep_journal = false;
    let r = w.up(&one("1")).await;
    expect_ok(&r);
    assert!(r.journal.is_empty());
    assert_eq!(w.resource("a").unwrap().outputs.get("v"), Some(&s("1")));

    let r = w.up(&one("1")).await;
    expect_ok(&r);
    assert!(all_ops(&r).iter().all(|(_, op)| *op == StepOp::Same));
    assert_eq!(w.snapshot.resources.len(), 3);

    let r = w.up(&one("2")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(w.resource("a").unwrap().outputs.get("v"), Some(&s("2")));

    let r = w.destroy().await;
    expect_ok(&r);
    assert!(w.snapshot.resources.is_empty());
    assert_eq!(cloud.len(), 0);
}

#[tokio::test]
async fn components_record_children_and_outputs() {
    let (mut w, _cloud) = world(provider());
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let comp = reg(&m, &stack, component("my:app:Web", "web")).await?;
        let mut child = custom(T, "child", inputs(&[("v", "x")]));
        child.parent = Some(comp.urn.clone());
        reg(&m, &stack, child).await?;
        m.register_resource_outputs(&comp.urn, inputs(&[("url", "https://x")]))
            .await
            .map_err(|e| e.to_string())?;
        m.register_resource_outputs(&stack, inputs(&[("out", "1")]))
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    });
    expect_ok(&w.up(&p).await);
    let child = w.resource("child").unwrap();
    assert_eq!(
        child.urn.as_str(),
        "urn:pulumi:test::proj::my:app:Web$pkg:index:Thing::child"
    );
    assert_eq!(
        w.resource("web").unwrap().outputs.get("url"),
        Some(&s("https://x"))
    );
    assert_eq!(
        w.resource("proj-test").unwrap().outputs.get("out"),
        Some(&s("1"))
    );
    assert!(w.resource("web").unwrap().id.is_none());
    let r = w.up(&p).await;
    expect_ok(&r);
    assert!(all_ops(&r).iter().all(|(_, op)| *op == StepOp::Same));
}

#[tokio::test]
async fn read_records_an_external_resource() {
    let (mut w, cloud) = world(provider());
    let id = w.insert_outside(
        "urn:pulumi:test::proj::pkg:index:Thing::ext",
        "pkg",
        inputs(&[("v", "outside")]),
    );
    let p = program(move |m| {
        let id = id.clone();
        async move {
            let stack = register_stack(&m).await?;
            let r = m
                .read_resource(ReadGoal {
                    type_token: T.to_owned(),
                    name: "ext".to_owned(),
                    id,
                    parent: Some(stack),
                    inputs: Default::default(),
                    provider: None,
                    version: None,
                    dependencies: vec![],
                    custom_timeouts: None,
                })
                .await
                .map_err(|e| e.to_string())?;
            assert_eq!(r.outputs.get("v"), Some(&PropertyValue::from("outside")));
            Ok(())
        }
    });
    expect_ok(&w.up(&p).await);
    assert!(w.resource("ext").unwrap().external);
    // Dropping the read from the program forgets it without deleting it.
    let empty = program(|m| async move {
        register_stack(&m).await?;
        Ok(())
    });
    expect_ok(&w.up(&empty).await);
    assert!(w.resource("ext").is_none());
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn preview_changes_nothing_and_unknowns_flow_to_dependents() {
    let seen = log();
    let seen2 = seen.clone();
    let prov = provider()
        .on_create(|req| {
            let mut props = req.properties.clone();
            props.insert(
                "generated".to_owned(),
                if req.preview {
                    PropertyValue::Unknown
                } else {
                    PropertyValue::from("g-1")
                },
            );
            Ok(CreateResponse {
                id: if req.preview {
                    String::new()
                } else {
                    "id-x".to_owned()
                },
                properties: props,
            })
        })
        .on_check(move |req| {
            if req.news.values().any(|v| v.contains_unknowns()) {
                seen2.lock().unwrap().push(req.urn.name().to_owned());
            }
            Ok(converge_plugin::CheckResponse {
                inputs: req.news,
                failures: vec![],
            })
        });
    let (mut w, cloud) = world(prov);
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let a = reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))).await?;
        let generated = a
            .outputs
            .get("generated")
            .cloned()
            .unwrap_or(PropertyValue::Unknown);
        let mut b = custom(
            T,
            "b",
            [("from_a".to_owned(), generated)].into_iter().collect(),
        );
        b.dependencies = vec![a.urn.clone()];
        b.property_dependencies = [("from_a".to_owned(), vec![a.urn.clone()])]
            .into_iter()
            .collect();
        reg(&m, &stack, b).await?;
        Ok(())
    });
    let r = w.preview(&p).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Create]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Create]);
    assert_eq!(entries(&seen), vec!["b".to_owned()]);
    assert!(cloud.is_empty());
    assert!(
        w.snapshot.resources.is_empty(),
        "a preview must not change the stack"
    );
}

#[tokio::test]
async fn failure_mid_update_keeps_what_completed() {
    let (mut w, cloud) = world(provider());
    cloud.fail_when(|op, urn| op == CloudOp::Create && urn.name() == "b");
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let a = reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))).await?;
        let mut b = custom(T, "b", inputs(&[("v", "1")]));
        b.dependencies = vec![a.urn];
        reg(&m, &stack, b).await?;
        Ok(())
    });
    let r = w.up(&p).await;
    let err = r.error.as_ref().expect("must fail").to_string();
    assert!(err.contains("::b"), "{err}");
    assert!(w.resource("a").is_some());
    assert!(w.resource("b").is_none());
    assert!(w.snapshot.pending_operations.is_empty());
    cloud.heal();
    let r = w.up(&p).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Create]);
}

#[tokio::test]
async fn a_partially_created_object_is_recorded_with_init_errors() {
    let prov = provider().on_create(|req| {
        Err(ProviderError::PartialFailure {
            id: "half".to_owned(),
            properties: req.properties,
            reasons: vec!["health check failed".to_owned()],
        })
    });
    let (mut w, _cloud) = world(prov);
    let r = w.up(&one("1")).await;
    // Reported as failed, never as done (no plan step), yet recorded.
    assert!(
        r.plan.steps.iter().all(|s| !s.urn.ends_with("::a")),
        "{:?}",
        r.plan.steps
    );
    assert!(r.error.unwrap().to_string().contains("health check failed"));
    let a = w.resource("a").unwrap();
    assert_eq!(a.id.as_deref(), Some("half"));
    assert_eq!(a.init_errors, vec!["health check failed".to_owned()]);
}

#[tokio::test]
async fn an_object_with_init_errors_is_updated_on_the_next_run_until_it_initialises() {
    let fail = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let flag = fail.clone();
    let prov = provider()
        .on_create(move |req| {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(ProviderError::PartialFailure {
                    id: "half".to_owned(),
                    properties: req.properties,
                    reasons: vec!["health check failed".to_owned()],
                });
            }
            Ok(CreateResponse {
                id: "whole".to_owned(),
                properties: req.properties,
            })
        })
        // The retry: an update that finishes the half-made object.
        .on_update(|req| {
            Ok(converge_plugin::UpdateResponse {
                properties: req.new_inputs.clone(),
            })
        });
    let (mut w, _cloud) = world(prov);
    assert!(w.up(&one("1")).await.error.is_some());
    fail.store(false, std::sync::atomic::Ordering::SeqCst);
    // Same inputs, but the object never finished: an update, not "same".
    let r = w.up(&one("1")).await;
    expect_ok(&r);
    let ops: Vec<_> = r
        .plan
        .steps
        .iter()
        .filter(|s| s.urn.ends_with("::a"))
        .map(|s| s.op)
        .collect();
    assert_eq!(ops, vec![StepOp::Update]);
    assert!(w.resource("a").unwrap().init_errors.is_empty());
    // Initialised: from now on an unchanged program is the same.
    let r = w.up(&one("1")).await;
    expect_ok(&r);
    assert!(r
        .plan
        .steps
        .iter()
        .filter(|s| s.urn.ends_with("::a"))
        .all(|s| s.op == StepOp::Same));
}

#[tokio::test]
async fn a_partially_updated_object_is_recorded_as_the_provider_left_it() {
    let prov = provider().on_update(|req| {
        let mut properties = req.new_inputs.clone();
        properties.insert("half".to_owned(), s("done"));
        Err(ProviderError::PartialFailure {
            id: req.id.clone(),
            properties,
            reasons: vec!["rollout stalled".to_owned()],
        })
    });
    let (mut w, _cloud) = world(prov);
    expect_ok(&w.up(&one("1")).await);
    let id = w.resource("a").unwrap().id.clone();
    let r = w.up(&one("2")).await;
    assert!(
        r.plan.steps.iter().all(|s| !s.urn.ends_with("::a")),
        "{:?}",
        r.plan.steps
    );
    assert!(r.error.unwrap().to_string().contains("rollout stalled"));
    let a = w.resource("a").unwrap();
    assert_eq!(a.id, id);
    assert_eq!(a.outputs.get("v"), Some(&s("2")));
    assert_eq!(a.outputs.get("half"), Some(&s("done")));
    assert_eq!(a.init_errors, vec!["rollout stalled".to_owned()]);
}

#[tokio::test]
async fn refresh_records_drift_and_drops_vanished_objects() {
    let (mut w, cloud) = world(provider());
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))).await?;
        reg(&m, &stack, custom(T, "b", inputs(&[("v", "1")]))).await?;
        Ok(())
    });
    expect_ok(&w.up(&p).await);
    let a_id = w.resource("a").unwrap().id.clone().unwrap();
    let b_id = w.resource("b").unwrap().id.clone().unwrap();
    cloud
        .set_properties(&a_id, inputs(&[("v", "drifted")]))
        .unwrap();
    cloud.remove(&b_id).unwrap();
    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(
        w.resource("a").unwrap().outputs.get("v"),
        Some(&s("drifted"))
    );
    assert!(w.resource("b").is_none());
}

#[tokio::test]
async fn destroy_deletes_everything() {
    let (mut w, cloud) = world(provider());
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let a = reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))).await?;
        let mut b = custom(T, "b", inputs(&[("v", "1")]));
        b.dependencies = vec![a.urn];
        reg(&m, &stack, b).await?;
        Ok(())
    });
    expect_ok(&w.up(&p).await);
    assert_eq!(cloud.len(), 2);
    let r = w.destroy().await;
    expect_ok(&r);
    assert!(cloud.is_empty());
    assert!(
        w.snapshot.resources.is_empty(),
        "{:?}",
        w.snapshot.resources
    );
}

#[tokio::test]
async fn duplicate_registrations_and_unknown_dependencies_are_errors() {
    let (mut w, _cloud) = world(provider());
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[]))).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[]))).await?;
        Ok(())
    });
    let r = w.up(&p).await;
    assert!(r
        .error
        .unwrap()
        .to_string()
        .contains("duplicate resource URN"));
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut g = custom(T, "b", inputs(&[]));
        g.dependencies =
            vec![
                converge_model::Urn::parse("urn:pulumi:test::proj::pkg:index:Thing::ghost")
                    .unwrap(),
            ];
        reg(&m, &stack, g).await?;
        Ok(())
    });
    let r = w.up(&p).await;
    assert!(r.error.unwrap().to_string().contains("ghost"));
}

#[tokio::test]
async fn continue_on_error_carries_on_with_independent_work() {
    let (mut w, cloud) = world(provider());
    cloud.fail_when(|op, urn| op == CloudOp::Create && urn.name() == "bad");
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        // The program keeps going after a failed registration, as the SDKs
        // do for independent resources.
        let bad = reg(&m, &stack, custom(T, "bad", inputs(&[]))).await;
        assert!(bad.is_err());
        reg(&m, &stack, custom(T, "good", inputs(&[]))).await?;
        Ok(())
    });
    w.options.continue_on_error = true;
    let r = w.up(&p).await;
    assert!(r.error.unwrap().to_string().contains("bad"));
    assert!(w.resource("good").is_some());
    assert!(w.resource("bad").is_none());

    // Without it, nothing new starts after the failure.
    let (mut w, cloud) = world(provider());
    cloud.fail_when(|op, urn| op == CloudOp::Create && urn.name() == "bad");
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let _ = reg(&m, &stack, custom(T, "bad", inputs(&[]))).await;
        let good = reg(&m, &stack, custom(T, "good", inputs(&[]))).await;
        assert!(good.unwrap_err().contains("earlier step failed"));
        Ok(())
    });
    let r = w.up(&p).await;
    assert!(r.error.is_some());
    assert!(w.resource("good").is_none());
}

/// The state records when each resource was created and last changed, as
/// Pulumi's does: a create stamps both, a Same step keeps both (custom
/// resources and components), an update keeps `created` and stamps
/// `modified` anew; a preview stamps nothing.
#[tokio::test]
async fn created_and_modified_are_recorded_as_pulumi_records_them() {
    let (mut w, _cloud) = world(provider());
    let stamps = |w: &Lifecycle, name: &str| {
        let r = w
            .snapshot
            .resources
            .iter()
            .find(|r| r.urn.name() == name)
            .unwrap_or_else(|| panic!("no {name}"));
        (r.created.clone(), r.modified.clone())
    };
    expect_ok(&w.up(&one("1")).await);
    let (created, modified) = stamps(&w, "a");
    assert!(
        created.is_some() && created == modified,
        "{created:?} {modified:?}"
    );
    let stack_name = w
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.is_stack())
        .unwrap()
        .urn
        .name()
        .to_owned();
    let stack = stamps(&w, &stack_name);
    assert!(stack.0.is_some(), "the stack component is stamped too");

    expect_ok(&w.up(&one("1")).await);
    assert_eq!(stamps(&w, "a"), (created.clone(), modified.clone()));
    assert_eq!(
        stamps(&w, &stack_name),
        stack,
        "a Same component keeps its stamps"
    );

    expect_ok(&w.preview(&one("2")).await);
    let r = w.up(&one("2")).await;
    expect_ok(&r);
    let (after_created, after_modified) = stamps(&w, "a");
    assert_eq!(after_created, created, "an update keeps created");
    assert!(after_modified.is_some());
    let parse = |t: &Option<String>| {
        time::OffsetDateTime::parse(
            t.as_deref().unwrap(),
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap()
    };
    assert!(parse(&after_modified) >= parse(&modified));
}

/// The stack's outputs `outputs`, registered before the program fails
/// (`fail`) or returns, as the SDKs register them even after a throw.
fn exporting(
    outputs: &'static [(&'static str, &'static str)],
    fail: bool,
) -> converge_testkit::TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        m.register_resource_outputs(&stack, inputs(outputs))
            .await
            .map_err(|e| e.to_string())?;
        if fail {
            return Err("the program threw".to_owned());
        }
        Ok(())
    })
}

#[tokio::test]
async fn a_failed_operation_sets_the_stack_outputs_it_was_given_and_deletes_none() {
    let (mut w, _cloud) = world(provider());
    let outputs = |w: &Lifecycle| w.resource("proj-test").unwrap().outputs.clone();
    expect_ok(&w.up(&exporting(&[("a", "1"), ("b", "1")], false)).await);
    // As Pulumi's engine does: a failed update sets what the program
    // exported before it failed and keeps the rest.
    let r = w.up(&exporting(&[("b", "2"), ("c", "2")], true)).await;
    assert!(r.error.is_some());
    assert_eq!(
        outputs(&w),
        inputs(&[("a", "1"), ("b", "2"), ("c", "2")]),
        "a failed update deleted a stack output"
    );
    // One that succeeds sets exactly what the program exported.
    expect_ok(&w.up(&exporting(&[("c", "3")], false)).await);
    assert_eq!(outputs(&w), inputs(&[("c", "3")]));
}

/// A provider's `Check` that refuses the inputs fails the step, and each
/// failure is an error diagnostic on the resource (the cause reaches the
/// display and the event log, whatever the program reports); the failed
/// value is not in it.
#[tokio::test]
async fn check_failures_are_error_diagnostics_on_the_resource() {
    let prov = provider().on_check(|req| {
        Ok(converge_plugin::CheckResponse {
            inputs: req.news,
            failures: vec![converge_plugin::provider::CheckFailure {
                property: "v".into(),
                reason: "must be small".into(),
            }],
        })
    });
    let (mut w, cloud) = world(prov);
    let (sink, mut rx) = converge_engine::events::EventSink::channel();
    w.events = sink;
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "big", inputs(&[("v", "s3cr3t-99")]))).await?;
        Ok(())
    });
    let r = w.up(&p).await;
    assert!(
        matches!(
            r.error,
            Some(converge_engine::EngineError::CheckFailed { .. })
        ),
        "{:?}",
        r.error
    );
    assert!(cloud.is_empty());
    let mut on_resource = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let converge_engine::EngineEvent::Diagnostic {
            severity: converge_engine::Severity::Error,
            urn: Some(urn),
            message,
        } = event
        {
            on_resource.push((urn.name().to_owned(), message));
        }
    }
    assert_eq!(
        on_resource,
        [(
            "big".to_owned(),
            format!("{T} resource 'big': property v has a problem: must be small")
        )]
    );
    assert!(!on_resource[0].1.contains("s3cr3t"));
}

/// An invoke of a function the provider does not have, when the provider
/// implements no functions at all, says there is no such function (not
/// that the provider "does not implement Invoke").
#[tokio::test]
async fn an_invoke_on_a_provider_without_functions_names_the_function() {
    let (mut w, _cloud) = world(provider());
    let seen = log();
    let record = seen.clone();
    let p = program(move |m| {
        let record = record.clone();
        async move {
            register_stack(&m).await?;
            let answer = m
                .invoke(converge_engine::InvokeGoal {
                    token: "pkg:index:doesNotExist".to_owned(),
                    args: Default::default(),
                    provider: None,
                    version: None,
                })
                .await;
            record.lock().unwrap().push(
                answer
                    .map(|_| String::new())
                    .unwrap_or_else(|e| e.to_string()),
            );
            Ok(())
        }
    });
    expect_ok(&w.up(&p).await);
    assert_eq!(
        entries(&seen),
        ["invoke pkg:index:doesNotExist: no such function: the provider of package `pkg` has no functions"]
    );
}

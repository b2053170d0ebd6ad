//! Saved plans (seed 003's second plan with Pulumi's plan semantics): a
//! plan that holds applies; each violation fails with its message and
//! changes nothing it does not allow; a stale plan is refused; a
//! refresh-only plan applies what the preview read; Create results are
//! checked against the planned state.

use std::sync::Arc;

use converge_engine::saved_plan::refresh::refresh_plans;
use converge_engine::saved_plan::{check_fresh, Freshness, StalePlan};
use converge_engine::{EngineEvent, EventSink, PlanConstraint, PlanUse, Severity};
use converge_model::{PropertyValue, UrnPattern};
use converge_plugin::CreateResponse;
use converge_state::plan::{DeploymentPlan, PlanBase};
use converge_state::Manifest;
use converge_testkit::{custom, program, register_stack, TestProgram};

use super::*;

fn things(pairs: &'static [(&'static str, &'static str)]) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        for (name, v) in pairs {
            reg(&m, &stack, custom(T, name, inputs(&[("v", v)]))).await?;
        }
        Ok(())
    })
}

fn saved(result: &OperationResult, usage: PlanUse) -> PlanConstraint {
    PlanConstraint {
        plan: Arc::new(DeploymentPlan {
            manifest: Manifest::converge("2026-01-01T00:00:00Z"),
            config: Default::default(),
            resource_plans: result.resource_plans.clone(),
            base: None,
            refresh_only: false,
        }),
        usage,
    }
}

fn error_of(result: &OperationResult) -> String {
    result
        .error
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_else(|| panic!("the update should have failed"))
}

#[tokio::test]
async fn a_plan_that_holds_applies() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1")])).await);
    let preview = w.preview(&things(&[("a", "2"), ("b", "1")])).await;
    expect_ok(&preview);
    let a = preview
        .resource_plans
        .iter()
        .find(|(u, _)| u.name() == "a")
        .unwrap()
        .1;
    assert_eq!(a.steps, vec!["update"]);
    assert_eq!(
        a.goal.as_ref().unwrap().input_diff.updates.get("v"),
        Some(&s("2"))
    );
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    let r = w.up(&things(&[("a", "2"), ("b", "1")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Create]);
    assert_eq!(cloud.len(), 2);
}

#[tokio::test]
async fn a_planned_update_may_turn_out_unchanged() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1")])).await);
    let preview = w.preview(&things(&[("a", "2")])).await;
    // Someone else applied the same change first: the update is a same.
    expect_ok(&w.up(&things(&[("a", "2")])).await);
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    let r = w.up(&things(&[("a", "2")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
}

#[tokio::test]
async fn a_changed_input_violates_the_plan_naming_the_property() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1")])).await);
    let preview = w.preview(&things(&[("a", "2")])).await;
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    let r = w.up(&things(&[("a", "3")])).await;
    let e = error_of(&r);
    assert!(
        e.contains("::a violates plan: properties changed: v: planned \"2\", but got \"3\""),
        "{e}"
    );
    assert_eq!(cloud.objects()[0].properties.get("v"), Some(&s("1")));
    assert_eq!(w.resource("a").unwrap().inputs.get("v"), Some(&s("1")));
}

#[tokio::test]
async fn a_changed_option_violates_the_plan() {
    let (mut w, _cloud) = world(provider());
    let preview = w.preview(&things(&[("a", "1")])).await;
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    let protected = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut g = custom(T, "a", inputs(&[("v", "1")]));
        g.options.protect = true;
        reg(&m, &stack, g).await?;
        Ok(())
    });
    let e = error_of(&w.up(&protected).await);
    assert!(
        e.contains("::a violates plan: protect changed (expected false)"),
        "{e}"
    );
    assert!(w.resource("a").is_none());
}

#[tokio::test]
async fn an_unknown_planned_value_may_take_any_value() {
    let p = provider().on_create(|req| {
        let mut properties = req.properties.clone();
        let arn = if req.preview {
            PropertyValue::Unknown
        } else {
            s(&format!("arn:{}", req.urn.name()))
        };
        properties.insert("arn".to_owned(), arn);
        Ok(CreateResponse {
            id: if req.preview {
                String::new()
            } else {
                format!("id-{}", req.urn.name())
            },
            properties,
        })
    });
    let (mut w, _cloud) = world(p);
    let chained = program(|m| async move {
        let stack = register_stack(&m).await?;
        let a = reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))).await?;
        let arn = a.outputs.get("arn").cloned().unwrap_or(PropertyValue::Null);
        let mut b = custom(T, "b", inputs(&[]));
        b.inputs.insert("ref".to_owned(), arn);
        reg(&m, &stack, b).await?;
        Ok(())
    });
    let preview = w.preview(&chained).await;
    expect_ok(&preview);
    let b = preview
        .resource_plans
        .iter()
        .find(|(u, _)| u.name() == "b")
        .unwrap()
        .1;
    assert_eq!(
        b.goal.as_ref().unwrap().input_diff.adds.get("ref"),
        Some(&PropertyValue::Unknown)
    );
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    let r = w.up(&chained).await;
    expect_ok(&r);
    assert_eq!(
        w.resource("b").unwrap().inputs.get("ref"),
        Some(&s("arn:a"))
    );
}

#[tokio::test]
async fn a_bigger_step_than_planned_violates_the_plan() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1")])).await);
    let preview = w.preview(&things(&[("a", "1")])).await;
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    w.options.replace = vec![UrnPattern::parse("**::a").unwrap()];
    let e = error_of(&w.up(&things(&[("a", "1")])).await);
    assert!(
        e.contains("::a violates plan: the plan has same but the update would replace"),
        "{e}"
    );
    assert_eq!(cloud.counts().creates, 1);
}

#[tokio::test]
async fn a_resource_absent_from_the_plan_may_not_be_created() {
    let (mut w, cloud) = world(provider());
    let preview = w.preview(&things(&[("a", "1")])).await;
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    let e = error_of(&w.up(&things(&[("a", "1"), ("b", "1")])).await);
    assert!(
        e.contains("::b violates plan: the resource is not in the plan, so it may not be created"),
        "{e}"
    );
    assert!(cloud.objects().iter().all(|o| o.urn.name() != "b"));
}

#[tokio::test]
async fn an_unplanned_deletion_violates_the_plan() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1"), ("b", "1")])).await);
    let preview = w.preview(&things(&[("a", "1"), ("b", "1")])).await;
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    let e = error_of(&w.up(&things(&[("a", "1")])).await);
    assert!(
        e.contains("::b violates plan: the plan does not delete this resource"),
        "{e}"
    );
    assert_eq!(cloud.len(), 2);
    assert!(w.resource("b").is_some());
}

#[tokio::test]
async fn a_planned_deletion_applies() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1"), ("b", "1")])).await);
    let preview = w.preview(&things(&[("a", "1")])).await;
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    expect_ok(&w.up(&things(&[("a", "1")])).await);
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn planned_steps_that_never_ran_fail_the_update() {
    let (mut w, _cloud) = world(provider());
    let preview = w.preview(&things(&[("a", "1"), ("b", "1")])).await;
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));
    let r = w.up(&things(&[("a", "1")])).await;
    let e = error_of(&r);
    assert!(e.contains("did not take every planned step"), "{e}");
    assert!(e.contains("::b (create)"), "{e}");
    assert!(w.resource("a").is_some(), "what did run is kept");
}

#[tokio::test]
async fn without_a_plan_an_update_is_unconstrained() {
    let (mut w, _cloud) = world(provider());
    let preview = w.preview(&things(&[("a", "1")])).await;
    drop(preview);
    expect_ok(&w.up(&things(&[("a", "2"), ("b", "1")])).await);
}

#[test]
fn a_plan_made_against_other_state_is_stale() {
    let base = PlanBase {
        checkpoint_digest: "one".to_owned(),
        journal_sequence: 0,
    };
    let mut plan = DeploymentPlan {
        manifest: Manifest::converge("2026-01-01T00:00:00Z"),
        config: Default::default(),
        resource_plans: Default::default(),
        base: Some(base.clone()),
        refresh_only: false,
    };
    assert_eq!(check_fresh(&plan, &base), Ok(Freshness::Current));
    let moved = PlanBase {
        checkpoint_digest: "two".to_owned(),
        journal_sequence: 0,
    };
    let err = check_fresh(&plan, &moved).unwrap_err();
    assert_eq!(err, StalePlan);
    assert!(err.to_string().starts_with("plan is stale"), "{err}");
    plan.base = None;
    assert_eq!(check_fresh(&plan, &moved), Ok(Freshness::Unrecorded));
}

#[tokio::test]
async fn a_refresh_only_plan_applies_what_the_preview_read() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1"), ("b", "1")])).await);
    let ids: Vec<String> = ["a", "b"]
        .iter()
        .map(|n| w.resource(n).unwrap().id.clone().unwrap())
        .collect();
    // Drift behind Converge's back: a changed, b gone.
    cloud
        .set_properties(&ids[0], inputs(&[("v", "drifted")]))
        .unwrap();
    cloud.remove(&ids[1]).unwrap();
    let mut ctx_options = w.options.clone();
    ctx_options.preview = true;
    let previewed = converge_engine::refresh(converge_engine::OperationContext {
        base: Arc::new(w.snapshot.clone()),
        loader: w.loader.clone(),
        sink: Arc::new(converge_engine::DiscardSink),
        events: EventSink::discard(),
        options: ctx_options,
    })
    .await;
    expect_ok(&previewed);
    let recorded = refresh_plans(&w.snapshot, &previewed.snapshot);
    assert_eq!(recorded.len(), 2);
    // After the preview the object drifts again: the plan applies what
    // was reviewed, not what a new read would find.
    cloud
        .set_properties(&ids[0], inputs(&[("v", "later")]))
        .unwrap();
    cloud.reset_counts();
    w.options.plan = Some(PlanConstraint {
        plan: Arc::new(DeploymentPlan {
            manifest: Manifest::converge("2026-01-01T00:00:00Z"),
            config: Default::default(),
            resource_plans: recorded,
            base: None,
            refresh_only: true,
        }),
        usage: PlanUse::Enforce,
    });
    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(cloud.counts().reads, 0, "no provider was asked");
    assert_eq!(
        w.resource("a").unwrap().outputs.get("v"),
        Some(&s("drifted"))
    );
    assert!(w.resource("b").is_none());
}

fn warnings(rx: &mut tokio::sync::mpsc::UnboundedReceiver<EngineEvent>) -> Vec<String> {
    diagnostics(rx, Severity::Warning)
}

#[tokio::test]
async fn an_inconsistent_create_result_is_a_warning_naming_provider_resource_and_property() {
    let p = provider().on_create(|req| {
        let mut properties = req.properties.clone();
        let arn = if req.preview {
            "arn:planned"
        } else {
            "arn:actual"
        };
        properties.insert("arn".to_owned(), s(arn));
        properties.insert("zone".to_owned(), s("z1"));
        Ok(CreateResponse {
            id: if req.preview {
                String::new()
            } else {
                "id-1".to_owned()
            },
            properties,
        })
    });
    let (mut w, _cloud) = world(p);
    let preview = w.preview(&things(&[("a", "1")])).await;
    let (events, mut rx) = EventSink::channel();
    w.events = events;
    w.options.plan = Some(saved(&preview, PlanUse::ConsistencyOnly));
    let r = w.up(&things(&[("a", "1")])).await;
    expect_ok(&r);
    let found = warnings(&mut rx);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("provider produced an inconsistent result after apply: provider urn:pulumi:test::proj::pulumi:providers:pkg::default, resource urn:pulumi:test::proj::"),
        "{}",
        found[0]
    );
    assert!(
        found[0].contains("property arn: planned \"arn:planned\", but got \"arn:actual\""),
        "{}",
        found[0]
    );
}

#[tokio::test]
async fn provider_bookkeeping_outputs_are_not_promises() {
    // `__meta` (the Terraform adapter's private data and schema version)
    // may differ between the preview and the apply without a warning.
    let p = provider().on_create(|req| {
        let mut properties = req.properties.clone();
        let meta = if req.preview {
            "{}"
        } else {
            "{\"private\":\"x\"}"
        };
        properties.insert("__meta".to_owned(), s(meta));
        Ok(CreateResponse {
            id: if req.preview {
                String::new()
            } else {
                "id-1".to_owned()
            },
            properties,
        })
    });
    let (mut w, _cloud) = world(p);
    let preview = w.preview(&things(&[("a", "1")])).await;
    let (events, mut rx) = EventSink::channel();
    w.events = events;
    w.options.plan = Some(saved(&preview, PlanUse::ConsistencyOnly));
    expect_ok(&w.up(&things(&[("a", "1")])).await);
    assert_eq!(warnings(&mut rx), Vec::<String>::new());
}

#[tokio::test]
async fn a_consistent_provider_gets_no_warning() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1")])).await);
    let preview = w.preview(&things(&[("a", "2"), ("b", "1")])).await;
    let (events, mut rx) = EventSink::channel();
    w.events = events;
    w.options.plan = Some(saved(&preview, PlanUse::ConsistencyOnly));
    expect_ok(&w.up(&things(&[("a", "2"), ("b", "1")])).await);
    assert_eq!(warnings(&mut rx), Vec::<String>::new());
}

#[tokio::test]
async fn a_targeted_plan_applies_with_its_targets_and_says_so_without() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&things(&[("a", "1"), ("b", "1")])).await);
    let only_b = UrnPattern::parse("**::b").unwrap();
    w.options.targets = Some(vec![only_b.clone()]);
    let preview = w.preview(&things(&[("a", "2"), ("b", "2")])).await;
    expect_ok(&preview);
    w.options.plan = Some(saved(&preview, PlanUse::Enforce));

    // Without the plan's --target, `a` would change: refused, and why.
    w.options.targets = None;
    let r = w.up(&things(&[("a", "2"), ("b", "2")])).await;
    let e = error_of(&r);
    assert!(
        e.contains(
            "::a violates plan: the plan leaves this resource as it is (it was made with --target"
        ),
        "{e}"
    );
    assert_eq!(w.resource("a").unwrap().inputs.get("v"), Some(&s("1")));

    w.options.targets = Some(vec![only_b]);
    let r = w.up(&things(&[("a", "2"), ("b", "2")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Update]);
    assert_eq!(w.resource("a").unwrap().inputs.get("v"), Some(&s("1")));
    assert_eq!(w.resource("b").unwrap().inputs.get("v"), Some(&s("2")));
}

//! The change summary (`Plan::counts`): the logical steps of the program's
//! resources by kind, as Pulumi counts them. Default providers are not
//! counted (explicit providers are), a replacement counts once as
//! `replace`, an import with the update after it as `import`, a refresh
//! that found drift as `update`, a read only when it found something new.

use std::collections::BTreeMap;

use converge_engine::{OperationResult, ReadGoal, StepOp};
use converge_model::{DiffKind, PropertyDiff};
use converge_plugin::{DiffChanges, DiffResponse, ReadResponse};
use converge_testkit::{custom, program, register_stack, MockProvider, TestProgram};

use super::*;

fn counts(r: &OperationResult) -> BTreeMap<StepOp, usize> {
    expect_ok(r);
    r.plan.counts()
}

fn of<const N: usize>(pairs: [(StepOp, usize); N]) -> BTreeMap<StepOp, usize> {
    BTreeMap::from(pairs)
}

/// A provider whose Diff asks for a replacement when `k` changes and an
/// update when `v` does.
fn replacing_on_k() -> MockProvider {
    provider().on_diff(|req| {
        let changed: Vec<String> = req
            .new_inputs
            .iter()
            .filter(|(k, v)| req.old_inputs.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .collect();
        if changed.is_empty() {
            return Ok(DiffResponse::none());
        }
        let detailed = changed
            .iter()
            .map(|k| {
                let kind = match k.as_str() {
                    "k" => DiffKind::UpdateReplace,
                    _ => DiffKind::Update,
                };
                let diff = PropertyDiff {
                    kind,
                    input_diff: true,
                };
                (k.clone(), diff)
            })
            .collect();
        Ok(DiffResponse {
            changes: DiffChanges::Some,
            replace_keys: changed.iter().filter(|k| *k == "k").cloned().collect(),
            changed_keys: changed,
            detailed_diff: Some(detailed),
            ..DiffResponse::default()
        })
    })
}

/// stack + `a` (input `k`) + `b`, both on the default provider.
fn two(k: &'static str, v: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("k", k)]))).await?;
        reg(&m, &stack, custom(T, "b", inputs(&[("v", v)]))).await?;
        Ok(())
    })
}

#[tokio::test]
async fn the_default_provider_is_not_counted() {
    let (mut w, _) = world(replacing_on_k());
    let r = w.up(&two("1", "1")).await;
    // Its steps are there; they are not counted.
    assert_eq!(ops_of(&r, "default"), vec![StepOp::Create]);
    assert_eq!(counts(&r), of([(StepOp::Create, 3)]));
    assert_eq!(counts(&w.up(&two("1", "1")).await), of([(StepOp::Same, 3)]));
    let r = w.destroy().await;
    assert_eq!(ops_of(&r, "default"), vec![StepOp::Delete]);
    assert_eq!(counts(&r), of([(StepOp::Delete, 3)]));
}

#[tokio::test]
async fn an_explicit_provider_is_counted() {
    let (mut w, _) = world(provider());
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut pg = custom("pulumi:providers:pkg", "explicit", Default::default());
        pg.parent = Some(stack.clone());
        let provider = m.register_resource(pg).await.map_err(|e| e.to_string())?;
        let mut g = custom(T, "a", inputs(&[("v", "1")]));
        g.provider = Some(format!(
            "{}::{}",
            provider.urn,
            provider.id.unwrap_or_default()
        ));
        reg(&m, &stack, g).await?;
        Ok(())
    });
    assert_eq!(counts(&w.up(&p).await), of([(StepOp::Create, 3)]));
    assert_eq!(counts(&w.preview(&p).await), of([(StepOp::Same, 3)]));
}

#[tokio::test]
async fn a_replacement_counts_once_as_replace() {
    let (mut w, _) = world(replacing_on_k());
    expect_ok(&w.up(&two("1", "1")).await);
    let planned = w.preview(&two("2", "1")).await;
    assert_eq!(
        counts(&planned),
        of([(StepOp::Same, 2), (StepOp::Replace, 1)])
    );
    let r = w.up(&two("2", "2")).await;
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_eq!(
        counts(&r),
        of([(StepOp::Same, 1), (StepOp::Update, 1), (StepOp::Replace, 1)])
    );
}

#[tokio::test]
async fn a_delete_before_replace_counts_once_as_replace() {
    let (mut w, _) = world(replacing_on_k());
    let p = |k: &'static str| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "a", inputs(&[("k", k)]));
            g.options.delete_before_replace = Some(true);
            reg(&m, &stack, g).await?;
            Ok(())
        })
    };
    expect_ok(&w.up(&p("1")).await);
    assert_eq!(
        counts(&w.up(&p("2")).await),
        of([(StepOp::Same, 1), (StepOp::Replace, 1)])
    );
}

#[tokio::test]
async fn an_import_and_the_update_after_it_count_as_import() {
    let (mut w, _) = world(provider());
    let id = w.insert_outside(
        "urn:pulumi:test::proj::pkg:index:Thing::existing",
        "pkg",
        inputs(&[("v", "1")]),
    );
    let p = program(move |m| {
        let id = id.clone();
        async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "a", inputs(&[("v", "2")]));
            g.options.import_id = Some(id);
            reg(&m, &stack, g).await?;
            Ok(())
        }
    });
    let r = w.up(&p).await;
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update, StepOp::Import]);
    assert_eq!(counts(&r), of([(StepOp::Create, 1), (StepOp::Import, 1)]));
}

#[tokio::test]
async fn a_refresh_counts_drift_as_update_and_the_stack_as_same() {
    let p = replacing_on_k();
    let cloud = p.cloud().clone();
    let p = p.on_read(move |req| {
        Ok(match cloud.get(&req.id) {
            Some(o) => ReadResponse {
                id: o.id,
                inputs: o.properties.clone(),
                properties: o.properties,
            },
            None => ReadResponse::default(),
        })
    });
    let (mut w, cloud) = world(p);
    expect_ok(&w.up(&two("1", "1")).await);
    let a = w.resource("a").unwrap().id.clone().unwrap();
    let b = w.resource("b").unwrap().id.clone().unwrap();
    cloud
        .set_properties(&a, inputs(&[("k", "drifted")]))
        .unwrap();
    cloud.remove(&b).unwrap();
    let r = w.refresh().await;
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Refresh]);
    // As in Pulumi, the stack (nothing to read) is a `same` step of the
    // refresh; the default provider is not counted.
    assert_eq!(
        counts(&r),
        of([(StepOp::Update, 1), (StepOp::Delete, 1), (StepOp::Same, 1)])
    );
}

#[tokio::test]
async fn a_read_counts_only_when_it_finds_something_new() {
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
            m.read_resource(ReadGoal {
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
            Ok(())
        }
    });
    let r = w.up(&p).await;
    assert_eq!(ops_of(&r, "ext"), vec![StepOp::Read]);
    assert_eq!(counts(&r), of([(StepOp::Create, 1)]));
    assert_eq!(counts(&w.up(&p).await), of([(StepOp::Same, 1)]));
    let ext = w.resource("ext").unwrap().id.clone().unwrap();
    cloud
        .set_properties(&ext, inputs(&[("v", "moved")]))
        .unwrap();
    assert_eq!(
        counts(&w.up(&p).await),
        of([(StepOp::Same, 1), (StepOp::Read, 1)])
    );
}

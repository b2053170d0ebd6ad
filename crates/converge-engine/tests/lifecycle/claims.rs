//! Who holds what: a URN is registered once, and an old resource is taken
//! over by one registration. Both are decided when a registration starts,
//! before any provider call.

use converge_model::Urn;
use converge_plugin::CheckResponse;
use converge_testkit::{custom, program, register_stack, CloudOp, TestProgram};

use super::*;

fn urn(name: &str) -> Urn {
    Urn::parse(&format!("urn:pulumi:test::proj::{T}::{name}")).unwrap()
}

/// A provider that logs the name of every resource it checks.
fn checking(checks: Log) -> MockProvider {
    provider().on_check(move |req| {
        checks.lock().unwrap().push(req.urn.name().to_owned());
        Ok(CheckResponse {
            inputs: req.news,
            failures: vec![],
        })
    })
}

fn one(name: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, name, inputs(&[("v", "1")]))).await?;
        Ok(())
    })
}

/// `a2` and `b2`, both aliased to the old `x`, registered one after the
/// other; the program swallows the error of the second.
fn two_aliases_of_x() -> TestProgram {
    program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut first = custom(T, "a2", inputs(&[("v", "1")]));
        first.options.aliases = vec![urn("x").into()];
        let _ = reg(&m, &stack, first).await;
        let mut second = custom(T, "b2", inputs(&[("v", "1")]));
        second.options.aliases = vec![urn("x").into()];
        let err = reg(&m, &stack, second).await.unwrap_err();
        assert!(err.contains("::a2") && err.contains("::b2"), "{err}");
        assert!(
            err.contains(&format!("existing resource {}", urn("x"))),
            "{err}"
        );
        Ok(())
    })
}

#[tokio::test]
async fn two_registrations_aliasing_one_old_resource_are_an_error() {
    let checks = log();
    let (mut w, cloud) = world(checking(checks.clone()));
    expect_ok(&w.up(&one("x")).await);
    let id = w.resource("x").unwrap().id.clone();
    checks.lock().unwrap().clear();

    // The deletion phase runs too: the old resource is held by `a2`, never
    // deleted, and `b2` is never created.
    w.options.continue_on_error = true;
    let r = w.up(&two_aliases_of_x()).await;
    let err = r
        .error
        .as_ref()
        .expect("the second alias must fail")
        .to_string();
    assert!(err.contains("both take the place of"), "{err}");
    assert_eq!(ops_of(&r, "a2"), vec![StepOp::Same]);
    assert!(ops_of(&r, "b2").is_empty());
    assert!(ops_of(&r, "x").is_empty(), "{:?}", r.plan);
    assert_eq!(entries(&checks), vec!["a2"], "b2 reached a provider");
    assert_eq!(w.resource("a2").unwrap().id, id);
    assert!(w.resource("b2").is_none());
    assert!(w.resource("x").is_none());
    let counts = cloud.counts();
    assert_eq!((counts.creates, counts.deletes), (1, 0));
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn an_alias_cannot_take_an_old_resource_whose_own_step_failed() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&one("x")).await);
    let id = w.resource("x").unwrap().id.clone();
    cloud.fail_when(|op, urn| op == CloudOp::Update && urn.name() == "x");
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        // `x` keeps its URN; its update fails, so it still holds the old
        // resource, which the alias of `y` then reaches too.
        let failed = reg(&m, &stack, custom(T, "x", inputs(&[("v", "2")]))).await;
        assert!(failed.is_err());
        let mut y = custom(T, "y", inputs(&[("v", "1")]));
        y.options.aliases = vec![urn("x").into()];
        let err = reg(&m, &stack, y).await.unwrap_err();
        assert!(err.contains("both take the place of"), "{err}");
        Ok(())
    });
    w.options.continue_on_error = true;
    let r = w.up(&p).await;
    assert!(r.error.is_some());
    assert!(ops_of(&r, "y").is_empty());
    // Still declared by `x`: not deleted, not taken over.
    assert_eq!(w.resource("x").unwrap().id, id);
    assert!(w.resource("y").is_none());
    assert_eq!(cloud.counts().deletes, 0);
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn duplicate_urns_are_refused_before_any_provider_call() {
    let checks = log();
    let (mut w, cloud) = world(checking(checks.clone()));
    // Both registrations start before either has finished.
    let twice = program(|m| async move {
        let stack = register_stack(&m).await?;
        let (first, second) = tokio::join!(
            reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))),
            reg(&m, &stack, custom(T, "a", inputs(&[("v", "2")]))),
        );
        let errors: Vec<String> = [first, second]
            .into_iter()
            .filter_map(Result::err)
            .collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("duplicate resource URN"), "{errors:?}");
        Ok(())
    });
    let r = w.up(&twice).await;
    let err = r.error.as_ref().unwrap().to_string();
    assert!(err.contains("duplicate resource URN"), "{err}");
    assert_eq!(entries(&checks), vec!["a"]);
    assert_eq!(cloud.counts().creates, 1);
    assert_eq!(cloud.by_urn(&urn("a")).len(), 1);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Create]);

    // With old state: the duplicate neither checks nor diffs, and the old
    // resource is left alone.
    let diffs = log();
    let (mut w, cloud) = world({
        let diffs = diffs.clone();
        checking(checks.clone()).on_diff(move |req| {
            diffs.lock().unwrap().push(req.urn.name().to_owned());
            Ok(converge_plugin::DiffResponse::none())
        })
    });
    expect_ok(&w.up(&one("a")).await);
    let id = w.resource("a").unwrap().id.clone();
    checks.lock().unwrap().clear();
    w.options.continue_on_error = true;
    let r = w.up(&twice).await;
    assert!(r.error.is_some());
    assert_eq!(entries(&checks), vec!["a"]);
    assert_eq!(entries(&diffs), vec!["a"]);
    assert_eq!(w.resource("a").unwrap().id, id);
    let counts = cloud.counts();
    assert_eq!((counts.creates, counts.updates, counts.deletes), (1, 0, 0));
}

#[tokio::test]
async fn a_failed_duplicate_does_not_fail_the_first_registration() {
    // The first registration's step fails in the provider; a second one of
    // the same URN is still a duplicate, not a second chance.
    let (mut w, cloud) = world(provider());
    cloud.fail_when(|op, urn| op == CloudOp::Create && urn.name() == "a");
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let first = reg(&m, &stack, custom(T, "a", inputs(&[]))).await;
        assert!(first.unwrap_err().contains("failed"));
        let second = reg(&m, &stack, custom(T, "a", inputs(&[]))).await;
        assert!(second.unwrap_err().contains("duplicate resource URN"));
        Ok(())
    });
    w.options.continue_on_error = true;
    let r = w.up(&p).await;
    // Going on after errors, the operation names each failure, the
    // create's first.
    let err = r.error.unwrap().to_string();
    let create = err.find("create of").expect("the create's failure");
    let duplicate = err.find("duplicate").expect("the duplicate's failure");
    assert!(create < duplicate, "{err}");
    assert!(w.resource("a").is_none());
    assert_eq!(cloud.counts().creates, 1);
}

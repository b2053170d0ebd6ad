//! Custom timeouts: all four recorded with the resource; `read` bounds
//! every provider Read (refresh, an external resource's read, an import's
//! read) and one that outlasts it fails naming the operation, the resource
//! and the timeout; a timeout that is not a duration is refused at
//! registration, naming its key. (A slow Read is a mock provider sleeping
//! far longer than the timeout: the tests only check that it fails.)

use std::time::Duration;

use converge_engine::ReadGoal;
use converge_model::CustomTimeouts;
use converge_testkit::{custom, program, register_stack, Rpc, TestProgram};

use super::*;

/// Longer than any test runs: a Read this slow never answers in time.
const FOREVER: Duration = Duration::from_secs(3600);

fn timeouts(read: &str) -> CustomTimeouts {
    CustomTimeouts {
        create: Some("5m".to_owned()),
        update: Some("1h30m".to_owned()),
        delete: Some("90s".to_owned()),
        read: Some(read.to_owned()),
    }
}

/// `x` with `timeouts`, and `import` to adopt the object with that ID.
fn thing(timeouts: CustomTimeouts, import: Option<String>) -> TestProgram {
    program(move |m| {
        let (timeouts, import) = (timeouts.clone(), import.clone());
        async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "x", inputs(&[("v", "1")]));
            g.options.custom_timeouts = Some(timeouts);
            g.options.import_id = import;
            reg(&m, &stack, g).await?;
            Ok(())
        }
    })
}

fn slow_reads() -> MockProvider {
    provider().latency_of(Rpc::Read, FOREVER)
}

#[tokio::test]
async fn all_four_timeouts_are_recorded() {
    let (mut w, _) = world(provider());
    expect_ok(&w.up(&thing(timeouts("2m"), None)).await);
    let x = w.resource("x").unwrap();
    assert_eq!(x.custom_timeouts.as_deref(), Some(&timeouts("2m")));
}

#[tokio::test]
async fn a_refresh_outlasting_the_read_timeout_fails_naming_it() {
    // No Read during `up`; the refresh reads, too slowly.
    let (mut w, _) = world(slow_reads());
    expect_ok(&w.up(&thing(timeouts("50ms"), None)).await);
    let before = w.snapshot.clone();
    let r = w.refresh().await;
    let err = r.error.expect("the refresh must fail").to_string();
    assert!(
        err.contains("refresh of urn:pulumi:test::proj::pkg:index:Thing::x timed out")
            && err.contains("customTimeouts.read (50ms)"),
        "{err}"
    );
    // The last good state is unchanged.
    assert_eq!(w.snapshot.resources, before.resources);
}

#[tokio::test]
async fn reading_an_external_resource_is_bounded_by_its_read_timeout() {
    let (mut w, _) = world(slow_reads());
    let id = w.insert_outside(
        "urn:pulumi:test::proj::pkg:index:Thing::ext",
        "pkg",
        inputs(&[]),
    );
    let p = program(move |m| {
        let id = id.clone();
        async move {
            let stack = register_stack(&m).await?;
            let err = m
                .read_resource(ReadGoal {
                    type_token: T.to_owned(),
                    name: "ext".to_owned(),
                    id,
                    parent: Some(stack),
                    inputs: Default::default(),
                    provider: None,
                    version: None,
                    dependencies: Vec::new(),
                    custom_timeouts: Some(CustomTimeouts {
                        read: Some("20ms".to_owned()),
                        ..CustomTimeouts::default()
                    }),
                })
                .await
                .expect_err("the read must time out")
                .to_string();
            assert!(
                err.contains("read of urn:pulumi:test::proj::pkg:index:Thing::ext timed out")
                    && err.contains("customTimeouts.read (20ms)"),
                "{err}"
            );
            Ok(())
        }
    });
    let r = w.up(&p).await;
    assert!(r.error.is_some());
    assert!(w.resource("ext").is_none());
}

#[tokio::test]
async fn an_imports_read_is_bounded_by_its_read_timeout() {
    let (mut w, cloud) = world(slow_reads());
    let id = w.insert_outside(
        "urn:pulumi:test::proj::pkg:index:Thing::x",
        "pkg",
        inputs(&[("v", "1")]),
    );
    let r = w.up(&thing(timeouts("20ms"), Some(id))).await;
    let err = r.error.expect("the import must fail").to_string();
    assert!(
        err.contains("import of urn:pulumi:test::proj::pkg:index:Thing::x timed out")
            && err.contains("customTimeouts.read (20ms)"),
        "{err}"
    );
    assert!(w.resource("x").is_none());
    assert_eq!(cloud.counts().creates, 0);
}

#[tokio::test]
async fn a_timeout_that_is_not_a_duration_is_refused_naming_its_key() {
    for (key, bad) in [("create", "soon"), ("read", "10"), ("delete", "-1m")] {
        let (mut w, cloud) = world(provider());
        let mut t = timeouts("1m");
        *t.slot(key).unwrap() = Some(bad.to_owned());
        let r = w.up(&thing(t, None)).await;
        let err = r.error.expect("the registration must fail").to_string();
        assert!(
            err.contains("resource urn:pulumi:test::proj::pkg:index:Thing::x")
                && err.contains(&format!("customTimeouts.{key}: {bad:?} is not a duration")),
            "{err}"
        );
        assert_eq!(cloud.counts().creates, 0, "{key}");
        assert!(w.resource("x").is_none());
    }
}

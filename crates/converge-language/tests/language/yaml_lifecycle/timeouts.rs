//! `options.customTimeouts` in YAML: `create`, `update`, `delete` and
//! `read`, recorded with the resource; `read` bounds a `get`; a value that
//! is not a duration, or an unknown key, is refused at its position.

use std::time::Duration;

use converge_model::CustomTimeouts;
use converge_testkit::Rpc;

use super::*;

#[tokio::test]
async fn all_four_custom_timeouts_are_recorded() {
    let (mut w, _, _) = world(provider());
    let p = Project::new();
    let program = p.program(
        "resources:
  a:
    type: pkg:index:Thing
    options:
      customTimeouts:
        create: 5m
        update: 1h30m
        delete: 90s
        read: 30s
",
    );
    expect_ok(&w.up(&program).await);
    assert_eq!(
        state(&w, "a").custom_timeouts.as_deref().cloned(),
        Some(CustomTimeouts {
            create: Some("5m".to_owned()),
            update: Some("1h30m".to_owned()),
            delete: Some("90s".to_owned()),
            read: Some("30s".to_owned()),
        })
    );
}

#[tokio::test]
async fn a_get_is_bounded_by_its_read_timeout() {
    // The provider's Read never answers in time.
    let slow = provider().latency_of(Rpc::Read, Duration::from_secs(3600));
    let (mut w, _, _) = world(slow);
    let id = w.insert_outside(
        "urn:pulumi:test::proj::pkg:index:Thing::ext",
        "pkg",
        Default::default(),
    );
    let p = Project::new();
    let program = p.program(&format!(
        "resources:
  ext:
    type: pkg:index:Thing
    get:
      id: {id}
    options:
      customTimeouts:
        read: 20ms
"
    ));
    let err = expect_err(&w.up(&program).await);
    assert!(
        err.contains("read of urn:pulumi:test::proj::pkg:index:Thing::ext timed out")
            && err.contains("customTimeouts.read (20ms)"),
        "{err}"
    );
    assert!(w.resource("ext").is_none());
}

#[tokio::test]
async fn a_bad_custom_timeout_is_refused_at_its_position() {
    let p = Project::new();
    let cases = [
        (
            "read: soon",
            "Pulumi.yaml:8:9: options.customTimeouts.read: \"soon\" is not a duration",
        ),
        (
            "create: \"10\"",
            "options.customTimeouts.create: \"10\" is not a duration",
        ),
        (
            "create: 10",
            "options.customTimeouts.create must be a duration string like \"5m\", not a number",
        ),
        (
            "reed: 5m",
            "options.customTimeouts: unknown key 'reed' (create, update, delete, read)",
        ),
    ];
    for (line, expected) in cases {
        let (mut w, cloud, _) = world(provider());
        let program = p.program(&format!(
            "resources:
  a:
    type: pkg:index:Thing
    options:
      customTimeouts:
        {line}
"
        ));
        let err = expect_err(&w.up(&program).await);
        assert!(err.contains(expected), "{line}: {err}");
        assert_eq!(cloud.counts().creates, 0);
    }
}

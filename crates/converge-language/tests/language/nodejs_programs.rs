//! Real Node.js programs (tests/programs/nodejs/*), run with the published
//! `@pulumi/pulumi` package's runner through `converge_engine::{update,
//! preview, destroy}` and the gRPC resource monitor, against the testkit's
//! mock provider "pkg".
//!
//! Needs env `CONVERGE_TEST_NODE_MODULES`: a `node_modules` directory with
//! `@pulumi/pulumi` installed (scripts/test sets it up), and `node` on
//! `PATH`. Without it the tests fail under CI and skip loudly elsewhere.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use converge_engine::{EngineError, StepOp};
use converge_language::nodejs::NodeProgram;
use converge_language::process::RunOptions;
use converge_model::PropertyValue;
use converge_testkit::{Lifecycle, MockCloud};

use common::*;

/// The `node_modules` with the SDK, or `None` (skip) outside CI.
fn node_modules() -> Option<PathBuf> {
    match std::env::var_os("CONVERGE_TEST_NODE_MODULES") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if std::env::var_os("CI").is_some() => panic!(
            "CONVERGE_TEST_NODE_MODULES must name a node_modules with @pulumi/pulumi under CI"
        ),
        _ => {
            eprintln!(
                "SKIPPED: set CONVERGE_TEST_NODE_MODULES to a node_modules directory with \
                 @pulumi/pulumi installed to run the Node.js program tests (scripts/test does)"
            );
            None
        }
    }
}

/// A copy of a test program in a temporary directory, its `node_modules`
/// a link to the shared one.
fn project(name: &str, modules: &Path) -> tempfile::TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/nodejs")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&source, dir.path());
    link(modules, &dir.path().join("node_modules"));
    dir
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) {
    std::os::unix::fs::symlink(target, at).unwrap();
}

#[cfg(windows)]
fn link(target: &Path, at: &Path) {
    std::os::windows::fs::symlink_dir(target, at).unwrap();
}

fn program(dir: &Path) -> NodeProgram {
    NodeProgram::new(dir).unwrap()
}

/// The mock provider: objects in `cloud`; `computed` is an output-only
/// property (unknown in previews).
fn world() -> (Lifecycle, Arc<MockCloud>) {
    let cloud = MockCloud::new();
    let p = provider(&cloud);
    world_with(cloud, p)
}

#[tokio::test]
async fn stack_outputs_of_every_kind() {
    let Some(modules) = node_modules() else {
        return;
    };
    let dir = project("outputs", &modules);
    let (mut world, _cloud) = world();
    let result = world.up(&program(dir.path())).await;
    ok(&result);
    let out = stack_outputs(&result);
    assert_eq!(out["string"], s("hello"));
    assert_eq!(out["number"], PropertyValue::Number(42.0));
    assert_eq!(out["float"], PropertyValue::Number(1.5));
    assert_eq!(out["bool"], PropertyValue::Bool(true));
    assert_eq!(
        out["list"],
        PropertyValue::Array(vec![
            PropertyValue::Number(1.0),
            s("two"),
            PropertyValue::Bool(false)
        ])
    );
    assert_eq!(
        out["dict"].as_object().unwrap()["a"],
        PropertyValue::Number(1.0)
    );
    assert_eq!(out["secret"], PropertyValue::secret(s("hidden")));
    match &out["asset"] {
        PropertyValue::Asset(a) => {
            assert_eq!(a.text.as_deref(), Some("contents"));
            assert_eq!(a.hash, converge_model::sha256_hex(b"contents"));
        }
        other => panic!("asset exported as {other:?}"),
    }
    assert!(
        matches!(out["archive"], PropertyValue::Archive(_)),
        "{out:?}"
    );
    let thing = resource(&result, "thing");
    assert_eq!(out["thingId"], s(thing.id.as_deref().unwrap()));
    assert_eq!(out["thingUrn"], s(thing.urn.as_str()));
    assert_eq!(out["computed"], s("computed-thing"));

    let again = world.up(&program(dir.path())).await;
    ok(&again);
    let counts = again.plan.counts();
    assert_eq!(
        counts.keys().collect::<Vec<_>>(),
        vec![&StepOp::Same],
        "{counts:?}"
    );
}

#[tokio::test]
async fn components_children_explicit_providers_and_dependencies() {
    let Some(modules) = node_modules() else {
        return;
    };
    let dir = project("components", &modules);
    let (mut world, cloud) = world();

    let preview = world.preview(&program(dir.path())).await;
    ok(&preview);
    // The default provider of the pair's children is not counted.
    assert_eq!(preview.plan.counts().get(&StepOp::Create), Some(&6));
    let planned_right = preview
        .plan
        .steps
        .iter()
        .find(|s| s.urn.ends_with("::pair-right"))
        .unwrap();
    assert_eq!(
        planned_right.inputs.as_ref().unwrap()["other"],
        serde_json::json!(converge_model::UNKNOWN_STRING)
    );

    let result = world.up(&program(dir.path())).await;
    ok(&result);
    let pair = resource(&result, "pair");
    let left = resource(&result, "pair-left");
    let right = resource(&result, "pair-right");
    let managed = resource(&result, "managed");
    let explicit = resource(&result, "explicit");
    assert_eq!(
        left.urn.as_str(),
        "urn:pulumi:test::proj::my:index:Pair$pkg:index:Thing::pair-left"
    );
    assert_eq!(left.parent.as_ref(), Some(&pair.urn));
    assert_eq!(pair.outputs["right"], s("computed-pair-right"));
    assert_eq!(right.inputs["other"], s("computed-pair-left"));
    assert_eq!(right.property_dependencies["other"], vec![left.urn.clone()]);
    assert_eq!(managed.provider.as_ref().unwrap().urn, explicit.urn);
    assert!(
        managed.dependencies.contains(&left.urn),
        "{:?}",
        managed.dependencies
    );
    assert_eq!(stack_outputs(&result)["right"], s("computed-pair-right"));

    let gone = world.destroy().await;
    ok(&gone);
    assert!(cloud.is_empty());
}

#[tokio::test]
async fn a_failing_program_reports_its_message_and_stack() {
    let Some(modules) = node_modules() else {
        return;
    };
    let dir = project("fails", &modules);
    let (mut world, _cloud) = world();
    let result = world.up(&program(dir.path())).await;
    let Some(EngineError::Program(message)) = &result.error else {
        panic!("expected a program error, got {:?}", result.error);
    };
    for needle in ["the program broke on purpose", "explode", "index.js"] {
        assert!(
            message.contains(needle),
            "{needle:?} missing from {message}"
        );
    }
}

#[tokio::test]
async fn configuration_and_secret_configuration() {
    let Some(modules) = node_modules() else {
        return;
    };
    let dir = project("config", &modules);
    let (mut world, _cloud) = world();
    let options = RunOptions {
        config: [
            ("proj:name", "world"),
            ("proj:password", "s3cret"),
            ("proj:count", "3"),
            ("proj:obj", r#"{"a":[1,2]}"#),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect(),
        config_secret_keys: vec!["proj:password".to_owned()],
        organization: "acme".to_owned(),
        ..RunOptions::default()
    };
    let result = world.up(&program(dir.path()).with_options(options)).await;
    ok(&result);
    let out = stack_outputs(&result);
    assert_eq!(out["name"], s("world"));
    assert_eq!(out["password"], PropertyValue::secret(s("s3cret")));
    assert_eq!(out["count"], PropertyValue::Number(3.0));
    assert_eq!(out["fallback"], s("default"));
    assert_eq!(out["project"], s("proj"));
    assert_eq!(out["stack"], s("test"));
    assert_eq!(out["organization"], s("acme"));
}

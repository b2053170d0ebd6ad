//! Real Python programs (tests/programs/python/*), run with the published
//! `pulumi` SDK through `converge_engine::{update, preview, destroy}` and
//! the gRPC resource monitor, against the testkit's mock provider "pkg".
//!
//! Needs env `CONVERGE_TEST_PYTHON`: a Python with `pulumi` installed
//! (scripts/test sets it up). Without it the tests fail under CI and skip
//! loudly elsewhere.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use converge_engine::{
    DiscardSink, EngineError, EngineEvent, EventSink, OperationContext, Severity, StepOp,
};
use converge_language::process::RunOptions;
use converge_language::python::PythonProgram;
use converge_model::PropertyValue;
use converge_plugin::InvokeResponse;
use converge_testkit::{Lifecycle, MockCloud};

use common::*;

/// The interpreter with the SDK, or `None` (skip) outside CI.
fn python() -> Option<PathBuf> {
    match std::env::var_os("CONVERGE_TEST_PYTHON") {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ if std::env::var_os("CI").is_some() => {
            panic!("CONVERGE_TEST_PYTHON must name a Python with `pulumi` installed under CI")
        }
        _ => {
            eprintln!(
                "SKIPPED: set CONVERGE_TEST_PYTHON to a Python with `pulumi==3.272.0` \
                 installed to run the Python program tests (scripts/test does)"
            );
            None
        }
    }
}

/// A copy of a test program in a temporary directory (so nothing the run
/// writes lands in the source tree).
fn project(name: &str) -> tempfile::TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs/python")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&source, dir.path());
    dir
}

fn program(dir: &Path, python: &Path) -> PythonProgram {
    PythonProgram::new(dir).unwrap().with_interpreter(python)
}

/// The mock provider: objects in `cloud`; `computed` is an output-only
/// property (unknown in previews); `pkg:index:answer` answers 42.
fn world() -> (Lifecycle, Arc<MockCloud>) {
    let cloud = MockCloud::new();
    let p = provider(&cloud).on_invoke(|req| {
        assert_eq!(req.token, "pkg:index:answer");
        assert_eq!(req.args["question"], PropertyValue::string("life"));
        Ok(InvokeResponse {
            outputs: [("answer".to_owned(), PropertyValue::Number(42.0))].into(),
            failures: Vec::new(),
        })
    });
    world_with(cloud, p)
}

#[tokio::test]
async fn stack_outputs_of_every_kind() {
    let Some(python) = python() else { return };
    let dir = project("outputs");
    let (mut world, _cloud) = world();
    let result = world.up(&program(dir.path(), &python)).await;
    ok(&result);
    let out = stack_outputs(&result);
    assert_eq!(out["string"], s("hello"));
    assert_eq!(out["number"], PropertyValue::Number(42.0));
    assert_eq!(out["float"], PropertyValue::Number(1.5));
    assert_eq!(out["bool"], PropertyValue::Bool(true));
    assert!(
        matches!(out.get("null"), None | Some(PropertyValue::Null)),
        "{out:?}"
    );
    assert_eq!(
        out["list"],
        PropertyValue::Array(vec![
            PropertyValue::Number(1.0),
            s("two"),
            PropertyValue::Bool(false)
        ])
    );
    let dict = out["dict"].as_object().unwrap();
    assert_eq!(dict["a"], PropertyValue::Number(1.0));
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
    assert_eq!(out["thing_id"], s(thing.id.as_deref().unwrap()));
    assert_eq!(out["thing_urn"], s(thing.urn.as_str()));
    assert_eq!(out["computed"], s("computed-thing"));
    assert_eq!(thing.inputs["label"], s("t"));
    assert!(!thing.inputs.contains_key("computed"), "{:?}", thing.inputs);

    // Nothing changed: the second run changes nothing.
    let again = world.up(&program(dir.path(), &python)).await;
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
    let Some(python) = python() else { return };
    let dir = project("components");
    let (mut world, cloud) = world();
    let result = world.up(&program(dir.path(), &python)).await;
    ok(&result);
    let pair = resource(&result, "pair");
    let left = resource(&result, "pair-left");
    let right = resource(&result, "pair-right");
    let managed = resource(&result, "managed");
    let explicit = resource(&result, "explicit");
    assert!(!pair.custom);
    assert_eq!(
        pair.urn.as_str(),
        "urn:pulumi:test::proj::my:index:Pair::pair"
    );
    assert_eq!(
        left.urn.as_str(),
        "urn:pulumi:test::proj::my:index:Pair$pkg:index:Thing::pair-left"
    );
    assert_eq!(left.parent.as_ref(), Some(&pair.urn));
    assert_eq!(pair.outputs["right"], s("computed-pair-right"));
    // An input from another resource's output: its value and dependency.
    assert_eq!(right.inputs["other"], s("computed-pair-left"));
    assert_eq!(right.property_dependencies["other"], vec![left.urn.clone()]);
    assert!(
        right.dependencies.contains(&left.urn),
        "{:?}",
        right.dependencies
    );
    // The explicit provider manages `managed`; the default one the rest.
    assert_eq!(
        explicit.urn.as_str(),
        "urn:pulumi:test::proj::pulumi:providers:pkg::explicit"
    );
    assert_eq!(explicit.inputs["region"], s("mars"));
    let reference = managed.provider.as_ref().unwrap();
    assert_eq!(reference.urn, explicit.urn);
    assert_eq!(Some(&reference.id), explicit.id.as_ref());
    assert_eq!(
        left.provider.as_ref().unwrap().urn.as_str(),
        "urn:pulumi:test::proj::pulumi:providers:pkg::default"
    );
    assert!(
        managed.dependencies.contains(&left.urn),
        "{:?}",
        managed.dependencies
    );
    assert_eq!(stack_outputs(&result)["right"], s("computed-pair-right"));
    assert_eq!(cloud.len(), 3);

    let gone = world.destroy().await;
    ok(&gone);
    assert!(cloud.is_empty());
    assert!(
        gone.snapshot.resources.is_empty(),
        "{:#?}",
        gone.snapshot.resources
    );
}

#[tokio::test]
async fn preview_resolves_output_only_properties_as_unknown() {
    let Some(python) = python() else { return };
    let dir = project("components");
    let (mut world, cloud) = world();
    let result = world.preview(&program(dir.path(), &python)).await;
    ok(&result);
    assert!(cloud.is_empty());
    let counts = result.plan.counts();
    // The default provider of the pair's children is not counted.
    assert_eq!(counts.get(&StepOp::Create), Some(&6), "{counts:?}");
    // `other` of the right child comes from the left's output-only
    // `computed`: unknown until the left exists.
    let right = result
        .plan
        .steps
        .iter()
        .find(|s| s.urn.ends_with("::pair-right"))
        .unwrap();
    let inputs = right.inputs.as_ref().unwrap();
    assert_eq!(
        inputs["other"],
        serde_json::json!(converge_model::UNKNOWN_STRING)
    );
}

#[tokio::test]
async fn a_failing_program_reports_its_message_and_traceback() {
    let Some(python) = python() else { return };
    let dir = project("fails");
    let (mut world, _cloud) = world();
    let result = world.up(&program(dir.path(), &python)).await;
    let Some(EngineError::Program(message)) = &result.error else {
        panic!("expected a program error, got {:?}", result.error);
    };
    let needles = [
        "the program broke on purpose",
        "Traceback",
        "ValueError",
        "explode",
        "__main__.py",
    ];
    for needle in needles {
        assert!(
            message.contains(needle),
            "{needle:?} missing from {message}"
        );
    }
}

#[tokio::test]
async fn a_program_that_dies_quietly_shows_its_stderr() {
    let Some(python) = python() else { return };
    let dir = project("exit_code");
    let (mut world, _cloud) = world();
    let result = world.up(&program(dir.path(), &python)).await;
    let message = result.error.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("exited with code 3"), "{message}");
    assert!(
        message.contains("custom failure from the program"),
        "{message}"
    );
}

#[tokio::test]
async fn configuration_and_secret_configuration() {
    let Some(python) = python() else { return };
    let dir = project("config");
    configuration_reaches(program(dir.path(), &python)).await;
}

/// An interpreter started ahead of the run (as the CLI starts it while it
/// opens the stack) gets the same arguments and configuration when the
/// run comes; a second run of the same program starts its own.
#[tokio::test]
async fn configuration_reaches_an_interpreter_started_ahead() {
    let Some(python) = python() else { return };
    let dir = project("config");
    let p = program(dir.path(), &python);
    let ahead = p.start_ahead().expect("the interpreter starts");
    let p = p.with_ahead(ahead);
    configuration_reaches(p.clone()).await;
    configuration_reaches(p).await;
}

async fn configuration_reaches(program: PythonProgram) {
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
    let result = world.up(&program.with_options(options)).await;
    ok(&result);
    let out = stack_outputs(&result);
    assert_eq!(out["name"], s("world"));
    assert_eq!(out["password"], PropertyValue::secret(s("s3cret")));
    assert_eq!(out["count"], PropertyValue::Number(3.0));
    assert_eq!(
        out["obj"].as_object().unwrap()["a"],
        PropertyValue::Array(vec![PropertyValue::Number(1.0), PropertyValue::Number(2.0)])
    );
    assert_eq!(out["fallback"], s("default"));
    assert_eq!(out["project"], s("proj"));
    assert_eq!(out["stack"], s("test"));
    assert_eq!(out["organization"], s("acme"));
}

#[tokio::test]
async fn main_and_virtualenv_come_from_pulumi_yaml() {
    let Some(python) = python() else { return };
    // CONVERGE_TEST_PYTHON is <venv>/bin/python.
    let Some(venv) = python.parent().and_then(Path::parent) else {
        panic!("{} is not inside a virtualenv", python.display())
    };
    if !venv.join("pyvenv.cfg").is_file() {
        eprintln!(
            "SKIPPED: {} is not a virtualenv's interpreter",
            python.display()
        );
        return;
    }
    let dir = project("main_file");
    std::fs::write(
        dir.path().join("Pulumi.yaml"),
        format!(
            "name: proj\nmain: src/app.py\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
            venv.display()
        ),
    )
    .unwrap();
    let program = PythonProgram::new(dir.path()).unwrap();
    assert_eq!(program.interpreter(), venv.join("bin/python"));
    let (mut world, _cloud) = world();
    let result = world.up(&program).await;
    ok(&result);
    assert_eq!(
        stack_outputs(&result)["greeting"],
        s("hello from a helper module")
    );
}

#[tokio::test]
async fn invokes_provider_functions_and_reads_existing_objects() {
    let Some(python) = python() else { return };
    let dir = project("invoke_read");
    let (mut world, _cloud) = world();
    let id = world.insert_outside(
        "urn:pulumi:test::proj::pkg:index:Thing::existing",
        "pkg",
        [("color".to_owned(), s("blue"))].into(),
    );
    let options = RunOptions {
        config: [("proj:existing_id".to_owned(), id.clone())].into(),
        ..RunOptions::default()
    };
    let result = world
        .up(&program(dir.path(), &python).with_options(options))
        .await;
    ok(&result);
    let out = stack_outputs(&result);
    assert_eq!(out["answer"], PropertyValue::Number(42.0));
    assert_eq!(out["color"], s("blue"));
    let existing = resource(&result, "existing");
    assert!(existing.external);
    assert_eq!(existing.id.as_deref(), Some(id.as_str()));
}

#[tokio::test]
async fn a_failed_step_is_the_operation_error_and_nothing_hangs() {
    let Some(python) = python() else { return };
    let dir = project("components");
    let (mut world, cloud) = world();
    cloud.fail_when(|_, urn| urn.name() == "pair-left");
    let program = program(dir.path(), &python);
    let run = world.up(&program);
    let result = tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("the program hung after a failed step");
    let Some(EngineError::Step { urn, .. }) = &result.error else {
        panic!("expected the step's failure, got {:?}", result.error);
    };
    assert_eq!(urn.name(), "pair-left");
}

#[tokio::test]
async fn output_and_log_messages_become_diagnostics() {
    let Some(python) = python() else { return };
    let dir = project("outputs");
    let (world, _cloud) = world();
    let (events, mut rx) = EventSink::channel();
    let ctx = OperationContext {
        base: Arc::new(world.snapshot.clone()),
        loader: Arc::clone(&world.loader),
        sink: Arc::new(DiscardSink),
        events,
        options: world.options.clone(),
    };
    let result = converge_engine::preview(ctx, &program(dir.path(), &python)).await;
    ok(&result);
    let mut diagnostics = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let EngineEvent::Diagnostic {
            severity, message, ..
        } = event
        {
            diagnostics.push((severity, message));
        }
    }
    assert!(
        diagnostics.contains(&(Severity::Info, "printed by the program".to_owned())),
        "{diagnostics:?}"
    );
    assert!(
        diagnostics.contains(&(Severity::Warning, "a warning from the program".to_owned())),
        "{diagnostics:?}"
    );
    // Debug messages (the SDK sends many) are dropped unless verbose.
    assert!(
        diagnostics.iter().all(|(s, _)| *s != Severity::Debug),
        "{diagnostics:?}"
    );
}

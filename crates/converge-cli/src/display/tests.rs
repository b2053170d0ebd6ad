//! Snapshot tests of the plain rendering.

use std::collections::BTreeMap;
use std::time::Duration;

use converge_engine::{EngineEvent, Severity, StepOp};
use converge_model::{DiffKind, PropertyDiff, PropertyValue, ResourceState, Urn};

use super::{render, DisplayOptions};

fn urn(name: &str) -> Urn {
    Urn::parse(&format!(
        "urn:pulumi:dev::web::random:index/randomPet:RandomPet::{name}"
    ))
    .unwrap()
}

fn finished(op: StepOp, name: &str, diff: &[(&str, DiffKind)], error: Option<&str>) -> EngineEvent {
    EngineEvent::StepFinished {
        op,
        urn: urn(name),
        old: None,
        new: None,
        diff: diff
            .iter()
            .map(|(k, kind)| {
                (
                    (*k).to_owned(),
                    PropertyDiff {
                        kind: *kind,
                        input_diff: true,
                    },
                )
            })
            .collect(),
        error: error.map(str::to_owned),
    }
}

fn run(events: &[(EngineEvent, Option<Duration>)], opts: DisplayOptions) -> String {
    events
        .iter()
        .flat_map(|(e, t)| render(e, *t, opts))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_update_in_plain_lines() {
    let counts: BTreeMap<StepOp, usize> = [
        (StepOp::Same, 3),
        (StepOp::Create, 1),
        (StepOp::Update, 1),
        (StepOp::Replace, 1),
    ]
    .into_iter()
    .collect();
    let events = vec![
        (
            EngineEvent::StepStarted {
                op: StepOp::Create,
                urn: urn("new"),
                old: None,
                new: None,
                diff: BTreeMap::new(),
            },
            None,
        ),
        (
            EngineEvent::StepStarted {
                op: StepOp::Same,
                urn: urn("same"),
                old: None,
                new: None,
                diff: BTreeMap::new(),
            },
            None,
        ),
        (finished(StepOp::Same, "same", &[], None), None),
        (
            finished(StepOp::Create, "new", &[], None),
            Some(Duration::from_millis(20)),
        ),
        (
            EngineEvent::StepStarted {
                op: StepOp::Update,
                urn: urn("changed"),
                old: None,
                new: None,
                diff: BTreeMap::new(),
            },
            None,
        ),
        (
            finished(
                StepOp::Update,
                "changed",
                &[("length", DiffKind::Update)],
                None,
            ),
            Some(Duration::from_secs(3)),
        ),
        (
            EngineEvent::StepStarted {
                op: StepOp::CreateReplacement,
                urn: urn("swapped"),
                old: None,
                new: None,
                diff: BTreeMap::new(),
            },
            None,
        ),
        (
            finished(
                StepOp::CreateReplacement,
                "swapped",
                &[("prefix", DiffKind::UpdateReplace)],
                None,
            ),
            None,
        ),
        (
            EngineEvent::Diagnostic {
                severity: Severity::Warning,
                urn: Some(urn("changed")),
                message: "slow API".into(),
            },
            None,
        ),
        (
            EngineEvent::Diagnostic {
                severity: Severity::Debug,
                urn: None,
                message: "hidden".into(),
            },
            None,
        ),
        (
            EngineEvent::StepStarted {
                op: StepOp::DeleteReplaced,
                urn: urn("swapped"),
                old: None,
                new: None,
                diff: BTreeMap::new(),
            },
            None,
        ),
        (finished(StepOp::DeleteReplaced, "swapped", &[], None), None),
        (
            EngineEvent::Summary {
                counts,
                error: None,
            },
            None,
        ),
    ];
    // A replacement is one line; unchanged resources none.
    insta::assert_snapshot!(run(&events, DisplayOptions::default()), @r"
         +  random:index/randomPet:RandomPet new creating...
         +  random:index/randomPet:RandomPet new created
         ~  random:index/randomPet:RandomPet changed updating...
         ~  random:index/randomPet:RandomPet changed updated (3s) [diff: ~length]
         +- random:index/randomPet:RandomPet swapped replaced [diff: ~prefix]
        warning random:index/randomPet:RandomPet changed: slow API

        Resources:
            + 1 created
            ~ 1 updated
            +-1 replaced
            3 unchanged
        ");
    // --show-replacement-steps --show-sames.
    let opts = DisplayOptions {
        show_replacement_steps: true,
        show_sames: true,
        ..DisplayOptions::default()
    };
    insta::assert_snapshot!(run(&events, opts), @r"
         +  random:index/randomPet:RandomPet new creating...
            random:index/randomPet:RandomPet same unchanged
         +  random:index/randomPet:RandomPet new created
         ~  random:index/randomPet:RandomPet changed updating...
         ~  random:index/randomPet:RandomPet changed updated (3s) [diff: ~length]
         ++ random:index/randomPet:RandomPet swapped creating replacement...
         ++ random:index/randomPet:RandomPet swapped created replacement [diff: ~prefix]
        warning random:index/randomPet:RandomPet changed: slow API
         -- random:index/randomPet:RandomPet swapped deleting original...
         -- random:index/randomPet:RandomPet swapped deleted original

        Resources:
            + 1 created
            ~ 1 updated
            +-1 replaced
            3 unchanged
        ");
}

#[test]
fn reads_show_only_when_asked_and_failures_always() {
    let read = finished(StepOp::Read, "seen", &[], None);
    assert!(run(&[(read.clone(), None)], DisplayOptions::default()).is_empty());
    let opts = DisplayOptions {
        show_reads: true,
        ..DisplayOptions::default()
    };
    insta::assert_snapshot!(run(&[(read, None)], opts), @" >  random:index/randomPet:RandomPet seen read");
    let failed = finished(StepOp::DeleteReplaced, "gone", &[], Some("denied"));
    insta::assert_snapshot!(run(&[(failed, None)], DisplayOptions::default()), @" -- random:index/randomPet:RandomPet gone **delete original failed**: denied");
}

/// A resource state with these inputs (and the same outputs).
fn state(name: &str, inputs: &[(&str, PropertyValue)]) -> std::sync::Arc<ResourceState> {
    let mut s = ResourceState::new(urn(name), true);
    s.inputs = inputs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    s.outputs = s.inputs.clone();
    std::sync::Arc::new(s)
}

fn object(entries: &[(&str, &str)]) -> PropertyValue {
    PropertyValue::Object(
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), PropertyValue::string(*v)))
            .collect(),
    )
}

#[test]
fn a_preview_with_detailed_diffs_and_a_failure() {
    let counts: BTreeMap<StepOp, usize> = [
        (StepOp::Update, 1),
        (StepOp::Create, 1),
        (StepOp::Delete, 1),
    ]
    .into_iter()
    .collect();
    let opts = DisplayOptions {
        diff: true,
        preview: true,
        show_secrets: false,
        debug: false,
        ..DisplayOptions::default()
    };
    let secret = |s: &str| PropertyValue::secret(PropertyValue::string(s));
    let mut update = finished(
        StepOp::Update,
        "a",
        &[("tags.env", DiffKind::Add), ("size", DiffKind::Update)],
        None,
    );
    if let EngineEvent::StepFinished { old, new, .. } = &mut update {
        *old = Some(state(
            "a",
            &[
                ("size", PropertyValue::Number(1.0)),
                ("tags", object(&[("team", "web")])),
                ("password", secret("hunter2")),
            ],
        ));
        *new = Some(state(
            "a",
            &[
                ("size", PropertyValue::Number(2.0)),
                ("tags", object(&[("team", "web"), ("env", "prod")])),
                ("password", secret("hunter3")),
            ],
        ));
    }
    let mut create = finished(StepOp::Create, "c", &[], None);
    if let EngineEvent::StepFinished { new, .. } = &mut create {
        *new = Some(state(
            "c",
            &[
                ("length", PropertyValue::Number(2.0)),
                ("prefix", PropertyValue::Unknown),
                ("zones", PropertyValue::Array(vec!["a".into(), "b".into()])),
            ],
        ));
    }
    let events = vec![
        (
            EngineEvent::StepStarted {
                op: StepOp::Update,
                urn: urn("a"),
                old: None,
                new: None,
                diff: BTreeMap::new(),
            },
            None,
        ),
        (update.clone(), None),
        (create, None),
        (
            finished(StepOp::Delete, "b", &[], Some("permission denied")),
            None,
        ),
        (
            EngineEvent::Summary {
                counts,
                error: Some("delete of b failed".into()),
            },
            None,
        ),
    ];
    // A failed preview has no `Resources:` counts.
    insta::assert_snapshot!(run(&events, opts), @r#"
         ~  random:index/randomPet:RandomPet a update
              ~ password: [secret] => [secret]
              ~ size    : 1 => 2
              ~ tags    : {
                  + env: "prod"
                }
         +  random:index/randomPet:RandomPet c create
              + length: 2
              + prefix: [unknown]
              + zones : [
                  + [0]: "a"
                  + [1]: "b"
                ]
         -  random:index/randomPet:RandomPet b **delete failed**: permission denied
        "#);
    // Without --diff, the changed keys on the step's line.
    insta::assert_snapshot!(run(&[(update, None)], DisplayOptions { preview: true, ..Default::default() }), @r" ~  random:index/randomPet:RandomPet a update [diff: ~size,tags]");
}

#[test]
fn nothing_to_do() {
    let counts: BTreeMap<StepOp, usize> = [(StepOp::Same, 2)].into_iter().collect();
    let out = run(
        &[(
            EngineEvent::Summary {
                counts,
                error: None,
            },
            None,
        )],
        DisplayOptions::default(),
    );
    insta::assert_snapshot!(out, @r"

Resources:
    2 unchanged
");
    let empty = run(
        &[(
            EngineEvent::Summary {
                counts: BTreeMap::new(),
                error: None,
            },
            None,
        )],
        DisplayOptions::default(),
    );
    assert!(empty.contains("no changes"));
}

/// After a refresh recorded drift, the provider compares the program's
/// inputs with the object's state: the detail shows the state's value.
#[test]
fn a_change_back_from_drift_shows_the_drifted_value() {
    let mut update = finished(StepOp::Update, "f", &[("content", DiffKind::Update)], None);
    if let EngineEvent::StepFinished { old, new, diff, .. } = &mut update {
        let mut o = state("f", &[("content", "hello\n".into())]);
        std::sync::Arc::make_mut(&mut o)
            .outputs
            .insert("content".to_owned(), PropertyValue::string("drift\n"));
        *old = Some(o);
        *new = Some(state("f", &[("content", "hello\n".into())]));
        for d in diff.values_mut() {
            d.input_diff = false;
        }
    }
    let opts = DisplayOptions {
        diff: true,
        preview: true,
        show_secrets: false,
        debug: false,
        ..DisplayOptions::default()
    };
    insta::assert_snapshot!(run(&[(update.clone(), None)], opts), @r#"
        ~  random:index/randomPet:RandomPet f update
             ~ content: "drift\n" => "hello\n"
        "#);
    let compact = run(&[(update, None)], DisplayOptions::default());
    assert!(compact.ends_with("[diff: ~content]"), "{compact}");
}

//! Values nested a thousand levels deep: a provider whose answers hold
//! one, and a program whose inputs hold another (with a secret inside),
//! through create, an update that changes the bottom of the value, an
//! update with nothing to do, and a refresh; the state and every journal
//! entry written as JSON (secrets encrypted) and read back whole.
//!
//! Every walk of a value (diffing, copying, comparing, encrypting,
//! writing, reading, dropping) recurses once per level, so the test runs
//! on a thread with the stack the `converge` binary gives its work.

use converge_engine::StepOp;
use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::{CreateResponse, ReadResponse, UpdateResponse};
use converge_state::checkpoint::{read_checkpoint, write_checkpoint, StackCheckpoint};
use converge_state::journal::{entry_from_json, entry_to_json};
use converge_state::secrets::{PassphraseCrypter, SecretsMode};
use converge_testkit::{custom, program, register_stack, TestProgram};

use super::*;

const LEVELS: usize = 1_000;

/// `{"level": {"level": ... bottom ...}}`, `levels` objects deep, with
/// `[ ]` around every tenth level so that lists nest too.
fn nested(levels: usize, bottom: PropertyValue) -> PropertyValue {
    let mut v = bottom;
    for level in 0..levels {
        v = if level % 10 == 9 {
            PropertyValue::Array(vec![v])
        } else {
            PropertyValue::Object([("level".to_owned(), v)].into_iter().collect())
        };
    }
    v
}

/// How deep `v` nests arrays and objects.
fn depth(mut v: &PropertyValue) -> usize {
    let mut levels = 0;
    loop {
        v = match v {
            PropertyValue::Object(m) => &m["level"],
            PropertyValue::Array(items) => &items[0],
            PropertyValue::Secret(inner) => inner,
            _ => return levels,
        };
        levels += 1;
    }
}

/// The program: one resource whose input `tree` is a deep value whose
/// bottom is `bottom`, a secret.
fn deep_program(bottom: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let tree = nested(LEVELS, PropertyValue::Secret(Box::new(s(bottom))));
        let mut goal = custom(T, "a", inputs(&[("v", "x")]));
        goal.inputs.insert("tree".into(), tree);
        reg(&m, &stack, goal).await?;
        Ok(())
    })
}

/// The provider's answer: the inputs, plus `answer`, nested as deep.
fn with_answer(mut properties: PropertyMap) -> PropertyMap {
    properties.insert("answer".into(), nested(LEVELS, s("bottom")));
    properties
}

/// Runs `f` on a thread with the `converge` binary's work stack.
fn on_work_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn values_a_thousand_levels_deep_go_through_every_operation_and_the_state() {
    on_work_stack(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(lifecycle());
    });
}

async fn lifecycle() {
    let p = provider();
    let cloud = p.cloud().clone();
    let (read_cloud, update_cloud) = (cloud.clone(), cloud.clone());
    let p = p
        .on_create(move |req| {
            let id = if req.preview {
                String::new()
            } else {
                cloud.insert(&req.urn, "pkg", with_answer(req.properties.clone()))
            };
            Ok(CreateResponse {
                id,
                properties: with_answer(req.properties),
            })
        })
        .on_update(move |req| {
            if !req.preview {
                update_cloud.set_properties(&req.id, with_answer(req.new_inputs.clone()))?;
            }
            Ok(UpdateResponse {
                properties: with_answer(req.new_inputs),
            })
        })
        .on_read(move |req| {
            Ok(match read_cloud.get(&req.id) {
                Some(o) => ReadResponse {
                    id: o.id,
                    inputs: req.inputs.unwrap_or_default(),
                    properties: o.properties,
                },
                None => ReadResponse::default(),
            })
        });
    let (mut w, _cloud) = world(p);

    let r = w.up(&deep_program("first")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Create]);
    let a = w.resource("a").unwrap();
    assert_eq!(depth(&a.outputs["answer"]), LEVELS);
    assert_eq!(depth(&a.inputs["tree"]), LEVELS + 1);

    // Nothing changed: the engine's diff walks both values to the bottom.
    let r = w.up(&deep_program("first")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);

    // The bottom changed, a thousand levels down: an update.
    let preview = w.preview(&deep_program("second")).await;
    expect_ok(&preview);
    assert_eq!(ops_of(&preview, "a"), vec![StepOp::Update]);
    let r = w.up(&deep_program("second")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    let tree = &w.resource("a").unwrap().inputs["tree"];
    assert_eq!(
        tree,
        &nested(LEVELS, PropertyValue::Secret(Box::new(s("second"))))
    );

    let r = w.refresh().await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);

    // The state and the journal, as JSON with the secret encrypted, read
    // back whole.
    let (crypter, _) = PassphraseCrypter::generate_insecure_for_tests("pw", 10).unwrap();
    let mode = || SecretsMode::Crypter(&crypter);
    let checkpoint = StackCheckpoint {
        stack: "dev".into(),
        config: None,
        latest: Some(w.snapshot.clone()),
    };
    let bytes = write_checkpoint(&checkpoint, mode()).unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains("second"));
    let read = read_checkpoint(&bytes, mode()).unwrap().latest.unwrap();
    // Compared without `assert_eq!`, whose message would print the values.
    assert!(
        read.resources == w.snapshot.resources,
        "the resources differ"
    );
    let r = w.up(&deep_program("third")).await;
    expect_ok(&r);
    assert!(!r.journal.is_empty());
    for entry in &r.journal {
        let line = entry_to_json(entry, mode()).unwrap();
        assert!(!String::from_utf8_lossy(&line).contains("third"));
        let back = entry_from_json(&line, mode()).unwrap();
        assert!(&back == entry, "entry {} differs", entry.sequence_id);
    }
}

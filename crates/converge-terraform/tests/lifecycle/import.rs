//! Import (seed 004's Import Behavior): ImportResourceState trades the ID
//! for a stub state, which ReadResource (with the stub's private data)
//! turns into the recorded object; no plan or apply changes it when the
//! program matches it, and an ID that names nothing records nothing.

use converge_engine::StepOp;
use converge_testkit::tf_mock::{ImportResult, Imported};
use converge_testkit::MockCloud;

use super::*;

/// One `mock_thing` named `a` with these inputs, importing `id`.
fn importing(pairs: &[(&str, &str)], id: &str) -> TestProgram {
    let inputs = strings(pairs);
    let id = id.to_owned();
    program(move |m: Monitor| {
        let (inputs, id) = (inputs.clone(), id.clone());
        async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(TOKEN, "a", inputs);
            g.parent = Some(stack);
            g.options.import_id = Some(id);
            m.register_resource(g).await.map_err(|e| e.to_string())?;
            Ok(())
        }
    })
}

#[tokio::test]
async fn an_import_reads_the_stub_the_provider_imported_and_records_the_object() {
    let cloud = MockCloud::new();
    let mock = mock(&cloud).on_import(|m, call| {
        // A stub of only the ID, and private data for the read.
        let full = m.default_import(call);
        ImportResult {
            imported: full
                .imported
                .into_iter()
                .map(|i| Imported {
                    state: Some(strings(&[("id", &call.id)])),
                    private: b"from-import".to_vec(),
                    ..i
                })
                .collect(),
            diagnostics: full.diagnostics,
        }
    });
    let (mut w, server) = world(mock).await;
    let tf = server.mock();
    let id = tf.insert_object(
        THING,
        strings(&[
            ("name", "x"),
            ("note", "n"),
            ("label", "l"),
            ("revision", "r"),
        ]),
    );

    let r = w.up(&importing(&[("name", "x"), ("note", "n")], &id)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Import]);
    let imports = tf.imports();
    assert_eq!(imports.len(), 1);
    assert_eq!(
        (imports[0].0.type_name.as_str(), imports[0].0.id.as_str()),
        (THING, id.as_str())
    );
    let (read, _) = &tf.reads()[0];
    let stub = read.current_state.as_ref().unwrap();
    assert_eq!(stub["id"], s(&id));
    assert_eq!(stub["name"], PropertyValue::Null, "the read got the stub");
    assert_eq!(read.private, b"from-import");
    assert!(tf.applies().is_empty());

    let a = thing_a(&w);
    assert_eq!(a.id.as_deref(), Some(id.as_str()));
    assert_eq!(a.outputs.get("label"), Some(&s("l")));
    assert_eq!(a.outputs.get("revision"), Some(&s("r")));
    let m = meta(a);
    assert_eq!(
        (m.schema_version, m.private),
        (Some(1), b"from-import".to_vec())
    );
    assert_eq!(cloud.ids(), vec![id]);

    expect_ok(&w.destroy().await);
    assert!(cloud.is_empty());
}

#[tokio::test]
async fn an_import_of_an_id_that_names_nothing_fails_and_records_nothing() {
    let cloud = MockCloud::new();
    let (mut w, server) = world(mock(&cloud)).await;
    let r = w.up(&importing(&[("name", "x")], "id-404")).await;
    let e = error_of(&r);
    assert!(
        e.contains("Cannot import non-existent remote object"),
        "{e}"
    );
    assert!(w.resource("a").is_none());
    assert!(cloud.is_empty());
    assert!(server.mock().applies().is_empty());
}

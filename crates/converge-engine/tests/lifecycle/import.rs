//! The `import` resource option, as current Pulumi has it: read, import,
//! then the normal diff — a difference is an update after the import, one
//! that needs a replacement is an error, and a resource imported earlier
//! whose program still names its ID may never be replaced. And the
//! `converge import` form, whose inputs are what was read.

use converge_engine::{ImportInputs, StepOp};
use converge_testkit::{component, custom, program, register_stack, TestProgram};

use super::*;

const EXISTING: &str = "urn:pulumi:test::proj::pkg:index:Thing::existing";

// Plans list a resource's steps in the order of `StepOp`, not in time.

/// stack + Thing `a` with input `v`, importing `id` (if any).
fn thing(v: &'static str, id: Option<String>) -> TestProgram {
    thing_with(v, id, ImportInputs::Program)
}

fn thing_with(v: &'static str, id: Option<String>, how: ImportInputs) -> TestProgram {
    program(move |m| {
        let (id, how) = (id.clone(), how.clone());
        async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "a", inputs(&[("v", v)]));
            g.options.import_id = id;
            g.options.import_inputs = how;
            reg(&m, &stack, g).await?;
            Ok(())
        }
    })
}

#[tokio::test]
async fn a_matching_import_is_only_an_import_and_stays_one() {
    let (mut w, cloud) = world(provider());
    let id = w.insert_outside(EXISTING, "pkg", inputs(&[("v", "1")]));
    let r = w.up(&thing("1", Some(id.clone()))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Import]);
    let a = w.resource("a").unwrap();
    assert_eq!(a.id.as_deref(), Some(id.as_str()));
    assert_eq!(a.import_id.as_deref(), Some(id.as_str()));
    assert_eq!(a.inputs.get("v"), Some(&s("1")));
    let counts = cloud.counts();
    assert_eq!((counts.creates, counts.updates), (0, 0));
    // The same program again, the option still there: nothing to do.
    let r = w.up(&thing("1", Some(id.clone()))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    // And without it.
    let r = w.up(&thing("1", None)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
}

#[tokio::test]
async fn a_difference_is_an_update_after_the_import() {
    let (mut w, cloud) = world(provider());
    let id = w.insert_outside(EXISTING, "pkg", inputs(&[("v", "1")]));
    // The preview shows both steps and changes nothing.
    let r = w.preview(&thing("2", Some(id.clone()))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update, StepOp::Import]);
    assert!(w.resource("a").is_none());

    let r = w.up(&thing("2", Some(id.clone()))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update, StepOp::Import]);
    let a = w.resource("a").unwrap();
    assert_eq!(a.id.as_deref(), Some(id.as_str()));
    assert_eq!(a.import_id.as_deref(), Some(id.as_str()));
    assert_eq!(a.inputs.get("v"), Some(&s("2")));
    assert_eq!(a.outputs.get("v"), Some(&s("2")));
    assert_eq!(cloud.get(&id).unwrap().properties.get("v"), Some(&s("2")));
    let counts = cloud.counts();
    assert_eq!((counts.creates, counts.updates), (0, 1));
    // Exactly one live state for the URN, and it is the updated one.
    let live: Vec<_> = w
        .snapshot
        .resources
        .iter()
        .filter(|r| r.urn.name() == "a")
        .collect();
    assert_eq!(live.len(), 1, "{live:?}");
    let r = w.up(&thing("2", Some(id))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
}

#[tokio::test]
async fn a_difference_that_needs_a_replacement_fails_the_import_and_records_nothing() {
    let (mut w, cloud) = world(provider().replace_on_changes(["v"]));
    let id = w.insert_outside(EXISTING, "pkg", inputs(&[("v", "1")]));
    // A preview warns and shows the import; it does not fail.
    let r = w.preview(&thing("2", Some(id.clone()))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Import]);

    let before = w.snapshot.clone();
    let r = w.up(&thing("2", Some(id.clone()))).await;
    let err = r.error.expect("the import must fail").to_string();
    assert!(
        err.contains("import of urn:pulumi:test::proj::pkg:index:Thing::a failed")
            && err.contains("differ from the existing object in v")
            && err.contains("replace"),
        "{err}"
    );
    assert!(w.resource("a").is_none());
    assert_eq!(
        w.snapshot.resources.len(),
        before.resources.len() + 2,
        "only the stack and the default provider are new"
    );
    let counts = cloud.counts();
    assert_eq!((counts.creates, counts.updates, counts.deletes), (0, 0, 0));
    assert_eq!(cloud.get(&id).unwrap().properties.get("v"), Some(&s("1")));
}

#[tokio::test]
async fn a_previously_imported_resource_that_names_its_id_may_not_be_replaced() {
    let (mut w, cloud) = world(provider().replace_on_changes(["v"]));
    let id = w.insert_outside(EXISTING, "pkg", inputs(&[("v", "1")]));
    expect_ok(&w.up(&thing("1", Some(id.clone()))).await);

    // The preview warns and shows the replacement.
    let r = w.preview(&thing("2", Some(id.clone()))).await;
    expect_ok(&r);
    assert!(ops_of(&r, "a").contains(&StepOp::CreateReplacement));

    let before = w.snapshot.clone();
    let r = w.up(&thing("2", Some(id.clone()))).await;
    let err = r
        .error
        .expect("the replacement must be refused")
        .to_string();
    assert!(
        err.contains("urn:pulumi:test::proj::pkg:index:Thing::a")
            && err.contains(
                "previously-imported resources that still specify an ID may not be replaced"
            )
            && err.contains("changes in v"),
        "{err}"
    );
    assert_eq!(
        w.resource("a"),
        before.resources.iter().find(|r| r.urn.name() == "a")
    );
    assert_eq!(cloud.counts().creates, 0);

    // Without the option it is an ordinary replacement.
    let r = w.up(&thing("2", None)).await;
    expect_ok(&r);
    assert!(ops_of(&r, "a").contains(&StepOp::CreateReplacement));
    assert_ne!(w.resource("a").unwrap().id.as_deref(), Some(id.as_str()));
}

#[tokio::test]
async fn a_missing_id_fails_clearly_and_records_nothing() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&thing("1", None)).await);
    let before = w.snapshot.clone();
    let other = program(|m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("v", "1")]))).await?;
        let mut g = custom(T, "b", inputs(&[("v", "1")]));
        g.options.import_id = Some("no-such-id".to_owned());
        reg(&m, &stack, g).await?;
        Ok(())
    });
    let r = w.up(&other).await;
    let err = r.error.expect("a missing object must fail").to_string();
    assert!(
        err.contains("import of urn:pulumi:test::proj::pkg:index:Thing::b failed")
            && err.contains("no object with ID no-such-id exists"),
        "{err}"
    );
    assert!(w.resource("b").is_none());
    assert_eq!(w.snapshot.resources, before.resources);
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn importing_another_id_replaces_the_old_object() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&thing("1", None)).await);
    let old_id = w.resource("a").unwrap().id.clone().unwrap();
    let id = w.insert_outside(EXISTING, "pkg", inputs(&[("v", "1")]));
    let r = w.up(&thing("1", Some(id.clone()))).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::DeleteReplaced, StepOp::Import],
        "{:?}",
        all_ops(&r)
    );
    assert_eq!(w.resource("a").unwrap().id.as_deref(), Some(id.as_str()));
    assert!(cloud.get(&old_id).is_none(), "the old object is deleted");
    assert!(cloud.get(&id).is_some());
}

#[tokio::test]
async fn a_protected_old_resource_is_not_replaced_by_an_import() {
    let (mut w, cloud) = world(provider());
    let protected = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut g = custom(T, "a", inputs(&[("v", "1")]));
        g.options.protect = true;
        reg(&m, &stack, g).await?;
        Ok(())
    });
    expect_ok(&w.up(&protected).await);
    let id = w.insert_outside(EXISTING, "pkg", inputs(&[("v", "1")]));
    let before = w.snapshot.clone();
    let r = w.up(&thing("1", Some(id))).await;
    let err = r.error.expect("must be refused").to_string();
    assert!(err.contains("is protected"), "{err}");
    assert_eq!(
        w.resource("a"),
        before.resources.iter().find(|r| r.urn.name() == "a")
    );
    assert_eq!(cloud.counts().deletes, 0);
}

#[tokio::test]
async fn inputs_read_from_the_object_restricted_to_the_properties_asked_for() {
    let (mut w, cloud) = world(provider());
    let id = w.insert_outside(EXISTING, "pkg", inputs(&[("v", "1"), ("w", "x")]));
    let how = ImportInputs::Read {
        properties: Some(vec!["w".to_owned()]),
    };
    // The program's own inputs do not matter: there is no program.
    let r = w.up(&thing_with("ignored", Some(id.clone()), how)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Import]);
    let a = w.resource("a").unwrap();
    assert_eq!(a.inputs, inputs(&[("w", "x")]));
    assert_eq!(a.outputs, inputs(&[("v", "1"), ("w", "x")]));
    let all = ImportInputs::Read { properties: None };
    let mut w2 = converge_testkit::Lifecycle::new(cloud.clone(), w.loader.clone());
    w2.outside.push(id.clone());
    let r = w2.up(&thing_with("ignored", Some(id), all)).await;
    expect_ok(&r);
    assert_eq!(
        w2.resource("a").unwrap().inputs,
        inputs(&[("v", "1"), ("w", "x")])
    );
    assert_eq!(cloud.counts().updates, 0);
}

/// `converge import`'s program: the stack stays as it is, the imports
/// join it under their parents.
#[tokio::test]
async fn the_import_program_adopts_objects_and_leaves_the_stack_as_it_is() {
    use converge_engine::import::{ImportProgram, ImportSpec};
    let (mut w, cloud) = world(provider());
    let existing = program(|m| async move {
        let stack = register_stack(&m).await?;
        let web = reg(&m, &stack, component("my:app:Web", "web")).await?;
        let mut child = custom(T, "child", inputs(&[("v", "c")]));
        child.parent = Some(web.urn);
        reg(&m, &stack, child).await?;
        reg(&m, &stack, custom(T, "other", inputs(&[("v", "o")]))).await?;
        Ok(())
    });
    expect_ok(&w.up(&existing).await);
    let before = w.snapshot.clone();
    let web = w.resource("web").unwrap().urn.clone();
    let id = w.insert_outside(EXISTING, "pkg", inputs(&[("v", "1"), ("w", "2")]));
    let specs = vec![
        ImportSpec {
            type_token: T.to_owned(),
            name: "adopted".to_owned(),
            id: id.clone(),
            parent: Some(web.clone()),
            properties: Some(vec!["v".to_owned()]),
            protect: true,
            ..ImportSpec::default()
        },
        ImportSpec {
            type_token: "my:app:Group".to_owned(),
            name: "group".to_owned(),
            component: true,
            ..ImportSpec::default()
        },
    ];
    let p = ImportProgram::new(w.snapshot.clone(), "test", "proj", specs).unwrap();
    assert_eq!(
        p.urns()[0].as_str(),
        "urn:pulumi:test::proj::my:app:Web$pkg:index:Thing::adopted"
    );
    w.options.targets = Some(p.targets());
    let r = w.up(&p).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "adopted"), vec![StepOp::Import]);
    assert_eq!(ops_of(&r, "group"), vec![StepOp::Create]);
    for name in ["web", "proj-test", "default"] {
        assert_eq!(ops_of(&r, name), vec![StepOp::Same], "{name}");
    }
    // Not needed by the imports: not even registered, and not deleted.
    assert!(ops_of(&r, "child").is_empty() && ops_of(&r, "other").is_empty());
    for old in &before.resources {
        let now = w.snapshot.resources.iter().find(|r| r.urn == old.urn);
        assert_eq!(now, Some(old), "{} changed", old.urn);
    }
    let adopted = w.resource("adopted").unwrap();
    assert_eq!(adopted.parent.as_ref(), Some(&web));
    assert!(adopted.protect);
    assert_eq!(adopted.inputs, inputs(&[("v", "1")]));
    assert_eq!(adopted.id.as_deref(), Some(id.as_str()));
    assert!(w.resource("group").unwrap().id.is_none());
    let counts = cloud.counts();
    assert_eq!((counts.creates, counts.updates, counts.deletes), (2, 0, 0));

    // A name already in the stack is refused before anything runs.
    let again = vec![ImportSpec {
        type_token: T.to_owned(),
        name: "other".to_owned(),
        id,
        ..ImportSpec::default()
    }];
    let err = ImportProgram::new(w.snapshot.clone(), "test", "proj", again).unwrap_err();
    assert!(
        err.to_string().contains("already a resource of the stack"),
        "{err}"
    );
}

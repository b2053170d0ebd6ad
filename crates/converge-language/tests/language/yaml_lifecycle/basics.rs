//! Create, update, replace and delete across successive `up`s; `get`;
//! Main.yaml.

use converge_engine::StepOp;
use converge_model::PropertyValue;

use super::*;

fn two(v: &str) -> String {
    format!(
        "resources:
  a:
    type: pkg:index:Thing
    properties:
      v: \"{v}\"
  b:
    type: pkg:Thing
    properties:
      v: ${{a.v}}-b
      fixed: 1
"
    )
}

#[tokio::test]
async fn create_update_then_delete() {
    let (mut w, cloud, _) = world(provider());
    let p = Project::new();

    let r = w.up(&p.program(&two("1"))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Create]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Create]);
    assert_eq!(cloud.len(), 2);
    let a = state(&w, "a");
    let b = state(&w, "b");
    assert_eq!(
        a.parent.as_ref().unwrap().as_str(),
        "urn:pulumi:test::proj::pulumi:pulumi:Stack::proj-test"
    );
    assert_eq!(b.type_token, "pkg:index:Thing");
    assert_eq!(b.inputs.get("v"), Some(&s("1-b")));
    assert_eq!(b.inputs.get("fixed"), Some(&PropertyValue::Number(1.0)));
    assert_eq!(b.dependencies, vec![a.urn.clone()]);
    assert_eq!(b.property_dependencies.get("v"), Some(&vec![a.urn.clone()]));
    assert!(!b.property_dependencies.contains_key("fixed"));

    // The same program again: nothing changes.
    let r = w.up(&p.program(&two("1"))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Same]);

    // A changed property updates a, and b through its reference.
    let r = w.up(&p.program(&two("2"))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Update]);
    assert_eq!(state(&w, "b").outputs.get("v"), Some(&s("2-b")));
    assert_eq!(cloud.counts().creates, 2);

    // Dropping b from the program deletes it.
    let r = w
        .up(&p.program(
            "resources:
  a:
    type: pkg:index:Thing
    properties:
      v: \"2\"
",
        ))
        .await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Delete]);
    assert!(w.resource("b").is_none());
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn a_replacing_diff_replaces_the_resource() {
    let (mut w, cloud, _) = world(provider().replace_on_changes(["zone"]));
    let p = Project::new();
    let program = |zone: &str| {
        p.program(&format!(
            "resources:
  a:
    type: pkg:index:Thing
    properties:
      zone: {zone}
      size: 1
outputs:
  id: ${{a.id}}
"
        ))
    };
    expect_ok(&w.up(&program("eu")).await);
    let first = state(&w, "a").id.clone().unwrap();
    assert_eq!(stack_outputs(&w).get("id"), Some(&s(&first)));

    let r = w.up(&program("us")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    let second = state(&w, "a").id.clone().unwrap();
    assert_ne!(first, second);
    assert_eq!(cloud.len(), 1);
    assert_eq!(stack_outputs(&w).get("id"), Some(&s(&second)));
}

#[tokio::test]
async fn get_reads_an_existing_object() {
    let (mut w, cloud, _) = world(provider());
    let id = w.insert_outside(
        "urn:pulumi:test::proj::pkg:index:Thing::ext",
        "pkg",
        [("v".to_owned(), s("outside"))].into_iter().collect(),
    );
    let p = Project::new();
    let program = p.program(&format!(
        "resources:
  ext:
    type: pkg:index:Thing
    get:
      id: {id}
  user:
    type: pkg:index:Thing
    properties:
      from: ${{ext.v}}
outputs:
  seen: ${{ext.v}}
"
    ));
    let r = w.up(&program).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "ext"), vec![StepOp::Read]);
    let ext = state(&w, "ext");
    assert!(ext.external);
    assert_eq!(ext.id.as_deref(), Some(id.as_str()));
    assert_eq!(state(&w, "user").inputs.get("from"), Some(&s("outside")));
    assert_eq!(stack_outputs(&w).get("seen"), Some(&s("outside")));
    assert_eq!(cloud.len(), 2);
}

#[tokio::test]
async fn main_yaml_holds_the_program() {
    let (mut w, _, _) = world(provider());
    let p = Project::new();
    std::fs::write(
        p.path().join("Pulumi.yaml"),
        "name: proj\nruntime: yaml\nconfig:\n  greeting:\n    default: hi\n",
    )
    .unwrap();
    std::fs::write(
        p.path().join("Main.yaml"),
        "resources:\n  a:\n    type: pkg:index:Thing\n    properties:\n      g: ${greeting}\n",
    )
    .unwrap();
    let program = YamlProgram::load(p.path(), p.options.clone()).unwrap();
    assert_eq!(program.file(), "Main.yaml");
    expect_ok(&w.up(&program).await);
    assert_eq!(state(&w, "a").inputs.get("g"), Some(&s("hi")));
}

#[tokio::test]
async fn a_failed_provider_call_fails_the_run_and_keeps_what_completed() {
    let (mut w, cloud, _) = world(provider());
    cloud.fail_when(|op, urn| op == converge_testkit::CloudOp::Create && urn.name() == "b");
    let p = Project::new();
    let r = w.up(&p.program(&two("1"))).await;
    let e = expect_err(&r);
    assert!(e.contains("::b"), "{e}");
    assert!(w.resource("a").is_some());
    assert!(w.resource("b").is_none());
}

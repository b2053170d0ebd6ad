//! Scheduling and options: concurrency over the dependency graph, previews
//! with unknowns, explicit and default providers, resource options.

use std::time::Duration;

use converge_engine::StepOp;
use converge_model::PropertyValue;
use converge_plugin::{CheckResponse, CreateResponse};
use converge_testkit::Rpc;

use super::*;

#[tokio::test]
async fn independent_resources_register_at_once() {
    let seen = log();
    let (checks, creates) = (seen.clone(), seen.clone());
    let prov = provider()
        .latency(Duration::from_millis(50))
        .on_check(move |req| {
            checks
                .lock()
                .unwrap()
                .push(format!("check {}", req.urn.name()));
            Ok(CheckResponse {
                inputs: req.news,
                failures: vec![],
            })
        })
        .on_create(move |req| {
            creates
                .lock()
                .unwrap()
                .push(format!("create {}", req.urn.name()));
            Ok(CreateResponse {
                id: format!("id-{}", req.urn.name()),
                properties: req.properties,
            })
        });
    let (mut w, _, prov) = world(prov);
    let p = Project::new();
    let program = p.program(
        "resources:
  a:
    type: pkg:index:Thing
    properties:
      v: 1
  b:
    type: pkg:index:Thing
    properties:
      v: 2
  c:
    type: pkg:index:Thing
    properties:
      from: ${a.v}
",
    );
    let r = w.up(&program).await;
    expect_ok(&r);
    let log = entries(&seen);
    let at = |e: &str| {
        log.iter()
            .position(|x| x == e)
            .unwrap_or_else(|| panic!("{e}: {log:?}"))
    };
    // a and b are both checked before either is created: neither waited.
    assert!(at("check a") < at("create b"), "{log:?}");
    assert!(at("check b") < at("create a"), "{log:?}");
    // c waited for a.
    assert!(at("create a") < at("check c"), "{log:?}");
    // The provider's own log agrees: two checks, then two creates.
    let resource_calls: Vec<Rpc> = prov
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Rpc::Check | Rpc::Create))
        .collect();
    assert_eq!(
        &resource_calls[..4],
        &[Rpc::Check, Rpc::Check, Rpc::Create, Rpc::Create]
    );
}

#[tokio::test]
async fn a_preview_propagates_unknowns() {
    let seen = log();
    let checks = seen.clone();
    let prov = provider()
        .on_create(|req| {
            let mut props = req.properties.clone();
            let generated = if req.preview {
                PropertyValue::Unknown
            } else {
                PropertyValue::from("g-1")
            };
            props.insert("generated".to_owned(), generated);
            Ok(CreateResponse {
                id: if req.preview {
                    String::new()
                } else {
                    format!("id-{}", req.urn.name())
                },
                properties: props,
            })
        })
        .on_check(move |req| {
            for (k, v) in &req.news {
                checks
                    .lock()
                    .unwrap()
                    .push(format!("{} {k}={v:?}", req.urn.name()));
            }
            Ok(CheckResponse {
                inputs: req.news,
                failures: vec![],
            })
        });
    let (mut w, cloud, _) = world(prov);
    let p = Project::new();
    let program = p.program(
        "resources:
  a:
    type: pkg:index:Thing
    properties:
      v: one
  b:
    type: pkg:index:Thing
    properties:
      text: prefix-${a.generated}
      id: ${a.id}
      joined:
        fn::join: [\"-\", [\"${a.generated}\", x]]
      known: ${a.v}
outputs:
  gen: ${a.generated}
",
    );
    let r = w.preview(&program).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Create]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Create]);
    assert!(cloud.is_empty());
    let log = entries(&seen);
    for expected in [
        "b text=Unknown",
        "b id=Unknown",
        "b joined=Unknown",
        "b known=String(\"one\")",
    ] {
        assert!(log.iter().any(|l| l == expected), "{expected}: {log:?}");
    }

    // The real run resolves everything.
    expect_ok(&w.up(&program).await);
    let b = state(&w, "b");
    assert_eq!(b.inputs.get("text"), Some(&s("prefix-g-1")));
    assert_eq!(b.inputs.get("id"), Some(&s("id-a")));
    assert_eq!(b.inputs.get("joined"), Some(&s("g-1-x")));
    assert_eq!(stack_outputs(&w).get("gen"), Some(&s("g-1")));
}

#[tokio::test]
async fn explicit_and_default_providers() {
    let (mut w, _, prov) = world(provider());
    let p = Project::new();
    let program = p.program(
        "resources:
  eu:
    type: pulumi:providers:pkg
    properties:
      region: eu
  us:
    type: pulumi:providers:pkg
    defaultProvider: true
    properties:
      region: us
  pinned:
    type: pkg:index:Thing
    options:
      provider: ${eu}
  implicit:
    type: pkg:index:Thing
",
    );
    // New providers have IDs in a preview too, so references resolve.
    expect_ok(&w.preview(&program).await);
    expect_ok(&w.up(&program).await);
    let pinned = state(&w, "pinned").provider.clone().unwrap();
    assert_eq!(pinned.urn.name(), "eu");
    assert_eq!(Some(pinned.id.as_str()), state(&w, "eu").id.as_deref());
    let implicit = state(&w, "implicit").provider.clone().unwrap();
    assert_eq!(implicit.urn.name(), "us");
    // No default provider was made: every resource had one.
    assert!(w.resource("default").is_none());
    assert!(prov.call_count(Rpc::Configure) >= 2);
}

#[tokio::test]
async fn resource_options_reach_the_state() {
    let (mut w, cloud, _) = world(provider());
    let p = Project::new();
    let program = p.program(
        "resources:
  parent:
    type: pkg:index:Thing
  first:
    type: pkg:index:Thing
  a:
    type: pkg:index:Thing
    name: a-logical
    properties:
      v: 1
      token: abc
    options:
      parent: ${parent}
      dependsOn:
        - ${first}
      protect: false
      ignoreChanges: [v]
      replaceOnChanges: [\"token\"]
      additionalSecretOutputs: [token]
      retainOnDelete: true
      deletedWith: ${first}
      customTimeouts:
        create: 5m
      version: 1.0.0
",
    );
    expect_ok(&w.up(&program).await);
    let a = state(&w, "a-logical");
    let parent = state(&w, "parent");
    let first = state(&w, "first");
    assert_eq!(
        a.urn.as_str(),
        "urn:pulumi:test::proj::pkg:index:Thing$pkg:index:Thing::a-logical"
    );
    assert_eq!(a.parent.as_ref(), Some(&parent.urn));
    assert_eq!(a.dependencies, vec![first.urn.clone()]);
    assert_eq!(a.ignore_changes, vec!["v".to_owned()]);
    assert_eq!(a.replace_on_changes, vec!["token".to_owned()]);
    assert_eq!(a.additional_secret_outputs, vec!["token".to_owned()]);
    assert!(a.retain_on_delete);
    assert_eq!(a.deleted_with.as_ref(), Some(&first.urn));
    assert_eq!(
        a.custom_timeouts.as_ref().and_then(|t| t.create.clone()),
        Some("5m".to_owned())
    );
    assert_eq!(a.outputs.get("token"), Some(&secret("abc")));

    // ignoreChanges: a new v is not an update.
    let changed = p.program(
        &std::fs::read_to_string(p.path().join("Pulumi.yaml"))
            .unwrap()
            .replace("name: proj\nruntime: yaml\n", "")
            .replace("v: 1", "v: 2"),
    );
    let r = w.up(&changed).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a-logical"), vec![StepOp::Same]);
    assert_eq!(cloud.len(), 3);
}

#[tokio::test]
async fn aliases_and_import_adopt_existing_state() {
    let (mut w, cloud, _) = world(provider());
    let p = Project::new();
    expect_ok(
        &w.up(&p.program(
            "resources:\n  old:\n    type: pkg:index:Thing\n    properties:\n      v: 1\n",
        ))
        .await,
    );
    let r = w
        .up(&p.program(
            "resources:
  new:
    type: pkg:index:Thing
    properties:
      v: 1
    options:
      aliases:
        - urn:pulumi:test::proj::pkg:index:Thing::old
",
        ))
        .await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "new"), vec![StepOp::Same]);
    assert!(w.resource("old").is_none());
    assert_eq!(cloud.len(), 1);

    let id = w.insert_outside(
        "urn:pulumi:test::proj::pkg:index:Thing::adopted",
        "pkg",
        [("v".to_owned(), PropertyValue::from("x"))]
            .into_iter()
            .collect(),
    );
    let r = w
        .up(&p.program(&format!(
            "resources:
  adopted:
    type: pkg:index:Thing
    properties:
      v: x
    options:
      import: {id}
"
        )))
        .await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "adopted"), vec![StepOp::Import]);
    assert_eq!(state(&w, "adopted").id.as_deref(), Some(id.as_str()));
}

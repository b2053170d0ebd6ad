//! The options `hideDiffs`, `replaceWith` and `replacementTrigger` in
//! YAML reach the engine: recorded with the resource (a secret trigger
//! as a secret), and a trigger not known in a preview (another
//! resource's output) plans a replacement.

use converge_plugin::CreateResponse;

use super::*;

/// A provider whose `generated` output is unknown in a preview.
fn generating() -> MockProvider {
    provider().on_create(|req| {
        let mut props = req.properties.clone();
        let generated = if req.preview {
            PropertyValue::Unknown
        } else {
            PropertyValue::from(format!("g-{}", req.urn.name()))
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
}

#[tokio::test]
async fn the_options_are_recorded_with_the_resource() {
    let (mut w, _, _) = world(generating());
    let p = Project::new();
    let program = p.program(
        "resources:
  a:
    type: pkg:index:Thing
    options:
      replacementTrigger:
        fn::secret: [1, 2]
  b:
    type: pkg:index:Thing
    properties:
      v: one
    options:
      hideDiffs: [v]
      replaceWith: [\"${a}\"]
",
    );
    expect_ok(&w.up(&program).await);
    let a = state(&w, "a");
    assert_eq!(
        a.replacement_trigger,
        Some(PropertyValue::secret(PropertyValue::Array(vec![
            PropertyValue::from(1.0),
            PropertyValue::from(2.0),
        ])))
    );
    let a_urn = a.urn.clone();
    let b = state(&w, "b");
    assert_eq!(b.hide_diff, vec!["v".to_owned()]);
    assert_eq!(b.replace_with, vec![a_urn]);
}

#[tokio::test]
async fn an_unknown_trigger_previews_a_replacement() {
    let (mut w, _, _) = world(generating());
    let p = Project::new();
    let first = p.program(
        "resources:
  t:
    type: pkg:index:Thing
    options:
      replacementTrigger: one
",
    );
    expect_ok(&w.up(&first).await);
    let second = p.program(
        "resources:
  source:
    type: pkg:index:Thing
  t:
    type: pkg:index:Thing
    options:
      replacementTrigger: ${source.generated}
",
    );
    let r = w.preview(&second).await;
    expect_ok(&r);
    assert!(
        ops_of(&r, "t").contains(&StepOp::CreateReplacement),
        "{:?}",
        ops_of(&r, "t")
    );
}

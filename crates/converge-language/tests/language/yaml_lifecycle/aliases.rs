//! Aliases inherited through parents: a YAML program that renames a parent
//! keeps its children and grandchildren (the engine's rule, the one gRPC
//! programs get).

use super::*;

fn program(parent: &str, alias: Option<&str>) -> String {
    let aliases = alias
        .map(|a| format!("    options:\n      aliases:\n        - {a}\n"))
        .unwrap_or_default();
    format!(
        "resources:
  {parent}:
    type: pkg:index:Thing
    properties:
      v: 1
{aliases}  {parent}-bucket:
    type: pkg:index:Thing
    properties:
      v: 1
    options:
      parent: ${{{parent}}}
  leaf:
    type: pkg:index:Thing
    properties:
      v: 1
    options:
      parent: ${{{parent}-bucket}}
"
    )
}

#[tokio::test]
async fn children_follow_a_renamed_parent() {
    let (mut w, cloud, _) = world(provider());
    let p = Project::new();
    expect_ok(&w.up(&p.program(&program("web", None))).await);
    assert_eq!(cloud.len(), 3);
    let renamed = p.program(&program(
        "site",
        Some("urn:pulumi:test::proj::pkg:index:Thing::web"),
    ));
    let r = w.up(&renamed).await;
    expect_ok(&r);
    // The parent through its alias; `site-bucket` as `web-bucket` under the
    // parent's former URN (a child named after its parent follows the
    // parent's name); `leaf` under its parent's inherited alias.
    assert_eq!(ops_of(&r, "site"), vec![StepOp::Same]);
    assert_eq!(ops_of(&r, "site-bucket"), vec![StepOp::Same]);
    assert_eq!(ops_of(&r, "leaf"), vec![StepOp::Same]);
    assert_eq!(cloud.len(), 3);
    assert!(w.resource("web").is_none() && w.resource("web-bucket").is_none());
    assert_eq!(
        state(&w, "leaf").urn.as_str(),
        "urn:pulumi:test::proj::pkg:index:Thing$pkg:index:Thing$pkg:index:Thing::leaf"
    );
}

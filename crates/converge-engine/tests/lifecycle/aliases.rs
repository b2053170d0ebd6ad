//! Aliases inherited through parents: the engine resolves every
//! program's aliases (specs and URNs) and multiplies out its parent's, so a
//! renamed or retyped parent keeps its children and grandchildren, whatever
//! language the program is written in.

use converge_engine::{Alias, AliasSpec, StepOp};
use converge_testkit::{component, custom, program, register_stack, TestProgram};

use super::*;

/// A component, a child named after it (`<component>-bucket`) and a
/// grandchild; the component's former identity (if any) as a spec.
fn site(ty: &'static str, name: &'static str, was: Option<AliasSpec>) -> TestProgram {
    program(move |m| {
        let was = was.clone();
        async move {
            let stack = register_stack(&m).await?;
            let mut comp = component(ty, name);
            comp.options.aliases = was.into_iter().map(Alias::Spec).collect();
            let comp = reg(&m, &stack, comp).await?;
            let mut bucket = custom(T, &format!("{name}-bucket"), inputs(&[("v", "1")]));
            bucket.parent = Some(comp.urn);
            let bucket = reg(&m, &stack, bucket).await?;
            let mut leaf = custom(T, "leaf", inputs(&[("v", "1")]));
            leaf.parent = Some(bucket.urn);
            reg(&m, &stack, leaf).await?;
            Ok(())
        }
    })
}

#[tokio::test]
async fn children_and_grandchildren_follow_a_renamed_and_retyped_parent() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&site("my:index:Web", "web", None)).await);
    let was = AliasSpec {
        name: Some("web".to_owned()),
        type_token: Some("my:index:Web".to_owned()),
        ..AliasSpec::default()
    };
    let r = w.up(&site("my:index:Site", "site", Some(was))).await;
    expect_ok(&r);
    // Nothing created, nothing deleted: every resource found its old state
    // under its parent's former URN (the child's name follows its parent's:
    // `web-bucket` was `site-bucket`'s name).
    assert!(
        all_ops(&r)
            .iter()
            .all(|(_, op)| !matches!(op, StepOp::Create | StepOp::Delete)),
        "{:?}",
        all_ops(&r)
    );
    assert_eq!(cloud.counts().creates, 2);
    assert_eq!(cloud.counts().deletes, 0);
    let urns: Vec<&str> = w
        .snapshot
        .resources
        .iter()
        .map(|r| r.urn.as_str())
        .collect();
    assert!(
        urns.contains(
            &"urn:pulumi:test::proj::my:index:Site$pkg:index:Thing$pkg:index:Thing::leaf"
        ),
        "{urns:?}"
    );
    assert!(w.resource("web-bucket").is_none() && w.resource("site-bucket").is_some());
}

#[tokio::test]
async fn a_childs_own_alias_is_also_taken_under_its_parents_former_urn() {
    // The parent is renamed and, in the same change, so is the child: the
    // child's old URN is its old name under its parent's old URN.
    let p = |comp: &'static str, child: &'static str, aliased: bool| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            let mut c = component("my:index:Comp", comp);
            let mut thing = custom(T, child, inputs(&[("v", "1")]));
            if aliased {
                c.options.aliases = vec![Alias::Spec(AliasSpec {
                    name: Some("a".to_owned()),
                    ..AliasSpec::default()
                })];
                thing.options.aliases = vec![Alias::Spec(AliasSpec {
                    name: Some("x".to_owned()),
                    ..AliasSpec::default()
                })];
            }
            let c = reg(&m, &stack, c).await?;
            thing.parent = Some(c.urn);
            reg(&m, &stack, thing).await?;
            Ok(())
        })
    };
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&p("a", "x", false)).await);
    let r = w.up(&p("b", "y", true)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "y"), vec![StepOp::Same]);
    assert_eq!(cloud.counts().creates, 1);
    assert_eq!(cloud.counts().deletes, 0);
}

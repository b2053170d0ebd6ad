//! Aliases inherited through parents: the engine resolves every
//! program's aliases (specs and URNs) and multiplies out its parent's, so a
//! renamed or retyped parent keeps its children and grandchildren, whatever
//! language the program is written in.

use converge_engine::{Alias, AliasParent, AliasSpec, StepOp};
use converge_testkit::{component, custom, program, register_stack, Lifecycle, TestProgram};

use super::*;

/// A component, a child named after it (`<component>-bucket`) and a
/// grandchild; the component's former identity (if any) as an alias.
fn site(ty: &'static str, name: &'static str, was: Option<Alias>) -> TestProgram {
    program(move |m| {
        let was = was.clone();
        async move {
            let stack = register_stack(&m).await?;
            let mut comp = component(ty, name);
            comp.options.aliases = was.into_iter().collect();
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

/// The IDs of the live custom resources, by name.
fn ids(w: &Lifecycle) -> Vec<(String, Option<String>)> {
    let mut out: Vec<_> = w
        .snapshot
        .resources
        .iter()
        .filter(|r| r.custom && !r.is_provider() && !r.delete)
        .map(|r| (r.urn.name().replace("site-", "web-"), r.id.clone()))
        .collect();
    out.sort();
    out
}

/// Deploys the site as `my:index:Web` `web`, then as `my:index:Site`
/// `site` with the alias `was`: every resource keeps its object.
async fn renamed_site_keeps_its_children(was: Alias) {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&site("my:index:Web", "web", None)).await);
    let before = ids(&w);
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
    assert_eq!(ids(&w), before);
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
    assert!(!urns.iter().any(|u| u.contains("my:index:Web")), "{urns:?}");
}

#[tokio::test]
async fn children_and_grandchildren_follow_a_parent_renamed_and_retyped_by_spec() {
    renamed_site_keeps_its_children(Alias::Spec(AliasSpec {
        name: Some("web".to_owned()),
        type_token: Some("my:index:Web".to_owned()),
        ..AliasSpec::default()
    }))
    .await;
}

#[tokio::test]
async fn children_and_grandchildren_follow_a_parent_renamed_and_retyped_by_urn() {
    let old = Urn::parse("urn:pulumi:test::proj::my:index:Web::web").unwrap();
    renamed_site_keeps_its_children(Alias::Urn(old)).await;
}

/// How a child's alias names its parent.
#[derive(Debug, Clone, Copy)]
enum ParentForm {
    /// Not at all (the Python SDK's `Alias(name=…)`).
    Unset,
    /// As the parent's current URN (what the Node.js SDK sends when the
    /// alias names no parent).
    CurrentUrn,
}

/// Component `a` of type `my:index:Comp` with child `x`; or, `renamed`,
/// component `b` of type `my:index:Comp2` with child `y`, each with an
/// alias naming its former name (and the component its former type).
fn pair(renamed: Option<ParentForm>) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let Some(form) = renamed else {
            let c = reg(&m, &stack, component("my:index:Comp", "a")).await?;
            let mut thing = custom(T, "x", inputs(&[("v", "1")]));
            thing.parent = Some(c.urn);
            reg(&m, &stack, thing).await?;
            return Ok(());
        };
        let mut c = component("my:index:Comp2", "b");
        c.options.aliases = vec![Alias::Spec(AliasSpec {
            name: Some("a".to_owned()),
            type_token: Some("my:index:Comp".to_owned()),
            ..AliasSpec::default()
        })];
        let c = reg(&m, &stack, c).await?;
        let mut thing = custom(T, "y", inputs(&[("v", "1")]));
        thing.options.aliases = vec![Alias::Spec(AliasSpec {
            name: Some("x".to_owned()),
            parent: match form {
                ParentForm::Unset => AliasParent::Current,
                ParentForm::CurrentUrn => AliasParent::Urn(c.urn.clone()),
            },
            ..AliasSpec::default()
        })];
        thing.parent = Some(c.urn);
        reg(&m, &stack, thing).await?;
        Ok(())
    })
}

#[tokio::test]
async fn a_childs_own_alias_is_also_taken_under_its_parents_former_urn() {
    // The parent is renamed and retyped and, in the same change, the child
    // is renamed: the child's old URN is its old name under its parent's
    // old URN, whether its alias leaves the parent unset or names the
    // parent as it is now.
    for form in [ParentForm::Unset, ParentForm::CurrentUrn] {
        let (mut w, cloud) = world(provider());
        expect_ok(&w.up(&pair(None)).await);
        let id = w.resource("x").unwrap().id.clone();
        let r = w.up(&pair(Some(form))).await;
        expect_ok(&r);
        assert_eq!(ops_of(&r, "y"), vec![StepOp::Same], "{form:?}");
        assert_eq!(ops_of(&r, "b"), vec![StepOp::Same], "{form:?}");
        assert_eq!(cloud.counts().creates, 1);
        assert_eq!(cloud.counts().deletes, 0);
        let y = w.resource("y").unwrap();
        assert_eq!(y.id, id);
        assert_eq!(
            y.urn.as_str(),
            "urn:pulumi:test::proj::my:index:Comp2$pkg:index:Thing::y"
        );
    }
}

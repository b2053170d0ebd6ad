//! Aliases, one form at a time: a resource deployed under one identity is
//! registered under another with an alias naming the first, and the
//! engine finds its old state — no create, no delete, the new URN in the
//! state, the same ID. The forms are those the Python and Node.js SDKs
//! send: a whole URN, or a spec with any of name, type, parent (a URN, or
//! none: the stack), stack and project, unset parts being the resource's
//! current ones. (Aliases inherited from a parent: `aliases_inherited.rs`;
//! two registrations claiming one old resource: `claims.rs`.) An alias one
//! slip away from a URN the operation deletes is warned about.

use converge_engine::events::EventSink;
use converge_engine::{
    Alias, AliasParent, AliasSpec, DeploymentOptions, OperationResult, Severity, StepOp,
};
use converge_model::ResourceState;
use converge_testkit::{
    component, custom, program, register_stack, Lifecycle, MockCloud, TestProgram,
};

use super::*;

const T2: &str = "pkg:index:Gadget";
const COMP_A: &str = "my:index:Site";
const COMP_B: &str = "my:index:Shop";

/// Where the resource under test sits: under the stack, or under one of
/// the components `a` and `b` that every program registers (of different
/// types, so that a move from one to the other changes the URN).
#[derive(Debug, Clone, Copy, PartialEq)]
enum At {
    Stack,
    A,
    B,
}

/// The resource under test: its type, name, place and aliases.
#[derive(Debug, Clone)]
struct Thing {
    ty: String,
    name: String,
    at: At,
    aliases: Vec<Alias>,
}

fn thing(ty: &str, name: &str, at: At) -> Thing {
    Thing {
        ty: ty.to_owned(),
        name: name.to_owned(),
        at,
        aliases: Vec::new(),
    }
}

impl Thing {
    fn aliased(mut self, alias: impl Into<Alias>) -> Thing {
        self.aliases.push(alias.into());
        self
    }
}

fn spec(f: impl FnOnce(&mut AliasSpec)) -> Alias {
    let mut s = AliasSpec::default();
    f(&mut s);
    Alias::Spec(s)
}

fn parse(s: &str) -> Urn {
    Urn::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// The URN of component `a` in the test stack.
fn comp_a() -> Urn {
    parse(&format!("urn:pulumi:test::proj::{COMP_A}::a"))
}

/// The stack, components `a` and `b` (`a` retyped to `a_type` with an
/// alias if that is not its type), and the resource under test.
fn program_with(thing: Thing, a_type: &'static str) -> TestProgram {
    program(move |m| {
        let thing = thing.clone();
        async move {
            let stack = register_stack(&m).await?;
            let mut a = component(a_type, "a");
            if a_type != COMP_A {
                a.options.aliases = vec![spec(|s| s.type_token = Some(COMP_A.to_owned()))];
            }
            let a = reg(&m, &stack, a).await?;
            let b = reg(&m, &stack, component(COMP_B, "b")).await?;
            let mut goal = custom(&thing.ty, &thing.name, inputs(&[("v", "1")]));
            goal.parent = match thing.at {
                At::Stack => None,
                At::A => Some(a.urn),
                At::B => Some(b.urn),
            };
            goal.options.aliases = thing.aliases;
            reg(&m, &stack, goal).await?;
            Ok(())
        }
    })
}

fn prog(thing: Thing) -> TestProgram {
    program_with(thing, COMP_A)
}

/// The live custom resource in `w`'s state (there is one).
fn the_thing(w: &Lifecycle) -> ResourceState {
    let things: Vec<&ResourceState> = w
        .snapshot
        .resources
        .iter()
        .filter(|r| r.custom && !r.is_provider() && !r.delete)
        .collect();
    assert_eq!(things.len(), 1, "{things:#?}");
    things[0].clone()
}

/// Checks that the second deployment `r` found the old state `before`
/// under the resource's new URN `after`: no create or delete of it, one
/// `same` step, the same ID, the old URN gone from the state.
fn found(
    w: &Lifecycle,
    cloud: &MockCloud,
    r: &OperationResult,
    before: &ResourceState,
    after: &str,
) {
    expect_ok(r);
    let now = the_thing(w);
    assert_eq!(now.urn.as_str(), after);
    assert_eq!(now.id, before.id, "the object changed");
    // As Pulumi's state does: the URN it was found under, as its alias.
    assert_eq!(now.aliases, std::slice::from_ref(&before.urn));
    assert_eq!(
        ops_of(r, now.urn.name()),
        vec![StepOp::Same],
        "{:?}",
        all_ops(r)
    );
    assert!(
        !w.snapshot.resources.iter().any(|s| s.urn == before.urn),
        "the old URN is still in the state"
    );
    assert_eq!(cloud.counts().creates, 1, "{:?}", all_ops(r));
    assert_eq!(cloud.counts().deletes, 0, "{:?}", all_ops(r));
    assert_eq!(cloud.len(), 1);
}

/// Deploys `before`, then `after`; checks `after` (whose URN is
/// `after_urn`) took over `before`'s object.
async fn moves(before: Thing, after: Thing, after_urn: &str) {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&prog(before)).await);
    let old = the_thing(&w);
    let r = w.up(&prog(after)).await;
    found(&w, &cloud, &r, &old, after_urn);
    // The next deployment of the same program finds it under its own URN.
    let again = w.preview(&prog_again(&w)).await;
    expect_ok(&again);
    assert!(
        all_ops(&again).iter().all(|(_, op)| *op == StepOp::Same),
        "{:?}",
        all_ops(&again)
    );
}

/// The program that registers the resource now in `w`'s state, without
/// aliases.
fn prog_again(w: &Lifecycle) -> TestProgram {
    let now = the_thing(w);
    let at = match now.parent.as_ref().map(|p| p.name()) {
        Some("a") => At::A,
        Some("b") => At::B,
        _ => At::Stack,
    };
    prog(thing(&now.type_token, now.urn.name(), at))
}

#[tokio::test]
async fn a_urn_alias_finds_the_old_resource() {
    let old = parse(&format!("urn:pulumi:test::proj::{T}::x"));
    moves(
        thing(T, "x", At::Stack),
        thing(T, "y", At::Stack).aliased(old),
        &format!("urn:pulumi:test::proj::{T}::y"),
    )
    .await;
}

#[tokio::test]
async fn a_name_alias_finds_the_old_resource() {
    moves(
        thing(T, "x", At::A),
        thing(T, "y", At::A).aliased(spec(|s| s.name = Some("x".to_owned()))),
        &format!("urn:pulumi:test::proj::{COMP_A}${T}::y"),
    )
    .await;
}

#[tokio::test]
async fn a_type_alias_finds_the_old_resource() {
    // At the top and under a component: the type is the last part of the
    // qualified type either way.
    moves(
        thing(T, "x", At::Stack),
        thing(T2, "x", At::Stack).aliased(spec(|s| s.type_token = Some(T.to_owned()))),
        &format!("urn:pulumi:test::proj::{T2}::x"),
    )
    .await;
    moves(
        thing(T, "x", At::A),
        thing(T2, "x", At::A).aliased(spec(|s| s.type_token = Some(T.to_owned()))),
        &format!("urn:pulumi:test::proj::{COMP_A}${T2}::x"),
    )
    .await;
}

#[tokio::test]
async fn a_parent_alias_finds_the_old_resource() {
    // Moved from component `a` to component `b`.
    moves(
        thing(T, "x", At::A),
        thing(T, "x", At::B).aliased(spec(|s| s.parent = AliasParent::Urn(comp_a()))),
        &format!("urn:pulumi:test::proj::{COMP_B}${T}::x"),
    )
    .await;
}

#[tokio::test]
async fn a_no_parent_alias_finds_the_old_resource_at_the_top() {
    // Moved from the top of the stack into component `a`: `noParent` (and,
    // the same, the stack's URN as the alias's parent).
    moves(
        thing(T, "x", At::Stack),
        thing(T, "x", At::A).aliased(spec(|s| s.parent = AliasParent::None)),
        &format!("urn:pulumi:test::proj::{COMP_A}${T}::x"),
    )
    .await;
    let stack = parse("urn:pulumi:test::proj::pulumi:pulumi:Stack::proj-test");
    moves(
        thing(T, "x", At::Stack),
        thing(T, "x", At::B).aliased(spec(|s| s.parent = AliasParent::Urn(stack))),
        &format!("urn:pulumi:test::proj::{COMP_B}${T}::x"),
    )
    .await;
}

/// Deploys `before` as stack `old_stack` of project `old_project`, then
/// `after` as stack `test` of project `proj`.
async fn moves_across(old_stack: &str, old_project: &str, alias: Alias) {
    let (mut w, cloud) = world(provider());
    w.options = DeploymentOptions::new(old_stack, old_project);
    expect_ok(&w.up(&prog(thing(T, "x", At::A))).await);
    let old = the_thing(&w);
    w.options = DeploymentOptions::new("test", "proj");
    let r = w.up(&prog(thing(T, "x", At::A).aliased(alias))).await;
    found(
        &w,
        &cloud,
        &r,
        &old,
        &format!("urn:pulumi:test::proj::{COMP_A}${T}::x"),
    );
}

#[tokio::test]
async fn a_stack_alias_finds_the_old_resource() {
    // The old URN names the old stack; the parent's type is the current
    // parent's (an unset part is as now).
    let alias = spec(|s| s.stack = Some("old".to_owned()));
    moves_across("old", "proj", alias).await;
}

#[tokio::test]
async fn a_project_alias_finds_the_old_resource() {
    let alias = spec(|s| s.project = Some("oldproj".to_owned()));
    moves_across("test", "oldproj", alias).await;
}

#[tokio::test]
async fn a_name_type_and_parent_alias_finds_the_old_resource() {
    moves(
        thing(T, "x", At::A),
        thing(T2, "y", At::B).aliased(spec(|s| {
            s.name = Some("x".to_owned());
            s.type_token = Some(T.to_owned());
            s.parent = AliasParent::Urn(comp_a());
        })),
        &format!("urn:pulumi:test::proj::{COMP_B}${T2}::y"),
    )
    .await;
}

#[tokio::test]
async fn an_alias_parent_that_was_itself_renamed_is_taken_under_its_old_urn() {
    // Component `a` is retyped (found through its own alias) and the
    // resource moves from it to `b`, naming `a` as it is now — the parent
    // object, as programs do — in its alias: its old URN is under `a`'s
    // old URN.
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&prog(thing(T, "x", At::A))).await);
    let old = the_thing(&w);
    let a_now = parse("urn:pulumi:test::proj::my:index:Place::a");
    let moved = thing(T, "x", At::B).aliased(spec(|s| s.parent = AliasParent::Urn(a_now)));
    let r = w.up(&program_with(moved, "my:index:Place")).await;
    found(
        &w,
        &cloud,
        &r,
        &old,
        &format!("urn:pulumi:test::proj::{COMP_B}${T}::x"),
    );
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
}

#[tokio::test]
async fn an_alias_that_matches_nothing_is_a_new_resource() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&prog(thing(T, "x", At::Stack))).await);
    let ghost = parse(&format!("urn:pulumi:test::proj::{T}::ghost"));
    let r = w
        .up(&prog(
            thing(T, "y", At::Stack)
                .aliased(ghost)
                .aliased(spec(|s| s.name = Some("nobody".to_owned()))),
        ))
        .await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "y"), vec![StepOp::Create]);
    assert_eq!(ops_of(&r, "x"), vec![StepOp::Delete]);
    assert_eq!(cloud.counts().creates, 2);
    assert_eq!(cloud.counts().deletes, 1);
    assert_eq!(
        the_thing(&w).urn.as_str(),
        format!("urn:pulumi:test::proj::{T}::y")
    );
}

/// A component becomes a custom resource of another type, with an alias
/// naming the component's type: the old state is found under the alias
/// and carried over — the custom resource is created in its place and
/// the component's state goes, without any provider `Delete` (a component
/// has no object and no provider, even when its type's package has one).
/// Deleting a component alone calls no `Delete` either.
#[tokio::test]
async fn an_alias_carries_a_component_over_to_a_custom_resource() {
    let deleted = log();
    let seen = deleted.clone();
    let cloud = MockCloud::new();
    let c = cloud.clone();
    let (mut w, _) = world(
        MockProvider::new("pkg")
            .with_cloud(cloud.clone())
            .on_delete(move |req| {
                c.remove(&req.id)?;
                seen.lock().unwrap().push(req.urn.to_string());
                Ok(())
            }),
    );
    let as_component = program(|m| async move {
        let stack = register_stack(&m).await?;
        let c = reg(&m, &stack, component("pkg:index:Widget", "res")).await?;
        let mut child = component("pkg:index:Part", "part");
        child.parent = Some(c.urn);
        m.register_resource(child)
            .await
            .map_err(|e| e.to_string())?;
        Ok(())
    });
    expect_ok(&w.up(&as_component).await);
    let as_custom = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut g = custom(T, "res", inputs(&[("v", "1")]));
        g.options.aliases = vec![spec(|s| s.type_token = Some("pkg:index:Widget".to_owned()))];
        reg(&m, &stack, g).await?;
        Ok(())
    });
    let r = w.up(&as_custom).await;
    expect_ok(&r);
    assert_eq!(entries(&deleted), Vec::<String>::new());
    assert_eq!(cloud.len(), 1);
    let res = w.resource("res").expect("the custom resource is recorded");
    assert!(res.custom && res.id.is_some(), "{res:?}");
    assert_eq!(res.urn.type_token(), T);
    assert!(w.resource("part").is_none());
    assert_eq!(w.snapshot.resources.len(), 3, "{:?}", w.snapshot.resources);

    // And back: the custom resource is deleted (by its provider), the
    // component created; destroying the component deletes nothing.
    let r = w.up(&as_component).await;
    expect_ok(&r);
    assert_eq!(entries(&deleted).len(), 1, "{:?}", entries(&deleted));
    assert!(entries(&deleted)[0].ends_with("pkg:index:Thing::res"));
    assert!(cloud.is_empty());
    expect_ok(&w.destroy().await);
    assert_eq!(entries(&deleted).len(), 1, "{:?}", entries(&deleted));
}

/// The stack, component `b`, and component `c` (inputs `v: 1`) under the
/// stack or, with a parent alias naming the stack, under `b`.
fn component_program(under_b: bool) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let b = reg(&m, &stack, component(COMP_B, "b")).await?;
        let mut c = component(COMP_A, "c");
        c.inputs = inputs(&[("v", "1")]);
        if under_b {
            c.parent = Some(b.urn);
            c.options.aliases = vec![spec(|s| s.parent = AliasParent::Urn(stack.clone()))];
        }
        reg(&m, &stack, c).await?;
        Ok(())
    })
}

#[tokio::test]
async fn a_component_moved_under_another_through_an_alias_is_the_same() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&component_program(false)).await);
    let r = w.up(&component_program(true)).await;
    expect_ok(&r);
    // Its inputs did not change: nothing to update, as for a custom
    // resource; the new parent is recorded all the same.
    assert_eq!(ops_of(&r, "c"), vec![StepOp::Same], "{:?}", all_ops(&r));
    let c = w
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.name() == "c")
        .unwrap();
    assert_eq!(c.parent.as_ref().map(|p| p.name()), Some("b"));
    assert!(
        c.urn.as_str().contains(&format!("{COMP_B}${COMP_A}::c")),
        "{}",
        c.urn
    );
}

/// An alias one slip away from the URN of a resource of its type that the
/// operation deletes finds nothing, and the resource is created anew: the
/// new resource is warned about, naming both, in the preview and the
/// update. An alias far from anything deleted gets no warning.
#[tokio::test]
async fn an_alias_one_slip_from_a_deleted_urn_is_warned_about() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&prog(thing(T, "database", At::Stack))).await);
    let typo = parse(&format!("urn:pulumi:test::proj::{T}::databsae"));
    let renamed = prog(thing(T, "db", At::Stack).aliased(typo.clone()));
    for preview in [true, false] {
        let (sink, mut rx) = EventSink::channel();
        w.events = sink;
        let r = if preview {
            w.preview(&renamed).await
        } else {
            w.up(&renamed).await
        };
        expect_ok(&r);
        assert_eq!(ops_of(&r, "db"), vec![StepOp::Create], "{:?}", all_ops(&r));
        let warnings = diagnostics(&mut rx, Severity::Warning);
        assert_eq!(
            warnings,
            [format!(
                "its alias {typo} names no resource of the stack, so it is created anew while \
                 urn:pulumi:test::proj::{T}::database, of the same type, is deleted: if the \
                 alias meant that resource, correct it"
            )],
            "preview: {preview}"
        );
    }

    // Far from what is deleted: no hint.
    expect_ok(&w.up(&prog(thing(T, "cache", At::Stack))).await);
    let far = parse(&format!("urn:pulumi:test::proj::{T}::somethingelse"));
    let (sink, mut rx) = EventSink::channel();
    w.events = sink;
    let r = w
        .preview(&prog(thing(T, "queue", At::Stack).aliased(far)))
        .await;
    expect_ok(&r);
    assert!(diagnostics(&mut rx, Severity::Warning).is_empty());
}

/// `n` resources of type `T` named `{prefix}{i}`, each aliased by
/// `alias(i)` when that gives one.
fn many(prefix: &'static str, n: usize, alias: fn(usize) -> Option<Urn>) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        for i in 0..n {
            let mut goal = custom(T, &format!("{prefix}{i:03}"), inputs(&[("v", "1")]));
            goal.options.aliases = alias(i).into_iter().map(Alias::from).collect();
            reg(&m, &stack, goal).await?;
        }
        Ok(())
    })
}

/// A refactor that deletes many resources of one type and creates as many
/// new ones, each with an alias naming nothing, still names the one alias
/// that is a slip, and only that one.
#[tokio::test]
async fn among_many_creates_beside_deletes_the_slipped_alias_is_named() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&many("server-", 150, |_| None)).await);
    let renamed = many("node-", 150, |i| {
        let old = if i == 77 {
            "sevrer-077".to_owned()
        } else {
            format!("old-unrelated-host-{i:03}")
        };
        Some(parse(&format!("urn:pulumi:test::proj::{T}::{old}")))
    });
    let (sink, mut rx) = EventSink::channel();
    w.events = sink;
    let r = w.preview(&renamed).await;
    expect_ok(&r);
    let warnings = diagnostics(&mut rx, Severity::Warning);
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].contains("::sevrer-077 names no resource")
            && warnings[0].contains("::server-077, of the same type"),
        "{}",
        warnings[0]
    );
}

//! `--target`, `--exclude`, `--replace` by URN pattern (`*` within a URN
//! part, `**` across parts) and `--target-dependents` /
//! `--exclude-dependents`.

use converge_engine::{EngineError, StepOp};
use converge_model::UrnPattern;
use converge_testkit::{custom, program, register_stack, TestProgram};

use super::*;

fn pattern(p: &str) -> UrnPattern {
    UrnPattern::parse(p).unwrap()
}

/// `web-a`, `web-b` and `db`, all with input `v`.
fn three(v: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        for name in ["web-a", "web-b", "db"] {
            reg(&m, &stack, custom(T, name, inputs(&[("v", v)]))).await?;
        }
        Ok(())
    })
}

/// `a`; `b` depends on `a`; `c` has a property depending on `b`; `e` is a
/// child of `a`; `f` is deleted with `a`; `x` depends on nothing.
fn graph(v: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let a = reg(&m, &stack, custom(T, "a", inputs(&[("v", v)])))
            .await?
            .urn;
        let mut b = custom(T, "b", inputs(&[("v", v)]));
        b.dependencies = vec![a.clone()];
        let b = reg(&m, &stack, b).await?.urn;
        let mut c = custom(T, "c", inputs(&[("v", v)]));
        c.property_dependencies.insert("v".to_owned(), vec![b]);
        reg(&m, &stack, c).await?;
        let mut e = custom(T, "e", inputs(&[("v", v)]));
        e.parent = Some(a.clone());
        reg(&m, &stack, e).await?;
        let mut f = custom(T, "f", inputs(&[("v", v)]));
        f.options.deleted_with = Some(a);
        reg(&m, &stack, f).await?;
        reg(&m, &stack, custom(T, "x", inputs(&[("v", v)]))).await?;
        Ok(())
    })
}

fn changed(r: &OperationResult, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| ops_of(r, n) != vec![StepOp::Same])
        .map(|n| (*n).to_owned())
        .collect()
}

#[tokio::test]
async fn a_star_matches_within_one_urn_part() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&three("1")).await);
    w.options.targets = Some(vec![pattern("urn:pulumi:test::*::pkg:index:Thing::web-*")]);
    let r = w.up(&three("2")).await;
    expect_ok(&r);
    assert_eq!(
        changed(&r, &["web-a", "web-b", "db"]),
        vec!["web-a", "web-b"]
    );
    assert_eq!(w.resource("db").unwrap().inputs.get("v"), Some(&s("1")));

    // `*` does not reach across `::`: this matches nothing, which is an
    // error that names the pattern, and nothing changes.
    w.options.targets = Some(vec![pattern("urn:pulumi:test::*::web-a")]);
    let r = w.up(&three("3")).await;
    let err = r.error.clone().expect("an unmatched pattern fails");
    assert!(
        matches!(err, EngineError::NoResourceMatches { .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("no resource matching 'urn:pulumi:test::*::web-a'"),
        "{text}"
    );
    assert!(text.contains("converge stack export"), "{text}");
    assert!(changed(&r, &["web-a", "web-b", "db"]).is_empty());
}

#[tokio::test]
async fn a_double_star_matches_across_parts() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&three("1")).await);
    w.options.targets = Some(vec![pattern("**web**")]);
    let r = w.up(&three("2")).await;
    expect_ok(&r);
    assert_eq!(
        changed(&r, &["web-a", "web-b", "db"]),
        vec!["web-a", "web-b"]
    );

    w.options.targets = None;
    w.options.excludes = vec![pattern("**::db")];
    let r = w.up(&three("3")).await;
    expect_ok(&r);
    assert_eq!(
        changed(&r, &["web-a", "web-b", "db"]),
        vec!["web-a", "web-b"]
    );
}

#[tokio::test]
async fn an_unknown_urn_is_an_error_naming_it() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&three("1")).await);
    w.options.excludes = vec![pattern("urn:pulumi:test::proj::pkg:index:Thing::ghost")];
    let r = w.up(&three("2")).await;
    let text = r.error.expect("an unknown URN fails").to_string();
    assert!(
        text.contains("no resource named 'urn:pulumi:test::proj::pkg:index:Thing::ghost'"),
        "{text}"
    );
    assert!(text.contains("--exclude"), "{text}");
    // Refresh and destroy check against the stack's resources.
    w.options.excludes = vec![];
    w.options.targets = Some(vec![pattern("**ghost**")]);
    assert!(w.refresh().await.error.is_some());
    assert!(w.destroy().await.error.is_some());
    assert_eq!(w.snapshot.resources.len(), 5); // stack, provider, three
}

#[tokio::test]
async fn a_pattern_may_name_a_resource_the_program_creates() {
    let (mut w, _cloud) = world(provider());
    let db = program(|m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "db", inputs(&[("v", "1")]))).await?;
        Ok(())
    });
    expect_ok(&w.up(&db).await);
    w.options.targets = Some(vec![pattern("**web**")]);
    let r = w.up(&three("1")).await;
    expect_ok(&r);
    assert!(w.resource("web-a").is_some());
    assert_eq!(ops_of(&r, "db"), vec![StepOp::Same]);
}

/// As Pulumi's engine does, the stack resource is always targeted: a
/// targeted update of a new stack creates it (and the default provider
/// its targets need), and nothing else.
#[tokio::test]
async fn a_targeted_update_of_a_new_stack_creates_the_stack_resource() {
    let (mut w, _cloud) = world(provider());
    w.options.targets = Some(vec![pattern("**web-a")]);
    let r = w.up(&three("1")).await;
    expect_ok(&r);
    assert!(w.resource("web-a").is_some());
    assert!(w.resource("web-b").is_none() && w.resource("db").is_none());
    assert!(w
        .snapshot
        .resources
        .iter()
        .any(|r| r.type_token == "pulumi:pulumi:Stack"));
    // What depends on a resource left out is left out too; a target that
    // depends on one is an error naming both.
    let (mut w, _cloud) = world(provider());
    w.options.targets = Some(vec![pattern("**::x")]);
    expect_ok(&w.up(&graph("1")).await);
    assert!(w.resource("x").is_some() && w.resource("b").is_none());
    w.options.targets = Some(vec![pattern("**::b")]);
    let err = w.up(&graph("1")).await.error.unwrap().to_string();
    assert!(
        err.contains("Thing::b depends on")
            && err.contains("Thing::a, which does not exist and is not targeted"),
        "{err}"
    );
    w.options.target_dependents = true;
    w.options.targets = Some(vec![pattern("**::a")]);
    expect_ok(&w.up(&graph("1")).await);
    assert!(w.resource("c").is_some() && w.resource("e").is_some());
    // An excluded stack resource is still excluded.
    let (mut w, _cloud) = world(provider());
    w.options.excludes = vec![pattern("**pulumi:pulumi:Stack**")];
    assert!(w.up(&three("1")).await.error.is_some());
}

#[tokio::test]
async fn target_dependents_follows_every_kind_of_dependency() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&graph("1")).await);
    let names = ["a", "b", "c", "e", "f", "x"];
    let a = w.resource("a").unwrap().urn.clone();

    w.options.targets = Some(vec![a.clone().into()]);
    let r = w.up(&graph("2")).await;
    expect_ok(&r);
    assert_eq!(changed(&r, &names), vec!["a"]);

    w.options.target_dependents = true;
    let r = w.up(&graph("3")).await;
    expect_ok(&r);
    assert_eq!(changed(&r, &names), vec!["a", "b", "c", "e", "f"]);
}

#[tokio::test]
async fn exclude_dependents_keeps_what_depends_on_an_excluded_resource() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&graph("1")).await);
    let names = ["a", "b", "c", "e", "f", "x"];
    w.options.excludes = vec![pattern("**::a")];
    let r = w.up(&graph("2")).await;
    expect_ok(&r);
    assert_eq!(changed(&r, &names), vec!["b", "c", "e", "f", "x"]);

    w.options.exclude_dependents = true;
    let r = w.up(&graph("3")).await;
    expect_ok(&r);
    assert_eq!(changed(&r, &names), vec!["x"]);
}

#[tokio::test]
async fn destroy_with_target_dependents_deletes_the_dependents_from_the_state() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&graph("1")).await);
    // Without dependents, `a` cannot go: `b` depends on it.
    w.options.targets = Some(vec![pattern("**::a")]);
    let r = w.destroy().await;
    assert!(
        matches!(r.error, Some(EngineError::DependentNotTargeted { .. })),
        "{:?}",
        r.error
    );
    w.options.target_dependents = true;
    // `f` goes with `a` (no delete call); the mock cloud does not cascade.
    let f_id = w.resource("f").unwrap().id.clone().unwrap();
    w.outside.push(f_id);
    expect_ok(&w.destroy().await);
    for gone in ["a", "b", "c", "e", "f"] {
        assert!(w.resource(gone).is_none(), "{gone} is still there");
    }
    assert!(w.resource("x").is_some());
    assert_eq!(cloud.len(), 2);
}

#[tokio::test]
async fn replace_and_target_replace_by_pattern() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&three("1")).await);
    w.options.replace = vec![pattern("**web-*")];
    let r = w.up(&three("1")).await;
    expect_ok(&r);
    for name in ["web-a", "web-b"] {
        assert_eq!(
            ops_of(&r, name),
            vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
        );
    }
    assert_eq!(ops_of(&r, "db"), vec![StepOp::Same]);

    // `--target-replace`: the pattern is both a target and a replacement,
    // so the other resources' changes wait.
    w.options.targets = Some(vec![pattern("**web-a")]);
    w.options.replace = vec![pattern("**web-a")];
    let r = w.up(&three("2")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "web-a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_eq!(ops_of(&r, "web-b"), vec![StepOp::Same]);
    assert_eq!(ops_of(&r, "db"), vec![StepOp::Same]);

    // `--target` with `--replace` of an untargeted resource: it stays.
    w.options.targets = Some(vec![pattern("**web-a")]);
    w.options.replace = vec![pattern("**::db")];
    let r = w.up(&three("2")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "db"), vec![StepOp::Same]);
    assert_eq!(ops_of(&r, "web-a"), vec![StepOp::Same]);
}

/// A new resource left out of `--target` is not created, but the program
/// gets its inputs as its outputs (no ID), as Pulumi's engine answers a
/// skipped create — the checked inputs, with the provider's defaults — so
/// that code reading them goes on; the resource is then created by the
/// next untargeted update.
#[tokio::test]
async fn a_skipped_create_answers_its_inputs_as_outputs() {
    let (mut w, cloud) = world(provider().on_check(|req| {
        let mut inputs = req.news;
        inputs.entry("w".to_owned()).or_insert_with(|| s("default"));
        Ok(converge_plugin::CheckResponse {
            inputs,
            failures: vec![],
        })
    }));
    expect_ok(&w.up(&three("1")).await);
    let seen = log();
    let answers = seen.clone();
    let with_new = program(move |m| {
        let answers = answers.clone();
        async move {
            let stack = register_stack(&m).await?;
            for name in ["web-a", "web-b", "db"] {
                reg(&m, &stack, custom(T, name, inputs(&[("v", "1")]))).await?;
            }
            let fresh = reg(&m, &stack, custom(T, "fresh", inputs(&[("v", "n")]))).await?;
            answers
                .lock()
                .unwrap()
                .push(format!("{:?} {:?}", fresh.id, fresh.outputs));
            Ok(())
        }
    });
    w.options.targets = Some(vec![pattern("**::db")]);
    let r = w.up(&with_new).await;
    expect_ok(&r);
    assert_eq!(
        entries(&seen),
        vec![format!(
            "None {:?}",
            inputs(&[("v", "n"), ("w", "default")])
        )]
    );
    assert!(
        w.resource("fresh").is_none(),
        "a skipped create records nothing"
    );
    assert_eq!(cloud.len(), 3);

    w.options.targets = None;
    let r = w.up(&with_new).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "fresh"), vec![StepOp::Create]);
    assert!(
        entries(&seen)[1].starts_with("Some("),
        "{:?}",
        entries(&seen)
    );
}

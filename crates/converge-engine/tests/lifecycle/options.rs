//! Aliases, ignoreChanges, targets and excludes, replaceOnChanges,
//! additionalSecretOutputs.

use converge_engine::StepOp;
use converge_model::{PropertyValue, Urn};
use converge_testkit::{custom, program, register_stack, TestProgram};

use super::*;

fn named(name: &'static str, aliases: Vec<&'static str>, v: &'static str) -> TestProgram {
    program(move |m| {
        let aliases = aliases.clone();
        async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, name, inputs(&[("v", v)]));
            g.options.aliases = aliases
                .iter()
                .map(|a| Urn::parse(a).unwrap().into())
                .collect();
            reg(&m, &stack, g).await?;
            Ok(())
        }
    })
}

#[tokio::test]
async fn aliases_carry_state_to_a_new_name() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&named("old", vec![], "1")).await);
    let r = w
        .up(&named(
            "new",
            vec!["urn:pulumi:test::proj::pkg:index:Thing::old"],
            "1",
        ))
        .await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "new"), vec![StepOp::Same]);
    assert!(ops_of(&r, "old").is_empty());
    assert_eq!(cloud.counts().creates, 1);
    assert_eq!(cloud.counts().deletes, 0);
    assert!(w.resource("old").is_none());
    assert!(w.resource("new").is_some());
}

#[tokio::test]
async fn aliases_matching_two_resources_are_an_error() {
    let (mut w, _cloud) = world(provider());
    let two = program(|m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "x", inputs(&[]))).await?;
        reg(&m, &stack, custom(T, "y", inputs(&[]))).await?;
        Ok(())
    });
    expect_ok(&w.up(&two).await);
    let r = w
        .up(&named(
            "z",
            vec![
                "urn:pulumi:test::proj::pkg:index:Thing::x",
                "urn:pulumi:test::proj::pkg:index:Thing::y",
            ],
            "1",
        ))
        .await;
    assert!(r.error.unwrap().to_string().contains("aliases"));
}

#[tokio::test]
async fn ignore_changes_keeps_old_values() {
    let (mut w, cloud) = world(provider());
    let p = |v: &'static str, w2: &'static str| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "a", inputs(&[("v", v), ("w", w2)]));
            g.options.ignore_changes = vec!["v".to_owned()];
            reg(&m, &stack, g).await?;
            Ok(())
        })
    };
    expect_ok(&w.up(&p("1", "1")).await);
    let r = w.up(&p("2", "1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    let r = w.up(&p("3", "2")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(cloud.objects()[0].properties.get("v"), Some(&s("1")));
    assert_eq!(cloud.objects()[0].properties.get("w"), Some(&s("2")));
}

fn two(va: &'static str, vb: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("v", va)]))).await?;
        reg(&m, &stack, custom(T, "b", inputs(&[("v", vb)]))).await?;
        Ok(())
    })
}

#[tokio::test]
async fn targets_and_excludes_limit_what_changes() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&two("1", "1")).await);
    let a = w.resource("a").unwrap().urn.clone();
    let b = w.resource("b").unwrap().urn.clone();

    w.options.targets = Some(vec![a.clone().into()]);
    let r = w.up(&two("2", "2")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Same]);
    assert_eq!(w.resource("b").unwrap().inputs.get("v"), Some(&s("1")));

    w.options.targets = None;
    w.options.excludes = vec![b.clone().into()];
    let r = w.up(&two("3", "3")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    assert_eq!(ops_of(&r, "b"), vec![StepOp::Same]);

    // An untargeted resource missing from the program is not deleted.
    w.options.excludes = vec![];
    w.options.targets = Some(vec![a.clone().into()]);
    let only_a = program(|m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("v", "3")]))).await?;
        Ok(())
    });
    expect_ok(&w.up(&only_a).await);
    assert!(w.resource("b").is_some());
    assert_eq!(cloud.len(), 2);
}

#[tokio::test]
async fn replace_on_changes_forces_replacement() {
    let (mut w, cloud) = world(provider());
    let p = |v: &'static str| {
        program(move |m| async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "a", inputs(&[("v", v)]));
            g.options.replace_on_changes = vec!["v".to_owned()];
            reg(&m, &stack, g).await?;
            Ok(())
        })
    };
    expect_ok(&w.up(&p("1")).await);
    let r = w.up(&p("2")).await;
    expect_ok(&r);
    assert_eq!(
        ops_of(&r, "a"),
        vec![StepOp::CreateReplacement, StepOp::DeleteReplaced]
    );
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn secret_inputs_and_additional_secret_outputs_make_secret_outputs() {
    let (mut w, _cloud) = world(provider());
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut g = custom(
            T,
            "a",
            [
                ("password".to_owned(), PropertyValue::secret(s("hunter2"))),
                ("name".to_owned(), s("n")),
                ("token".to_owned(), s("t")),
            ]
            .into_iter()
            .collect(),
        );
        g.options.additional_secret_outputs = vec!["token".to_owned()];
        reg(&m, &stack, g).await?;
        Ok(())
    });
    expect_ok(&w.up(&p).await);
    let a = w.resource("a").unwrap();
    assert!(matches!(
        a.outputs.get("password"),
        Some(PropertyValue::Secret(_))
    ));
    assert!(matches!(
        a.outputs.get("token"),
        Some(PropertyValue::Secret(_))
    ));
    assert_eq!(a.outputs.get("name"), Some(&s("n")));
}

//! An output-form invoke's declared dependencies (`dependsOn`): it runs
//! once they exist. In a preview, a resource still to be created — or one
//! under a component the invoke depends on — makes the invoke's result
//! unknown; once created (an update, or a later preview), it runs. A URN
//! the program never registered is an error.

use converge_testkit::{component, custom, program, register_stack, TestProgram};

use super::*;

/// Registers a component `c` with a child `t`, then asks whether invokes
/// depending on each (and on a URN never registered) may run; the answers
/// go to `log`.
fn asking(log: Log) -> TestProgram {
    program(move |m| {
        let log = log.clone();
        async move {
            let stack = register_stack(&m).await?;
            let c = reg(&m, &stack, component("my:index:Comp", "c")).await?;
            let mut child = custom(T, "t", inputs(&[("a", "1")]));
            child.parent = Some(c.urn.clone());
            let t = reg(&m, &stack, child).await?;
            for (what, urn) in [("component", &c.urn), ("child", &t.urn)] {
                let answer = m
                    .invoke_readiness(std::slice::from_ref(urn))
                    .await
                    .map_err(|e| e.to_string())?;
                log.lock().unwrap().push(format!("{what}: {answer:?}"));
            }
            let never = Urn::parse("urn:pulumi:test::proj::pkg:index:Thing::never").unwrap();
            let err = m.invoke_readiness(&[never]).await.unwrap_err();
            log.lock().unwrap().push(err.to_string());
            Ok(())
        }
    })
}

#[tokio::test]
async fn invokes_wait_for_their_dependencies_to_exist() {
    let (mut w, _) = world(provider());
    let seen = log();
    let never = "the invoke depends on urn:pulumi:test::proj::pkg:index:Thing::never, \
                 which this program has not registered: name only resources the program \
                 created as an invoke's dependencies";

    // A preview of a new stack: nothing exists yet, directly or under the
    // component.
    expect_ok(&w.preview(&asking(seen.clone())).await);
    assert_eq!(
        entries(&seen),
        vec!["component: Pending", "child: Pending", never]
    );
    seen.lock().unwrap().clear();

    // The update creates them before answering.
    expect_ok(&w.up(&asking(seen.clone())).await);
    assert_eq!(
        entries(&seen),
        vec!["component: Ready", "child: Ready", never]
    );
    seen.lock().unwrap().clear();

    // Once they exist, a preview runs the invoke.
    expect_ok(&w.preview(&asking(seen.clone())).await);
    assert_eq!(
        entries(&seen),
        vec!["component: Ready", "child: Ready", never]
    );
}

/// A dependency whose registration failed never exists: with
/// `--continue-on-error` the program goes on, and an invoke depending on
/// it is pending (its result unknown) rather than waiting for ever.
#[tokio::test]
async fn a_failed_dependency_leaves_the_invoke_pending() {
    let (mut w, cloud) = world(provider());
    cloud.fail_when(|op, urn| op == converge_testkit::CloudOp::Create && urn.name() == "a");
    w.options.continue_on_error = true;
    let seen = log();
    let asked = seen.clone();
    let p = program(move |m| {
        let asked = asked.clone();
        async move {
            let stack = register_stack(&m).await?;
            let a = reg(&m, &stack, custom(T, "a", inputs(&[("v", "a")]))).await;
            assert!(a.is_err());
            let failed = Urn::parse(&format!("urn:pulumi:test::proj::{T}::a")).unwrap();
            let answer = m
                .invoke_readiness(&[failed])
                .await
                .map_err(|e| e.to_string())?;
            asked.lock().unwrap().push(format!("{answer:?}"));
            Ok(())
        }
    });
    let r = w.up(&p).await;
    assert!(r.error.is_some(), "the create of a failed");
    assert_eq!(entries(&seen), vec!["Pending"]);
}

//! `--continue-on-error`: a failed step fails only its resource. What the
//! program registers afterwards proceeds, what is independent of the
//! failure is still created, what depends on a failed resource is
//! skipped (naming it), and the operation ends with an error naming each
//! failure.

use converge_engine::EngineError;
use converge_model::Urn;
use converge_testkit::{custom, program, register_stack, CloudOp};

use super::*;

fn urn(name: &str) -> Urn {
    Urn::parse(&format!("urn:pulumi:test::proj::{T}::{name}")).unwrap()
}

#[tokio::test]
async fn a_failure_fails_its_resource_and_skips_its_dependents_only() {
    let (mut w, cloud) = world(provider());
    cloud.fail_when(|op, urn| op == CloudOp::Create && urn.name() == "a");
    w.options.continue_on_error = true;
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let a = reg(&m, &stack, custom(T, "a", inputs(&[("v", "a")]))).await;
        assert!(a.is_err());
        // Registered after the failure: independent ones proceed.
        reg(&m, &stack, custom(T, "b", inputs(&[("v", "b")]))).await?;
        let mut c = custom(T, "c", inputs(&[("v", "c")]));
        c.dependencies = vec![urn("a")];
        let skipped = reg(&m, &stack, c).await.unwrap_err();
        assert!(skipped.contains("which failed"), "{skipped}");
        // What depends on a skipped resource is skipped too.
        let mut d = custom(T, "d", inputs(&[("v", "d")]));
        d.dependencies = vec![urn("c")];
        assert!(reg(&m, &stack, d).await.is_err());
        Ok(())
    });
    let r = w.up(&p).await;
    assert!(w.resource("b").is_some());
    for name in ["a", "c", "d"] {
        assert!(w.resource(name).is_none(), "{name}");
    }
    assert_eq!(cloud.objects().len(), 1);
    match r.error {
        Some(EngineError::Failures(failures)) => {
            let names: Vec<String> = failures
                .iter()
                .map(|f| f.urn().unwrap().name().to_owned())
                .collect();
            assert_eq!(names, ["a", "c", "d"]);
            assert!(matches!(failures[0], EngineError::Step { .. }));
            assert!(matches!(
                &failures[1],
                EngineError::DependencyFailed { dependency, .. } if dependency.name() == "a"
            ));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn without_continue_on_error_a_failure_stops_what_comes_after() {
    let (mut w, cloud) = world(provider());
    cloud.fail_when(|op, urn| op == CloudOp::Create && urn.name() == "a");
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        assert!(reg(&m, &stack, custom(T, "a", inputs(&[]))).await.is_err());
        let b = reg(&m, &stack, custom(T, "b", inputs(&[]))).await;
        assert!(b.unwrap_err().contains("an earlier step failed"));
        Ok(())
    });
    let r = w.up(&p).await;
    assert!(matches!(r.error, Some(EngineError::Step { .. })));
    assert!(cloud.objects().is_empty());
}

//! Deletions: reverse dependency order, protect, retainOnDelete,
//! deletedWith.

use converge_engine::StepOp;
use converge_testkit::{component, custom, program, register_stack, MockProvider, TestProgram};

use super::*;

fn logging_deletes(events: Log) -> MockProvider {
    let cloud = MockCloud::new();
    let c = cloud.clone();
    MockProvider::new("pkg")
        .with_cloud(cloud)
        .on_delete(move |req| {
            c.remove(&req.id)?;
            events.lock().unwrap().push(req.urn.name().to_owned());
            Ok(())
        })
}

/// a ← b ← c (each depends on the previous), plus an independent x.
fn chain() -> TestProgram {
    program(|m| async move {
        let stack = register_stack(&m).await?;
        let a = reg(&m, &stack, custom(T, "a", inputs(&[]))).await?;
        let mut b = custom(T, "b", inputs(&[]));
        b.dependencies = vec![a.urn.clone()];
        let b = reg(&m, &stack, b).await?;
        let mut c = custom(T, "c", inputs(&[]));
        c.property_dependencies = [("p".to_owned(), vec![b.urn.clone()])]
            .into_iter()
            .collect();
        reg(&m, &stack, c).await?;
        reg(&m, &stack, custom(T, "x", inputs(&[]))).await?;
        Ok(())
    })
}

fn just_stack() -> TestProgram {
    program(|m| async move {
        register_stack(&m).await?;
        Ok(())
    })
}

#[tokio::test]
async fn deletions_run_in_reverse_dependency_order() {
    let events = log();
    let (mut w, cloud) = world(logging_deletes(events.clone()));
    expect_ok(&w.up(&chain()).await);
    let r = w.up(&just_stack()).await;
    expect_ok(&r);
    let order = entries(&events);
    let pos = |n: &str| order.iter().position(|e| e == n).unwrap();
    assert!(pos("c") < pos("b") && pos("b") < pos("a"), "{order:?}");
    assert_eq!(order.len(), 4);
    assert!(cloud.is_empty());
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Delete]);
    // The default provider goes too, after its resources.
    assert_eq!(ops_of(&r, "default"), vec![StepOp::Delete]);
}

/// A delete's Begin names the base resource it deletes instead of copying
/// its state; stopped after the Begins, the journal still records every
/// object being deleted, whole, as pending deletion.
#[tokio::test]
async fn a_deletes_begin_names_its_base_resource() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&chain()).await);
    let base = w.snapshot.clone();
    let r = w.destroy().await;
    expect_ok(&r);
    let begins: Vec<&converge_state::journal::JournalEntry> = r
        .journal
        .iter()
        .filter(|e| e.kind == converge_state::journal::JournalEntryKind::Begin)
        .collect();
    let deleting: Vec<usize> = begins.iter().filter_map(|e| e.deleting_old).collect();
    // a, b, c, x and the provider call Delete; the stack is only forgotten.
    assert_eq!(deleting.len(), 5, "{begins:?}");
    assert!(begins.iter().all(|e| e.operation.is_none()));
    let only_begins: Vec<converge_state::journal::JournalEntry> =
        begins.iter().map(|e| (*e).clone()).collect();
    let stopped = converge_state::journal::replay(&base, &only_begins).unwrap();
    let pending: Vec<(&str, converge_state::OperationType)> = stopped
        .pending_operations
        .iter()
        .map(|p| (p.resource.urn.name(), p.kind))
        .collect();
    assert_eq!(pending.len(), 5, "{pending:?}");
    for (i, p) in deleting.iter().zip(&stopped.pending_operations) {
        assert_eq!(p.kind, converge_state::OperationType::Deleting);
        assert_eq!(p.resource, base.resources[*i], "the base resource, whole");
    }
}

#[tokio::test]
async fn protected_resources_are_not_deleted() {
    let (mut w, cloud) = world(provider());
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut g = custom(T, "keep", inputs(&[]));
        g.options.protect = true;
        reg(&m, &stack, g).await?;
        Ok(())
    });
    expect_ok(&w.up(&p).await);
    assert!(w.resource("keep").unwrap().protect);
    let r = w.up(&just_stack()).await;
    let err = r.error.unwrap().to_string();
    assert!(err.contains("protected") && err.contains("keep"), "{err}");
    assert_eq!(cloud.len(), 1);
    assert!(w.resource("keep").is_some());
    let r = w.destroy().await;
    assert!(r.error.is_some());
    assert_eq!(cloud.len(), 1);
}

#[tokio::test]
async fn retain_on_delete_forgets_without_deleting() {
    let (mut w, cloud) = world(provider());
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let mut g = custom(T, "kept", inputs(&[]));
        g.options.retain_on_delete = true;
        reg(&m, &stack, g).await?;
        Ok(())
    });
    expect_ok(&w.up(&p).await);
    let id = w.resource("kept").unwrap().id.clone().unwrap();
    w.outside.push(id.clone());
    expect_ok(&w.up(&just_stack()).await);
    assert!(w.resource("kept").is_none());
    assert!(cloud.get(&id).is_some(), "a retained object must survive");
}

#[tokio::test]
async fn deleted_with_skips_the_delete_of_what_goes_with_its_owner() {
    let events = log();
    let (mut w, cloud) = world(logging_deletes(events.clone()));
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let owner = reg(&m, &stack, custom(T, "owner", inputs(&[]))).await?;
        let mut child = custom(T, "inner", inputs(&[]));
        child.options.deleted_with = Some(owner.urn.clone());
        child.dependencies = vec![owner.urn];
        reg(&m, &stack, child).await?;
        Ok(())
    });
    expect_ok(&w.up(&p).await);
    let inner_id = w.resource("inner").unwrap().id.clone().unwrap();
    w.outside.push(inner_id.clone());
    expect_ok(&w.up(&just_stack()).await);
    assert_eq!(entries(&events), vec!["owner".to_owned()]);
    assert!(w.resource("inner").is_none());
    // The mock cloud does not cascade; a real one would have.
    assert!(cloud.get(&inner_id).is_some());
}

/// `deletedWith` a component: the component goes in the same operation,
/// so what goes with it is forgotten without a Delete, as Pulumi counts
/// every resource it deletes, components included; with a component that
/// stays, the resource is deleted as usual.
#[tokio::test]
async fn deleted_with_a_component_that_goes_skips_the_delete() {
    let events = log();
    let (mut w, cloud) = world(logging_deletes(events.clone()));
    let p = program(|m| async move {
        let stack = register_stack(&m).await?;
        let group = reg(&m, &stack, component("my:index:Group", "group")).await?;
        let mut inner = custom(T, "inner", inputs(&[]));
        inner.options.deleted_with = Some(group.urn.clone());
        reg(&m, &stack, inner).await?;
        let mut loose = custom(T, "loose", inputs(&[]));
        loose.options.deleted_with = Some(group.urn);
        reg(&m, &stack, loose).await?;
        Ok(())
    });
    expect_ok(&w.up(&p).await);
    let inner_id = w.resource("inner").unwrap().id.clone().unwrap();
    w.outside.push(inner_id.clone());
    // `loose` goes while the group stays: deleted.
    let keep_group = program(|m| async move {
        let stack = register_stack(&m).await?;
        let group = reg(&m, &stack, component("my:index:Group", "group")).await?;
        let mut inner = custom(T, "inner", inputs(&[]));
        inner.options.deleted_with = Some(group.urn);
        reg(&m, &stack, inner).await?;
        Ok(())
    });
    expect_ok(&w.up(&keep_group).await);
    assert_eq!(entries(&events), vec!["loose".to_owned()]);
    // The group goes: `inner` goes with it, without a Delete.
    expect_ok(&w.up(&just_stack()).await);
    assert_eq!(entries(&events), vec!["loose".to_owned()]);
    assert!(w.resource("inner").is_none() && w.resource("group").is_none());
    assert!(cloud.get(&inner_id).is_some());
}

#[tokio::test]
async fn a_failed_delete_keeps_its_dependencies() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&chain()).await);
    cloud.fail_when(|op, urn| op == converge_testkit::CloudOp::Delete && urn.name() == "c");
    let r = w.up(&just_stack()).await;
    assert!(r.error.is_some());
    // c failed, so b and a (which c depends on) must still be there.
    assert!(w.resource("c").is_some());
    assert!(w.resource("b").is_some());
    assert!(w.resource("a").is_some());
    cloud.heal();
    expect_ok(&w.up(&just_stack()).await);
    assert!(cloud.is_empty());
}

#[tokio::test]
async fn what_a_resource_that_stays_depends_on_stays_through_a_chain() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&chain()).await);
    // Only `c` is declared now, and its update fails: its old state stays,
    // and with it `b` (which it depends on) and then `a` (which `b`
    // depends on, found once `b` is held). `x` goes.
    cloud.fail_when(|op, urn| op == converge_testkit::CloudOp::Update && urn.name() == "c");
    let only_c = program(|m| async move {
        let stack = register_stack(&m).await?;
        let failed = reg(&m, &stack, custom(T, "c", inputs(&[("v", "2")]))).await;
        assert!(failed.is_err());
        Ok(())
    });
    w.options.continue_on_error = true;
    let r = w.up(&only_c).await;
    assert!(r.error.is_some());
    for kept in ["a", "b", "c"] {
        assert!(w.resource(kept).is_some(), "{kept} was removed");
        assert!(
            ops_of(&r, kept).iter().all(|op| *op != StepOp::Delete),
            "{kept}"
        );
    }
    assert!(w.resource("x").is_none());
    assert_eq!(ops_of(&r, "x"), vec![StepOp::Delete]);
    assert_eq!(cloud.counts().deletes, 1);
    assert_eq!(cloud.len(), 3);

    cloud.heal();
    w.options.continue_on_error = false;
    expect_ok(&w.up(&just_stack()).await);
    assert!(cloud.is_empty());
}

//! One hand-made snapshot per integrity rule: valid ones pass, each broken
//! one fails with a message naming the resources involved.

use converge_model::{DependencyKind, ProviderReference, ResourceState, Urn};
use converge_state::integrity::{verify, verify_all, IntegrityError};
use converge_state::{OperationType, PendingOperation, Snapshot};

fn urn(ty: &str, name: &str) -> Urn {
    Urn::new("dev", "proj", None, ty, name).unwrap()
}

fn stack() -> ResourceState {
    ResourceState::new(urn("pulumi:pulumi:Stack", "proj-dev"), false)
}

fn provider(name: &str, id: &str) -> ResourceState {
    let mut p = ResourceState::new(urn("pulumi:providers:aws", name), true);
    p.id = Some(id.to_owned());
    p
}

fn reference(p: &ResourceState) -> ProviderReference {
    ProviderReference {
        urn: p.urn.clone(),
        id: p.id.clone().unwrap(),
    }
}

/// A custom resource using provider `p`, parented by the stack.
fn custom(name: &str, p: &ResourceState) -> ResourceState {
    let mut r = ResourceState::new(urn("aws:s3:Bucket", name), true);
    r.id = Some(format!("{name}-id"));
    r.provider = Some(reference(p));
    r.parent = Some(stack().urn);
    r
}

fn component(name: &str) -> ResourceState {
    let mut c = ResourceState::new(urn("my:index:Component", name), false);
    c.parent = Some(stack().urn);
    c
}

fn snapshot(resources: Vec<ResourceState>) -> Snapshot {
    let mut s = Snapshot::empty("2024-01-01T00:00:00Z");
    s.resources = resources;
    s
}

/// Asserts the snapshot fails with exactly `message`.
#[track_caller]
fn assert_fails(resources: Vec<ResourceState>, message: &str) {
    let err = verify(&snapshot(resources)).expect_err("snapshot should be refused");
    assert_eq!(err.to_string(), message);
}

#[test]
fn a_valid_snapshot_passes() {
    let p = provider("default", "p1");
    let c = component("c");
    let mut a = custom("a", &p);
    a.parent = Some(c.urn.clone());
    let mut b = custom("b", &p);
    b.dependencies = vec![a.urn.clone(), c.urn.clone()];
    b.property_dependencies
        .insert("x".into(), vec![a.urn.clone()]);
    b.property_dependencies.insert("unused".into(), vec![]);
    b.deleted_with = Some(a.urn.clone());
    b.protect = true;
    let mut old_a = a.clone();
    old_a.delete = true;
    old_a.id = Some("old".into());
    let mut s = snapshot(vec![stack(), p, c, a, b, old_a.clone(), old_a]);
    // Pending operations reference nothing and are not checked.
    s.pending_operations.push(PendingOperation {
        resource: ResourceState::new(urn("aws:s3:Bucket", "ghost"), true),
        kind: OperationType::Creating,
    });
    assert_eq!(verify(&s), Ok(()));
    assert!(verify_all(&s).is_empty());
    assert_eq!(verify(&Snapshot::empty("now")), Ok(()));
}

#[test]
fn provider_must_be_known() {
    let p = provider("default", "p1");
    let a = custom("a", &p);
    assert_fails(
        vec![stack(), a.clone()],
        &format!(
            "resource {} refers to unknown provider {}::p1",
            a.urn, p.urn
        ),
    );
    // Same URN, other ID: a different provider instance.
    let other = provider("default", "p2");
    assert_fails(
        vec![stack(), other, a.clone()],
        &format!(
            "resource {} refers to unknown provider {}::p1",
            a.urn, p.urn
        ),
    );
}

#[test]
fn provider_must_come_first() {
    let p = provider("default", "p1");
    let a = custom("a", &p);
    assert_fails(
        vec![stack(), a.clone(), p.clone()],
        &format!("resource {}'s provider {}::p1 comes after it", a.urn, p.urn),
    );
}

#[test]
fn pending_replacement_may_outlive_its_provider() {
    // Delete-before-replace of a provider: its users, already deleted and
    // pending replacement, still name the old provider.
    let p = provider("default", "p1");
    let mut a = custom("a", &p);
    a.pending_replacement = true;
    assert_eq!(verify(&snapshot(vec![stack(), a])), Ok(()));
}

#[test]
fn a_provider_marked_for_deletion_still_serves_its_users() {
    // Create-before-delete of a provider that stopped before its users were
    // replaced: the old provider is marked, its users are not.
    let old = provider("default", "old");
    let new = provider("default", "new");
    let mut old_marked = old.clone();
    old_marked.delete = true;
    let user = custom("a", &old);
    assert_eq!(
        verify(&snapshot(vec![stack(), new, old_marked, user])),
        Ok(())
    );
}

#[test]
fn provider_reference_must_name_a_provider() {
    let bucket = custom("bucket", &provider("default", "p1"));
    let mut a = component("a");
    a.provider = Some(ProviderReference {
        urn: bucket.urn.clone(),
        id: "bucket-id".into(),
    });
    assert_fails(
        vec![stack(), a.clone()],
        &format!(
            "resource {}'s provider reference {}::bucket-id does not name a provider \
             (type pulumi:providers:<package>)",
            a.urn, bucket.urn
        ),
    );
}

#[test]
fn providers_are_custom_resources() {
    let mut p = ResourceState::new(urn("pulumi:providers:aws", "default"), false);
    p.id = None;
    assert_fails(
        vec![stack(), p.clone()],
        &format!("provider resource {} is not a custom resource", p.urn),
    );
}

#[test]
fn parent_must_come_first() {
    let c = component("c");
    let mut child = component("child");
    child.parent = Some(c.urn.clone());
    assert_fails(
        vec![stack(), child.clone(), c.clone()],
        &format!(
            "child resource {}'s parent {} comes after it",
            child.urn, c.urn
        ),
    );
    assert_fails(
        vec![stack(), child.clone()],
        &format!(
            "child resource {} refers to missing parent {}",
            child.urn, c.urn
        ),
    );
}

#[test]
fn dependencies_must_come_first() {
    let p = provider("default", "p1");
    let a = custom("a", &p);
    let mut b = custom("b", &p);
    b.dependencies = vec![a.urn.clone()];
    assert_fails(
        vec![stack(), p.clone(), b.clone(), a.clone()],
        &format!("resource {}'s dependency {} comes after it", b.urn, a.urn),
    );
    assert_fails(
        vec![stack(), p.clone(), b.clone()],
        &format!(
            "resource {}'s dependency {} refers to missing resource",
            b.urn, a.urn
        ),
    );
}

#[test]
fn property_dependencies_must_come_first() {
    let p = provider("default", "p1");
    let a = custom("a", &p);
    let mut b = custom("b", &p);
    b.property_dependencies
        .insert("bucket".into(), vec![a.urn.clone()]);
    assert_fails(
        vec![stack(), p.clone(), b.clone(), a.clone()],
        &format!(
            "resource {}'s property dependency {} (from property bucket) comes after it",
            b.urn, a.urn
        ),
    );
    assert_fails(
        vec![stack(), p.clone(), b.clone()],
        &format!(
            "resource {}'s property dependency {} (from property bucket) refers to missing resource",
            b.urn, a.urn
        ),
    );
}

#[test]
fn deleted_with_must_come_first() {
    let p = provider("default", "p1");
    let a = custom("a", &p);
    let mut b = custom("b", &p);
    b.deleted_with = Some(a.urn.clone());
    assert_fails(
        vec![stack(), p.clone(), b.clone(), a.clone()],
        &format!(
            "resource {} is specified as being deleted with {}, which comes after it",
            b.urn, a.urn
        ),
    );
    assert_fails(
        vec![stack(), p.clone(), b.clone()],
        &format!(
            "resource {} is specified as being deleted with {}, which is missing",
            b.urn, a.urn
        ),
    );
}

#[test]
fn a_resource_cannot_refer_to_itself() {
    let p = provider("default", "p1");
    let mut a = custom("a", &p);
    a.dependencies = vec![a.urn.clone()];
    let err = verify(&snapshot(vec![stack(), p, a.clone()])).unwrap_err();
    assert_eq!(
        err,
        IntegrityError::SelfReference {
            urn: a.urn.clone(),
            kind: DependencyKind::Dependency
        }
    );
    assert_eq!(
        err.to_string(),
        format!("resource {} refers to itself as its dependency", a.urn)
    );
}

#[test]
fn at_most_one_live_copy_per_urn() {
    let p = provider("default", "p1");
    let a = custom("a", &p);
    assert_fails(
        vec![stack(), p.clone(), a.clone(), a.clone()],
        &format!("duplicate resource {} (not marked for deletion)", a.urn),
    );
    let mut deleted = a.clone();
    deleted.delete = true;
    // Any number of copies marked for deletion may follow the live one…
    let ok = snapshot(vec![
        stack(),
        p.clone(),
        a.clone(),
        deleted.clone(),
        deleted.clone(),
    ]);
    assert_eq!(verify(&ok), Ok(()));
    // …or exist without one.
    assert_eq!(
        verify(&snapshot(vec![stack(), p.clone(), deleted.clone()])),
        Ok(())
    );
    // The live copy comes first (Pulumi refuses the other order).
    assert_fails(
        vec![stack(), p.clone(), deleted, a.clone()],
        &format!(
            "resource {} is not marked for deletion but comes after a copy of it that is; the \
             live copy must come first",
            a.urn
        ),
    );
}

#[test]
fn custom_resources_have_ids() {
    let p = provider("default", "p1");
    let mut a = custom("a", &p);
    a.id = None;
    assert_fails(
        vec![stack(), p.clone(), a.clone()],
        &format!("custom resource {} has no ID", a.urn),
    );
    a.id = Some(String::new());
    assert_fails(
        vec![stack(), p, a.clone()],
        &format!("custom resource {} has no ID", a.urn),
    );
}

#[test]
fn components_have_no_id() {
    let mut c = component("c");
    c.id = Some("cid".into());
    assert_fails(
        vec![stack(), c.clone()],
        &format!(
            "component resource {} has an ID (\"cid\"); only custom resources have IDs",
            c.urn
        ),
    );
}

#[test]
fn verify_all_reports_every_violation_in_order() {
    let p = provider("default", "p1");
    let mut a = custom("a", &p);
    a.id = None;
    let mut c = component("c");
    c.id = Some("x".into());
    let errors = verify_all(&snapshot(vec![a.clone(), c.clone()]));
    let urns: Vec<&Urn> = errors.iter().map(IntegrityError::urn).collect();
    assert_eq!(urns, vec![&a.urn, &a.urn, &a.urn, &c.urn, &c.urn]);
    assert!(matches!(errors[0], IntegrityError::CustomWithoutId { .. }));
    assert!(matches!(errors[1], IntegrityError::UnknownProvider { .. }));
    assert!(matches!(errors[2], IntegrityError::MissingParent { .. }));
    assert!(matches!(errors[3], IntegrityError::ComponentWithId { .. }));
    assert!(matches!(errors[4], IntegrityError::MissingParent { .. }));
    assert_eq!(verify(&snapshot(vec![a, c])), Err(errors[0].clone()));
}

//! State surgery: the edits `converge state …` makes to a snapshot without
//! touching any cloud object (Pulumi's `pulumi state` commands).
//!
//! Each edit takes exact URNs (a URN not in the snapshot is an error), works
//! on the snapshot in place only when it succeeds, and checks every
//! [`integrity`] rule on its result: an edit that would break one is refused
//! and leaves the snapshot as it was.
//!
//! - [`delete`]: forget resources, refusing a protected one (unless
//!   forced), the stack resource, and one that others depend on (unless its
//!   dependents go too).
//! - [`set_protect`]: set or clear the `protect` flag.
//! - [`set_taint`]: mark resources for replacement by the next update, or
//!   clear the mark.
//! - [`rename`]: give a resource a new name, rewriting every reference to
//!   its URN.
//! - [`move_resources`]: move resources (with their children, and the
//!   providers they use copied) from one stack's snapshot to another's.
//! - [`rename_stack`]: move every URN into a new stack (and project) name.
//! - [`repair`]: drop references to resources that are gone and put
//!   resources in order, when that makes a broken snapshot valid.

mod delete;
mod moving;
mod rename;
mod repair;
mod stack_rename;

use std::collections::BTreeSet;

use converge_model::{DependencyKind, Urn};

use crate::integrity::{self, IntegrityError};
use crate::Snapshot;

pub use delete::{delete, delete_all, DeleteOptions};
pub use moving::{move_resources, BrokenDependency, MoveOptions, MoveReport};
pub use rename::rename;
pub use repair::{repair, RepairReport};
pub use stack_rename::rename_stack;

/// Why an edit was refused. The snapshot is unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SurgeryError {
    #[error("no resource {0} in the stack's state")]
    UnknownUrn(Urn),
    #[error("{urn} is the stack resource; it cannot be {action}")]
    StackResource { urn: Urn, action: &'static str },
    #[error(
        "{0} is a component resource: it has no object of its own to replace; \
         taint the resources inside it instead"
    )]
    ComponentTaint(Urn),
    #[error(
        "{} protected: pass --force to delete anyway, or unprotect first \
         (`converge state unprotect`)",
        describe_protected(.0)
    )]
    Protected(Vec<Urn>),
    #[error(
        "{urn} cannot be deleted: other resources depend on it: {}; \
         pass --target-dependents to delete them too",
        describe_dependents(.dependents)
    )]
    HasDependents {
        urn: Urn,
        dependents: Vec<(Urn, DependencyKind)>,
    },
    #[error("{urn} cannot be renamed to {name:?}: {reason}")]
    InvalidName {
        urn: Urn,
        name: String,
        reason: String,
    },
    #[error("no valid URN is possible in stack {stack}: {reason}")]
    InvalidStackName { stack: String, reason: String },
    #[error("{urn} cannot be renamed to {name:?}: resource {taken} already exists")]
    NameTaken { urn: Urn, name: String, taken: Urn },
    #[error("the edited state would fail integrity verification: {0}")]
    Integrity(#[from] IntegrityError),
    #[error("none of the given resources is in the source stack: nothing to move")]
    NothingToMove,
    #[error(
        "{0} is a provider: providers cannot be moved on their own; the providers of the \
         moved resources are copied with them"
    )]
    MoveProvider(Urn),
    #[error("resource {0} already exists in the destination stack")]
    InDestination(Urn),
    #[error(
        "provider {0} already exists in the destination stack, with another ID and other \
         inputs"
    )]
    ProviderInDestination(Urn),
    #[error("cannot name the moved resources in the destination stack: {0}")]
    InvalidDestination(String),
    #[error("the move would leave the {side} stack failing integrity verification: {error}")]
    MoveIntegrity {
        side: &'static str,
        error: IntegrityError,
    },
}

fn describe_protected(urns: &[Urn]) -> String {
    match urns {
        [one] => format!("{one} is"),
        many => format!(
            "{} are",
            many.iter().map(Urn::as_str).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn describe_dependents(dependents: &[(Urn, DependencyKind)]) -> String {
    let mut grouped: Vec<(&Urn, Vec<String>)> = Vec::new();
    for (urn, kind) in dependents {
        match grouped.iter_mut().find(|(u, _)| *u == urn) {
            Some((_, kinds)) => kinds.push(kind.to_string()),
            None => grouped.push((urn, vec![kind.to_string()])),
        }
    }
    grouped
        .iter()
        .map(|(urn, kinds)| format!("{urn} (by {})", kinds.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Fails with [`SurgeryError::UnknownUrn`] for the first URN the snapshot
/// does not hold.
fn require_known(snapshot: &Snapshot, urns: &[Urn]) -> Result<(), SurgeryError> {
    let known: BTreeSet<&Urn> = snapshot.resources.iter().map(|r| &r.urn).collect();
    match urns.iter().find(|u| !known.contains(u)) {
        Some(u) => Err(SurgeryError::UnknownUrn(u.clone())),
        None => Ok(()),
    }
}

/// Sets `protect` to `protect` on every copy of each of `urns` (every
/// resource when `urns` is `None`). Returns how many resources changed.
pub fn set_protect(
    snapshot: &mut Snapshot,
    urns: Option<&[Urn]>,
    protect: bool,
) -> Result<usize, SurgeryError> {
    if let Some(urns) = urns {
        require_known(snapshot, urns)?;
    }
    let mut edited = snapshot.clone();
    let mut changed = 0;
    for r in &mut edited.resources {
        let selected = urns.is_none_or(|urns| urns.contains(&r.urn));
        if selected && r.protect != protect {
            r.protect = protect;
            changed += 1;
        }
    }
    integrity::verify(&edited)?;
    *snapshot = edited;
    Ok(changed)
}

/// Sets `taint` to `taint` on every copy of each of `urns`: a tainted
/// resource is replaced by the next update. Refuses the stack resource,
/// and tainting a component (it has no object of its own). Returns how
/// many resources changed.
pub fn set_taint(
    snapshot: &mut Snapshot,
    urns: &[Urn],
    taint: bool,
) -> Result<usize, SurgeryError> {
    require_known(snapshot, urns)?;
    if let Some(stack) = urns.iter().find(|u| u.is_stack()) {
        return Err(SurgeryError::StackResource {
            urn: stack.clone(),
            action: "tainted",
        });
    }
    if taint {
        let component = snapshot
            .resources
            .iter()
            .find(|r| urns.contains(&r.urn) && !r.custom);
        if let Some(c) = component {
            return Err(SurgeryError::ComponentTaint(c.urn.clone()));
        }
    }
    let mut changed = 0;
    for r in &mut snapshot.resources {
        if urns.contains(&r.urn) && r.taint != taint {
            r.taint = taint;
            changed += 1;
        }
    }
    Ok(changed)
}

#[cfg(test)]
pub(crate) mod tests {
    use converge_model::{ProviderReference, ResourceState, Urn};

    use super::*;

    pub fn urn(ty: &str, name: &str) -> Urn {
        Urn::new("dev", "demo", None, ty, name).unwrap()
    }

    pub fn custom(urn: Urn) -> ResourceState {
        let mut r = ResourceState::new(urn, true);
        r.id = Some("id-1".into());
        r
    }

    /// stack ← provider ← a ← b (dependency), c (parent a), d (deletedWith b).
    pub fn sample() -> Snapshot {
        let stack = urn("pulumi:pulumi:Stack", "demo-dev");
        let provider = urn("pulumi:providers:random", "default");
        let mut s = Snapshot::empty("2026-01-01T00:00:00Z");
        let mut st = ResourceState::new(stack.clone(), false);
        st.type_token = "pulumi:pulumi:Stack".into();
        s.resources.push(st);
        let mut p = custom(provider.clone());
        p.parent = Some(stack.clone());
        s.resources.push(p);
        let pref = ProviderReference {
            urn: provider,
            id: "id-1".into(),
        };
        let mut a = ResourceState::new(urn("my:index:Comp", "a"), false);
        a.parent = Some(stack.clone());
        s.resources.push(a);
        let mut b = custom(urn("random:index:RandomPet", "b"));
        b.parent = Some(stack.clone());
        b.provider = Some(pref.clone());
        b.dependencies.push(urn("my:index:Comp", "a"));
        s.resources.push(b);
        let mut c = custom(
            Urn::new(
                "dev",
                "demo",
                Some("my:index:Comp"),
                "random:index:RandomPet",
                "c",
            )
            .unwrap(),
        );
        c.parent = Some(urn("my:index:Comp", "a"));
        c.provider = Some(pref.clone());
        s.resources.push(c);
        let mut d = custom(urn("random:index:RandomPet", "d"));
        d.parent = Some(stack);
        d.provider = Some(pref);
        d.deleted_with = Some(urn("random:index:RandomPet", "b"));
        d.property_dependencies
            .insert("x".into(), vec![urn("random:index:RandomPet", "b")]);
        s.resources.push(d);
        integrity::verify(&s).unwrap();
        s
    }

    #[test]
    fn protect_sets_and_clears_the_flag() {
        let mut s = sample();
        let b = urn("random:index:RandomPet", "b");
        assert_eq!(
            set_protect(&mut s, Some(std::slice::from_ref(&b)), true).unwrap(),
            1
        );
        assert!(s.resources.iter().find(|r| r.urn == b).unwrap().protect);
        assert_eq!(
            set_protect(&mut s, Some(std::slice::from_ref(&b)), true).unwrap(),
            0
        );
        assert_eq!(set_protect(&mut s, None, true).unwrap(), 5);
        assert_eq!(set_protect(&mut s, None, false).unwrap(), 6);
        assert!(s.resources.iter().all(|r| !r.protect));
    }

    #[test]
    fn taint_marks_and_clears_and_refuses_the_stack() {
        let mut s = sample();
        let b = urn("random:index:RandomPet", "b");
        let stack = urn("pulumi:pulumi:Stack", "demo-dev");
        assert_eq!(
            set_taint(&mut s, std::slice::from_ref(&b), true).unwrap(),
            1
        );
        assert!(s.resources.iter().find(|r| r.urn == b).unwrap().taint);
        let before = s.clone();
        assert!(matches!(
            set_taint(&mut s, &[b.clone(), stack], true),
            Err(SurgeryError::StackResource { .. })
        ));
        assert_eq!(
            set_taint(&mut s, &[urn("x:y:Z", "nope")], true),
            Err(SurgeryError::UnknownUrn(urn("x:y:Z", "nope")))
        );
        assert_eq!(s, before);
        assert_eq!(set_taint(&mut s, &[b], false).unwrap(), 1);
        assert!(s.resources.iter().all(|r| !r.taint));

        // A component has nothing to replace: refused, nothing marked.
        let c = urn("my:index:Box", "c");
        s.resources.push(ResourceState::new(c.clone(), false));
        let before = s.clone();
        assert_eq!(
            set_taint(&mut s, std::slice::from_ref(&c), true),
            Err(SurgeryError::ComponentTaint(c.clone()))
        );
        assert_eq!(s, before);
        assert_eq!(set_taint(&mut s, &[c], false).unwrap(), 0);
    }

    #[test]
    fn protect_refuses_an_unknown_urn_and_changes_nothing() {
        let mut s = sample();
        let before = s.clone();
        let err = set_protect(
            &mut s,
            Some(&[urn("random:index:RandomPet", "b"), urn("x:y:Z", "nope")]),
            true,
        )
        .unwrap_err();
        assert_eq!(err, SurgeryError::UnknownUrn(urn("x:y:Z", "nope")));
        assert_eq!(s, before);
    }
}

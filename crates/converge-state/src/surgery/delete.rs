//! `state delete`: forget resources without deleting their objects.

use std::collections::BTreeSet;

use converge_model::{DependencyKind, Urn};

use super::{require_known, SurgeryError};
use crate::integrity;
use crate::Snapshot;

/// What [`delete`] may remove besides the URNs it is given.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeleteOptions {
    /// Delete protected resources too.
    pub force: bool,
    /// Delete every resource that depends on a deleted one, transitively,
    /// instead of refusing.
    pub target_dependents: bool,
}

/// Removes every copy of each of `urns` from the snapshot. Refuses the
/// stack resource, a protected resource (unless `force`), and a resource
/// that a remaining one depends on by any kind of reference (unless
/// `target_dependents`, which deletes those too). Returns the URNs removed,
/// in the snapshot's order.
pub fn delete(
    snapshot: &mut Snapshot,
    urns: &[Urn],
    options: DeleteOptions,
) -> Result<Vec<Urn>, SurgeryError> {
    require_known(snapshot, urns)?;
    if let Some(stack) = urns.iter().find(|u| u.is_stack()) {
        return Err(SurgeryError::StackResource {
            urn: stack.clone(),
            action: "deleted from the state (use `state delete --all` to forget everything)",
        });
    }
    let mut doomed: BTreeSet<Urn> = urns.iter().cloned().collect();
    if options.target_dependents {
        // The snapshot is in dependency order: one pass front to back finds
        // every transitive dependent.
        for r in &snapshot.resources {
            if r.all_dependencies().any(|(_, u)| doomed.contains(u)) {
                doomed.insert(r.urn.clone());
            }
        }
    } else {
        for urn in urns {
            let dependents = dependents_of(snapshot, urn, &doomed);
            if !dependents.is_empty() {
                return Err(SurgeryError::HasDependents {
                    urn: urn.clone(),
                    dependents,
                });
            }
        }
    }
    if !options.force {
        let protected = protected_among(snapshot, |u| doomed.contains(u));
        if !protected.is_empty() {
            return Err(SurgeryError::Protected(protected));
        }
    }
    let mut edited = snapshot.clone();
    edited.resources.retain(|r| !doomed.contains(&r.urn));
    integrity::verify(&edited)?;
    let removed = removed_in_order(snapshot, &doomed);
    *snapshot = edited;
    Ok(removed)
}

/// Removes every resource (`state delete --all`), the stack resource
/// included; refuses when one is protected, unless `force`.
pub fn delete_all(snapshot: &mut Snapshot, force: bool) -> Result<Vec<Urn>, SurgeryError> {
    if !force {
        let protected = protected_among(snapshot, |_| true);
        if !protected.is_empty() {
            return Err(SurgeryError::Protected(protected));
        }
    }
    let everything: BTreeSet<Urn> = snapshot.resources.iter().map(|r| r.urn.clone()).collect();
    let removed = removed_in_order(snapshot, &everything);
    snapshot.resources.clear();
    Ok(removed)
}

/// The resources outside `doomed` that refer to `urn`, once per kind of
/// reference.
fn dependents_of(
    snapshot: &Snapshot,
    urn: &Urn,
    doomed: &BTreeSet<Urn>,
) -> Vec<(Urn, DependencyKind)> {
    let mut found = Vec::new();
    for r in snapshot
        .resources
        .iter()
        .filter(|r| !doomed.contains(&r.urn))
    {
        for (kind, _) in r.all_dependencies().filter(|(_, u)| *u == urn) {
            if !found.contains(&(r.urn.clone(), kind)) {
                found.push((r.urn.clone(), kind));
            }
        }
    }
    found
}

fn protected_among(snapshot: &Snapshot, selected: impl Fn(&Urn) -> bool) -> Vec<Urn> {
    let mut seen = BTreeSet::new();
    snapshot
        .resources
        .iter()
        .filter(|r| r.protect && selected(&r.urn) && seen.insert(r.urn.clone()))
        .map(|r| r.urn.clone())
        .collect()
}

fn removed_in_order(snapshot: &Snapshot, doomed: &BTreeSet<Urn>) -> Vec<Urn> {
    let mut seen = BTreeSet::new();
    snapshot
        .resources
        .iter()
        .filter(|r| doomed.contains(&r.urn) && seen.insert(r.urn.clone()))
        .map(|r| r.urn.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::{sample, urn};
    use super::*;

    fn pet(name: &str) -> Urn {
        urn("random:index:RandomPet", name)
    }

    #[test]
    fn deletes_a_resource_nothing_depends_on() {
        let mut s = sample();
        let removed = delete(&mut s, &[pet("d")], DeleteOptions::default()).unwrap();
        assert_eq!(removed, vec![pet("d")]);
        assert!(s.resources.iter().all(|r| r.urn != pet("d")));
        assert_eq!(s.resources.len(), 5);
    }

    #[test]
    fn refuses_a_resource_with_dependents_naming_them() {
        for (target, dependent, kind) in [
            (pet("b"), pet("d"), DependencyKind::DeletedWith),
            (
                urn("my:index:Comp", "a"),
                pet("b"),
                DependencyKind::Dependency,
            ),
            (
                urn("pulumi:providers:random", "default"),
                pet("b"),
                DependencyKind::Provider,
            ),
        ] {
            let mut s = sample();
            let before = s.clone();
            let err = delete(
                &mut s,
                std::slice::from_ref(&target),
                DeleteOptions::default(),
            )
            .unwrap_err();
            let SurgeryError::HasDependents { urn, dependents } = &err else {
                panic!("{err:?}")
            };
            assert_eq!(urn, &target);
            assert!(dependents.contains(&(dependent.clone(), kind)), "{err}");
            assert!(err.to_string().contains(dependent.as_str()), "{err}");
            assert_eq!(s, before);
        }
    }

    #[test]
    fn a_parent_with_children_is_refused() {
        let mut s = sample();
        let err = delete(
            &mut s,
            &[urn("my:index:Comp", "a"), pet("b"), pet("d")],
            DeleteOptions::default(),
        )
        .unwrap_err();
        let SurgeryError::HasDependents { dependents, .. } = err else {
            panic!()
        };
        assert_eq!(dependents[0].1, DependencyKind::Parent);
    }

    #[test]
    fn target_dependents_deletes_them_transitively() {
        let mut s = sample();
        let options = DeleteOptions {
            target_dependents: true,
            ..Default::default()
        };
        let removed = delete(&mut s, &[urn("my:index:Comp", "a")], options).unwrap();
        assert_eq!(removed.len(), 4, "{removed:?}"); // a, b, c (child), d (deletedWith b)
        assert_eq!(s.resources.len(), 2);
    }

    #[test]
    fn refuses_protected_unless_forced() {
        let mut s = sample();
        super::super::set_protect(&mut s, Some(&[pet("d")]), true).unwrap();
        let before = s.clone();
        let err = delete(&mut s, &[pet("d")], DeleteOptions::default()).unwrap_err();
        assert_eq!(err, SurgeryError::Protected(vec![pet("d")]));
        assert_eq!(s, before);
        // A protected dependent deleted by --target-dependents is refused too.
        let options = DeleteOptions {
            target_dependents: true,
            force: false,
        };
        assert!(matches!(
            delete(&mut s, &[pet("b")], options),
            Err(SurgeryError::Protected(_))
        ));
        let forced = DeleteOptions {
            force: true,
            ..Default::default()
        };
        delete(&mut s, &[pet("d")], forced).unwrap();
    }

    #[test]
    fn refuses_the_stack_and_unknown_urns() {
        let mut s = sample();
        let before = s.clone();
        let stack = urn("pulumi:pulumi:Stack", "demo-dev");
        assert!(matches!(
            delete(&mut s, &[stack], DeleteOptions::default()),
            Err(SurgeryError::StackResource { .. })
        ));
        assert_eq!(
            delete(&mut s, &[pet("zzz")], DeleteOptions::default()),
            Err(SurgeryError::UnknownUrn(pet("zzz")))
        );
        assert_eq!(s, before);
    }

    #[test]
    fn all_forgets_everything_unless_something_is_protected() {
        let mut s = sample();
        super::super::set_protect(&mut s, Some(&[pet("b")]), true).unwrap();
        assert_eq!(
            delete_all(&mut s, false),
            Err(SurgeryError::Protected(vec![pet("b")]))
        );
        assert_eq!(delete_all(&mut s, true).unwrap().len(), 6);
        assert!(s.resources.is_empty());
    }
}

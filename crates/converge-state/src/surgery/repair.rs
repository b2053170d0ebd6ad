//! `state repair`: what can be fixed safely in a snapshot that fails
//! integrity verification.
//!
//! Two fixes, in this order: references naming no resource of the snapshot
//! — dependencies, property dependencies, deletedWith — are removed, and
//! the resources are put in an order where each comes after its parent,
//! its provider and what it depends on (a stable sort: resources already
//! in order keep their relative order; a live copy of a URN before its
//! copies marked for deletion). A missing parent or provider, a cycle, a
//! custom resource without ID and the like cannot be fixed safely: they
//! are reported and the snapshot is left as it was.

use std::collections::{BTreeSet, HashMap};

use converge_model::{DependencyKind, Urn};

use super::BrokenDependency;
use crate::integrity::{self, IntegrityError};
use crate::Snapshot;

/// What [`repair`] changed, or why it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// References to resources the snapshot does not hold, removed.
    pub dropped: Vec<BrokenDependency>,
    /// Resources put at another position: (URN, old index, new index).
    pub moved: Vec<(Urn, usize, usize)>,
    /// What still breaks integrity after both fixes (the snapshot is then
    /// unchanged).
    pub unfixable: Vec<IntegrityError>,
}

impl RepairReport {
    pub fn changed(&self) -> bool {
        !self.dropped.is_empty() || !self.moved.is_empty()
    }
}

/// Repairs `snapshot` in place when both fixes make it pass every
/// integrity rule; otherwise leaves it unchanged and names what remains in
/// [`RepairReport::unfixable`].
pub fn repair(snapshot: &mut Snapshot) -> RepairReport {
    let mut report = RepairReport::default();
    let mut edited = snapshot.clone();
    let present: BTreeSet<Urn> = edited.resources.iter().map(|r| r.urn.clone()).collect();
    for r in &mut edited.resources {
        let urn = r.urn.clone();
        let mut drop = |kind, property: Option<&String>, on: &Urn| {
            report.dropped.push(BrokenDependency {
                urn: urn.clone(),
                kind,
                property: property.cloned(),
                on: on.clone(),
            })
        };
        for d in r.dependencies.iter().filter(|d| !present.contains(*d)) {
            drop(DependencyKind::Dependency, None, d);
        }
        for (key, deps) in &r.property_dependencies {
            for d in deps.iter().filter(|d| !present.contains(*d)) {
                drop(DependencyKind::PropertyDependency, Some(key), d);
            }
        }
        if let Some(w) = r.deleted_with.as_ref().filter(|w| !present.contains(*w)) {
            drop(DependencyKind::DeletedWith, None, w);
        }
        r.dependencies.retain(|d| present.contains(d));
        for deps in r.property_dependencies.values_mut() {
            deps.retain(|d| present.contains(d));
        }
        r.property_dependencies.retain(|_, deps| !deps.is_empty());
        if r.deleted_with
            .as_ref()
            .is_some_and(|w| !present.contains(w))
        {
            r.deleted_with = None;
        }
    }

    let order = stable_order(&edited);
    if order.iter().enumerate().any(|(new, &old)| new != old) {
        let resources = std::mem::take(&mut edited.resources);
        let mut slots: Vec<Option<_>> = resources.into_iter().map(Some).collect();
        for (new, &old) in order.iter().enumerate() {
            let r = slots[old].take().expect("each index once");
            if new != old {
                report.moved.push((r.urn.clone(), old, new));
            }
            edited.resources.push(r);
        }
    }

    report.unfixable = integrity::verify_all(&edited);
    if report.unfixable.is_empty() {
        *snapshot = edited;
    }
    report
}

/// Indexes of the resources in an order where each comes after what it
/// refers to, the earliest ready resource first (so an ordered snapshot
/// keeps its order). Resources in a cycle keep their places at the end.
fn stable_order(snapshot: &Snapshot) -> Vec<usize> {
    let resources = &snapshot.resources;
    let mut first_of: HashMap<&Urn, usize> = HashMap::new();
    for (i, r) in resources.iter().enumerate() {
        // A live copy is the one references should follow.
        match first_of.get(&r.urn) {
            Some(&j) if !resources[j].delete || r.delete => {}
            _ => {
                first_of.insert(&r.urn, i);
            }
        }
    }
    let provider_of = |urn: &Urn, id: &str| {
        resources
            .iter()
            .position(|p| &p.urn == urn && p.id.as_deref() == Some(id))
            .or_else(|| first_of.get(urn).copied())
    };
    // needs[i]: the indexes that must come before i.
    let mut needs: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); resources.len()];
    for (i, r) in resources.iter().enumerate() {
        for (kind, urn) in r.all_dependencies() {
            let before = match (kind, &r.provider) {
                (DependencyKind::Provider, Some(p)) => provider_of(&p.urn, &p.id),
                _ => first_of.get(urn).copied(),
            };
            if let Some(j) = before.filter(|&j| j != i) {
                needs[i].insert(j);
            }
        }
        // Other copies of a URN follow its live copy.
        if let Some(&live) = first_of.get(&r.urn) {
            if live != i {
                needs[i].insert(live);
            }
        }
    }
    let mut placed = vec![false; resources.len()];
    let mut order = Vec::with_capacity(resources.len());
    while order.len() < resources.len() {
        let ready =
            (0..resources.len()).find(|&i| !placed[i] && needs[i].iter().all(|&j| placed[j]));
        match ready {
            Some(i) => {
                placed[i] = true;
                order.push(i);
            }
            None => {
                // A cycle: the rest as they were; verification names it.
                order.extend((0..resources.len()).filter(|&i| !placed[i]));
                break;
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::super::tests::{sample, urn};
    use super::*;

    fn pet(name: &str) -> Urn {
        urn("random:index:RandomPet", name)
    }

    #[test]
    fn a_valid_snapshot_is_left_as_it_is() {
        let mut s = sample();
        let report = repair(&mut s);
        assert!(!report.changed() && report.unfixable.is_empty());
        assert_eq!(s, sample());
    }

    #[test]
    fn puts_resources_after_what_they_refer_to() {
        let mut s = sample();
        // d (deletedWith b) and the provider to the front, a to the end.
        let d = s.resources.remove(5);
        s.resources.insert(0, d);
        let a = s.resources.remove(3);
        s.resources.push(a);
        let p = s.resources.remove(2);
        s.resources.insert(0, p);
        assert!(integrity::verify(&s).is_err());
        let report = repair(&mut s);
        assert!(report.unfixable.is_empty(), "{:?}", report.unfixable);
        assert!(!report.moved.is_empty());
        integrity::verify(&s).unwrap();
    }

    #[test]
    fn drops_references_to_resources_that_are_gone() {
        let mut s = sample();
        let gone = pet("gone");
        let d = s.resources.iter_mut().find(|r| r.urn == pet("d")).unwrap();
        d.dependencies.push(gone.clone());
        d.property_dependencies
            .insert("y".into(), vec![gone.clone()]);
        d.deleted_with = Some(gone.clone());
        let report = repair(&mut s);
        assert_eq!(report.dropped.len(), 3);
        assert!(report
            .dropped
            .iter()
            .all(|b| b.on == gone && b.urn == pet("d")));
        integrity::verify(&s).unwrap();
        let d = s.resources.iter().find(|r| r.urn == pet("d")).unwrap();
        assert_eq!(d.deleted_with, None);
        assert_eq!(d.property_dependencies.len(), 1, "x stays");
    }

    #[test]
    fn a_missing_parent_or_provider_is_named_and_nothing_changes() {
        let mut s = sample();
        s.resources.retain(|r| r.urn != urn("my:index:Comp", "a"));
        s.resources
            .iter_mut()
            .find(|r| r.urn == pet("b"))
            .unwrap()
            .dependencies
            .clear();
        s.resources.retain(|r| !r.is_provider());
        let before = s.clone();
        let report = repair(&mut s);
        assert_eq!(s, before);
        assert!(report
            .unfixable
            .iter()
            .any(|e| matches!(e, IntegrityError::MissingParent { .. })));
        assert!(report
            .unfixable
            .iter()
            .any(|e| matches!(e, IntegrityError::UnknownProvider { .. })));
    }
}

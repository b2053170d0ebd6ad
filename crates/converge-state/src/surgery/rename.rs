//! `state rename`: a new name for a resource, every reference following.

use converge_model::{ResourceState, Urn};

use super::{require_known, SurgeryError};
use crate::integrity;
use crate::Snapshot;

/// Renames the resource `urn` to `name` and rewrites every reference to its
/// URN — parents, dependencies, property dependencies, deletedWith, and
/// provider references when it is a provider — in resources and pending
/// operations. A child's URN is built from its parent's qualified type,
/// which a rename does not change, so children keep their URNs. Refuses
/// the stack resource, an invalid name, and a name whose URN exists
/// already. Returns the new URN.
pub fn rename(snapshot: &mut Snapshot, urn: &Urn, name: &str) -> Result<Urn, SurgeryError> {
    require_known(snapshot, std::slice::from_ref(urn))?;
    if urn.is_stack() {
        return Err(SurgeryError::StackResource {
            urn: urn.clone(),
            action: "renamed",
        });
    }
    let invalid = |reason: &str| SurgeryError::InvalidName {
        urn: urn.clone(),
        name: name.to_owned(),
        reason: reason.to_owned(),
    };
    if name.is_empty() {
        return Err(invalid("a name cannot be empty"));
    }
    if name.contains("::") {
        return Err(invalid("a name cannot contain `::`"));
    }
    let renamed = Urn::new(
        urn.stack(),
        urn.project(),
        urn.parent_type(),
        urn.type_token(),
        name,
    )
    .map_err(|e| invalid(&e.to_string()))?;
    if let Some(taken) = snapshot.resources.iter().find(|r| r.urn == renamed) {
        return Err(SurgeryError::NameTaken {
            urn: urn.clone(),
            name: name.to_owned(),
            taken: taken.urn.clone(),
        });
    }
    let mut edited = snapshot.clone();
    for r in &mut edited.resources {
        rewrite(r, urn, &renamed);
    }
    for p in &mut edited.pending_operations {
        rewrite(&mut p.resource, urn, &renamed);
    }
    integrity::verify(&edited)?;
    *snapshot = edited;
    Ok(renamed)
}

/// Replaces every reference to `from` in `r` (its own URN included) by `to`.
fn rewrite(r: &mut ResourceState, from: &Urn, to: &Urn) {
    let swap = |u: &mut Urn| {
        if u == from {
            *u = to.clone();
        }
    };
    swap(&mut r.urn);
    if let Some(p) = &mut r.parent {
        swap(p);
    }
    if let Some(p) = &mut r.provider {
        swap(&mut p.urn);
    }
    r.dependencies.iter_mut().for_each(swap);
    r.property_dependencies
        .values_mut()
        .flatten()
        .for_each(swap);
    if let Some(w) = &mut r.deleted_with {
        swap(w);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{sample, urn};
    use super::*;

    fn pet(name: &str) -> Urn {
        urn("random:index:RandomPet", name)
    }

    #[test]
    fn rename_rewrites_every_reference() {
        let mut s = sample();
        let new = rename(&mut s, &pet("b"), "bee").unwrap();
        assert_eq!(new, pet("bee"));
        let d = s.resources.iter().find(|r| r.urn == pet("d")).unwrap();
        assert_eq!(d.deleted_with.as_ref(), Some(&new));
        assert_eq!(d.property_dependencies["x"], vec![new.clone()]);
        assert!(s.resources.iter().all(|r| r.urn != pet("b")));
    }

    #[test]
    fn renaming_a_parent_keeps_its_children_urns() {
        let mut s = sample();
        let new = rename(&mut s, &urn("my:index:Comp", "a"), "z").unwrap();
        let c = s.resources.iter().find(|r| r.urn.name() == "c").unwrap();
        assert_eq!(c.parent.as_ref(), Some(&new));
        assert_eq!(
            c.urn.qualified_type(),
            "my:index:Comp$random:index:RandomPet"
        );
        let b = s.resources.iter().find(|r| r.urn == pet("b")).unwrap();
        assert_eq!(b.dependencies, vec![new]);
    }

    #[test]
    fn renaming_a_provider_rewrites_provider_references() {
        let mut s = sample();
        let new = rename(&mut s, &urn("pulumi:providers:random", "default"), "p2").unwrap();
        for name in ["b", "c", "d"] {
            let r = s.resources.iter().find(|r| r.urn.name() == name).unwrap();
            assert_eq!(r.provider.as_ref().unwrap().urn, new);
        }
    }

    #[test]
    fn refuses_a_taken_name_the_stack_and_bad_names() {
        let mut s = sample();
        let before = s.clone();
        assert!(matches!(
            rename(&mut s, &pet("b"), "d"),
            Err(SurgeryError::NameTaken { .. })
        ));
        assert!(matches!(
            rename(&mut s, &urn("pulumi:pulumi:Stack", "demo-dev"), "x"),
            Err(SurgeryError::StackResource { .. })
        ));
        assert!(matches!(
            rename(&mut s, &pet("b"), ""),
            Err(SurgeryError::InvalidName { .. })
        ));
        assert!(matches!(
            rename(&mut s, &pet("b"), "a::b"),
            Err(SurgeryError::InvalidName { .. })
        ));
        assert_eq!(
            rename(&mut s, &pet("nope"), "x"),
            Err(SurgeryError::UnknownUrn(pet("nope")))
        );
        assert_eq!(s, before);
    }
}

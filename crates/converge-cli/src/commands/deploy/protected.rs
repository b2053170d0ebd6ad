//! `destroy --exclude-protected`: the resources that stay — each protected
//! resource and everything it needs to remain valid in the state: its
//! ancestors, its dependencies (plain, per property and `deletedWith`) and
//! its provider, transitively. The destroy excludes them, so it goes
//! through the engine's ordinary exclusion targeting.

use std::collections::{BTreeMap, BTreeSet};

use converge_model::Urn;
use converge_state::Snapshot;

/// What `--exclude-protected` keeps of `base`.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Kept {
    /// The URNs that stay, in the state's order.
    pub urns: Vec<Urn>,
    /// How many of the state's URNs the destroy may still delete.
    pub to_destroy: usize,
}

/// The protected resources of `base` and what they need, transitively.
pub(crate) fn kept(base: &Snapshot) -> Kept {
    let mut by_urn: BTreeMap<&str, Vec<&converge_model::ResourceState>> = BTreeMap::new();
    for r in &base.resources {
        by_urn.entry(r.urn.as_str()).or_default().push(r);
    }
    let mut keep: BTreeSet<&str> = BTreeSet::new();
    let mut work: Vec<&str> = base
        .resources
        .iter()
        .filter(|r| r.protect)
        .map(|r| r.urn.as_str())
        .collect();
    while let Some(urn) = work.pop() {
        if !keep.insert(urn) {
            continue;
        }
        for r in by_urn.get(urn).into_iter().flatten() {
            let needs = r
                .parent
                .iter()
                .chain(&r.dependencies)
                .chain(r.property_dependencies.values().flatten())
                .chain(r.deleted_with.iter())
                .chain(r.provider.as_ref().map(|p| &p.urn));
            for needed in needs {
                // A reference to a resource the state does not hold needs
                // nothing more.
                if let Some((key, _)) = by_urn.get_key_value(needed.as_str()) {
                    work.push(key);
                }
            }
        }
    }
    let mut urns = Vec::new();
    let mut listed = BTreeSet::new();
    for r in &base.resources {
        if keep.contains(r.urn.as_str()) && listed.insert(r.urn.as_str()) {
            urns.push(r.urn.clone());
        }
    }
    Kept {
        to_destroy: by_urn.len() - urns.len(),
        urns,
    }
}

#[cfg(test)]
mod tests {
    use converge_model::{ProviderReference, ResourceState, Urn};
    use converge_state::Snapshot;

    use super::kept;

    fn urn(ty: &str, name: &str) -> Urn {
        Urn::parse(&format!("urn:pulumi:dev::proj::{ty}::{name}")).unwrap()
    }

    fn names(urns: &[Urn]) -> Vec<&str> {
        urns.iter().map(Urn::name).collect()
    }

    /// stack ← comp ← vault (protected) → dep → dep2; vault uses prov;
    /// other and loner hang off the stack.
    #[test]
    fn a_protected_resource_keeps_its_ancestors_dependencies_and_provider() {
        let stack = ResourceState::new(urn("pulumi:pulumi:Stack", "proj-dev"), false);
        let prov_urn = urn("pulumi:providers:random", "prov");
        let mut prov = ResourceState::new(prov_urn.clone(), true);
        prov.parent = Some(stack.urn.clone());
        let unused_prov = ResourceState::new(urn("pulumi:providers:random", "unused"), true);
        let mut comp = ResourceState::new(urn("my:Comp", "comp"), false);
        comp.parent = Some(stack.urn.clone());
        let dep2 = ResourceState::new(urn("random:index/randomPet:RandomPet", "dep2"), true);
        let mut dep = ResourceState::new(urn("random:index/randomPet:RandomPet", "dep"), true);
        dep.property_dependencies
            .insert("prefix".into(), vec![dep2.urn.clone()]);
        let mut vault = ResourceState::new(
            urn("my:Comp$random:index/randomPet:RandomPet", "vault"),
            true,
        );
        vault.protect = true;
        vault.parent = Some(comp.urn.clone());
        vault.dependencies = vec![dep.urn.clone()];
        vault.provider = Some(ProviderReference {
            urn: prov_urn,
            id: "p1".into(),
        });
        let mut other = ResourceState::new(urn("random:index/randomPet:RandomPet", "other"), true);
        other.parent = Some(stack.urn.clone());
        other.dependencies = vec![vault.urn.clone()];
        let mut base = Snapshot::empty("2026-01-01T00:00:00Z");
        base.resources = vec![stack, prov, unused_prov, comp, dep2, dep, vault, other];

        let k = kept(&base);
        assert_eq!(
            names(&k.urns),
            ["proj-dev", "prov", "comp", "dep2", "dep", "vault"]
        );
        assert_eq!(k.to_destroy, 2);
    }

    #[test]
    fn without_protected_resources_everything_is_destroyed() {
        let mut base = Snapshot::empty("2026-01-01T00:00:00Z");
        base.resources = vec![ResourceState::new(
            urn("pulumi:pulumi:Stack", "proj-dev"),
            false,
        )];
        let k = kept(&base);
        assert!(k.urns.is_empty());
        assert_eq!(k.to_destroy, 1);
    }
}

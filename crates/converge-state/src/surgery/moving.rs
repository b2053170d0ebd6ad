//! `state move`: resources from one stack's snapshot to another's.
//!
//! What moves: the named resources, with `include_parents` their ancestors
//! (never the stack resource), and every descendant of what moves. The
//! providers the moved resources use are copied (they stay in the source,
//! where other resources may still use them); a provider already in the
//! destination under the same URN is reused when it has the same ID or the
//! same inputs. Moved URNs take the destination's stack and project; a
//! moved resource whose parent stays behind is parented to the
//! destination's stack resource (created when the destination has none).
//! Dependencies, property dependencies and deletedWith across the two sides
//! cannot be kept: they are removed and reported.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use converge_model::{DependencyKind, ProviderReference, ResourceState, Urn, STACK_TYPE};

use super::SurgeryError;
use crate::integrity;
use crate::Snapshot;

/// Where the moved resources go, and what comes with them.
#[derive(Debug, Clone, Copy)]
pub struct MoveOptions<'a> {
    /// Move the ancestors of the named resources too.
    pub include_parents: bool,
    /// The destination's stack name, for the moved URNs.
    pub dest_stack: &'a str,
    /// The destination's project name, for the moved URNs.
    pub dest_project: &'a str,
}

/// A dependency that a move removed because its two ends ended up in
/// different stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokenDependency {
    /// The resource that had the dependency (its URN before the move).
    pub urn: Urn,
    pub kind: DependencyKind,
    /// The property, for a property dependency.
    pub property: Option<String>,
    /// What it depended on (its URN before the move).
    pub on: Urn,
}

/// What [`move_resources`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MoveReport {
    /// The moved resources, by their source URNs, in the source's order.
    pub moved: Vec<Urn>,
    /// Named URNs the source does not hold (Pulumi warns about these).
    pub not_found: Vec<Urn>,
    /// Providers copied into the destination (their destination URNs).
    pub copied_providers: Vec<Urn>,
    /// The stack resource created in a destination that had none.
    pub created_stack: Option<Urn>,
    /// Dependencies of resources staying in the source on moved ones.
    pub broken_in_source: Vec<BrokenDependency>,
    /// Dependencies of moved resources (and copied providers) on resources
    /// staying in the source.
    pub broken_in_dest: Vec<BrokenDependency>,
}

/// Moves `urns` (exact URNs) from `source` to `dest`. Both snapshots are
/// changed only when the result of each passes every integrity rule;
/// otherwise both are left as they were.
pub fn move_resources(
    source: &mut Snapshot,
    dest: &mut Snapshot,
    urns: &[Urn],
    options: MoveOptions<'_>,
) -> Result<MoveReport, SurgeryError> {
    let mut report = MoveReport::default();
    let is_root = |r: &ResourceState| r.type_token == STACK_TYPE && r.parent.is_none();

    let mut moving: BTreeSet<Urn> = BTreeSet::new();
    let mut root: Option<Urn> = None;
    for urn in urns {
        let matches: Vec<&ResourceState> =
            source.resources.iter().filter(|r| &r.urn == urn).collect();
        if matches.is_empty() {
            report.not_found.push(urn.clone());
            continue;
        }
        for r in matches {
            if r.is_provider() {
                return Err(SurgeryError::MoveProvider(r.urn.clone()));
            }
            if is_root(r) {
                root = Some(r.urn.clone());
            }
            moving.insert(r.urn.clone());
        }
    }
    if moving.is_empty() {
        return Err(SurgeryError::NothingToMove);
    }
    if options.include_parents {
        let parents: HashMap<&Urn, &Urn> = source
            .resources
            .iter()
            .filter_map(|r| Some((&r.urn, r.parent.as_ref()?)))
            .collect();
        let named: Vec<Urn> = moving.iter().cloned().collect();
        for urn in named {
            let mut at = &urn;
            while let Some(parent) = parents.get(at) {
                if parent.is_stack() {
                    break;
                }
                moving.insert((*parent).clone());
                at = parent;
            }
        }
    }
    // Descendants: a valid snapshot lists parents before children, so one
    // pass in order finds grandchildren too.
    for r in &source.resources {
        if r.parent.as_ref().is_some_and(|p| moving.contains(p)) {
            moving.insert(r.urn.clone());
        }
    }
    if let Some(root) = &root {
        moving.remove(root);
    }
    if moving.is_empty() {
        return Err(SurgeryError::NothingToMove);
    }

    let (moved, mut remaining): (Vec<ResourceState>, Vec<ResourceState>) = source
        .resources
        .iter()
        .cloned()
        .partition(|r| moving.contains(&r.urn));
    report.moved = moved.iter().map(|r| r.urn.clone()).collect();
    for r in &mut remaining {
        report
            .broken_in_source
            .extend(break_dependencies(r, |u| moving.contains(u)));
    }

    let mut new_dest = dest.clone();
    let dest_root = match new_dest.resources.iter().find(|r| is_root(r)) {
        Some(r) => r.urn.clone(),
        None => {
            let name = format!("{}-{}", options.dest_project, options.dest_stack);
            let urn = Urn::new(
                options.dest_stack,
                options.dest_project,
                None,
                STACK_TYPE,
                &name,
            )
            .map_err(|e| SurgeryError::InvalidDestination(e.to_string()))?;
            new_dest
                .resources
                .insert(0, ResourceState::new(urn.clone(), false));
            report.created_stack = Some(urn.clone());
            urn
        }
    };
    let existing: HashMap<Urn, ResourceState> = new_dest
        .resources
        .iter()
        .map(|r| (r.urn.clone(), r.clone()))
        .collect();

    // Providers the moved resources use, unless they move themselves.
    let used: BTreeSet<(&Urn, &str)> = moved
        .iter()
        .filter_map(|r| r.provider.as_ref())
        .filter(|p| !moving.contains(&p.urn))
        .map(|p| (&p.urn, p.id.as_str()))
        .collect();
    let mut provider_map: ProviderMap = BTreeMap::new();
    for provider in source.resources.iter().filter(|r| {
        r.id.as_deref()
            .is_some_and(|id| used.contains(&(&r.urn, id)))
    }) {
        let mut copy = provider.clone();
        report
            .broken_in_dest
            .extend(break_dependencies(&mut copy, |u| !moving.contains(u)));
        rewrite_urns(&mut copy, options, &provider_map)?;
        copy.parent = Some(dest_root.clone());
        let old_ref = (provider.urn.clone(), copy.id.clone().unwrap_or_default());
        match existing.get(&copy.urn) {
            Some(there) if there.id == copy.id => {}
            Some(there) if there.inputs == copy.inputs => {
                provider_map.insert(
                    old_ref,
                    ProviderReference {
                        urn: there.urn.clone(),
                        id: there.id.clone().unwrap_or_default(),
                    },
                );
            }
            Some(_) => return Err(SurgeryError::ProviderInDestination(copy.urn)),
            None => {
                report.copied_providers.push(copy.urn.clone());
                new_dest.resources.push(copy);
            }
        }
    }

    for r in &moved {
        let mut copy = r.clone();
        let parent_stays = copy.parent.as_ref().is_none_or(|p| !moving.contains(p));
        report
            .broken_in_dest
            .extend(break_dependencies(&mut copy, |u| !moving.contains(u)));
        rewrite_urns(&mut copy, options, &provider_map)?;
        if parent_stays {
            copy.parent = Some(dest_root.clone());
        }
        if existing.contains_key(&copy.urn) {
            return Err(SurgeryError::InDestination(copy.urn));
        }
        new_dest.resources.push(copy);
    }

    let mut new_source = source.clone();
    new_source.resources = remaining;
    integrity::verify(&new_source).map_err(|e| SurgeryError::MoveIntegrity {
        side: "source",
        error: e,
    })?;
    integrity::verify(&new_dest).map_err(|e| SurgeryError::MoveIntegrity {
        side: "destination",
        error: e,
    })?;
    *source = new_source;
    *dest = new_dest;
    Ok(report)
}

/// Source provider references (URN, ID) that point at a provider the
/// destination already had.
type ProviderMap = BTreeMap<(Urn, String), ProviderReference>;

/// Removes `r`'s dependencies, property dependencies and deletedWith on
/// URNs `gone` selects, returning them. (Parents are handled by the
/// caller, providers are copied.)
fn break_dependencies(r: &mut ResourceState, gone: impl Fn(&Urn) -> bool) -> Vec<BrokenDependency> {
    let mut broken = Vec::new();
    let mut record = |kind, property: Option<&String>, on: &Urn| {
        broken.push(BrokenDependency {
            urn: r.urn.clone(),
            kind,
            property: property.cloned(),
            on: on.clone(),
        })
    };
    for d in r.dependencies.iter().filter(|d| gone(d)) {
        record(DependencyKind::Dependency, None, d);
    }
    for (key, deps) in &r.property_dependencies {
        for d in deps.iter().filter(|d| gone(d)) {
            record(DependencyKind::PropertyDependency, Some(key), d);
        }
    }
    if let Some(w) = r.deleted_with.as_ref().filter(|w| gone(w)) {
        record(DependencyKind::DeletedWith, None, w);
    }
    r.dependencies.retain(|d| !gone(d));
    for deps in r.property_dependencies.values_mut() {
        deps.retain(|d| !gone(d));
    }
    r.property_dependencies.retain(|_, deps| !deps.is_empty());
    if r.deleted_with.as_ref().is_some_and(&gone) {
        r.deleted_with = None;
    }
    broken
}

/// `urn` in the destination's stack and project.
fn rename_to(urn: &Urn, options: MoveOptions<'_>) -> Result<Urn, SurgeryError> {
    Urn::new(
        options.dest_stack,
        options.dest_project,
        urn.parent_type(),
        urn.type_token(),
        urn.name(),
    )
    .map_err(|e| SurgeryError::InvalidDestination(e.to_string()))
}

/// Every URN in `r` renamed into the destination; a provider reference
/// found in `providers` (a provider the destination had already) points
/// there instead.
fn rewrite_urns(
    r: &mut ResourceState,
    options: MoveOptions<'_>,
    providers: &ProviderMap,
) -> Result<(), SurgeryError> {
    r.urn = rename_to(&r.urn, options)?;
    if let Some(p) = &mut r.parent {
        *p = rename_to(p, options)?;
    }
    if let Some(p) = &mut r.provider {
        *p = match providers.get(&(p.urn.clone(), p.id.clone())) {
            Some(there) => there.clone(),
            None => ProviderReference {
                urn: rename_to(&p.urn, options)?,
                id: p.id.clone(),
            },
        };
    }
    for d in &mut r.dependencies {
        *d = rename_to(d, options)?;
    }
    for d in r.property_dependencies.values_mut().flatten() {
        *d = rename_to(d, options)?;
    }
    if let Some(w) = &mut r.deleted_with {
        *w = rename_to(w, options)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::{sample, urn};
    use super::*;

    const TO: MoveOptions<'static> = MoveOptions {
        include_parents: false,
        dest_stack: "prod",
        dest_project: "other",
    };

    fn pet(name: &str) -> Urn {
        urn("random:index:RandomPet", name)
    }

    fn moved(name: &str) -> Urn {
        Urn::new("prod", "other", None, "random:index:RandomPet", name).unwrap()
    }

    fn find<'a>(s: &'a Snapshot, urn: &Urn) -> Option<&'a ResourceState> {
        s.resources.iter().find(|r| &r.urn == urn)
    }

    fn empty() -> Snapshot {
        Snapshot::empty("2026-01-01T00:00:00Z")
    }

    #[test]
    fn moves_a_resource_copying_its_provider_and_breaking_cross_stack_dependencies() {
        let (mut source, mut dest) = (sample(), empty());
        let report = move_resources(&mut source, &mut dest, &[pet("b")], TO).unwrap();
        assert_eq!(report.moved, vec![pet("b")]);
        let stack = Urn::new("prod", "other", None, STACK_TYPE, "other-prod").unwrap();
        assert_eq!(report.created_stack.as_ref(), Some(&stack));
        let provider =
            Urn::new("prod", "other", None, "pulumi:providers:random", "default").unwrap();
        assert_eq!(report.copied_providers, vec![provider.clone()]);
        // The source keeps its provider; b is gone and d no longer refers to it.
        assert!(find(&source, &pet("b")).is_none());
        assert!(find(&source, &urn("pulumi:providers:random", "default")).is_some());
        let d = find(&source, &pet("d")).unwrap();
        assert_eq!(d.deleted_with, None);
        assert!(d.property_dependencies.is_empty());
        assert_eq!(report.broken_in_source.len(), 2);
        // In the destination: stack, provider, b, with b's dependency on a gone.
        let b = find(&dest, &moved("b")).unwrap();
        assert_eq!(b.parent.as_ref(), Some(&stack));
        assert_eq!(b.provider.as_ref().unwrap().urn, provider);
        assert!(b.dependencies.is_empty());
        assert_eq!(
            report.broken_in_dest,
            vec![BrokenDependency {
                urn: pet("b"),
                kind: DependencyKind::Dependency,
                property: None,
                on: urn("my:index:Comp", "a"),
            }]
        );
        assert_eq!(dest.resources.len(), 3);
        integrity::verify(&source).unwrap();
        integrity::verify(&dest).unwrap();
    }

    #[test]
    fn children_move_with_their_parent_and_include_parents_takes_ancestors() {
        let c = Urn::new(
            "dev",
            "demo",
            Some("my:index:Comp"),
            "random:index:RandomPet",
            "c",
        )
        .unwrap();
        let (mut source, mut dest) = (sample(), empty());
        let options = MoveOptions {
            include_parents: true,
            ..TO
        };
        let report =
            move_resources(&mut source, &mut dest, std::slice::from_ref(&c), options).unwrap();
        assert_eq!(report.moved, vec![urn("my:index:Comp", "a"), c]);
        let moved_c = Urn::new(
            "prod",
            "other",
            Some("my:index:Comp"),
            "random:index:RandomPet",
            "c",
        )
        .unwrap();
        let a = Urn::new("prod", "other", None, "my:index:Comp", "a").unwrap();
        assert_eq!(find(&dest, &moved_c).unwrap().parent.as_ref(), Some(&a));
        // b stays, its dependency on a broken.
        assert!(find(&source, &pet("b")).unwrap().dependencies.is_empty());

        let (mut source, mut dest) = (sample(), empty());
        let report =
            move_resources(&mut source, &mut dest, &[urn("my:index:Comp", "a")], TO).unwrap();
        assert_eq!(report.moved.len(), 2, "the child c goes with a");
    }

    #[test]
    fn a_second_move_reuses_the_copied_provider() {
        let (mut source, mut dest) = (sample(), empty());
        move_resources(&mut source, &mut dest, &[pet("b")], TO).unwrap();
        let report = move_resources(&mut source, &mut dest, &[pet("d")], TO).unwrap();
        assert!(report.copied_providers.is_empty());
        assert!(report.created_stack.is_none());
        assert_eq!(dest.resources.len(), 4);
        integrity::verify(&dest).unwrap();
    }

    #[test]
    fn a_provider_of_the_same_urn_and_inputs_in_the_destination_is_used() {
        let (mut source, mut dest) = (sample(), empty());
        move_resources(&mut source, &mut dest, &[pet("b")], TO).unwrap();
        let provider =
            Urn::new("prod", "other", None, "pulumi:providers:random", "default").unwrap();
        dest.resources
            .iter_mut()
            .find(|r| r.urn == provider)
            .unwrap()
            .id = Some("other-id".into());
        dest.resources
            .iter_mut()
            .filter(|r| r.provider.is_some())
            .for_each(|r| r.provider.as_mut().unwrap().id = "other-id".into());
        move_resources(&mut source, &mut dest, &[pet("d")], TO).unwrap();
        let d = find(&dest, &moved("d")).unwrap();
        assert_eq!(d.provider.as_ref().unwrap().id, "other-id");

        // Other inputs: refused.
        let (mut source, mut dest2) = (sample(), dest.clone());
        let p = dest2
            .resources
            .iter_mut()
            .find(|r| r.urn == provider)
            .unwrap();
        p.inputs.insert("version".into(), "9.9.9".into());
        let before = (source.clone(), dest2.clone());
        let err = move_resources(&mut source, &mut dest2, &[urn("my:index:Comp", "a")], TO);
        assert_eq!(err, Err(SurgeryError::ProviderInDestination(provider)));
        assert_eq!((source, dest2), before);
    }

    #[test]
    fn refusals_leave_both_snapshots_unchanged() {
        let (mut source, mut dest) = (sample(), empty());
        move_resources(&mut source.clone(), &mut dest, &[pet("b")], TO).unwrap();
        let before = (source.clone(), dest.clone());
        assert_eq!(
            move_resources(&mut source, &mut dest, &[pet("b")], TO),
            Err(SurgeryError::InDestination(moved("b")))
        );
        assert_eq!(
            move_resources(
                &mut source,
                &mut dest,
                &[urn("pulumi:providers:random", "default")],
                TO
            ),
            Err(SurgeryError::MoveProvider(urn(
                "pulumi:providers:random",
                "default"
            )))
        );
        assert_eq!(
            move_resources(&mut source, &mut dest, &[pet("nope")], TO),
            Err(SurgeryError::NothingToMove)
        );
        assert_eq!((source.clone(), dest.clone()), before);
        let report = move_resources(&mut source, &mut dest, &[pet("nope"), pet("d")], TO).unwrap();
        assert_eq!(report.not_found, vec![pet("nope")]);
    }
}

//! Snapshot integrity: the rules a snapshot must satisfy before Converge
//! operates on it (seed 002, "Snapshot integrity"; Pulumi's
//! `Snapshot.VerifyIntegrity`).
//!
//! The resource list is read front to back, as Pulumi does. A reference is
//! satisfied when a resource with the referenced URN appeared at an *earlier*
//! index (any copy of that URN counts, including one marked `delete`):
//!
//! - **provider**: `<urn>::<id>` must name a provider resource (same URN and
//!   ID) that appeared earlier. Resources marked `pending_replacement` are
//!   exempt from the "unknown provider" rule, as in Pulumi: their provider may
//!   have been replaced before they are (delete-before-replace). A provider
//!   marked `delete` still satisfies the rule: a provider replaced
//!   create-before-delete stays in state, marked, until the resources that
//!   still use it are gone, and those may outlive a failed deployment.
//! - **parent**, **dependencies**, **property dependencies**, **deletedWith**
//!   must appear earlier.
//! - **one live resource per URN**: a URN may repeat only when every copy but
//!   one is marked `delete`, and the live copy must come first (Pulumi refuses
//!   a live copy that follows another copy of its URN; Converge writes no
//!   state that Pulumi would refuse).
//! - **IDs**: custom resources have a non-empty ID; components have none.
//! - **providers** are custom resources.
//!
//! Pending operations are not checked: they record in-flight work on objects
//! that may not exist, and reference nothing.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;

use converge_model::{DependencyKind, ProviderReference, ResourceState, Urn};

use crate::Snapshot;

/// One broken rule. Every message names the resources involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IntegrityError {
    #[error("resource {urn} refers to unknown provider {provider}")]
    UnknownProvider {
        urn: Urn,
        provider: ProviderReference,
    },
    #[error("resource {urn}'s provider {provider} comes after it")]
    ProviderAfter {
        urn: Urn,
        provider: ProviderReference,
    },
    #[error(
        "resource {urn}'s provider reference {provider} does not name a provider \
         (type pulumi:providers:<package>)"
    )]
    NotAProviderReference {
        urn: Urn,
        provider: ProviderReference,
    },
    #[error("provider resource {urn} is not a custom resource")]
    ProviderNotCustom { urn: Urn },
    #[error("child resource {urn}'s parent {parent} comes after it")]
    ParentAfter { urn: Urn, parent: Urn },
    #[error("child resource {urn} refers to missing parent {parent}")]
    MissingParent { urn: Urn, parent: Urn },
    #[error("resource {urn}'s dependency {dependency} comes after it")]
    DependencyAfter { urn: Urn, dependency: Urn },
    #[error("resource {urn}'s dependency {dependency} refers to missing resource")]
    MissingDependency { urn: Urn, dependency: Urn },
    #[error(
        "resource {urn}'s property dependency {dependency} (from property {property}) comes after it"
    )]
    PropertyDependencyAfter {
        urn: Urn,
        property: String,
        dependency: Urn,
    },
    #[error(
        "resource {urn}'s property dependency {dependency} (from property {property}) refers to \
         missing resource"
    )]
    MissingPropertyDependency {
        urn: Urn,
        property: String,
        dependency: Urn,
    },
    #[error(
        "resource {urn} is specified as being deleted with {deleted_with}, which comes after it"
    )]
    DeletedWithAfter { urn: Urn, deleted_with: Urn },
    #[error("resource {urn} is specified as being deleted with {deleted_with}, which is missing")]
    MissingDeletedWith { urn: Urn, deleted_with: Urn },
    #[error("resource {urn} refers to itself as its {kind}")]
    SelfReference { urn: Urn, kind: DependencyKind },
    #[error("duplicate resource {urn} (not marked for deletion)")]
    DuplicateResource { urn: Urn },
    #[error(
        "resource {urn} is not marked for deletion but comes after a copy of it that is; \
         the live copy must come first"
    )]
    LiveAfterDeletedCopy { urn: Urn },
    #[error("custom resource {urn} has no ID")]
    CustomWithoutId { urn: Urn },
    #[error("component resource {urn} has an ID ({id:?}); only custom resources have IDs")]
    ComponentWithId { urn: Urn, id: String },
}

impl IntegrityError {
    /// The resource whose record breaks the rule.
    pub fn urn(&self) -> &Urn {
        match self {
            IntegrityError::UnknownProvider { urn, .. }
            | IntegrityError::ProviderAfter { urn, .. }
            | IntegrityError::NotAProviderReference { urn, .. }
            | IntegrityError::ProviderNotCustom { urn }
            | IntegrityError::ParentAfter { urn, .. }
            | IntegrityError::MissingParent { urn, .. }
            | IntegrityError::DependencyAfter { urn, .. }
            | IntegrityError::MissingDependency { urn, .. }
            | IntegrityError::PropertyDependencyAfter { urn, .. }
            | IntegrityError::MissingPropertyDependency { urn, .. }
            | IntegrityError::DeletedWithAfter { urn, .. }
            | IntegrityError::MissingDeletedWith { urn, .. }
            | IntegrityError::SelfReference { urn, .. }
            | IntegrityError::DuplicateResource { urn }
            | IntegrityError::LiveAfterDeletedCopy { urn }
            | IntegrityError::CustomWithoutId { urn }
            | IntegrityError::ComponentWithId { urn, .. } => urn,
        }
    }
}

/// Checks every rule; returns the first violation in resource order.
pub fn verify(snapshot: &Snapshot) -> Result<(), IntegrityError> {
    let mut first = None;
    check(snapshot, &mut |e| {
        first = Some(e);
        ControlFlow::Break(())
    });
    first.map_or(Ok(()), Err)
}

/// Checks every rule; returns every violation, in resource order (empty when
/// the snapshot is valid).
pub fn verify_all(snapshot: &Snapshot) -> Vec<IntegrityError> {
    let mut all = Vec::new();
    check(snapshot, &mut |e| {
        all.push(e);
        ControlFlow::Continue(())
    });
    all
}

type Report<'a> = dyn FnMut(IntegrityError) -> ControlFlow<()> + 'a;

/// Where each URN and each provider reference occurs, to tell "comes after
/// it" from "missing" in messages. Built on the first question only: a
/// valid snapshot (every operation verifies its base) never asks, and the
/// two maps of every URN cost as much as the rest of the check.
struct Occurrences<'s> {
    resources: &'s [ResourceState],
    built: OnceCell<OccurrenceMaps<'s>>,
}

struct OccurrenceMaps<'s> {
    last_index: HashMap<&'s Urn, usize>,
    last_provider_index: HashMap<(&'s Urn, &'s str), usize>,
}

impl<'s> Occurrences<'s> {
    fn of(resources: &'s [ResourceState]) -> Self {
        Occurrences {
            resources,
            built: OnceCell::new(),
        }
    }

    fn maps(&self) -> &OccurrenceMaps<'s> {
        self.built.get_or_init(|| {
            let mut last_index = HashMap::new();
            let mut last_provider_index = HashMap::new();
            for (i, r) in self.resources.iter().enumerate() {
                last_index.insert(&r.urn, i);
                if let (true, Some(id)) = (r.is_provider(), r.id.as_deref()) {
                    last_provider_index.insert((&r.urn, id), i);
                }
            }
            OccurrenceMaps {
                last_index,
                last_provider_index,
            }
        })
    }

    fn comes_after(&self, urn: &Urn, index: usize) -> bool {
        self.maps().last_index.get(urn).is_some_and(|&j| j > index)
    }

    fn provider_comes_after(&self, key: &(&Urn, &str), index: usize) -> bool {
        self.maps()
            .last_provider_index
            .get(key)
            .is_some_and(|&j| j > index)
    }
}

/// What has been seen so far while walking the resource list.
struct Seen<'s> {
    urns: HashSet<&'s Urn>,
    /// URNs with a copy not marked `delete`.
    live: HashSet<&'s Urn>,
    providers: HashSet<(&'s Urn, &'s str)>,
}

fn check(snapshot: &Snapshot, report: &mut Report<'_>) {
    let resources = &snapshot.resources;
    let occurrences = Occurrences::of(resources);
    let mut seen = Seen {
        urns: HashSet::with_capacity(resources.len()),
        live: HashSet::with_capacity(resources.len()),
        providers: HashSet::new(),
    };
    for (index, r) in resources.iter().enumerate() {
        if check_resource(r, index, &occurrences, &seen, report).is_break() {
            return;
        }
        seen.urns.insert(&r.urn);
        if !r.delete {
            seen.live.insert(&r.urn);
        }
        if let (true, Some(id)) = (r.is_provider(), r.id.as_deref()) {
            seen.providers.insert((&r.urn, id));
        }
    }
}

fn check_resource(
    r: &ResourceState,
    index: usize,
    occurrences: &Occurrences<'_>,
    seen: &Seen<'_>,
    report: &mut Report<'_>,
) -> ControlFlow<()> {
    let urn = || r.urn.clone();

    // Kind and ID.
    if r.is_provider() && !r.custom {
        report(IntegrityError::ProviderNotCustom { urn: urn() })?;
    }
    let id = r.id.as_deref().filter(|id| !id.is_empty());
    match (r.custom, id) {
        (true, None) => report(IntegrityError::CustomWithoutId { urn: urn() })?,
        (false, Some(id)) => report(IntegrityError::ComponentWithId {
            urn: urn(),
            id: id.to_owned(),
        })?,
        _ => {}
    }

    // Provider.
    if let Some(provider) = &r.provider {
        check_provider(r, provider, index, occurrences, seen, report)?;
    }

    // Parent, dependencies, property dependencies, deletedWith.
    let precedes = |target: &Urn| seen.urns.contains(target);
    if let Some(parent) = &r.parent {
        if !precedes(parent) {
            report(if *parent == r.urn {
                self_reference(r, DependencyKind::Parent)
            } else if occurrences.comes_after(parent, index) {
                IntegrityError::ParentAfter {
                    urn: urn(),
                    parent: parent.clone(),
                }
            } else {
                IntegrityError::MissingParent {
                    urn: urn(),
                    parent: parent.clone(),
                }
            })?;
        }
    }
    for dependency in &r.dependencies {
        if !precedes(dependency) {
            report(if *dependency == r.urn {
                self_reference(r, DependencyKind::Dependency)
            } else if occurrences.comes_after(dependency, index) {
                IntegrityError::DependencyAfter {
                    urn: urn(),
                    dependency: dependency.clone(),
                }
            } else {
                IntegrityError::MissingDependency {
                    urn: urn(),
                    dependency: dependency.clone(),
                }
            })?;
        }
    }
    for (property, dependencies) in &r.property_dependencies {
        for dependency in dependencies {
            if !precedes(dependency) {
                report(if *dependency == r.urn {
                    self_reference(r, DependencyKind::PropertyDependency)
                } else if occurrences.comes_after(dependency, index) {
                    IntegrityError::PropertyDependencyAfter {
                        urn: urn(),
                        property: property.clone(),
                        dependency: dependency.clone(),
                    }
                } else {
                    IntegrityError::MissingPropertyDependency {
                        urn: urn(),
                        property: property.clone(),
                        dependency: dependency.clone(),
                    }
                })?;
            }
        }
    }
    if let Some(deleted_with) = &r.deleted_with {
        if !precedes(deleted_with) {
            report(if *deleted_with == r.urn {
                self_reference(r, DependencyKind::DeletedWith)
            } else if occurrences.comes_after(deleted_with, index) {
                IntegrityError::DeletedWithAfter {
                    urn: urn(),
                    deleted_with: deleted_with.clone(),
                }
            } else {
                IntegrityError::MissingDeletedWith {
                    urn: urn(),
                    deleted_with: deleted_with.clone(),
                }
            })?;
        }
    }

    // One live copy per URN, first among its copies.
    if !r.delete && seen.urns.contains(&r.urn) {
        report(if seen.live.contains(&r.urn) {
            IntegrityError::DuplicateResource { urn: urn() }
        } else {
            IntegrityError::LiveAfterDeletedCopy { urn: urn() }
        })?;
    }
    ControlFlow::Continue(())
}

fn check_provider(
    r: &ResourceState,
    provider: &ProviderReference,
    index: usize,
    occurrences: &Occurrences<'_>,
    seen: &Seen<'_>,
    report: &mut Report<'_>,
) -> ControlFlow<()> {
    let key = (&provider.urn, provider.id.as_str());
    if converge_model::provider_package(provider.urn.type_token()).is_none() {
        return report(IntegrityError::NotAProviderReference {
            urn: r.urn.clone(),
            provider: provider.clone(),
        });
    }
    if seen.providers.contains(&key) {
        return ControlFlow::Continue(());
    }
    if provider.urn == r.urn {
        return report(self_reference(r, DependencyKind::Provider));
    }
    if occurrences.provider_comes_after(&key, index) {
        return report(IntegrityError::ProviderAfter {
            urn: r.urn.clone(),
            provider: provider.clone(),
        });
    }
    if r.pending_replacement {
        // Its provider may have been replaced before it (delete-before-replace).
        return ControlFlow::Continue(());
    }
    report(IntegrityError::UnknownProvider {
        urn: r.urn.clone(),
        provider: provider.clone(),
    })
}

fn self_reference(r: &ResourceState, kind: DependencyKind) -> IntegrityError {
    IntegrityError::SelfReference {
        urn: r.urn.clone(),
        kind,
    }
}

//! Proptest generators (feature `testing`): valid snapshots, and journals an
//! engine following seed 002's rules could emit over them. Shared by this
//! crate's property tests and the engine's lifecycle fuzzer.
//!
//! Both generators read their random decisions from a *choice tape*, a
//! `Vec<u32>` that proptest generates and shrinks. A missing choice reads as
//! 0, and 0 always picks the simplest option (no extra resource, a `same`
//! step, success), so a shrunk tape gives a shorter, plainer case.
//!
//! - [`arb_snapshot`]: a stack resource, default and explicit providers,
//!   components with children, custom resources (some parented by custom
//!   resources) with dependencies, property dependencies and deletedWith on
//!   earlier resources, `protect`, leftovers of earlier deployments (copies
//!   marked `delete` after a create-before-delete replacement, including a
//!   replaced provider and resources still using it; resources marked
//!   `pending_replacement` by an interrupted delete-before-replace) and
//!   pending operations.
//! - [`arb_journal`] / [`arb_causal_journal`]: journals an engine following
//!   seed 002's rules could emit over a snapshot (updates with every kind of
//!   step, refreshes, failures, concurrency; the simulated engine is
//!   described in `testing/journal/mod.rs`). Every prefix models a crash.

mod journal;

pub use journal::{arb_causal_journal, arb_journal, CausalJournal};

use converge_model::{
    provider_package, provider_type, PropertyMap, PropertyValue, ProviderReference, ResourceState,
    Urn, STACK_TYPE,
};
use proptest::prelude::*;

use crate::{OperationType, PendingOperation, Snapshot};

/// Stack and project of every generated URN.
pub const STACK: &str = "dev";
pub const PROJECT: &str = "proj";
const PACKAGES: [&str; 2] = ["aws", "random"];

/// Random valid snapshots (they pass [`crate::integrity::verify`]).
pub fn arb_snapshot() -> impl Strategy<Value = Snapshot> {
    prop::collection::vec(any::<u32>(), 0..400)
        .prop_map(|choices| snapshot_from(&mut Tape::new(choices)))
}

/// A base snapshot and a journal over it.
pub fn arb_snapshot_and_journal(
) -> impl Strategy<Value = (Snapshot, Vec<crate::journal::JournalEntry>)> {
    arb_snapshot().prop_flat_map(|base| {
        let journal = arb_journal(&base);
        (Just(base), journal)
    })
}

/// A source of choices; reads 0 once exhausted.
#[derive(Debug, Clone)]
pub(crate) struct Tape {
    choices: Vec<u32>,
    position: usize,
}

impl Tape {
    pub(crate) fn new(choices: Vec<u32>) -> Self {
        Tape {
            choices,
            position: 0,
        }
    }

    fn next(&mut self) -> u32 {
        let choice = self.choices.get(self.position).copied().unwrap_or(0);
        self.position += 1;
        choice
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let choice = self.next() as usize;
        if n == 0 {
            0
        } else {
            choice % n
        }
    }

    /// True with roughly `percent`% probability; false when exhausted.
    pub(crate) fn chance(&mut self, percent: u32) -> bool {
        self.next() % 100 >= 100 - percent.min(100)
    }

    /// One of `items`, the first when exhausted.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        let i = self.below(items.len());
        items.get(i)
    }
}

/// The URN of a resource named `name` of type `ty` under `parent`.
pub(crate) fn child_urn(parent: Option<&Urn>, ty: &str, name: &str) -> Urn {
    Urn::for_resource(STACK, PROJECT, parent, ty, name).expect("generated URNs are valid")
}

pub(crate) fn stack_urn() -> Urn {
    child_urn(None, STACK_TYPE, &format!("{PROJECT}-{STACK}"))
}

pub(crate) fn is_stack(r: &ResourceState) -> bool {
    r.type_token == STACK_TYPE
}

pub(crate) fn provider_reference(provider: &ResourceState) -> ProviderReference {
    ProviderReference {
        urn: provider.urn.clone(),
        id: provider.id.clone().unwrap_or_default(),
    }
}

/// The package a provider resource serves or a custom resource belongs to.
pub(crate) fn package_of(r: &ResourceState) -> &str {
    let ty = r.type_token.as_str();
    provider_package(ty).unwrap_or_else(|| converge_model::package_of(ty))
}

pub(crate) fn outputs(generation: u32) -> PropertyMap {
    let mut map = PropertyMap::new();
    map.insert(
        "generation".to_owned(),
        PropertyValue::Number(f64::from(generation)),
    );
    map
}

/// Builds a valid snapshot from the tape.
fn snapshot_from(tape: &mut Tape) -> Snapshot {
    let mut b = SnapshotBuilder::default();
    b.push(ResourceState::new(stack_urn(), false));
    for _ in 0..tape.below(24) {
        match tape.below(10) {
            0 => b.provider(tape, false),
            1 => b.provider(tape, true),
            2 | 3 => b.component(tape),
            _ => b.custom(tape),
        }
    }
    for _ in 0..tape.below(3) {
        b.replaced_leftover(tape);
    }
    for _ in 0..tape.below(3) {
        b.interrupted_delete_before_replace(tape);
    }
    let mut snapshot = Snapshot::empty("2024-01-01T00:00:00Z");
    for _ in 0..tape.below(3) {
        let kind = *tape
            .pick(&[
                OperationType::Creating,
                OperationType::Updating,
                OperationType::Deleting,
            ])
            .unwrap_or(&OperationType::Creating);
        let n = b.fresh();
        let mut resource =
            ResourceState::new(child_urn(None, "aws:index:Orphan", &format!("op{n}")), true);
        if kind != OperationType::Creating {
            resource.id = Some(format!("id-{n}"));
        }
        snapshot
            .pending_operations
            .push(PendingOperation { resource, kind });
    }
    snapshot.resources = b.resources;
    snapshot
}

#[derive(Default)]
struct SnapshotBuilder {
    resources: Vec<ResourceState>,
    counter: u32,
}

impl SnapshotBuilder {
    fn fresh(&mut self) -> u32 {
        self.counter += 1;
        self.counter
    }

    fn push(&mut self, r: ResourceState) {
        self.resources.push(r);
    }

    /// Live resources matching `pred`.
    fn live(&self, pred: impl Fn(&ResourceState) -> bool) -> Vec<usize> {
        (0..self.resources.len())
            .filter(|&i| !self.resources[i].delete && pred(&self.resources[i]))
            .collect()
    }

    fn pick_live(&self, tape: &mut Tape, pred: impl Fn(&ResourceState) -> bool) -> Option<usize> {
        tape.pick(&self.live(pred)).copied()
    }

    fn stack(&self) -> Option<Urn> {
        self.resources
            .iter()
            .find(|r| is_stack(r))
            .map(|r| r.urn.clone())
    }

    fn provider(&mut self, tape: &mut Tape, explicit: bool) {
        let package = *tape.pick(&PACKAGES).unwrap_or(&"aws");
        let n = self.fresh();
        let ty = provider_type(package);
        let (parent, name) = if explicit {
            (self.stack(), format!("explicit-{n}"))
        } else {
            (None, "default".to_owned())
        };
        let urn = child_urn(parent.as_ref(), &ty, &name);
        if self.resources.iter().any(|r| r.urn == urn) {
            return;
        }
        let mut p = ResourceState::new(urn, true);
        p.parent = parent;
        p.id = Some(format!("provider-id-{n}"));
        p.outputs = outputs(n);
        self.push(p);
    }

    fn component(&mut self, tape: &mut Tape) {
        let parent = match self.pick_live(tape, |r| !r.custom) {
            Some(i) => self.resources[i].urn.clone(),
            None => return,
        };
        let n = self.fresh();
        let mut c = ResourceState::new(
            child_urn(Some(&parent), "my:index:Component", &format!("c{n}")),
            false,
        );
        c.parent = Some(parent);
        c.protect = tape.chance(10);
        c.outputs = outputs(n);
        self.push(c);
    }

    fn custom(&mut self, tape: &mut Tape) {
        let package = *tape.pick(&PACKAGES).unwrap_or(&"aws");
        let provider = match self.pick_live(tape, |r| r.is_provider() && package_of(r) == package) {
            Some(i) => provider_reference(&self.resources[i]),
            None => return self.provider(tape, false),
        };
        // Components usually parent resources; sometimes a custom resource does.
        let by_custom = tape.chance(15);
        let parent = self.pick_live(tape, |r| {
            if by_custom {
                r.custom && !r.is_provider()
            } else {
                !r.custom
            }
        });
        let parent = parent
            .map(|i| self.resources[i].urn.clone())
            .or_else(|| self.stack());
        let n = self.fresh();
        let ty = format!("{package}:index:Thing");
        let mut r = ResourceState::new(child_urn(parent.as_ref(), &ty, &format!("r{n}")), true);
        r.parent = parent;
        r.provider = Some(provider);
        r.id = Some(format!("id-{n}"));
        r.protect = tape.chance(10);
        r.inputs = outputs(n);
        r.outputs = outputs(n);
        for k in 0..tape.below(4) {
            let Some(i) = self.pick_live(tape, |d| !is_stack(d)) else {
                break;
            };
            let dep = self.resources[i].urn.clone();
            if !r.dependencies.contains(&dep) {
                r.dependencies.push(dep.clone());
            }
            if tape.chance(60) {
                r.property_dependencies
                    .entry(format!("input{k}"))
                    .or_default()
                    .push(dep);
            }
        }
        if tape.chance(20) {
            // Python sends every input key, with empty lists when unused.
            r.property_dependencies
                .entry("plain".to_owned())
                .or_default();
        }
        if tape.chance(15) {
            if let Some(i) = self.pick_live(tape, |d| d.custom && !d.is_provider()) {
                r.deleted_with = Some(self.resources[i].urn.clone());
            }
        }
        self.push(r);
    }

    /// What a create-before-delete replacement leaves when its deployment
    /// stops before deleting the old copy: the old copy, marked `delete`,
    /// after the live one. A replaced provider also leaves the old copies of
    /// resources replaced with it, still using the old provider.
    fn replaced_leftover(&mut self, tape: &mut Tape) {
        let Some(i) = self.pick_live(tape, |r| r.custom) else {
            return;
        };
        let old = self.old_copy(i);
        let old_ref = provider_reference(&old);
        let was_provider = old.is_provider();
        let live_urn = self.resources[i].urn.clone();
        self.push(old);
        if was_provider {
            let users = self.live(|r| r.provider.as_ref().is_some_and(|p| p.urn == live_urn));
            for u in users {
                if tape.chance(50) {
                    let mut copy = self.old_copy(u);
                    copy.provider = Some(old_ref.clone());
                    self.push(copy);
                }
            }
        }
    }

    fn old_copy(&mut self, i: usize) -> ResourceState {
        let n = self.fresh();
        let mut old = self.resources[i].clone();
        old.delete = true;
        old.protect = false;
        old.id = Some(format!("old-id-{n}"));
        old
    }

    /// A delete-before-replace whose deployment stopped after the delete.
    fn interrupted_delete_before_replace(&mut self, tape: &mut Tape) {
        if let Some(i) = self.pick_live(tape, |r| r.custom && !r.is_provider()) {
            self.resources[i].pending_replacement = true;
        }
    }
}

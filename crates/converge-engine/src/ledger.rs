//! The ledger: who holds what in one deployment.
//!
//! Two tables, kept under the deployment's one lock:
//!
//! - a slot per old (base) resource, by base index (an update reaches most
//!   of them), holding what happened to it, its one [`Disposition`]:
//!   reached by a registration, taken over,
//!   replaced create-before-delete, or its object deleted by a
//!   delete-before-replace;
//! - each registration, by URN: reserved when the registration starts, its
//!   state recorded when its step is done.
//!
//! [`Ledger::reserve`] and [`Ledger::claim`] check and change both in one
//! step and return a `Result`: a URN is registered once, and an old
//! resource is held by one registration. Two registrations that reach the
//! same old resource (by URN or through aliases) get
//! [`EngineError::OldResourceClaimed`] before any provider call, never a
//! double takeover.
//!
//! What used to be cached beside this is derived from it: a rename is a
//! takeover by a registration of another URN ([`Ledger::renamed_to`]), and
//! the references of a base resource after renames are its base references
//! with every rename applied ([`Ledger::renames`]).

use std::collections::HashMap;
use std::sync::Arc;

use converge_model::{ResourceState, Urn};
use converge_state::Snapshot;

use crate::error::EngineError;

/// What this deployment did with one old resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Disposition {
    /// The registration of this URN reached it (by URN or alias) and holds
    /// it; its step has not taken it over (it is running, or it failed).
    Seen(Urn),
    /// The registration of this URN took it over (same, update, import,
    /// read, or a replacement of an object already gone): the old state
    /// leaves the snapshot for the registration's.
    Claimed(Urn),
    /// The registration of `by` replaced it create-before-delete: the
    /// original is deleted once the program has exited. `object_gone`: a
    /// delete-before-replace of something it depends on has deleted its
    /// object since; only its state is left to remove.
    Replaced { by: Urn, object_gone: bool },
    /// A delete-before-replace deleted its object; its state stays, pending
    /// replacement, held by the registration that reached it, if one has.
    Deleted { by: Option<Urn> },
}

impl Disposition {
    /// The registration that holds this old resource, if one does.
    pub fn holder(&self) -> Option<&Urn> {
        match self {
            Disposition::Seen(by) | Disposition::Claimed(by) => Some(by),
            Disposition::Replaced { by, .. } => Some(by),
            Disposition::Deleted { by } => by.as_ref(),
        }
    }

    /// True if the object is gone and only the state is left.
    pub fn object_gone(&self) -> bool {
        matches!(
            self,
            Disposition::Deleted { .. }
                | Disposition::Replaced {
                    object_gone: true,
                    ..
                }
        )
    }
}

/// A table keyed by URN. Every registration looks its URN up in a few of
/// these, so they hash with foldhash rather than SipHash (a URN's hash was
/// 6 % of a 100,000-resource preview; URNs come from the user's own
/// program, not from an adversary).
pub(crate) type UrnMap<V> = HashMap<Urn, V, foldhash::fast::RandomState>;

/// A resource registered in this deployment.
#[derive(Debug, Clone)]
pub(crate) struct Registered {
    /// The operation whose end entry put this state in the new list; `None`
    /// when nothing was recorded (an untargeted new resource).
    pub op: Option<u64>,
    pub state: Recorded,
}

/// Where a registration's state is held.
#[derive(Debug, Clone)]
pub(crate) enum Recorded {
    /// The base's resource at this index, as it is: a Same step that
    /// changed nothing, or an old state left in place. Not copied: a no-op
    /// update of 100,000 resources would hold 100,000 copies of its base.
    Base(usize),
    /// A state of its own, shared with the step's finish event.
    Own(Arc<ResourceState>),
}

/// A recorded registration as lookups see it: its state wherever it is
/// held.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RegisteredRef<'a> {
    pub op: Option<u64>,
    pub state: &'a ResourceState,
}

/// The registrations of this deployment by URN: reserved (`None`) from the
/// start of the registration, recorded once its step is done. Lookups see
/// recorded registrations only; reservations matter to [`Ledger::reserve`].
#[derive(Debug)]
pub(crate) struct Registrations {
    by_urn: UrnMap<Option<Registered>>,
    /// What [`Recorded::Base`] indexes.
    base: Arc<Snapshot>,
}

impl Registrations {
    /// Room for as many registrations as the base has resources (a program
    /// registers about as many), so the map does not grow by rehashing into
    /// fresh memory.
    fn new(base: Arc<Snapshot>) -> Self {
        Registrations {
            by_urn: UrnMap::with_capacity_and_hasher(base.resources.len(), Default::default()),
            base,
        }
    }

    fn view<'a>(&'a self, r: &'a Registered) -> RegisteredRef<'a> {
        let state = match &r.state {
            Recorded::Base(i) => &self.base.resources[*i],
            Recorded::Own(state) => state,
        };
        RegisteredRef { op: r.op, state }
    }

    /// The recorded registration of `urn`.
    pub fn get(&self, urn: &Urn) -> Option<RegisteredRef<'_>> {
        let r = self.by_urn.get(urn)?.as_ref()?;
        Some(self.view(r))
    }

    /// Where the recorded registration of `urn` holds its state.
    #[cfg(test)]
    pub fn recorded(&self, urn: &Urn) -> Option<&Recorded> {
        Some(&self.by_urn.get(urn)?.as_ref()?.state)
    }

    /// Gives the recorded registration of `urn` a new state (its outputs
    /// registered); nothing if it is not recorded.
    pub fn set_state(&mut self, urn: &Urn, state: Arc<ResourceState>) {
        if let Some(Some(r)) = self.by_urn.get_mut(urn) {
            r.state = Recorded::Own(state);
        }
    }

    /// True if the registration of `urn` has started and its step is not
    /// done yet.
    pub fn in_flight(&self, urn: &Urn) -> bool {
        matches!(self.by_urn.get(urn), Some(None))
    }

    /// True if `urn` is registered and recorded.
    pub fn contains_key(&self, urn: &Urn) -> bool {
        self.get(urn).is_some()
    }

    /// Every recorded registration.
    pub fn iter(&self) -> impl Iterator<Item = (&Urn, RegisteredRef<'_>)> {
        self.by_urn
            .iter()
            .filter_map(|(urn, r)| r.as_ref().map(|r| (urn, self.view(r))))
    }
}

#[derive(Debug)]
pub(crate) struct Ledger {
    /// By base index: most base resources are reached in an update.
    olds: Vec<Option<Disposition>>,
    pub registered: Registrations,
}

impl Ledger {
    pub fn new(base: Arc<Snapshot>) -> Self {
        let n = base.resources.len();
        Ledger {
            olds: vec![None; n],
            registered: Registrations::new(base),
        }
    }

    /// The base snapshot the old resources' indices refer to.
    fn base(&self) -> &Snapshot {
        &self.registered.base
    }

    fn old(&self, i: usize) -> Option<&Disposition> {
        self.olds.get(i).and_then(Option::as_ref)
    }

    fn set_old(&mut self, i: usize, disposition: Disposition) {
        self.olds[i] = Some(disposition);
    }

    /// Starts the registration of `urn`, which reached the old resource
    /// `old` (if any): refused if `urn` was registered before, or if
    /// another registration holds `old`. Nothing changes when it is
    /// refused.
    pub fn reserve(&mut self, urn: &Urn, old: Option<usize>) -> Result<(), EngineError> {
        if self.registered.by_urn.contains_key(urn) {
            return Err(EngineError::DuplicateUrn(urn.clone()));
        }
        if let Some(i) = old {
            let next = match self.old(i).map(Disposition::holder) {
                None => Disposition::Seen(urn.clone()),
                Some(Some(holder)) => return Err(self.taken(i, urn, holder)),
                // Deleted before any registration reached it.
                Some(None) => Disposition::Deleted {
                    by: Some(urn.clone()),
                },
            };
            self.set_old(i, next);
        }
        self.registered.by_urn.insert(urn.clone(), None);
        Ok(())
    }

    /// The registration of `urn` takes over old resource `i`. Refused if
    /// another registration holds it.
    pub fn claim(&mut self, i: usize, urn: &Urn) -> Result<(), EngineError> {
        self.check_holder(i, urn)?;
        self.set_old(i, Disposition::Claimed(urn.clone()));
        Ok(())
    }

    /// The registration of `urn` replaced old resource `i`
    /// create-before-delete. Refused if another registration holds it.
    pub fn replace(&mut self, i: usize, urn: &Urn) -> Result<(), EngineError> {
        self.check_holder(i, urn)?;
        let object_gone = self.old(i).is_some_and(Disposition::object_gone);
        let next = Disposition::Replaced {
            by: urn.clone(),
            object_gone,
        };
        self.set_old(i, next);
        Ok(())
    }

    /// A delete-before-replace deleted the object of old resource `i`. A
    /// resource already taken over is never deleted so (its object is the
    /// registration's), and stays taken over.
    pub fn object_deleted(&mut self, i: usize) {
        let next = match self.olds[i].take() {
            None => Disposition::Deleted { by: None },
            Some(Disposition::Seen(by)) => Disposition::Deleted { by: Some(by) },
            Some(Disposition::Replaced { by, .. }) => Disposition::Replaced {
                by,
                object_gone: true,
            },
            Some(d @ (Disposition::Deleted { .. } | Disposition::Claimed(_))) => d,
        };
        self.set_old(i, next);
    }

    /// Records the state of the registration of `urn` (done with its step).
    pub fn record(&mut self, urn: Urn, registered: Registered) {
        self.registered.by_urn.insert(urn, Some(registered));
    }

    /// What happened to old resource `i`; `None` if nothing did.
    pub fn disposition(&self, i: usize) -> Option<&Disposition> {
        self.old(i)
    }

    /// True if a registration took over old resource `i`.
    pub fn is_claimed(&self, i: usize) -> bool {
        matches!(self.old(i), Some(Disposition::Claimed(_)))
    }

    /// True if the object of old resource `i` was deleted in this
    /// deployment.
    pub fn object_gone(&self, i: usize) -> bool {
        self.old(i).is_some_and(Disposition::object_gone)
    }

    /// The URN old resource `i` lives on under, if a registration of
    /// another URN took it over (an alias).
    pub fn renamed_to(&self, i: usize) -> Option<&Urn> {
        match self.old(i) {
            Some(Disposition::Claimed(by)) if *by != self.base().resources[i].urn => Some(by),
            _ => None,
        }
    }

    /// Every rename so far: old URN, new URN.
    pub fn renames(&self) -> Vec<(Urn, Urn)> {
        (0..self.olds.len())
            .filter_map(|i| {
                let to = self.renamed_to(i)?;
                Some((self.base().resources[i].urn.clone(), to.clone()))
            })
            .collect()
    }

    /// Refuses a takeover of `i` by `urn` if another registration holds it.
    fn check_holder(&self, i: usize, urn: &Urn) -> Result<(), EngineError> {
        match self.old(i).and_then(Disposition::holder) {
            Some(holder) if holder != urn => Err(self.taken(i, urn, holder)),
            _ => Ok(()),
        }
    }

    fn taken(&self, i: usize, urn: &Urn, holder: &Urn) -> EngineError {
        EngineError::OldResourceClaimed {
            urn: urn.clone(),
            holder: holder.clone(),
            old: self.base().resources[i].urn.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urn(name: &str) -> Urn {
        Urn::parse(&format!("urn:pulumi:s::p::pkg:index:T::{name}")).unwrap()
    }

    /// A ledger over a base of `x` (index 0) and `y` (index 1).
    fn ledger() -> Ledger {
        let mut base = Snapshot::empty("2026-01-01T00:00:00Z");
        for name in ["x", "y"] {
            base.resources.push(ResourceState::new(urn(name), false));
        }
        Ledger::new(Arc::new(base))
    }

    fn recorded(name: &str) -> Registered {
        Registered {
            op: Some(1),
            state: Recorded::Own(Arc::new(ResourceState::new(urn(name), false))),
        }
    }

    #[test]
    fn a_urn_is_reserved_once() {
        let mut l = ledger();
        l.reserve(&urn("a"), None).unwrap();
        assert_eq!(
            l.reserve(&urn("a"), None),
            Err(EngineError::DuplicateUrn(urn("a")))
        );
        // Still refused once recorded; lookups see recorded ones only.
        assert!(!l.registered.contains_key(&urn("a")));
        l.record(urn("a"), recorded("a"));
        assert!(l.registered.contains_key(&urn("a")));
        assert_eq!(
            l.reserve(&urn("a"), None),
            Err(EngineError::DuplicateUrn(urn("a")))
        );
        assert_eq!(l.registered.iter().count(), 1);
    }

    #[test]
    fn a_refused_reservation_changes_nothing() {
        let mut l = ledger();
        l.reserve(&urn("x"), Some(0)).unwrap();
        let err = l.reserve(&urn("x2"), Some(0)).unwrap_err();
        assert_eq!(
            err,
            EngineError::OldResourceClaimed {
                urn: urn("x2"),
                holder: urn("x"),
                old: urn("x"),
            }
        );
        let message = err.to_string();
        assert!(
            message.contains("::x2") && message.contains("::x "),
            "{message}"
        );
        // x2 was not reserved: a later registration of it is no duplicate.
        l.reserve(&urn("x2"), None).unwrap();
        assert_eq!(l.disposition(0), Some(&Disposition::Seen(urn("x"))));
    }

    #[test]
    fn two_aliases_of_one_old_resource_never_both_claim_it() {
        let mut l = ledger();
        l.reserve(&urn("a"), Some(1)).unwrap();
        let refused = l.reserve(&urn("b"), Some(1));
        assert!(matches!(
            refused,
            Err(EngineError::OldResourceClaimed { ref holder, .. }) if *holder == urn("a")
        ));
        assert!(l.claim(1, &urn("b")).is_err());
        assert!(l.replace(1, &urn("b")).is_err());
        l.claim(1, &urn("a")).unwrap();
        assert!(l.claim(1, &urn("b")).is_err());
        assert_eq!(l.disposition(1), Some(&Disposition::Claimed(urn("a"))));
    }

    #[test]
    fn a_takeover_under_another_urn_is_a_rename() {
        let mut l = ledger();
        l.reserve(&urn("x"), Some(0)).unwrap();
        l.reserve(&urn("y2"), Some(1)).unwrap();
        assert!(l.renames().is_empty(), "seen is not yet taken over");
        l.claim(0, &urn("x")).unwrap();
        l.claim(1, &urn("y2")).unwrap();
        assert_eq!(l.renamed_to(0), None);
        assert_eq!(l.renamed_to(1), Some(&urn("y2")));
        assert_eq!(l.renames(), vec![(urn("y"), urn("y2"))]);
        assert!(l.is_claimed(0) && l.is_claimed(1));
    }

    #[test]
    fn a_deleted_object_keeps_its_holder() {
        let mut l = ledger();
        // Deleted before its registration came: the registration holds it.
        l.object_deleted(0);
        assert_eq!(l.disposition(0), Some(&Disposition::Deleted { by: None }));
        l.reserve(&urn("x"), Some(0)).unwrap();
        assert!(l.object_gone(0));
        assert_eq!(
            l.disposition(0).and_then(Disposition::holder),
            Some(&urn("x"))
        );
        assert!(l.reserve(&urn("x2"), Some(0)).is_err());
        l.claim(0, &urn("x")).unwrap();
        assert!(!l.object_gone(0));
        // Deleting again leaves a takeover alone.
        l.object_deleted(0);
        assert!(l.is_claimed(0));

        // Seen, then deleted by someone else's delete-before-replace.
        l.reserve(&urn("y"), Some(1)).unwrap();
        l.object_deleted(1);
        assert_eq!(
            l.disposition(1),
            Some(&Disposition::Deleted { by: Some(urn("y")) })
        );
    }

    #[test]
    fn a_replaced_original_can_lose_its_object() {
        let mut l = ledger();
        l.reserve(&urn("x"), Some(0)).unwrap();
        l.replace(0, &urn("x")).unwrap();
        assert!(!l.object_gone(0));
        assert!(!l.is_claimed(0));
        l.object_deleted(0);
        assert_eq!(
            l.disposition(0),
            Some(&Disposition::Replaced {
                by: urn("x"),
                object_gone: true
            })
        );
        assert!(l.object_gone(0));
    }
}

//! The phases of the simulated deployment: refresh, registration of the
//! program's resources, deletion.

use std::collections::HashSet;

use converge_model::{ResourceState, Urn};

use super::{DeletionKind, Engine, Old, Registration, StepKind, MAX_IN_FLIGHT, MAX_NEW_RESOURCES};
use crate::journal::{rebuild_dependencies, JournalEntry};
use crate::testing::{child_urn, is_stack, outputs, package_of, provider_reference, stack_urn};

impl Engine {
    // --- refresh ---------------------------------------------------------

    pub(super) fn refresh_phase(&mut self) {
        let mut next = 0;
        loop {
            let can_start =
                !self.failed && next < self.base.len() && self.in_flight.len() < MAX_IN_FLIGHT;
            if !self.in_flight.is_empty() && (!can_start || self.tape.below(2) == 0) {
                let k = self.tape.below(self.in_flight.len());
                self.complete(k);
            } else if can_start {
                self.start(StepKind::Refresh { old: next }, Vec::new());
                next += 1;
            } else {
                break;
            }
        }
    }

    /// RebuiltBaseState: the engine's base becomes the refreshed resources.
    pub(super) fn rebase(&mut self) {
        let (kept, removed): (Vec<_>, Vec<_>) = self
            .base
            .drain(..)
            .zip(self.removed_by.iter())
            .partition(|(_, removed)| removed.is_none());
        let mut base: Vec<ResourceState> = kept.into_iter().map(|(r, _)| r).collect();
        let removed: Vec<ResourceState> = removed.into_iter().map(|(r, _)| r).collect();
        rebuild_dependencies(&mut base, &removed);
        self.removed_by = vec![None; base.len()];
        self.marked_by = vec![None; base.len()];
        self.base = base;
    }

    // --- registration ----------------------------------------------------

    pub(super) fn registration_phase(&mut self) {
        if !self.base.iter().any(|r| is_stack(r) && !r.delete) {
            let stack = ResourceState::new(stack_urn(), false);
            if !self.registered.contains_key(&stack.urn) {
                self.start(
                    StepKind::Create {
                        new: stack,
                        remove_old: None,
                    },
                    Vec::new(),
                );
            }
        }
        loop {
            if self.failed {
                self.drain();
                return;
            }
            let choice = self.tape.below(10);
            let full = self.in_flight.len() >= MAX_IN_FLIGHT;
            if !self.in_flight.is_empty() && (choice < 4 || full) {
                let k = self.tape.below(self.in_flight.len());
                self.complete(k);
                continue;
            }
            if choice == 9 && self.try_create() {
                continue;
            }
            if choice == 8 && self.try_outputs() {
                continue;
            }
            if self.try_register_next() {
                continue;
            }
            if !self.in_flight.is_empty() {
                let k = self.tape.below(self.in_flight.len());
                self.complete(k);
                continue;
            }
            // The program is done unless it registers more new resources.
            if !(self.tape.chance(30) && (self.try_create() || self.try_outputs())) {
                return;
            }
        }
    }

    /// The entry that made `urn` durable in this deployment: `Ok(Some)` when
    /// registered and ended, `Ok(None)` when not registered, `Err` while its
    /// step runs.
    fn registered_end(&self, urn: &Urn) -> Result<Option<usize>, ()> {
        match self.registered.get(urn) {
            Some(Registration { end: Some(end), .. }) => Ok(Some(*end)),
            Some(_) => Err(()),
            None => Ok(None),
        }
    }

    /// Decides the next base resource in program order; false when it waits
    /// for a step in flight or every base resource has been decided.
    fn try_register_next(&mut self) -> bool {
        let Some(b) = self.base.get(self.cursor).cloned() else {
            return false;
        };
        let old = self.cursor;
        if self.removed_by[old].is_some() {
            self.cursor += 1;
            return true;
        }
        if b.delete {
            self.deletions.push((old, DeletionKind::Delete));
            self.cursor += 1;
            return true;
        }
        // What the resource needs: parent and provider, or it cannot be in
        // the program; other references are dropped when not registered.
        let mut causes = Vec::new();
        let mut must_drop = false;
        let required = b.parent.iter().chain(b.provider.iter().map(|p| &p.urn));
        for urn in required {
            match self.registered_end(urn) {
                Err(()) => return false,
                Ok(Some(end)) => causes.push(end),
                Ok(None) => must_drop = true,
            }
        }
        let optional = b
            .dependencies
            .iter()
            .chain(b.property_dependencies.values().flatten())
            .chain(b.deleted_with.iter());
        for urn in optional {
            match self.registered_end(urn) {
                Err(()) => return false,
                Ok(Some(end)) => causes.push(end),
                Ok(None) => {}
            }
        }
        self.cursor += 1;

        let replaceable = b.custom && !b.protect;
        if b.pending_replacement {
            if must_drop || self.tape.chance(40) {
                self.deletions
                    .push((old, DeletionKind::RemovePendingReplace));
            } else {
                let new = self.new_state(&b, true);
                self.start(
                    StepKind::Create {
                        new,
                        remove_old: Some(old),
                    },
                    causes,
                );
            }
            return true;
        }
        if must_drop {
            if b.protect {
                // The engine refuses to delete a protected resource.
                self.failed = true;
            } else {
                self.deletions.push((old, DeletionKind::Delete));
            }
            return true;
        }
        let roll = if is_stack(&b) {
            0
        } else {
            self.tape.below(100)
        };
        let kind = match roll {
            50..=64 if b.custom => StepKind::Update {
                old: Old::Base(old),
                new: self.new_state(&b, false),
            },
            65..=74 if replaceable => StepKind::CreateReplacement {
                old,
                new: self.new_state(&b, true),
            },
            75..=82 if replaceable && !b.is_provider() => StepKind::DeleteBeforeReplace {
                old,
                new: self.new_state(&b, true),
            },
            83..=92 if !b.protect => {
                self.deletions.push((old, DeletionKind::Delete));
                return true;
            }
            93..=99 if b.custom && !b.is_provider() && self.provider_unchanged(&b) => {
                StepKind::PersistedRefresh {
                    old,
                    new: self.new_state(&b, false),
                }
            }
            _ => {
                let mut new = self.new_state(&b, false);
                new.outputs = b.outputs.clone();
                StepKind::Same { old, new }
            }
        };
        self.start(kind, causes);
        true
    }

    /// True when `b`'s provider reference still names the registered
    /// provider. A refresh before an update reads with the old provider and
    /// records the old reference, so the engine only persists one when the
    /// provider was not replaced in this deployment.
    fn provider_unchanged(&self, b: &ResourceState) -> bool {
        b.provider.as_ref().is_none_or(|p| {
            self.registered
                .get(&p.urn)
                .is_some_and(|reg| reg.state.id.as_deref() == Some(p.id.as_str()))
        })
    }

    /// The state the program registers for base resource `b`: references to
    /// what is not registered dropped, the provider's current ID, new
    /// outputs, and a new ID when `replace`.
    fn new_state(&mut self, b: &ResourceState, replace: bool) -> ResourceState {
        let registered = |urn: &Urn| self.registered.contains_key(urn);
        let mut new = b.clone();
        new.delete = false;
        new.pending_replacement = false;
        new.dependencies.retain(|d| registered(d));
        for deps in new.property_dependencies.values_mut() {
            deps.retain(|d| registered(d));
        }
        new.deleted_with = new.deleted_with.filter(|d| registered(d));
        if let Some(p) = &new.provider {
            if let Some(reg) = self.registered.get(&p.urn) {
                new.provider = Some(provider_reference(&reg.state));
            }
        }
        let n = self.fresh();
        new.outputs = outputs(n);
        if replace {
            new.id = Some(format!("replaced-id-{n}"));
        }
        new
    }

    /// Registers a new resource depending only on ended registrations.
    fn try_create(&mut self) -> bool {
        if self.new_resources >= MAX_NEW_RESOURCES {
            return false;
        }
        let done: Vec<(Urn, ResourceState, usize)> = self
            .registered
            .iter()
            .filter_map(|(urn, reg)| reg.end.map(|end| (urn.clone(), reg.state.clone(), end)))
            .collect();
        let parents: Vec<usize> = (0..done.len()).filter(|&i| !done[i].1.custom).collect();
        let Some(&parent) = self.tape.pick(&parents) else {
            return false;
        };
        let (parent_urn, parent_end) = (done[parent].0.clone(), done[parent].2);
        let mut causes = vec![parent_end];
        let n = self.fresh();
        let kind = self.tape.below(10);
        let package = if self.tape.chance(50) {
            "random"
        } else {
            "aws"
        };
        let mut new = if kind >= 8 {
            let ty = converge_model::provider_type(package);
            let mut p =
                ResourceState::new(child_urn(Some(&parent_urn), &ty, &format!("new{n}")), true);
            p.id = Some(format!("new-provider-id-{n}"));
            p
        } else if kind >= 6 {
            ResourceState::new(
                child_urn(Some(&parent_urn), "my:index:Component", &format!("new{n}")),
                false,
            )
        } else {
            let providers: Vec<_> = done
                .iter()
                .filter(|(_, s, _)| s.is_provider() && !s.delete && package_of(s) == package)
                .collect();
            let Some((_, provider, provider_end)) = self.tape.pick(&providers).copied() else {
                return false;
            };
            causes.push(*provider_end);
            let ty = format!("{package}:index:Thing");
            let mut r =
                ResourceState::new(child_urn(Some(&parent_urn), &ty, &format!("new{n}")), true);
            r.provider = Some(provider_reference(provider));
            r.id = Some(format!("new-id-{n}"));
            r
        };
        new.parent = Some(parent_urn);
        new.outputs = outputs(n);
        for k in 0..self.tape.below(4) {
            let candidates: Vec<_> = done.iter().filter(|(_, s, _)| !is_stack(s)).collect();
            let Some((dep, _, end)) = self.tape.pick(&candidates).copied() else {
                break;
            };
            causes.push(*end);
            if !new.dependencies.contains(dep) {
                new.dependencies.push(dep.clone());
            }
            if self.tape.chance(50) {
                new.property_dependencies
                    .entry(format!("input{k}"))
                    .or_default()
                    .push(dep.clone());
            }
        }
        if new.custom && !new.is_provider() && self.tape.chance(15) {
            let targets: Vec<_> = done
                .iter()
                .filter(|(_, s, _)| s.custom && !s.is_provider())
                .collect();
            if let Some((target, _, end)) = self.tape.pick(&targets).copied() {
                causes.push(*end);
                new.deleted_with = Some(target.clone());
            }
        }
        if self.base.iter().any(|r| r.urn == new.urn) || self.registered.contains_key(&new.urn) {
            return false;
        }
        self.new_resources += 1;
        self.start(
            StepKind::Create {
                new,
                remove_old: None,
            },
            causes,
        );
        true
    }

    /// Registers new outputs for an ended component registration.
    fn try_outputs(&mut self) -> bool {
        let components: Vec<Urn> = self
            .registered
            .iter()
            .filter(|(_, reg)| !reg.state.custom && reg.end.is_some())
            .map(|(urn, _)| urn.clone())
            .collect();
        let Some(urn) = self.tape.pick(&components).cloned() else {
            return false;
        };
        let n = self.fresh();
        let op = self.operation_id();
        let Some(reg) = self.registered.get(&urn) else {
            return false;
        };
        let mut state = reg.state.clone();
        state.outputs = outputs(n);
        let entry = JournalEntry::outputs(0, op, state.clone()).with_remove_new(reg.op);
        let (producer, previous) = (reg.op, reg.end);
        let end = self.emit(entry, previous.into_iter().collect());
        self.registered.insert(
            urn,
            Registration {
                state,
                op: producer,
                end: Some(end),
            },
        );
        true
    }

    // --- deletion --------------------------------------------------------

    pub(super) fn deletion_phase(&mut self) {
        loop {
            if self.failed {
                return self.drain();
            }
            let startable = self.startable_deletions();
            let can_start = !startable.is_empty() && self.in_flight.len() < MAX_IN_FLIGHT;
            if !self.in_flight.is_empty() && (!can_start || self.tape.below(2) == 0) {
                let k = self.tape.below(self.in_flight.len());
                self.complete(k);
            } else if can_start {
                let k = startable[self.tape.below(startable.len())];
                let (old, kind) = self.deletions.remove(k);
                let causes = self.deletion_causes(old);
                let step = match kind {
                    DeletionKind::Delete => StepKind::Delete { old },
                    DeletionKind::RemovePendingReplace => StepKind::RemovePendingReplace { old },
                };
                self.start(step, causes);
            } else {
                return;
            }
        }
    }

    /// Base resources after `old` that refer to its URN.
    fn referrers(&self, old: usize) -> impl Iterator<Item = usize> + '_ {
        let urn = &self.base[old].urn;
        (old + 1..self.base.len())
            .filter(move |&j| self.base[j].all_dependencies().any(|(_, u)| u == urn))
    }

    /// Positions in `deletions` that may start: every referrer still in
    /// state has been deleted (a referrer that was kept was removed when its
    /// replacement was registered).
    fn startable_deletions(&self) -> Vec<usize> {
        let waiting: HashSet<usize> = self.deletions.iter().map(|(old, _)| *old).collect();
        let running: HashSet<usize> = self
            .in_flight
            .iter()
            .filter_map(|s| match s.kind {
                StepKind::Delete { old } | StepKind::RemovePendingReplace { old } => Some(old),
                _ => None,
            })
            .collect();
        let mut startable: Vec<usize> = (0..self.deletions.len())
            .filter(|&k| {
                let old = self.deletions[k].0;
                self.referrers(old)
                    .all(|j| !waiting.contains(&j) && !running.contains(&j))
            })
            .collect();
        // Reverse dependency order first: the plainest choice deletes the
        // last resource first.
        startable.sort_by_key(|&k| std::cmp::Reverse(self.deletions[k].0));
        startable
    }

    /// What a deletion waits for: the removal of every referrer, and the
    /// mark that scheduled it.
    fn deletion_causes(&self, old: usize) -> Vec<usize> {
        let mut causes: Vec<usize> = self
            .referrers(old)
            .filter_map(|j| self.removed_by[j])
            .collect();
        causes.extend(self.marked_by[old]);
        causes
    }
}

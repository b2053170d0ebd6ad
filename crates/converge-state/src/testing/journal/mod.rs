//! Journals an engine following seed 002's rules could emit over a base
//! snapshot, produced by simulating one deployment on a model of the
//! engine's view.
//!
//! The simulated engine:
//!
//! - may start with a Write (a provider migration) and a SecretsManager entry;
//! - runs one of: an update; a refresh followed by RebuiltBaseState and an
//!   update (`up --refresh`); a refresh alone;
//! - refreshes every resource concurrently (RefreshSuccess replacing the state
//!   in place, or removing a custom resource found gone);
//! - registers the program's resources in dependency order: the base's live
//!   resources, each `same`, updated, replaced create-before-delete (the old
//!   copy marked `delete`), replaced delete-before-replace (the old copy
//!   marked `pending_replacement`, then removed by the replacement's
//!   creation), refreshed before its update (a persisted refresh the update
//!   then replaces by operation ID), or dropped from the program; resources
//!   marked `pending_replacement` are re-created or removed; new resources
//!   (components, custom resources, providers) depending on resources already
//!   registered; component outputs registered after the component;
//! - a step starts only after every step it depends on has ended, several
//!   independent steps may be in flight, and the first failure stops new
//!   steps (those in flight still end);
//! - after registration, deletes the dropped resources, the replaced old
//!   copies, and the base's copies already marked `delete`, each only after
//!   every resource that still referred to it has been deleted or replaced;
//! - never deletes or replaces a protected resource (dropping one ends the
//!   deployment, as the engine refuses).
//!
//! Crashes are every prefix of the journal. [`CausalJournal`] also records
//! which earlier entries each entry waited for, so a test can drop entries
//! that a backend may not have received yet.

mod phases;

use std::collections::BTreeMap;

use converge_model::{ResourceState, Urn};
use proptest::prelude::*;

use super::{outputs, Tape};
use crate::journal::JournalEntry;
use crate::{OperationType, PendingOperation, SecretsProviders, Snapshot};

const MAX_IN_FLIGHT: usize = 4;
const MAX_NEW_RESOURCES: usize = 8;

/// A journal and, for each entry, the indices of the earlier entries the
/// engine waited for (persisted) before emitting it.
#[derive(Debug, Clone)]
pub struct CausalJournal {
    pub entries: Vec<JournalEntry>,
    pub causes: Vec<Vec<usize>>,
}

impl CausalJournal {
    /// The entries a backend can hold when only the entries with
    /// `arrived[i]` were received: an entry counts only if it arrived and
    /// everything it waited for counts (the client sends nothing before its
    /// causes are persisted). Missing flags count as arrived.
    pub fn delivered(&self, arrived: &[bool]) -> Vec<JournalEntry> {
        let mut kept = vec![false; self.entries.len()];
        for i in 0..self.entries.len() {
            kept[i] =
                arrived.get(i).copied().unwrap_or(true) && self.causes[i].iter().all(|&c| kept[c]);
        }
        self.entries
            .iter()
            .zip(kept)
            .filter(|(_, k)| *k)
            .map(|(e, _)| e.clone())
            .collect()
    }
}

/// Random well-formed journals over `base`.
pub fn arb_journal(base: &Snapshot) -> impl Strategy<Value = Vec<JournalEntry>> {
    arb_causal_journal(base).prop_map(|j| j.entries)
}

/// Random well-formed journals over `base`, with their causes.
pub fn arb_causal_journal(base: &Snapshot) -> impl Strategy<Value = CausalJournal> {
    let base = base.clone();
    prop::collection::vec(any::<u32>(), 0..400)
        .prop_map(move |choices| Engine::run(&base, Tape::new(choices)))
}

/// Where the resource a step replaces lives.
#[derive(Debug, Clone, Copy)]
enum Old {
    Base(usize),
    New(u64),
}

#[derive(Debug, Clone)]
enum StepKind {
    /// A refresh of the refresh phase (not persisted as a step).
    Refresh {
        old: usize,
    },
    Same {
        old: usize,
        new: ResourceState,
    },
    Create {
        new: ResourceState,
        remove_old: Option<usize>,
    },
    Update {
        old: Old,
        new: ResourceState,
    },
    CreateReplacement {
        old: usize,
        new: ResourceState,
    },
    /// The delete half of a delete-before-replace; the create follows.
    DeleteBeforeReplace {
        old: usize,
        new: ResourceState,
    },
    /// A refresh before an update, persisted as a step; the update follows.
    PersistedRefresh {
        old: usize,
        new: ResourceState,
    },
    Delete {
        old: usize,
    },
    RemovePendingReplace {
        old: usize,
    },
}

#[derive(Debug)]
struct Step {
    op: u64,
    begin: usize,
    kind: StepKind,
}

/// A URN the program registered in this deployment.
#[derive(Debug)]
struct Registration {
    state: ResourceState,
    /// The operation whose new resource holds `state`.
    op: u64,
    /// The entry that made `state` durable; `None` while its step runs.
    end: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum DeletionKind {
    Delete,
    RemovePendingReplace,
}

#[derive(Debug)]
struct Engine {
    tape: Tape,
    entries: Vec<JournalEntry>,
    causes: Vec<Vec<usize>>,
    /// Entries every later entry depends on (Write, RebuiltBaseState).
    barrier: Vec<usize>,
    next_op: u64,
    fresh: u32,
    /// The engine's view of the base snapshot.
    base: Vec<ResourceState>,
    /// The entry that removed each base resource, if any.
    removed_by: Vec<Option<usize>>,
    /// The entry that marked each base resource `delete`, if any.
    marked_by: Vec<Option<usize>>,
    registered: BTreeMap<Urn, Registration>,
    in_flight: Vec<Step>,
    deletions: Vec<(usize, DeletionKind)>,
    cursor: usize,
    new_resources: usize,
    failed: bool,
}

impl Engine {
    fn run(base: &Snapshot, tape: Tape) -> CausalJournal {
        let mut engine = Engine {
            tape,
            entries: Vec::new(),
            causes: Vec::new(),
            barrier: Vec::new(),
            next_op: 1,
            fresh: 0,
            base: base.resources.clone(),
            removed_by: vec![None; base.resources.len()],
            marked_by: vec![None; base.resources.len()],
            registered: BTreeMap::new(),
            in_flight: Vec::new(),
            deletions: Vec::new(),
            cursor: 0,
            new_resources: 0,
            failed: false,
        };
        engine.deploy(base);
        CausalJournal {
            entries: engine.entries,
            causes: engine.causes,
        }
    }

    fn deploy(&mut self, base: &Snapshot) {
        if self.tape.chance(15) {
            // A provider migration rewrites the base before anything else.
            let mut migrated = base.clone();
            for r in migrated.resources.iter_mut().filter(|r| r.is_provider()) {
                r.outputs.insert("migrated".to_owned(), true.into());
            }
            self.base = migrated.resources.clone();
            let i = self.emit(JournalEntry::write(0, migrated), Vec::new());
            self.barrier.push(i);
        }
        if self.tape.chance(30) {
            let providers = SecretsProviders {
                kind: "passphrase".to_owned(),
                state: Some(r#"{"salt":"v1:c2FsdA==:v1:bm9uY2U=:Y3Q="}"#.to_owned()),
            };
            self.emit(JournalEntry::secrets_manager(0, providers), Vec::new());
        }
        let mode = self.tape.below(4);
        if mode >= 2 {
            self.refresh_phase();
            if mode == 3 || self.failed {
                return self.maybe_rebuilt_at_end();
            }
            let all: Vec<usize> = (0..self.entries.len()).collect();
            let i = self.emit(JournalEntry::rebuilt_base_state(0), all);
            self.barrier.push(i);
            self.rebase();
        }
        self.registration_phase();
        if !self.failed {
            self.deletion_phase();
        }
        self.maybe_rebuilt_at_end();
    }

    fn maybe_rebuilt_at_end(&mut self) {
        if self.tape.chance(10) {
            let all: Vec<usize> = (0..self.entries.len()).collect();
            self.emit(JournalEntry::rebuilt_base_state(0), all);
        }
    }

    // --- entries -------------------------------------------------------

    /// Appends `entry` with the next sequence ID; returns its index.
    fn emit(&mut self, mut entry: JournalEntry, mut causes: Vec<usize>) -> usize {
        let index = self.entries.len();
        entry.sequence_id = index as u64 + 1;
        causes.extend(self.barrier.iter().copied().filter(|&b| b < index));
        causes.sort_unstable();
        causes.dedup();
        self.entries.push(entry);
        self.causes.push(causes);
        index
    }

    fn operation_id(&mut self) -> u64 {
        let op = self.next_op;
        self.next_op += 1;
        op
    }

    fn fresh(&mut self) -> u32 {
        self.fresh += 1;
        self.fresh
    }

    /// Begins a step: emits its Begin and puts it in flight.
    fn start(&mut self, kind: StepKind, causes: Vec<usize>) {
        let op = self.operation_id();
        let operation = match &kind {
            StepKind::Create { new, .. } | StepKind::CreateReplacement { new, .. } => {
                let mut resource = new.clone();
                resource.id = None;
                Some(PendingOperation {
                    resource,
                    kind: OperationType::Creating,
                })
            }
            StepKind::Update { new, .. } => Some(PendingOperation {
                resource: new.clone(),
                kind: OperationType::Updating,
            }),
            StepKind::Delete { old } | StepKind::DeleteBeforeReplace { old, .. } => {
                Some(PendingOperation {
                    resource: self.base[*old].clone(),
                    kind: OperationType::Deleting,
                })
            }
            StepKind::Refresh { .. }
            | StepKind::Same { .. }
            | StepKind::PersistedRefresh { .. }
            | StepKind::RemovePendingReplace { .. } => None,
        };
        // A delete's Begin names the base resource instead, as the engine
        // writes it (the base here is the replay's: refreshes are rebased
        // before anything is deleted).
        let deleting = match &kind {
            StepKind::Delete { old } | StepKind::DeleteBeforeReplace { old, .. } => Some(*old),
            _ => None,
        };
        let entry = match deleting {
            Some(old) if self.tape.chance(50) => JournalEntry::begin_deleting(0, op, old),
            _ => JournalEntry::begin(0, op, operation),
        };
        let begin = self.emit(entry, causes);
        if let Some(state) = kind.new_state() {
            let registration = Registration {
                state: state.clone(),
                op,
                end: None,
            };
            self.registered.insert(state.urn.clone(), registration);
        }
        self.in_flight.push(Step { op, begin, kind });
    }

    /// Ends an in-flight step, successfully or not.
    fn complete(&mut self, k: usize) {
        let Step { op, begin, kind } = self.in_flight.remove(k);
        if kind.calls_provider() && self.tape.chance(7) {
            self.emit(JournalEntry::failure(0, op), vec![begin]);
            self.failed = true;
            return;
        }
        let cause = vec![begin];
        match kind {
            StepKind::Refresh { old } => {
                let custom = self.base[old].custom && !self.base[old].is_provider();
                let mut entry = JournalEntry::refresh_success(0, op).with_remove_old(old);
                if custom && self.tape.chance(15) {
                    let end = self.emit(entry, cause);
                    self.removed_by[old] = Some(end);
                } else {
                    let generation = self.fresh();
                    let mut refreshed = self.base[old].clone();
                    refreshed.outputs = outputs(generation);
                    self.base[old] = refreshed.clone();
                    entry = entry.with_state(refreshed);
                    self.emit(entry, cause);
                }
            }
            StepKind::Same { old, new } if new == self.base[old] && self.tape.chance(50) => {
                // The compact form: nothing of the state changed.
                let end = self.emit(JournalEntry::same(0, op, old), cause);
                self.removed_by[old] = Some(end);
                self.registered_done(new, op, end);
            }
            StepKind::Same { old, new }
            | StepKind::Update {
                old: Old::Base(old),
                new,
            } => {
                let end = self.emit(
                    JournalEntry::success(0, op)
                        .with_state(new.clone())
                        .with_remove_old(old),
                    cause,
                );
                self.removed_by[old] = Some(end);
                self.registered_done(new, op, end);
            }
            StepKind::Update {
                old: Old::New(previous),
                new,
            } => {
                let end = self.emit(
                    JournalEntry::success(0, op)
                        .with_state(new.clone())
                        .with_remove_new(previous),
                    cause,
                );
                self.registered_done(new, op, end);
            }
            StepKind::Create { new, remove_old } => {
                let mut entry = JournalEntry::success(0, op).with_state(new.clone());
                entry.remove_old = remove_old;
                let end = self.emit(entry, cause);
                if let Some(old) = remove_old {
                    self.removed_by[old] = Some(end);
                }
                self.registered_done(new, op, end);
            }
            StepKind::CreateReplacement { old, new } => {
                let end = self.emit(
                    JournalEntry::success(0, op)
                        .with_state(new.clone())
                        .with_delete_old(old),
                    cause,
                );
                self.base[old].delete = true;
                self.marked_by[old] = Some(end);
                self.deletions.push((old, DeletionKind::Delete));
                self.registered_done(new, op, end);
            }
            StepKind::DeleteBeforeReplace { old, new } => {
                let end = self.emit(
                    JournalEntry::success(0, op).with_pending_replacement_old(old),
                    cause,
                );
                self.base[old].pending_replacement = true;
                self.follow_up(
                    StepKind::Create {
                        new,
                        remove_old: Some(old),
                    },
                    end,
                );
            }
            StepKind::PersistedRefresh { old, new } => {
                let entry = JournalEntry::success(0, op)
                    .with_remove_old(old)
                    .with_refresh();
                if self.tape.chance(15) {
                    // Gone: the program's registration creates it anew.
                    let end = self.emit(entry, cause);
                    self.removed_by[old] = Some(end);
                    self.follow_up(
                        StepKind::Create {
                            new,
                            remove_old: None,
                        },
                        end,
                    );
                } else {
                    let generation = self.fresh();
                    let mut refreshed = self.base[old].clone();
                    refreshed.outputs = outputs(generation);
                    let end = self.emit(entry.with_state(refreshed), cause);
                    self.removed_by[old] = Some(end);
                    self.follow_up(
                        StepKind::Update {
                            old: Old::New(op),
                            new,
                        },
                        end,
                    );
                }
            }
            StepKind::Delete { old } | StepKind::RemovePendingReplace { old } => {
                let end = self.emit(JournalEntry::success(0, op).with_remove_old(old), cause);
                self.removed_by[old] = Some(end);
            }
        }
    }

    /// Starts the second step of a chain (delete-before-replace, refresh
    /// before update) unless a failure stopped the deployment.
    fn follow_up(&mut self, kind: StepKind, after: usize) {
        if !self.failed {
            self.start(kind, vec![after]);
        }
    }

    fn registered_done(&mut self, state: ResourceState, op: u64, end: usize) {
        self.registered.insert(
            state.urn.clone(),
            Registration {
                state,
                op,
                end: Some(end),
            },
        );
    }

    /// Completes in-flight steps until none is left.
    fn drain(&mut self) {
        while !self.in_flight.is_empty() {
            let k = self.tape.below(self.in_flight.len());
            self.complete(k);
        }
    }
}

impl StepKind {
    /// The state this step registers in the program, if any.
    fn new_state(&self) -> Option<&ResourceState> {
        match self {
            StepKind::Same { new, .. }
            | StepKind::Create { new, .. }
            | StepKind::Update { new, .. }
            | StepKind::CreateReplacement { new, .. }
            | StepKind::DeleteBeforeReplace { new, .. }
            | StepKind::PersistedRefresh { new, .. } => Some(new),
            StepKind::Refresh { .. }
            | StepKind::Delete { .. }
            | StepKind::RemovePendingReplace { .. } => None,
        }
    }

    /// Steps that call a provider can fail; `same` and bookkeeping steps
    /// cannot.
    fn calls_provider(&self) -> bool {
        !matches!(
            self,
            StepKind::Same { .. } | StepKind::RemovePendingReplace { .. }
        )
    }
}

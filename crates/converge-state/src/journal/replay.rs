//! Rebuilding a snapshot from a base snapshot and journal entries (seed 002,
//! "Pseudocode").
//!
//! New resources (those a step produced during this deployment) come first,
//! in the order their steps succeeded; then every base resource that was not
//! removed, in base order, replaced in place or marked as the entries say.
//! Because the engine never starts a step before the steps it depends on have
//! ended (and their end entries are persisted), this order keeps every
//! reference pointing backwards.
//!
//! Where the pseudocode is ambiguous or wrong, replay does the following, and
//! why:
//!
//! 1. **RefreshSuccess with `remove_new`**: the pseudocode's branches are
//!    inverted (it removes when there *is* a state and "replaces" with a
//!    missing one). Replay replaces the new resource with `state` when there
//!    is one and removes it otherwise, mirroring the `remove_old` branch and
//!    Pulumi's own replayer.
//! 2. The stray `case [REFRESH_SUCCESS, OUTPUTS]` line is read as the Outputs
//!    rule only: an unconditional replace would overwrite with a missing
//!    state.
//! 3. **Marks on a replaced base resource**: the pseudocode drops
//!    `delete_old`/`pending_replacement_old` when the same index was also
//!    replaced in place (refresh, outputs). Replay applies the marks to the
//!    replacement: a resource refreshed and then replaced
//!    create-before-delete would otherwise be live twice.
//! 4. **Write** is honoured only before every entry that touches resources
//!    (a SecretsManager entry may precede it), and only once; anywhere else it
//!    is a [`ReplayError::MisplacedWrite`], not silently applied or ignored:
//!    the indices of the entries before it would be meaningless.
//! 5. **RebuiltBaseState** (absent from the pseudocode) materializes the
//!    snapshot so far, dependencies rebuilt if a refresh happened, and makes
//!    it the base that later indices refer to, as Pulumi's replayer does.
//!    Unlike Pulumi, operations begun and not yet ended stay pending across
//!    it (Pulumi would keep only `creating` ones): after a crash, every object
//!    a provider may have touched is still on record.
//! 6. **Pending operations**: those of incomplete Begins in the order they
//!    began, then the base's `creating` operations (the others were resolved
//!    by the deployment that now runs). References to operations that
//!    produced no resource, and base indices out of range, are errors, never
//!    panics or guesses.
//! 7. **Rebuilding after a refresh** ([`rebuild_dependencies`]) drops
//!    dependencies, property dependencies and deletedWith that do not point
//!    to an earlier resource, and re-parents a resource whose parent is gone
//!    to its nearest surviving ancestor (the engine's `rebuildBaseState`
//!    does this; Pulumi's replayer forgets it, leaving a missing parent when a
//!    refresh deletes a custom resource that has children). Property keys
//!    whose lists become empty are kept.
//! 8. **Sequence IDs**: entries are applied in increasing order; identical
//!    duplicates (a retried upload) are applied once, conflicting ones are an
//!    error. Success and Failure entries without a Begin are accepted.
//! 9. The result keeps the base's manifest: this crate reads no clock, so the
//!    caller stamps a new one when it writes the snapshot.

use std::collections::{HashMap, HashSet};

use super::index_set::IndexSet;
use std::sync::Arc;

use converge_model::{ResourceState, Urn};

use super::{JournalEntry, JournalEntryKind};
use crate::{OperationType, PendingOperation, Snapshot};

/// Why a journal cannot be replayed on its base snapshot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error(
        "journal entry {sequence_id}: {field} index {index} is out of range (the base snapshot \
         has {len} resources)"
    )]
    IndexOutOfRange {
        sequence_id: u64,
        field: &'static str,
        index: usize,
        len: usize,
    },
    #[error(
        "journal entry {sequence_id}: {field} refers to operation {operation_id}, which produced \
         no resource"
    )]
    UnknownOperation {
        sequence_id: u64,
        field: &'static str,
        operation_id: u64,
    },
    #[error("journal entry {sequence_id}: operation {operation_id} already produced a resource")]
    DuplicateOperation { sequence_id: u64, operation_id: u64 },
    #[error(
        "journal entry {sequence_id}: a Write entry is only allowed once, before every entry that \
         touches resources"
    )]
    MisplacedWrite { sequence_id: u64 },
    #[error(
        "journal entry {sequence_id}: sameOld carries base resource {index}, which an earlier \
         entry removed"
    )]
    CarriedRemoved { sequence_id: u64, index: usize },
    #[error("journal entry {sequence_id}: an entry has both a state and sameOld")]
    SameWithState { sequence_id: u64 },
    #[error(
        "journal entry {sequence_id}: deletingOld belongs on a Begin without an operation of \
         its own"
    )]
    MisplacedDeleting { sequence_id: u64 },
    #[error("journal entry {sequence_id}: Write entry without a snapshot")]
    WriteWithoutSnapshot { sequence_id: u64 },
    #[error("journal entries with sequence ID {sequence_id} differ")]
    ConflictingDuplicate { sequence_id: u64 },
    #[error(
        "journal entry {sequence_id} applied after entry {last}: entries must be applied in \
         increasing sequence order"
    )]
    OutOfOrder { sequence_id: u64, last: u64 },
}

/// Replays `entries` (in any order; they are sorted by sequence ID) on
/// `base` and returns the resulting snapshot.
pub fn replay(base: &Snapshot, entries: &[JournalEntry]) -> Result<Snapshot, ReplayError> {
    let mut sorted: Vec<&JournalEntry> = entries.iter().collect();
    sorted.sort_by_key(|e| e.sequence_id);
    let mut replayer = Replayer::new(base.clone());
    let mut previous: Option<&JournalEntry> = None;
    for entry in sorted {
        if let Some(prev) = previous.filter(|p| p.sequence_id == entry.sequence_id) {
            if prev != entry {
                return Err(ReplayError::ConflictingDuplicate {
                    sequence_id: entry.sequence_id,
                });
            }
            continue;
        }
        replayer.apply(entry)?;
        previous = Some(entry);
    }
    Ok(replayer.snapshot())
}

/// What an entry carries that the replay keeps: moved out of an owned
/// entry, cloned from a borrowed one.
struct Moved {
    state: Option<ResourceState>,
    operation: Option<Box<PendingOperation>>,
}

/// An operation begun and not ended.
#[derive(Debug, Clone)]
enum Pending {
    /// As its Begin recorded it.
    Operation(Box<PendingOperation>),
    /// The delete of this base resource (a compact Begin, `deletingOld`).
    DeletingOld(usize),
}

/// An incremental replay: apply entries in increasing sequence order, take a
/// snapshot at any point. [`replay`] is this plus sorting.
///
/// The base is shared, never copied: [`Replayer::into_snapshot`] clones
/// only the base resources the entries kept, and [`Replayer::apply_owned`]
/// moves an entry's state into the result instead of cloning it.
#[derive(Debug, Clone)]
pub struct Replayer {
    base: Arc<Snapshot>,
    /// Resources produced by steps of this deployment, in success order.
    new_resources: Vec<ResourceState>,
    removed_new: HashSet<usize>,
    /// Hashed with foldhash: one insert per entry that produces a state.
    new_index_of_operation: HashMap<u64, usize, foldhash::fast::RandomState>,
    /// Base indices that leave the result (carried over into a new
    /// resource, or removed).
    removed_old: IndexSet,
    replaced_old: HashMap<usize, ResourceState>,
    marked_delete: HashSet<usize>,
    marked_pending_replacement: HashSet<usize>,
    /// Begun, not ended: operation ID → (Begin's sequence ID, operation).
    /// A destroy may have every resource's delete begun at once: each is
    /// the base index it deletes, or the entry's boxed operation.
    incomplete: HashMap<u64, (u64, Option<Pending>)>,
    has_refresh: bool,
    last_sequence_id: Option<u64>,
    /// Some entry that touches resources has been applied (Write is late).
    touched: bool,
    wrote: bool,
}

impl Replayer {
    pub fn new(base: Snapshot) -> Self {
        Self::shared(Arc::new(base))
    }

    /// A replay onto a base held elsewhere too.
    pub fn shared(base: Arc<Snapshot>) -> Self {
        // Most operations carry most of the base over: each a new
        // resource, produced by an operation, taking a base resource's place.
        let n = base.resources.len();
        Replayer {
            new_resources: Vec::with_capacity(n),
            base,
            removed_new: HashSet::new(),
            new_index_of_operation: HashMap::with_capacity_and_hasher(n, Default::default()),
            removed_old: IndexSet::with_capacity(n),
            replaced_old: HashMap::new(),
            marked_delete: HashSet::new(),
            marked_pending_replacement: HashSet::new(),
            incomplete: HashMap::new(),
            has_refresh: false,
            last_sequence_id: None,
            touched: false,
            wrote: false,
        }
    }

    /// Applies one entry. Its sequence ID must be greater than the last one
    /// applied.
    pub fn apply(&mut self, entry: &JournalEntry) -> Result<(), ReplayError> {
        self.check_order(entry)?;
        let moved = Moved {
            state: entry.state.as_deref().cloned(),
            operation: entry.operation.clone(),
        };
        self.apply_checked(entry, moved)
    }

    /// [`Replayer::apply`] of an entry the caller no longer needs: its
    /// state and pending operation are moved into the replay, not cloned.
    pub fn apply_owned(&mut self, mut entry: JournalEntry) -> Result<(), ReplayError> {
        self.check_order(&entry)?;
        let moved = Moved {
            state: entry.state.take().map(|s| *s),
            operation: entry.operation.take(),
        };
        self.apply_checked(&entry, moved)
    }

    /// Refuses an entry out of order or with a bad reference; on success
    /// the entry is the last applied.
    fn check_order(&mut self, entry: &JournalEntry) -> Result<(), ReplayError> {
        let seq = entry.sequence_id;
        if let Some(last) = self.last_sequence_id.filter(|&last| seq <= last) {
            return Err(ReplayError::OutOfOrder {
                sequence_id: seq,
                last,
            });
        }
        self.validate(entry)?;
        self.last_sequence_id = Some(seq);
        Ok(())
    }

    /// Applies a checked `entry` whose state and operation were `moved` out
    /// of it.
    fn apply_checked(&mut self, entry: &JournalEntry, moved: Moved) -> Result<(), ReplayError> {
        let Moved { state, operation } = moved;
        let seq = entry.sequence_id;
        let op = entry.operation_id;
        match entry.kind {
            JournalEntryKind::Begin => {
                self.touched = true;
                let pending = match (operation, entry.deleting_old) {
                    (Some(operation), _) => Some(Pending::Operation(operation)),
                    (None, Some(i)) => Some(Pending::DeletingOld(i)),
                    (None, None) => None,
                };
                self.incomplete.insert(op, (seq, pending));
            }
            JournalEntryKind::Success => {
                self.touched = true;
                self.incomplete.remove(&op);
                let carried = entry.same_old.map(|i| {
                    self.removed_old.insert(i);
                    self.replaced_old
                        .remove(&i)
                        .unwrap_or_else(|| self.base.resources[i].clone())
                });
                if let Some(state) = state.or(carried) {
                    self.new_index_of_operation
                        .insert(op, self.new_resources.len());
                    self.new_resources.push(state);
                }
                if let Some(i) = entry.remove_old {
                    self.removed_old.insert(i);
                }
                if let Some(i) = self.new_index(entry, "removeNew", entry.remove_new)? {
                    self.removed_new.insert(i);
                }
                if let Some(i) = entry.delete_old {
                    self.marked_delete.insert(i);
                }
                if let Some(i) = self.new_index(entry, "deleteNew", entry.delete_new)? {
                    self.new_resources[i].delete = true;
                }
                if let Some(i) = entry.pending_replacement_old {
                    self.marked_pending_replacement.insert(i);
                }
                let pending_new = entry.pending_replacement_new;
                if let Some(i) = self.new_index(entry, "pendingReplacementNew", pending_new)? {
                    self.new_resources[i].pending_replacement = true;
                }
                self.has_refresh |= entry.is_refresh;
            }
            JournalEntryKind::RefreshSuccess => {
                self.touched = true;
                self.incomplete.remove(&op);
                self.has_refresh = true;
                self.replace_or_remove(entry, state, true)?;
            }
            JournalEntryKind::Failure => {
                self.touched = true;
                self.incomplete.remove(&op);
            }
            JournalEntryKind::Outputs => {
                self.touched = true;
                self.replace_or_remove(entry, state, false)?;
            }
            JournalEntryKind::Write => {
                if self.touched || self.wrote {
                    return Err(ReplayError::MisplacedWrite { sequence_id: seq });
                }
                let snapshot = entry
                    .new_snapshot
                    .as_deref()
                    .ok_or(ReplayError::WriteWithoutSnapshot { sequence_id: seq })?;
                self.base = Arc::new(snapshot.clone());
                self.wrote = true;
            }
            JournalEntryKind::SecretsManager => {
                if let Some(providers) = &entry.secrets_providers {
                    Arc::make_mut(&mut self.base).secrets_providers = Some(providers.clone());
                }
            }
            JournalEntryKind::RebuiltBaseState => {
                self.touched = true;
                self.rebase();
            }
        }
        Ok(())
    }

    /// The snapshot the entries applied so far describe.
    pub fn snapshot(&self) -> Snapshot {
        let new = self
            .new_resources
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.removed_new.contains(i))
            .map(|(_, r)| r.clone());
        let old = self.base.resources.iter().enumerate().filter_map(|(i, r)| {
            let kept = self.replaced_old.get(&i).unwrap_or(r);
            self.kept_old(i, || kept.clone())
        });
        let resources = new.chain(old).collect();
        let removed_new: Vec<ResourceState> = match self.has_refresh {
            true => self
                .removed_new
                .iter()
                .filter_map(|&i| self.new_resources.get(i).cloned())
                .collect(),
            false => Vec::new(),
        };
        self.finish_snapshot(resources, &removed_new)
    }

    /// [`Replayer::snapshot`], consuming the replay: the states it holds
    /// move into the result; of the base, only the resources kept are
    /// copied (none when the base is no longer shared).
    pub fn into_snapshot(mut self) -> Snapshot {
        let mut replaced = std::mem::take(&mut self.replaced_old);
        // The result is the new resources' own vector (reserved for the
        // base's size when the replay began), the kept base resources
        // appended: a second vector was 56 MB of fresh memory at 100,000.
        let mut resources = std::mem::take(&mut self.new_resources);
        let mut index = 0;
        let removed_new: Vec<ResourceState> = resources
            .extract_if(.., |_| {
                let removed = self.removed_new.contains(&index);
                index += 1;
                removed
            })
            .collect();
        resources.reserve(
            self.base
                .resources
                .len()
                .saturating_sub(self.removed_old.len()),
        );
        for i in 0..self.base.resources.len() {
            let kept = self.kept_old(i, || match replaced.remove(&i) {
                Some(r) => r,
                None => self.base.resources[i].clone(),
            });
            resources.extend(kept);
        }
        self.finish_snapshot(resources, &removed_new)
    }

    /// The base resource at `i` as the result holds it (`state` makes it),
    /// or `None` when it was removed.
    fn kept_old(&self, i: usize, state: impl FnOnce() -> ResourceState) -> Option<ResourceState> {
        if self.removed_old.contains(i) {
            return None;
        }
        let mut r = state();
        if self.marked_delete.contains(&i) {
            r.delete = true;
        }
        if self.marked_pending_replacement.contains(&i) {
            r.pending_replacement = true;
        }
        Some(r)
    }

    /// The snapshot of `resources` (new first, then the base's kept ones):
    /// dependencies rebuilt after a refresh, pending operations, the base's
    /// manifest and metadata.
    fn finish_snapshot(
        &self,
        mut resources: Vec<ResourceState>,
        removed_new: &[ResourceState],
    ) -> Snapshot {
        if self.has_refresh {
            let removed_old = self
                .removed_old
                .iter()
                .filter_map(|i| self.base.resources.get(i));
            rebuild_dependencies(&mut resources, removed_old.chain(removed_new));
        }

        let mut incomplete: Vec<_> = self.incomplete.values().collect();
        incomplete.sort_by_key(|(seq, _)| *seq);
        let pending_operations = incomplete
            .into_iter()
            .filter_map(|(_, pending)| pending.as_ref().map(|p| self.operation_of(p)))
            .chain(
                self.base
                    .pending_operations
                    .iter()
                    .filter(|op| op.kind == OperationType::Creating)
                    .cloned(),
            )
            .collect();

        Snapshot {
            manifest: self.base.manifest.clone(),
            secrets_providers: self.base.secrets_providers.clone(),
            resources,
            pending_operations,
            metadata: self.base.metadata.clone(),
        }
    }

    /// The pending operation `pending` stands for.
    fn operation_of(&self, pending: &Pending) -> PendingOperation {
        match pending {
            Pending::Operation(operation) => (**operation).clone(),
            Pending::DeletingOld(i) => PendingOperation {
                resource: self.base.resources[*i].clone(),
                kind: OperationType::Deleting,
            },
        }
    }

    /// Checks every index and operation reference of `entry` before anything
    /// is applied, so that a failed `apply` changes nothing.
    fn validate(&self, entry: &JournalEntry) -> Result<(), ReplayError> {
        let len = self.base.resources.len();
        if let Some(index) = entry.deleting_old {
            if entry.kind != JournalEntryKind::Begin || entry.operation.is_some() {
                return Err(ReplayError::MisplacedDeleting {
                    sequence_id: entry.sequence_id,
                });
            }
            if index >= len {
                return Err(ReplayError::IndexOutOfRange {
                    sequence_id: entry.sequence_id,
                    field: "deletingOld",
                    index,
                    len,
                });
            }
        }
        let olds = [
            ("removeOld", entry.remove_old),
            ("sameOld", entry.same_old),
            ("pendingReplacementOld", entry.pending_replacement_old),
            ("deleteOld", entry.delete_old),
        ];
        let news = [
            ("removeNew", entry.remove_new),
            ("pendingReplacementNew", entry.pending_replacement_new),
            ("deleteNew", entry.delete_new),
        ];
        let uses_references = matches!(
            entry.kind,
            JournalEntryKind::Success
                | JournalEntryKind::RefreshSuccess
                | JournalEntryKind::Outputs
        );
        if !uses_references {
            return Ok(());
        }
        for (field, index) in olds {
            if let Some(index) = index.filter(|&i| i >= len) {
                return Err(ReplayError::IndexOutOfRange {
                    sequence_id: entry.sequence_id,
                    field,
                    index,
                    len,
                });
            }
        }
        for (field, operation) in news {
            self.new_index(entry, field, operation)?;
        }
        if let Some(index) = entry.same_old {
            if entry.kind != JournalEntryKind::Success || entry.state.is_some() {
                // sameOld means something only on a Success without state.
                return Err(ReplayError::SameWithState {
                    sequence_id: entry.sequence_id,
                });
            }
            if self.removed_old.contains(index) {
                return Err(ReplayError::CarriedRemoved {
                    sequence_id: entry.sequence_id,
                    index,
                });
            }
        }
        let produces = entry.kind == JournalEntryKind::Success
            && (entry.state.is_some() || entry.same_old.is_some());
        if produces
            && self
                .new_index_of_operation
                .contains_key(&entry.operation_id)
        {
            return Err(ReplayError::DuplicateOperation {
                sequence_id: entry.sequence_id,
                operation_id: entry.operation_id,
            });
        }
        Ok(())
    }

    fn new_index(
        &self,
        entry: &JournalEntry,
        field: &'static str,
        operation: Option<u64>,
    ) -> Result<Option<usize>, ReplayError> {
        let Some(operation_id) = operation else {
            return Ok(None);
        };
        match self.new_index_of_operation.get(&operation_id) {
            Some(&i) => Ok(Some(i)),
            None => Err(ReplayError::UnknownOperation {
                sequence_id: entry.sequence_id,
                field,
                operation_id,
            }),
        }
    }

    /// RefreshSuccess and Outputs: `state` replaces the referenced resource
    /// in place; a RefreshSuccess without `state` removes it (the refresh
    /// found it gone). An Outputs entry without `state` changes nothing.
    fn replace_or_remove(
        &mut self,
        entry: &JournalEntry,
        state: Option<ResourceState>,
        refresh: bool,
    ) -> Result<(), ReplayError> {
        let new_index = self.new_index(entry, "removeNew", entry.remove_new)?;
        // Both references name the same state only in a malformed entry;
        // the old one then gets a copy.
        let (for_old, for_new) = match (entry.remove_old, new_index, state) {
            (Some(_), Some(_), Some(s)) => (Some(s.clone()), Some(s)),
            (Some(_), _, s) => (s, None),
            (None, _, s) => (None, s),
        };
        if let Some(i) = entry.remove_old {
            match for_old {
                Some(state) => {
                    self.replaced_old.insert(i, state);
                }
                None if refresh => {
                    self.removed_old.insert(i);
                }
                None => {}
            }
        }
        if let Some(i) = new_index {
            match for_new {
                Some(state) => self.new_resources[i] = state,
                None if refresh => {
                    self.removed_new.insert(i);
                }
                None => {}
            }
        }
        Ok(())
    }

    /// RebuiltBaseState: the snapshot so far becomes the base.
    fn rebase(&mut self) {
        // Operations still pending name base indices of the base being
        // replaced: they keep the state they name.
        let pending: Vec<(u64, usize)> = self
            .incomplete
            .iter()
            .filter_map(|(&op, (_, p))| match p {
                Some(Pending::DeletingOld(i)) => Some((op, *i)),
                _ => None,
            })
            .collect();
        for (op, i) in pending {
            let operation = self.operation_of(&Pending::DeletingOld(i));
            if let Some((_, slot)) = self.incomplete.get_mut(&op) {
                *slot = Some(Pending::Operation(Box::new(operation)));
            }
        }
        let mut base = self.snapshot();
        // Incomplete operations stay in `incomplete`; the new base keeps only
        // the `creating` operations the old base carried forward.
        base.pending_operations = self
            .base
            .pending_operations
            .iter()
            .filter(|op| op.kind == OperationType::Creating)
            .cloned()
            .collect();
        self.base = Arc::new(base);
        self.new_resources.clear();
        self.removed_new.clear();
        self.new_index_of_operation.clear();
        self.removed_old.clear();
        self.replaced_old.clear();
        self.marked_delete.clear();
        self.marked_pending_replacement.clear();
        self.has_refresh = false;
    }
}

/// Repairs references after resources were deleted behind their dependents'
/// backs (a refresh found them gone). `resources` is in dependency order;
/// `removed` are the resources that are gone, consulted for their parents.
///
/// Walking the list front to back, a URN is referenceable once some resource
/// with it has been passed. Dependencies, property dependencies and
/// deletedWith that are not referenceable are dropped; a parent that is not
/// referenceable is replaced by its nearest referenceable ancestor (or none).
pub fn rebuild_dependencies<'a>(
    resources: &mut [ResourceState],
    removed: impl IntoIterator<Item = &'a ResourceState>,
) {
    let removed_parent: HashMap<Urn, Option<Urn>> = removed
        .into_iter()
        .map(|r| (r.urn.clone(), r.parent.clone()))
        .collect();
    let mut referenceable: HashSet<Urn> = HashSet::new();
    for r in resources.iter_mut() {
        r.dependencies.retain(|d| referenceable.contains(d));
        for deps in r.property_dependencies.values_mut() {
            deps.retain(|d| referenceable.contains(d));
        }
        if r.deleted_with
            .as_ref()
            .is_some_and(|d| !referenceable.contains(d))
        {
            r.deleted_with = None;
        }
        let mut parent = r.parent.take();
        // Each step moves one level up; a cycle among removed resources
        // cannot loop for longer than there are removed resources.
        for _ in 0..=removed_parent.len() {
            match parent {
                Some(p) if !referenceable.contains(&p) => {
                    parent = removed_parent.get(&p).cloned().flatten();
                }
                _ => break,
            }
        }
        r.parent = parent.filter(|p| referenceable.contains(p));
        referenceable.insert(r.urn.clone());
    }
}

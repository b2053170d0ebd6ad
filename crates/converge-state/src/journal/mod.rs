//! Journal entries and their replay (seed 002, "Snapshot Journaling").
//!
//! The engine never edits a persisted snapshot: it emits one owned
//! [`JournalEntry`] per event (a step beginning, succeeding or failing, a
//! refresh result, new outputs, …), and [`replay`] rebuilds the snapshot from
//! the base snapshot the deployment started from plus the entries persisted so
//! far. Every field that refers to a resource does so by position: an index
//! into the base snapshot's resource list (`*_old`) or the operation ID of the
//! step that produced a resource during this deployment (`*_new`).
//!
//! The fields and kinds are those of Pulumi's `apitype.JournalEntry`, so that
//! journals Pulumi's CLI sends can be replayed by Converge's state service;
//! [`json`] reads and writes them in Pulumi's JSON form, one line each.

mod index_set;
pub mod json;
mod replay;
mod runs;

pub use json::{entry_from_json, entry_to_json, JournalJsonError};
pub use replay::{rebuild_dependencies, replay, ReplayError, Replayer};
pub use runs::{entries_to_json, journal_from_json};

/// How a journal names the checkpoint it started from: the lowercase hex
/// SHA-256 of the checkpoint's bytes as stored. A journal replays onto the
/// stored checkpoint only while that checkpoint's digest is its base digest;
/// any other checkpoint already holds the journal's compaction.
pub fn base_digest(checkpoint: &[u8]) -> String {
    converge_model::sha256_hex(checkpoint)
}

use std::fmt;

use converge_model::ResourceState;

use crate::{PendingOperation, SecretsProviders, Snapshot};

/// What a journal entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JournalEntryKind {
    /// A step starts; its `operation`, if any, is pending until the step ends.
    Begin,
    /// A step succeeded: add `state`, remove or mark base resources.
    Success,
    /// A step failed: nothing changed but the pending operation ends.
    Failure,
    /// A refresh that is not persisted as a step: the refreshed `state`
    /// replaces the old one in place (or, without `state`, removes it).
    RefreshSuccess,
    /// A resource's outputs changed (`RegisterResourceOutputs`): `state`
    /// replaces it in place.
    Outputs,
    /// A new base snapshot (provider migrations); only before any other
    /// entry that touches resources.
    Write,
    /// The secrets provider the deployment encrypts with.
    SecretsManager,
    /// The engine rebuilt its base state (after a refresh); later entries
    /// index into the snapshot rebuilt at this point.
    RebuiltBaseState,
}

impl JournalEntryKind {
    /// Pulumi's wire number for the kind (`apitype.JournalEntryKind`).
    pub fn wire_number(self) -> u8 {
        match self {
            JournalEntryKind::Begin => 0,
            JournalEntryKind::Success => 1,
            JournalEntryKind::Failure => 2,
            JournalEntryKind::RefreshSuccess => 3,
            JournalEntryKind::Outputs => 4,
            JournalEntryKind::Write => 5,
            JournalEntryKind::SecretsManager => 6,
            JournalEntryKind::RebuiltBaseState => 7,
        }
    }

    pub fn from_wire_number(n: u8) -> Option<Self> {
        Some(match n {
            0 => JournalEntryKind::Begin,
            1 => JournalEntryKind::Success,
            2 => JournalEntryKind::Failure,
            3 => JournalEntryKind::RefreshSuccess,
            4 => JournalEntryKind::Outputs,
            5 => JournalEntryKind::Write,
            6 => JournalEntryKind::SecretsManager,
            7 => JournalEntryKind::RebuiltBaseState,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JournalEntryKind::Begin => "Begin",
            JournalEntryKind::Success => "Success",
            JournalEntryKind::Failure => "Failure",
            JournalEntryKind::RefreshSuccess => "RefreshSuccess",
            JournalEntryKind::Outputs => "Outputs",
            JournalEntryKind::Write => "Write",
            JournalEntryKind::SecretsManager => "SecretsManager",
            JournalEntryKind::RebuiltBaseState => "RebuiltBaseState",
        }
    }
}

impl fmt::Display for JournalEntryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One journal entry. Which fields mean something depends on `kind`; the
/// others are `None`/`false` (see [`replay`] for how each is applied).
#[derive(Debug, Clone, PartialEq)]
pub struct JournalEntry {
    /// Unique and increasing in the order the engine emitted the entries,
    /// starting at 1. Replay orders by it; gaps are allowed.
    pub sequence_id: u64,
    pub kind: JournalEntryKind,
    /// Correlates a step's Begin with its end entry; new resources are named
    /// by the operation that produced them. Write entries use 0.
    pub operation_id: u64,
    /// Index of a base resource to remove (or, for RefreshSuccess and
    /// Outputs, to replace in place).
    pub remove_old: Option<usize>,
    /// Operation whose new resource is removed (or replaced in place).
    pub remove_new: Option<u64>,
    /// Index of a base resource to mark `pending_replacement`.
    pub pending_replacement_old: Option<usize>,
    /// Operation whose new resource is marked `pending_replacement`.
    pub pending_replacement_new: Option<u64>,
    /// Index of a base resource to mark `delete`.
    pub delete_old: Option<usize>,
    /// Operation whose new resource is marked `delete`.
    pub delete_new: Option<u64>,
    /// The resource state the entry produces.
    pub state: Option<Box<ResourceState>>,
    /// For Success, instead of `state`: the index of a base resource the
    /// step carries into the new snapshot unchanged (a Same step whose
    /// state is the base's, byte for byte). The compact form of
    /// `state: <base[i]>, remove_old: i`, so that an update that changes
    /// little journals little. Converge's own field.
    pub same_old: Option<usize>,
    /// For Begin: the operation that is pending until the step ends.
    pub operation: Option<Box<PendingOperation>>,
    /// For Begin, instead of `operation`: the index of the base resource
    /// the step deletes; the pending operation is `deleting` that resource
    /// as the base holds it. The compact form of `operation: {deleting,
    /// <base[i]>}`, so that a destroy does not journal every resource's
    /// whole state. Converge's own field.
    pub deleting_old: Option<usize>,
    /// The entry need not trigger a snapshot write (it must still be
    /// persisted in the journal).
    pub elide_write: bool,
    /// Part of a refresh: the replayed snapshot's dependencies are rebuilt.
    pub is_refresh: bool,
    /// For Write: the new base snapshot.
    pub new_snapshot: Option<Box<Snapshot>>,
    /// For SecretsManager: the deployment's secrets provider.
    pub secrets_providers: Option<SecretsProviders>,
}

impl JournalEntry {
    /// An entry of the given kind with every optional field empty.
    pub fn new(sequence_id: u64, kind: JournalEntryKind, operation_id: u64) -> Self {
        JournalEntry {
            sequence_id,
            kind,
            operation_id,
            remove_old: None,
            remove_new: None,
            pending_replacement_old: None,
            pending_replacement_new: None,
            delete_old: None,
            delete_new: None,
            state: None,
            same_old: None,
            operation: None,
            deleting_old: None,
            elide_write: false,
            is_refresh: false,
            new_snapshot: None,
            secrets_providers: None,
        }
    }

    /// A Begin entry; `operation` is `None` for steps that leave nothing to
    /// clean up after a crash (same, refresh, remove-pending-replace).
    pub fn begin(sequence_id: u64, operation_id: u64, operation: Option<PendingOperation>) -> Self {
        JournalEntry {
            operation: operation.map(Box::new),
            ..Self::new(sequence_id, JournalEntryKind::Begin, operation_id)
        }
    }

    /// A Begin of the delete of base resource `index` (see
    /// [`JournalEntry::deleting_old`]).
    pub fn begin_deleting(sequence_id: u64, operation_id: u64, index: usize) -> Self {
        JournalEntry {
            deleting_old: Some(index),
            ..Self::new(sequence_id, JournalEntryKind::Begin, operation_id)
        }
    }

    pub fn success(sequence_id: u64, operation_id: u64) -> Self {
        Self::new(sequence_id, JournalEntryKind::Success, operation_id)
    }

    pub fn failure(sequence_id: u64, operation_id: u64) -> Self {
        Self::new(sequence_id, JournalEntryKind::Failure, operation_id)
    }

    pub fn refresh_success(sequence_id: u64, operation_id: u64) -> Self {
        JournalEntry {
            is_refresh: true,
            ..Self::new(sequence_id, JournalEntryKind::RefreshSuccess, operation_id)
        }
    }

    pub fn outputs(sequence_id: u64, operation_id: u64, state: ResourceState) -> Self {
        Self::new(sequence_id, JournalEntryKind::Outputs, operation_id).with_state(state)
    }

    pub fn write(sequence_id: u64, snapshot: Snapshot) -> Self {
        JournalEntry {
            new_snapshot: Some(Box::new(snapshot)),
            ..Self::new(sequence_id, JournalEntryKind::Write, 0)
        }
    }

    pub fn secrets_manager(sequence_id: u64, secrets_providers: SecretsProviders) -> Self {
        JournalEntry {
            secrets_providers: Some(secrets_providers),
            elide_write: true,
            ..Self::new(sequence_id, JournalEntryKind::SecretsManager, 0)
        }
    }

    pub fn rebuilt_base_state(sequence_id: u64) -> Self {
        Self::new(sequence_id, JournalEntryKind::RebuiltBaseState, 0)
    }

    pub fn with_state(mut self, state: ResourceState) -> Self {
        self.state = Some(Box::new(state));
        self
    }

    /// A Success carrying base resource `index` over unchanged (see
    /// [`JournalEntry::same_old`]).
    pub fn same(sequence_id: u64, operation_id: u64, index: usize) -> Self {
        JournalEntry {
            same_old: Some(index),
            elide_write: true,
            ..Self::new(sequence_id, JournalEntryKind::Success, operation_id)
        }
    }

    pub fn with_remove_old(mut self, index: usize) -> Self {
        self.remove_old = Some(index);
        self
    }

    pub fn with_remove_new(mut self, operation_id: u64) -> Self {
        self.remove_new = Some(operation_id);
        self
    }

    pub fn with_pending_replacement_old(mut self, index: usize) -> Self {
        self.pending_replacement_old = Some(index);
        self
    }

    pub fn with_delete_old(mut self, index: usize) -> Self {
        self.delete_old = Some(index);
        self
    }

    pub fn with_refresh(mut self) -> Self {
        self.is_refresh = true;
        self
    }
}

impl fmt::Display for JournalEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{} op {} {}",
            self.sequence_id, self.operation_id, self.kind
        )?;
        let indices = [
            ("removeOld", self.remove_old.map(|i| i as u64)),
            ("removeNew", self.remove_new),
            ("sameOld", self.same_old.map(|i| i as u64)),
            ("deletingOld", self.deleting_old.map(|i| i as u64)),
            (
                "pendingReplacementOld",
                self.pending_replacement_old.map(|i| i as u64),
            ),
            ("pendingReplacementNew", self.pending_replacement_new),
            ("deleteOld", self.delete_old.map(|i| i as u64)),
            ("deleteNew", self.delete_new),
        ];
        for (name, value) in indices {
            if let Some(value) = value {
                write!(f, " {name}={value}")?;
            }
        }
        if let Some(state) = &self.state {
            write!(f, " state={}", state.urn)?;
        }
        if let Some(op) = &self.operation {
            write!(f, " operation={}({})", op.kind, op.resource.urn)?;
        }
        if self.is_refresh {
            f.write_str(" refresh")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::JournalEntry;

    /// The journaler holds a batch of entries, most of them compact (a Same
    /// step's): the resource states are boxed so that an entry is small.
    #[test]
    fn an_entry_without_a_state_is_small() {
        assert!(std::mem::size_of::<JournalEntry>() <= 256);
    }
}

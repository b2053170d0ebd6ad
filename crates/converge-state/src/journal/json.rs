//! A [`JournalEntry`] as JSON: one entry per line of a journal file, or per
//! element of the state service's `journalentries` request.
//!
//! The fields are those of Pulumi's `apitype.JournalEntry`
//! (`sdk/go/common/apitype/journal.go`), in its declaration order, so that
//! the entries Pulumi's CLI sends can be read here and the state service can
//! store both alike:
//!
//! | field                   | type               | written                          |
//! |-------------------------|--------------------|----------------------------------|
//! | `version`               | integer            | always ([`JOURNAL_ENTRY_VERSION`]) |
//! | `kind`                  | integer (wire no.) | always                           |
//! | `sequenceID`            | integer            | always                           |
//! | `operationID`           | integer            | always (0 for Write, …)          |
//! | `removeOld`             | integer or `null`  | always, `null` when absent (Go has no `omitempty` there) |
//! | `removeNew`             | integer or `null`  | always, `null` when absent       |
//! | `pendingReplacementOld` | integer            | when set                         |
//! | `pendingReplacementNew` | integer            | when set                         |
//! | `deleteOld`             | integer            | when set                         |
//! | `deleteNew`             | integer            | when set                         |
//! | `state`                 | `ResourceV3`       | when set (checkpoint form)       |
//! | `operation`             | `{resource, type}` | when set (`OperationV2`)         |
//! | `isRefresh`             | bool               | when true                        |
//! | `secretsProvider`       | `{type, state}`    | when set (`SecretsProvidersV1`)  |
//! | `newSnapshot`           | `DeploymentV3`     | when set                         |
//! | `elideWrite`            | bool               | when true — Converge's own field |
//! | `sameOld`               | integer            | when set — Converge's own field, version 2; such an entry omits null references and `elideWrite` (implied) |
//! | `sameOlds`              | array of integers  | instead of `sameOld` — Converge's own field, version 3: the line is a run of compact Same entries (see [`super::runs`]) |
//! | `deletingOld`           | integer            | when set, instead of `operation` — Converge's own field, version 4: a Begin of the delete of that base resource |
//!
//! Choices where Pulumi gives no answer:
//!
//! - `elideWrite` is not in `apitype.JournalEntry`: Pulumi keeps
//!   `ElideWrite` only on its in-memory `engine.JournalEntry` and never
//!   sends it. Converge persists it (last, omitted when false) so a replayed
//!   entry equals the emitted one; Go's decoder ignores unknown keys, and an
//!   entry without it reads as `false`.
//! - `version`: Pulumi's `SerializeJournalEntry` leaves it 0. Converge
//!   writes 1 and reads a missing, `null`, 0 or 1 version; a later version is
//!   refused (the entry may mean something this build would replay wrongly).
//! - Kinds Converge does not know (Pulumi's 8 `ExtensionParameterize`, 9
//!   `Snippets`, 10 `StateMigration`, …) are refused for the same reason;
//!   other keys Pulumi added (`snippets`, `requiresByteString`, …) are
//!   ignored, as unknown top-level keys of a checkpoint are.
//! - `kind`, `sequenceID` and `operationID` are required (Go always writes
//!   them); numbers must be non-negative integers.
//!
//! Resources, operations and snapshots use the checkpoint module's codec, so
//! secrets follow the [`SecretsMode`] exactly as in a checkpoint: encrypted
//! on write, decrypted (or kept opaque) on read. Output is compact JSON with
//! no newline anywhere (newlines inside strings are escaped), so an entry is
//! always a single line.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{JournalEntry, JournalEntryKind};
use crate::checkpoint::json_text::to_compact_bytes;
use crate::checkpoint::props_out::{PropsWriter, WriteFailure};
use crate::checkpoint::resource::{
    parse_raw, resource_from_dto, resource_to_dto, snapshot_from_dto, snapshot_to_dto,
};
use crate::checkpoint::{dto, CheckpointError};
use crate::json_limits::{self, unchecked_from_slice};
use crate::secrets::SecretsMode;
use crate::snapshot::{OperationType, PendingOperation, SecretsProviders};

/// The newest journal-entry format version Converge reads. Entries are
/// written as version 1 unless they use `sameOld` (a compact Same step),
/// which needs version 2, `sameOlds` (a run of them), which needs version
/// 3, or `deletingOld` (a compact Begin of a delete), which needs version
/// 4: an older reader would ignore the key and lose resources' places in
/// the snapshot, or the record of an object being deleted, so it must
/// refuse the entry.
pub const JOURNAL_ENTRY_VERSION: i64 = DELETING_ENTRY_VERSION;

/// The version of entries that need nothing newer than Pulumi's fields.
const BASE_ENTRY_VERSION: i64 = 1;

/// The version of a single compact Same entry.
const SAME_ENTRY_VERSION: i64 = 2;

/// The version of a line that is a run of compact Same entries.
pub(super) const RUN_ENTRY_VERSION: i64 = 3;

/// The version of a compact Begin of a delete.
const DELETING_ENTRY_VERSION: i64 = 4;

/// Why a journal entry could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JournalJsonError {
    /// Not JSON, or a resource, operation or snapshot in it is malformed.
    #[error("journal entry: {0}")]
    Checkpoint(#[from] CheckpointError),
    #[error("journal entry: not a JSON object")]
    NotAnObject,
    #[error("journal entry: the required field `{0}` is missing")]
    MissingField(&'static str),
    #[error("journal entry: `{field}` must be a non-negative integer, found {value}")]
    BadNumber { field: &'static str, value: String },
    #[error(
        "journal entry format version {0} is newer than this version of Converge supports ({JOURNAL_ENTRY_VERSION}); upgrade Converge"
    )]
    VersionTooNew(u64),
    #[error(
        "journal entry #{sequence_id}: unknown kind {kind} (Converge knows 0 to 7); it was written by a newer tool"
    )]
    UnknownKind { sequence_id: u64, kind: u64 },
    #[error(
        "journal entry #{sequence_id}: `operation.type`: unknown operation type {kind:?} (expected creating, updating, deleting, reading or importing)"
    )]
    UnknownOperation { sequence_id: u64, kind: String },
    #[error("journal entry #{sequence_id}: `sameOlds`: {reason}")]
    BadRun {
        sequence_id: u64,
        reason: &'static str,
    },
    #[error(
        "journal entry #{sequence_id}: a run of {count} entries where one was expected; read journal lines with `journal_from_json`"
    )]
    UnexpectedRun { sequence_id: u64, count: usize },
}

/// `apitype.JournalEntry` as written, field for field in Go's order.
#[derive(Serialize)]
struct EntryOut<'a> {
    version: i64,
    kind: u8,
    #[serde(rename = "sequenceID")]
    sequence_id: u64,
    #[serde(rename = "operationID")]
    operation_id: u64,
    /// `None`: left out (a compact Same entry needs no `null`
    /// references); `Some(None)`: `null`, as Go writes an absent one.
    #[serde(rename = "removeOld", skip_serializing_if = "Option::is_none")]
    remove_old: Option<Option<u64>>,
    #[serde(rename = "removeNew", skip_serializing_if = "Option::is_none")]
    remove_new: Option<Option<u64>>,
    #[serde(
        rename = "pendingReplacementOld",
        skip_serializing_if = "Option::is_none"
    )]
    pending_replacement_old: Option<u64>,
    #[serde(
        rename = "pendingReplacementNew",
        skip_serializing_if = "Option::is_none"
    )]
    pending_replacement_new: Option<u64>,
    #[serde(rename = "deleteOld", skip_serializing_if = "Option::is_none")]
    delete_old: Option<u64>,
    #[serde(rename = "deleteNew", skip_serializing_if = "Option::is_none")]
    delete_new: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<dto::Resource<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    operation: Option<dto::Operation<'a>>,
    #[serde(rename = "isRefresh", skip_serializing_if = "is_false")]
    is_refresh: bool,
    #[serde(rename = "secretsProvider", skip_serializing_if = "Option::is_none")]
    secrets_provider: Option<dto::SecretsProviders>,
    #[serde(rename = "newSnapshot", skip_serializing_if = "Option::is_none")]
    new_snapshot: Option<dto::Deployment<'a>>,
    #[serde(rename = "elideWrite", skip_serializing_if = "is_false")]
    elide_write: bool,
    #[serde(rename = "sameOld", skip_serializing_if = "Option::is_none")]
    same_old: Option<u64>,
    #[serde(rename = "sameOlds", skip_serializing_if = "Option::is_none")]
    same_olds: Option<Vec<u64>>,
    #[serde(rename = "deletingOld", skip_serializing_if = "Option::is_none")]
    deleting_old: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// `apitype.JournalEntry` as read: lenient like Go's decoder (`null` means
/// absent, unknown keys ignored); numbers are checked field by field.
#[derive(Deserialize)]
struct EntryIn {
    version: Option<Value>,
    kind: Option<Value>,
    #[serde(rename = "sequenceID")]
    sequence_id: Option<Value>,
    #[serde(rename = "operationID")]
    operation_id: Option<Value>,
    #[serde(rename = "removeOld")]
    remove_old: Option<Value>,
    #[serde(rename = "removeNew")]
    remove_new: Option<Value>,
    #[serde(rename = "pendingReplacementOld")]
    pending_replacement_old: Option<Value>,
    #[serde(rename = "pendingReplacementNew")]
    pending_replacement_new: Option<Value>,
    #[serde(rename = "deleteOld")]
    delete_old: Option<Value>,
    #[serde(rename = "deleteNew")]
    delete_new: Option<Value>,
    state: Option<dto::Resource<'static>>,
    operation: Option<dto::Operation<'static>>,
    #[serde(rename = "isRefresh")]
    is_refresh: Option<bool>,
    #[serde(rename = "secretsProvider")]
    secrets_provider: Option<dto::SecretsProviders>,
    #[serde(rename = "newSnapshot")]
    new_snapshot: Option<dto::Deployment<'static>>,
    #[serde(rename = "elideWrite")]
    elide_write: Option<bool>,
    #[serde(rename = "sameOld")]
    same_old: Option<Value>,
    #[serde(rename = "sameOlds")]
    same_olds: Option<Value>,
    #[serde(rename = "deletingOld")]
    deleting_old: Option<Value>,
}

/// Writes one entry as a single line of compact JSON (no trailing newline).
pub fn entry_to_json(
    entry: &JournalEntry,
    mode: SecretsMode<'_>,
) -> Result<Vec<u8>, CheckpointError> {
    entry_line(entry, None, mode)
}

/// Writes `entry` as one line; with `run`, the line stands for a run of
/// compact Same entries, `entry` and the ones after it, which carry over
/// the base resources `run` (`entry.same_old` first).
pub(super) fn entry_line(
    entry: &JournalEntry,
    run: Option<&[usize]>,
    mode: SecretsMode<'_>,
) -> Result<Vec<u8>, CheckpointError> {
    let index = |i: Option<usize>| i.map(|i| i as u64);
    let failure = WriteFailure::default();
    let writer = PropsWriter {
        mode,
        failure: &failure,
    };
    let operation = entry
        .operation
        .as_ref()
        .map(|op| {
            Ok::<_, CheckpointError>(dto::Operation {
                resource: resource_to_dto(&op.resource, writer)?,
                kind: Some(op.kind.as_str().to_owned()),
            })
        })
        .transpose()?;
    let secrets_provider = entry
        .secrets_providers
        .as_ref()
        .map(|sp| {
            Ok::<_, CheckpointError>(dto::SecretsProviders {
                kind: sp.kind.clone(),
                state: parse_raw(sp.state.as_deref(), "secretsProvider.state")?,
            })
        })
        .transpose()?;
    // A compact Same entry is as short as it can be (it is most of a
    // small update's journal): a version-2 reader needs no `null`
    // references, and `sameOld` implies `elideWrite`.
    let compact = entry.same_old.is_some();
    let reference = |r: Option<u64>| match (compact, r) {
        (true, None) => None,
        (_, r) => Some(r),
    };
    let out = EntryOut {
        version: match (entry.same_old, run, entry.deleting_old) {
            (_, _, Some(_)) => DELETING_ENTRY_VERSION,
            (Some(_), Some(_), None) => RUN_ENTRY_VERSION,
            (Some(_), None, None) => SAME_ENTRY_VERSION,
            (None, _, None) => BASE_ENTRY_VERSION,
        },
        kind: entry.kind.wire_number(),
        sequence_id: entry.sequence_id,
        operation_id: entry.operation_id,
        remove_old: reference(index(entry.remove_old)),
        remove_new: reference(entry.remove_new),
        pending_replacement_old: index(entry.pending_replacement_old),
        pending_replacement_new: entry.pending_replacement_new,
        delete_old: index(entry.delete_old),
        delete_new: entry.delete_new,
        state: entry
            .state
            .as_ref()
            .map(|r| resource_to_dto(r, writer))
            .transpose()?,
        operation,
        is_refresh: entry.is_refresh,
        secrets_provider,
        new_snapshot: entry
            .new_snapshot
            .as_deref()
            .map(|s| snapshot_to_dto(s, &s.manifest, writer))
            .transpose()?,
        elide_write: entry.elide_write && !compact,
        same_old: match run {
            Some(_) => None,
            None => index(entry.same_old),
        },
        same_olds: run.map(|olds| olds.iter().map(|&i| i as u64).collect()),
        deleting_old: index(entry.deleting_old),
    };
    // Written straight from the entry: no `Value` tree of its state.
    to_compact_bytes(&out).map_err(|error| failure.to_error(error, "the journal entry"))
}

/// Reads one entry (surrounding whitespace, including a trailing newline, is
/// allowed). A line that holds a run of entries (`sameOlds`) is refused:
/// read journal lines with [`super::journal_from_json`].
pub fn entry_from_json(
    bytes: &[u8],
    mode: SecretsMode<'_>,
) -> Result<JournalEntry, JournalJsonError> {
    let (entry, run) = entry_and_run(bytes, mode)?;
    if let Some(olds) = run.filter(|olds| olds.len() != 1) {
        return Err(JournalJsonError::UnexpectedRun {
            sequence_id: entry.sequence_id,
            count: olds.len(),
        });
    }
    Ok(entry)
}

/// Reads one line: its first entry, and for a run line (`sameOlds`) the
/// base indices of the run, the first entry's included.
pub(super) fn entry_and_run(
    bytes: &[u8],
    mode: SecretsMode<'_>,
) -> Result<(JournalEntry, Option<Vec<usize>>), JournalJsonError> {
    // A struct would also accept a JSON array, field by position. Empty
    // input falls through to the parser's "EOF" syntax error.
    match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') | None => {}
        Some(_) => return Err(JournalJsonError::NotAnObject),
    }
    json_limits::check(bytes).map_err(CheckpointError::Limit)?;
    let raw: EntryIn = unchecked_from_slice(bytes).map_err(CheckpointError::from_json)?;

    if let Some(version) = number("version", raw.version)? {
        if version > JOURNAL_ENTRY_VERSION as u64 {
            return Err(JournalJsonError::VersionTooNew(version));
        }
    }
    let required = |field: &'static str, value: Option<Value>| {
        number(field, value)?.ok_or(JournalJsonError::MissingField(field))
    };
    let kind_number = required("kind", raw.kind)?;
    let sequence_id = required("sequenceID", raw.sequence_id)?;
    let operation_id = required("operationID", raw.operation_id)?;
    let kind = u8::try_from(kind_number)
        .ok()
        .and_then(JournalEntryKind::from_wire_number)
        .ok_or(JournalJsonError::UnknownKind {
            sequence_id,
            kind: kind_number,
        })?;

    let operation = match raw.operation {
        None => None,
        Some(op) => {
            let kind_text = op.kind.unwrap_or_default();
            let kind =
                OperationType::parse(&kind_text).ok_or(JournalJsonError::UnknownOperation {
                    sequence_id,
                    kind: kind_text,
                })?;
            let resource = resource_from_dto(op.resource, "operation.resource", mode)?;
            Some(Box::new(PendingOperation { resource, kind }))
        }
    };

    let run = raw
        .same_olds
        .map(|olds| super::runs::indices(sequence_id, olds))
        .transpose()?;
    if run.is_some() && !matches!(raw.same_old, None | Some(Value::Null)) {
        return Err(JournalJsonError::BadRun {
            sequence_id,
            reason: "a run line has no `sameOld` of its own",
        });
    }
    let same_old = match &run {
        Some(olds) => olds.first().copied(),
        None => index("sameOld", raw.same_old)?,
    };
    let entry = JournalEntry {
        sequence_id,
        kind,
        operation_id,
        remove_old: index("removeOld", raw.remove_old)?,
        remove_new: number("removeNew", raw.remove_new)?,
        pending_replacement_old: index("pendingReplacementOld", raw.pending_replacement_old)?,
        pending_replacement_new: number("pendingReplacementNew", raw.pending_replacement_new)?,
        delete_old: index("deleteOld", raw.delete_old)?,
        delete_new: number("deleteNew", raw.delete_new)?,
        state: raw
            .state
            .map(|r| resource_from_dto(r, "state", mode).map(Box::new))
            .transpose()?,
        operation,
        same_old,
        deleting_old: index("deletingOld", raw.deleting_old)?,
        elide_write: raw.elide_write.unwrap_or(same_old.is_some()),
        is_refresh: raw.is_refresh.unwrap_or(false),
        new_snapshot: raw
            .new_snapshot
            .map(|d| snapshot_from_dto(d, mode).map(Box::new))
            .transpose()?,
        secrets_providers: raw.secrets_provider.map(|sp| SecretsProviders {
            kind: sp.kind,
            state: sp.state.map(|v| v.to_string()),
        }),
    };
    if let Some(olds) = &run {
        super::runs::check_run(&entry, olds.len())?;
    }
    Ok((entry, run))
}

/// A non-negative integer field; `None` when absent or `null`.
fn number(field: &'static str, value: Option<Value>) -> Result<Option<u64>, JournalJsonError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
        Some(other) => Err(JournalJsonError::BadNumber {
            field,
            value: other.to_string(),
        }),
    }
}

/// An index into the base snapshot's resources.
fn index(field: &'static str, value: Option<Value>) -> Result<Option<usize>, JournalJsonError> {
    let shown = value.as_ref().map(Value::to_string).unwrap_or_default();
    number(field, value)?
        .map(|n| {
            usize::try_from(n).map_err(|_| JournalJsonError::BadNumber {
                field,
                value: shown,
            })
        })
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `entry` is written as `text`, which reads back as `entry`.
    #[track_caller]
    fn written_as(entry: &JournalEntry, text: &str) {
        let written = String::from_utf8(entry_to_json(entry, SecretsMode::Opaque).unwrap());
        assert_eq!(written.unwrap(), text);
        assert_eq!(
            &entry_from_json(text.as_bytes(), SecretsMode::Opaque).unwrap(),
            entry
        );
    }

    #[test]
    fn a_begin_entry_is_written_like_pulumi() {
        written_as(
            &JournalEntry::begin(3, 2, None).with_delete_old(1),
            r#"{"version":1,"kind":0,"sequenceID":3,"operationID":2,"removeOld":null,"removeNew":null,"deleteOld":1}"#,
        );
    }

    #[test]
    fn a_compact_same_entry_is_version_2_and_refused_by_version_1_readers() {
        written_as(
            &JournalEntry::same(4, 3, 7),
            r#"{"version":2,"kind":1,"sequenceID":4,"operationID":3,"sameOld":7}"#,
        );
        // Every other entry stays version 1, which Converge before compact
        // entries and Pulumi's decoder read.
        let plain = entry_to_json(&JournalEntry::success(5, 4), SecretsMode::Opaque).unwrap();
        assert!(String::from_utf8(plain)
            .unwrap()
            .starts_with(r#"{"version":1,"#));
        let newer = r#"{"version":5,"kind":1,"sequenceID":4,"operationID":3}"#;
        let msg = entry_from_json(newer.as_bytes(), SecretsMode::Opaque)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("version 5") && msg.contains("upgrade"),
            "{msg}"
        );
    }

    #[test]
    fn a_compact_begin_of_a_delete_is_version_4() {
        written_as(
            &JournalEntry::begin_deleting(6, 5, 2),
            r#"{"version":4,"kind":0,"sequenceID":6,"operationID":5,"removeOld":null,"removeNew":null,"deletingOld":2}"#,
        );
    }

    #[test]
    fn numbers_are_checked_by_field() {
        let read = |text: &str| {
            entry_from_json(text.as_bytes(), SecretsMode::Opaque)
                .unwrap_err()
                .to_string()
        };
        let msg = read(r#"{"kind":1,"sequenceID":1,"operationID":1,"removeOld":-1}"#);
        assert!(msg.contains("`removeOld`") && msg.contains("-1"), "{msg}");
        let msg = read(r#"{"kind":1,"sequenceID":1.5,"operationID":1}"#);
        assert!(msg.contains("`sequenceID`"), "{msg}");
        let msg = read(r#"{"kind":1,"operationID":1}"#);
        assert!(msg.contains("`sequenceID` is missing"), "{msg}");
    }
}

//! Journal lines that stand for runs of compact Same entries.
//!
//! Most of a small update's journal is compact Same entries (a resource the
//! program registered again, unchanged), and consecutive ones usually take
//! consecutive sequence and operation IDs. Such a run is written as one
//! line: the run's first entry with `"sameOlds": [i0, i1, …]`, the base
//! indices of the whole run, in place of its `sameOld`. Entry k of the run
//! is the compact Same entry with sequence ID and operation ID k past the
//! line's, carrying base resource `ik`. So an update that changes 1 % of a
//! stack journals a few bytes per unchanged resource, not a line each.
//!
//! A run line is format version 3 (see [`super::json`]): a reader that does
//! not know `sameOlds` would replay nothing of the run and drop its
//! resources from the snapshot, so it must refuse the line. Lines read back
//! with [`journal_from_json`] are exactly the entries written, and a line
//! never expands to more entries than it has indices.

use serde_json::Value;

use super::json::{entry_and_run, entry_line, JournalJsonError};
use super::JournalEntry;
use crate::checkpoint::CheckpointError;
use crate::secrets::SecretsMode;

/// Writes `entries` as journal lines (compact JSON, no newlines), one per
/// entry except that each run of compact Same entries is one line.
pub fn entries_to_json(
    entries: &[JournalEntry],
    mode: SecretsMode<'_>,
) -> Result<Vec<Vec<u8>>, CheckpointError> {
    let mut lines = Vec::with_capacity(entries.len());
    let mut olds = Vec::new();
    let mut rest = entries;
    while let Some(first) = rest.first() {
        olds.clear();
        olds.extend(run(rest));
        let len = olds.len().max(1);
        let run = (len > 1).then_some(olds.as_slice());
        lines.push(entry_line(first, run, mode)?);
        rest = &rest[len..];
    }
    Ok(lines)
}

/// Reads a journal's lines, each one entry or a run of them.
pub fn journal_from_json<L: AsRef<[u8]>>(
    lines: &[L],
    mode: SecretsMode<'_>,
) -> Result<Vec<JournalEntry>, JournalJsonError> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        match entry_and_run(line.as_ref(), mode)? {
            (entry, None) => out.push(entry),
            // `check_run` made sure the IDs below stay in range.
            (first, Some(olds)) => out.extend(olds.into_iter().enumerate().map(|(k, old)| {
                JournalEntry::same(
                    first.sequence_id + k as u64,
                    first.operation_id + k as u64,
                    old,
                )
            })),
        }
    }
    Ok(out)
}

/// The base indices of a run line's `sameOlds`.
pub(super) fn indices(sequence_id: u64, olds: Value) -> Result<Vec<usize>, JournalJsonError> {
    let bad = |reason| JournalJsonError::BadRun {
        sequence_id,
        reason,
    };
    let Value::Array(items) = olds else {
        return Err(bad("must be an array of base indices"));
    };
    if items.is_empty() {
        return Err(bad("a run has at least one entry"));
    }
    items
        .iter()
        .map(|v| {
            v.as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(bad("each base index is a non-negative integer"))
        })
        .collect()
}

/// A run line's first entry is a compact Same entry, and the IDs of a run
/// of `len` entries stay in range.
pub(super) fn check_run(first: &JournalEntry, len: usize) -> Result<(), JournalJsonError> {
    let bad = |reason| JournalJsonError::BadRun {
        sequence_id: first.sequence_id,
        reason,
    };
    if !is_compact_same(first) {
        return Err(bad(
            "a run is of compact Same entries: a Success with nothing but its IDs",
        ));
    }
    let last = len as u64 - 1;
    if first.sequence_id.checked_add(last).is_none()
        || first.operation_id.checked_add(last).is_none()
    {
        return Err(bad("the run's IDs go past the largest integer"));
    }
    Ok(())
}

/// A Success that carries a base resource over unchanged and says nothing
/// else: exactly what [`JournalEntry::same`] makes.
fn is_compact_same(entry: &JournalEntry) -> bool {
    entry
        .same_old
        .is_some_and(|old| *entry == JournalEntry::same(entry.sequence_id, entry.operation_id, old))
}

/// The base indices of the run of compact Same entries at the start of
/// `entries` whose IDs count up together; empty when the first entry is
/// not a compact Same entry.
fn run(entries: &[JournalEntry]) -> impl Iterator<Item = usize> + '_ {
    let first = &entries[0];
    entries
        .iter()
        .enumerate()
        .take_while(move |(k, next)| {
            is_compact_same(next)
                && next.sequence_id == first.sequence_id + *k as u64
                && next.operation_id == first.operation_id + *k as u64
        })
        .filter_map(|(_, e)| e.same_old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::JournalEntryKind;

    fn read_all(lines: &[Vec<u8>]) -> Vec<JournalEntry> {
        journal_from_json(lines, SecretsMode::Opaque).unwrap()
    }

    #[test]
    fn runs_of_compact_same_entries_are_one_line_each() {
        let mut entries: Vec<JournalEntry> = [3, 9, 4, 0, 7]
            .into_iter()
            .enumerate()
            .map(|(k, old)| JournalEntry::same(10 + k as u64, 20 + k as u64, old))
            .collect();
        // A changed resource breaks the run...
        entries.push(JournalEntry::begin(15, 25, None));
        // ...and so does a Same entry whose IDs do not count up.
        entries.push(JournalEntry::same(16, 26, 8));
        entries.push(JournalEntry::same(17, 28, 1));
        entries.push(JournalEntry::same(18, 29, 2));
        let lines = entries_to_json(&entries, SecretsMode::Opaque).unwrap();
        let text: Vec<String> = lines
            .iter()
            .map(|l| String::from_utf8(l.clone()).unwrap())
            .collect();
        assert_eq!(
            text,
            [
                r#"{"version":3,"kind":1,"sequenceID":10,"operationID":20,"sameOlds":[3,9,4,0,7]}"#,
                r#"{"version":1,"kind":0,"sequenceID":15,"operationID":25,"removeOld":null,"removeNew":null}"#,
                r#"{"version":2,"kind":1,"sequenceID":16,"operationID":26,"sameOld":8}"#,
                r#"{"version":3,"kind":1,"sequenceID":17,"operationID":28,"sameOlds":[1,2]}"#,
            ]
        );
        assert_eq!(read_all(&lines), entries);
    }

    #[test]
    fn a_same_entry_with_more_than_its_index_is_not_part_of_a_run() {
        let mut renamed = JournalEntry::same(2, 2, 1);
        renamed.remove_old = Some(1);
        let entries = vec![JournalEntry::same(1, 1, 0), renamed];
        let lines = entries_to_json(&entries, SecretsMode::Opaque).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(read_all(&lines), entries);
    }

    #[test]
    fn bad_runs_are_refused_with_their_reason() {
        let read = |text: &str| {
            journal_from_json(&[text], SecretsMode::Opaque)
                .unwrap_err()
                .to_string()
        };
        for (text, reason) in [
            (
                r#"{"version":3,"kind":1,"sequenceID":1,"operationID":1,"sameOlds":[]}"#,
                "at least one",
            ),
            (
                r#"{"version":3,"kind":1,"sequenceID":1,"operationID":1,"sameOlds":7}"#,
                "array",
            ),
            (
                r#"{"version":3,"kind":1,"sequenceID":1,"operationID":1,"sameOlds":[1,-2]}"#,
                "non-negative",
            ),
            (
                r#"{"version":3,"kind":1,"sequenceID":1,"operationID":1,"sameOld":0,"sameOlds":[1,2]}"#,
                "no `sameOld`",
            ),
            (
                r#"{"version":3,"kind":0,"sequenceID":1,"operationID":1,"sameOlds":[1,2]}"#,
                "compact Same",
            ),
            (
                r#"{"version":3,"kind":1,"sequenceID":1,"operationID":1,"removeOld":4,"sameOlds":[1,2]}"#,
                "compact Same",
            ),
            (
                r#"{"version":3,"kind":1,"sequenceID":18446744073709551615,"operationID":1,"sameOlds":[1,2]}"#,
                "largest integer",
            ),
        ] {
            let msg = read(text);
            assert!(
                msg.contains("`sameOlds`") && msg.contains(reason),
                "{text}: {msg}"
            );
        }
        // A run read as a single entry is refused, not cut to its first.
        let run = r#"{"version":3,"kind":1,"sequenceID":1,"operationID":1,"sameOlds":[0,1]}"#;
        let msg = super::super::entry_from_json(run.as_bytes(), SecretsMode::Opaque)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("a run of 2 entries"), "{msg}");
        // A run of one is a plain compact entry.
        let one = r#"{"version":3,"kind":1,"sequenceID":7,"operationID":8,"sameOlds":[9]}"#;
        let out = journal_from_json(&[one], SecretsMode::Opaque).unwrap();
        assert_eq!(out, [JournalEntry::same(7, 8, 9)]);
        assert_eq!(out[0].kind, JournalEntryKind::Success);
    }
}

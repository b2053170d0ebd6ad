//! The update journal: O(1) bytes per step instead of the whole checkpoint.
//!
//! During an update the engine emits one journal entry per step event
//! (seed 002). Instead of rewriting the checkpoint after each, the caller
//! appends the serialized entries to the stack's journal
//! ([`JournalStore::append_journal`]); the checkpoint is rewritten once, at
//! the end, from the base checkpoint plus the journal (compaction). Entries
//! are opaque bytes here: one JSON value on one line each (the CLI writes
//! them with `converge_state::journal::entry_to_json`).
//!
//! # Protocol
//!
//! One writer per stack, holding the stack's lock ([`crate::StackLocker`]):
//!
//! 1. Load the checkpoint; `digest` = lowercase hex SHA-256 of its bytes.
//!    Recover any journal left behind (below).
//! 2. [`open_journal`](JournalStore::open_journal)`(stack, digest)`.
//! 3. For each batch of entries: [`append_journal`](JournalStore::append_journal).
//!    When it returns, the batch is durable: a step may start (Begin) or be
//!    reported done (Success, Failure, …) only after its entry's batch
//!    returned. Batching concurrent steps' entries into one call is group
//!    commit: one sync for the whole batch.
//! 4. At the end, replay the journal onto the base checkpoint, save the
//!    result ([`crate::StackStore::save_checkpoint`]), then
//!    [`close_journal`](JournalStore::close_journal). A store whose
//!    [`compacts_journals`](JournalStore::compacts_journals) is true (a
//!    state service) can do this step itself:
//!    [`commit_journal`](JournalStore::commit_journal) replays, saves and
//!    closes in one step, and the full checkpoint is never uploaded. The
//!    caller uses it only when the store's replay gives the snapshot it
//!    would save (`converge_engine::persistence` checks this).
//!
//! # Recovery rule
//!
//! A process that dies between steps 2 and 4 leaves the journal behind.
//! Before the next update (or any command that reads the stack's state),
//! the CLI or engine [`load_journal`](JournalStore::load_journal)s it:
//!
//! - no journal: nothing to do;
//! - the journal's `base_digest` equals the digest of the current
//!   checkpoint: the checkpoint predates the update, so replay the entries
//!   onto it, save the result, then close the journal;
//! - the digests differ: the checkpoint was already compacted (the process
//!   died between saving it and closing the journal), so just close it.
//!
//! Either way the next [`open_journal`](JournalStore::open_journal) then
//! succeeds; it fails with [`BackendError::JournalExists`] until then.
//! [`close_journal`](JournalStore::close_journal) is idempotent, so a crash
//! during recovery is recovered the same way.
//!
//! [`BackendError::JournalExists`]: crate::BackendError::JournalExists

use std::fmt;

use async_trait::async_trait;

use crate::error::{BackendError, Result};
use crate::name::StackRef;

/// A stack's journal as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredJournal {
    /// The digest [`JournalStore::open_journal`] was given: lowercase hex
    /// SHA-256 of the checkpoint the update started from.
    pub base_digest: String,
    /// The entries, in append order, each exactly as appended (without the
    /// line terminator).
    pub entries: Vec<Vec<u8>>,
}

/// A journal of serialized entries per stack, for crash-safe updates that
/// write O(1) bytes per step. See the [module docs](self) for the protocol
/// and the recovery rule.
#[async_trait]
pub trait JournalStore: Send + Sync + fmt::Debug {
    /// Starts the journal of an update whose base is the current checkpoint,
    /// with `base_checkpoint_digest` its lowercase hex SHA-256 (computed by
    /// the caller). Durable when it returns. Fails with `StackNotFound` if
    /// the stack does not exist, `InvalidJournal` for a malformed digest, and
    /// `JournalExists` if a journal exists: recover it first.
    async fn open_journal(&self, stack: &StackRef, base_checkpoint_digest: &str) -> Result<()>;

    /// Appends a batch of serialized entries and makes them durable before
    /// returning (one sync per batch). Each entry must be a JSON value on a
    /// single line: an entry that is empty, not JSON or contains a newline
    /// fails the whole batch with `InvalidJournal` and nothing is written.
    /// Fails with `NoJournal` if no journal is open. If it fails otherwise
    /// (for example the disk is full), whether the batch is stored is
    /// unknown: end the update and let recovery decide.
    async fn append_journal(&self, stack: &StackRef, entries: &[Vec<u8>]) -> Result<()>;

    /// The stack's journal, if one is open. A last entry torn by a crash
    /// during its append (never acknowledged) is dropped; damage anywhere
    /// else fails with `CorruptJournal` naming the place and line. Fails
    /// with `StackNotFound` if the stack does not exist.
    async fn load_journal(&self, stack: &StackRef) -> Result<Option<StoredJournal>>;

    /// Removes the journal, after the caller saved the compacted checkpoint.
    /// Durable when it returns; succeeds if there is no journal.
    async fn close_journal(&self, stack: &StackRef) -> Result<()>;

    /// Whether the store compacts journals itself
    /// ([`commit_journal`](JournalStore::commit_journal)). False by default.
    fn compacts_journals(&self) -> bool {
        false
    }

    /// For a store that [`compacts_journals`](JournalStore::compacts_journals):
    /// replays the open journal onto the checkpoint it started from (secrets
    /// kept as ciphertext), saves the result keeping the base as the
    /// previous checkpoint, and closes the journal — atomically, durable
    /// when it returns. Fails, leaving the journal open, when no journal is
    /// open, when the checkpoint is no longer the journal's base, or when
    /// the journal cannot be replayed; then compact as step 4 says. Other
    /// stores fail with `Unsupported`.
    async fn commit_journal(&self, stack: &StackRef) -> Result<()> {
        Err(BackendError::Unsupported(format!(
            "this backend does not compact journals itself (stack {stack})"
        )))
    }
}

/// Checks a base digest: 64 lowercase hexadecimal digits.
pub(crate) fn check_digest(stack: &StackRef, digest: &str) -> Result<()> {
    let ok = digest.len() == 64
        && digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if ok {
        Ok(())
    } else {
        Err(BackendError::InvalidJournal {
            stack: stack.to_string(),
            reason: format!(
                "the base digest {digest:?} is not a SHA-256 digest (64 lowercase hexadecimal digits)"
            ),
        })
    }
}

/// Checks that every entry is one line of JSON.
pub(crate) fn check_entries(stack: &StackRef, entries: &[Vec<u8>]) -> Result<()> {
    for (i, entry) in entries.iter().enumerate() {
        let reason = if entry.contains(&b'\n') {
            Some("it contains a newline; an entry must be a single line".to_owned())
        } else {
            is_json(entry)
                .err()
                .map(|e| format!("it is not valid JSON: {e}"))
        };
        if let Some(reason) = reason {
            return Err(BackendError::InvalidJournal {
                stack: stack.to_string(),
                reason: format!("entry {i} of the batch: {reason}"),
            });
        }
    }
    Ok(())
}

/// Whether `bytes` is exactly one JSON value (whitespace around it allowed).
/// serde_json skips the value without building it or recursing, so an
/// entry of any depth is checked without a recursion limit or a deep
/// stack; how deep an entry may be is for its reader
/// (`converge_state::json_limits`).
pub(crate) fn is_json(bytes: &[u8]) -> std::result::Result<(), serde_json::Error> {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_of_any_depth_are_checked_without_recursion() {
        let depth = 1_000_000;
        let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        assert!(is_json(deep.as_bytes()).is_ok());
        assert!(is_json(&deep.as_bytes()[1..]).is_err());
    }

    #[test]
    fn digests_and_entries_are_checked() {
        let s = StackRef::new("p", "dev").unwrap();
        assert!(check_digest(&s, &"ab".repeat(32)).is_ok());
        for bad in [
            "",
            "AB".repeat(32).as_str(),
            &"a".repeat(63),
            &"g".repeat(64),
        ] {
            assert!(check_digest(&s, bad).is_err(), "{bad:?}");
        }
        assert!(check_entries(&s, &[b"{}".to_vec(), b" [1, \"x\"] ".to_vec()]).is_ok());
        for bad in [&b""[..], b"{", b"{}\n", b"{}{}", b"\x00"] {
            let err = check_entries(&s, &[b"1".to_vec(), bad.to_vec()]).unwrap_err();
            assert!(err.to_string().contains("entry 1 of the batch"), "{err}");
        }
    }
}

//! Server-side compaction: an update's journal replayed onto the checkpoint
//! it started from (seed 002's algorithm, `converge_state::journal`), with
//! secrets kept opaque: the service never has the passphrase, ciphertext is
//! carried through as is.

use converge_state::checkpoint::{read_checkpoint, write_checkpoint, StackCheckpoint};
use converge_state::journal::{journal_from_json, replay};
use converge_state::secrets::SecretsMode;
use converge_state::{Manifest, Snapshot};

use converge_state::journal::base_digest;

/// What compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compaction {
    /// The new checkpoint: the base with the journal replayed.
    Replayed(Vec<u8>),
    /// The current checkpoint is not the journal's base: the client
    /// compacted it already; the journal is only to be dropped.
    AlreadyCompacted,
}

/// Compacts `entries` onto `current` if `current` is the journal's base
/// (by digest; a stack without a checkpoint is named by the digest of no
/// bytes, and reads as stack `stack` with no snapshot). `now` (RFC 3339)
/// stamps the new manifest. Fails with a reason when the checkpoint or an
/// entry cannot be read or replayed.
pub fn compact(
    current: Option<&[u8]>,
    stack: &str,
    journal_base: &str,
    entries: &[String],
    now: &str,
) -> Result<Compaction, String> {
    if base_digest(current.unwrap_or_default()) != journal_base {
        return Ok(Compaction::AlreadyCompacted);
    }
    let mut cp = match current {
        Some(bytes) => read_checkpoint(bytes, SecretsMode::Opaque)
            .map_err(|e| format!("the base checkpoint cannot be read: {e}"))?,
        None => StackCheckpoint {
            stack: stack.to_owned(),
            config: None,
            latest: None,
        },
    };
    let base = cp.latest.take().unwrap_or_else(|| Snapshot::empty(now));
    let entries = journal_from_json(entries, SecretsMode::Opaque)
        .map_err(|e| format!("a journal entry cannot be read: {e}"))?;
    let mut snapshot = replay(&base, &entries).map_err(|e| format!("replay failed: {e}"))?;
    let plugins = snapshot.manifest.plugins.take();
    snapshot.manifest = Manifest::converge(now);
    snapshot.manifest.plugins = plugins;
    cp.latest = Some(snapshot);
    write_checkpoint(&cp, SecretsMode::Opaque)
        .map(Compaction::Replayed)
        .map_err(|e| format!("the compacted checkpoint cannot be written: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sha256_hex;

    fn empty_checkpoint() -> Vec<u8> {
        let cp = StackCheckpoint {
            stack: "dev".to_owned(),
            config: Some(r#"{"p:greeting":"hi"}"#.to_owned()),
            latest: Some(Snapshot::empty("2024-05-01T10:00:00Z")),
        };
        write_checkpoint(&cp, SecretsMode::Opaque).unwrap()
    }

    #[test]
    fn a_checkpoint_that_is_not_the_base_was_compacted_already() {
        let current = empty_checkpoint();
        let other = sha256_hex(b"another checkpoint");
        assert_eq!(
            compact(
                Some(&current),
                "dev",
                &other,
                &["not even JSON".to_owned()],
                "now"
            ),
            Ok(Compaction::AlreadyCompacted)
        );
    }

    #[test]
    fn an_empty_journal_restamps_the_base_and_keeps_its_config() {
        let current = empty_checkpoint();
        let Compaction::Replayed(bytes) = compact(
            Some(&current),
            "dev",
            &sha256_hex(&current),
            &[],
            "2025-01-01T00:00:00Z",
        )
        .unwrap() else {
            panic!("the base is current: replayed")
        };
        let cp = read_checkpoint(&bytes, SecretsMode::Opaque).unwrap();
        assert_eq!(cp.config.as_deref(), Some(r#"{"p:greeting":"hi"}"#));
        assert_eq!(cp.latest.unwrap().manifest.time, "2025-01-01T00:00:00Z");
    }

    #[test]
    fn unreadable_input_is_a_reason_not_a_guess() {
        let current = empty_checkpoint();
        let digest = sha256_hex(&current);
        let err = compact(
            Some(&current),
            "dev",
            &digest,
            &[r#"{"kind":99}"#.to_owned()],
            "now",
        )
        .unwrap_err();
        assert!(err.contains("journal entry"), "{err}");
        let err = compact(Some(b"{}"), "dev", &sha256_hex(b"{}"), &[], "now").unwrap_err();
        assert!(err.contains("base checkpoint"), "{err}");
    }
}

//! Server-side compaction: an update's journal replayed onto the checkpoint
//! it started from (seed 002's algorithm, `converge_state::journal`), with
//! secrets kept opaque: the service never has the passphrase, ciphertext is
//! carried through as is.

use converge_state::checkpoint::{read_checkpoint, write_checkpoint};
use converge_state::journal::{entry_from_json, replay};
use converge_state::secrets::SecretsMode;
use converge_state::{Manifest, Snapshot};

use crate::store::sha256_hex;

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
/// (by digest). `now` (RFC 3339) stamps the new manifest. Fails with a
/// reason when the checkpoint or an entry cannot be read or replayed.
pub fn compact(
    current: &[u8],
    base_digest: &str,
    entries: &[String],
    now: &str,
) -> Result<Compaction, String> {
    if sha256_hex(current) != base_digest {
        return Ok(Compaction::AlreadyCompacted);
    }
    let mut cp = read_checkpoint(current, SecretsMode::Opaque)
        .map_err(|e| format!("the base checkpoint cannot be read: {e}"))?;
    let base = cp.latest.take().unwrap_or_else(|| Snapshot::empty(now));
    let entries = entries
        .iter()
        .map(|e| entry_from_json(e.as_bytes(), SecretsMode::Opaque))
        .collect::<Result<Vec<_>, _>>()
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

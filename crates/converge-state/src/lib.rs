//! State: snapshots, their integrity, their JSON forms, journal replay and
//! secrets. No IO: callers hand bytes in and take bytes out.
//!
//! - [`snapshot`]: the [`Snapshot`] domain type (resources, pending
//!   operations, manifest, secrets provider).
//! - [`checkpoint`]: Pulumi's checkpoint and `stack export` JSON (versions 3
//!   and 4), read and written, secrets encrypted through a [`secrets`] crypter.
//! - [`integrity`]: every rule a snapshot must satisfy before Converge
//!   operates on it.
//! - [`journal`]: journal entries and the replay that rebuilds a snapshot from
//!   a base plus entries (seed 002).
//! - [`surgery`]: the edits of `converge state` (delete, protect, rename),
//!   each checked against every integrity rule.
//! - [`json_limits`]: the size and depth bounds of every JSON document
//!   read as state, checked before it is parsed.
//! - [`secrets`]: the passphrase crypter (Pulumi-compatible), the blinding
//!   crypter for display, and the opaque mode that keeps ciphertext as is.

pub mod checkpoint;
pub mod integrity;
pub mod journal;
pub mod json_limits;
pub mod plan;
pub mod secrets;
pub mod snapshot;
pub mod surgery;
#[cfg(feature = "testing")]
pub mod testing;

pub use snapshot::{Manifest, OperationType, PendingOperation, SecretsProviders, Snapshot};

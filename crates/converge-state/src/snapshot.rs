//! The snapshot: what a stack's state is at one moment.

use std::fmt;

use converge_model::ResourceState;

/// A stack's state: its resources in dependency order, the operations that
/// were in flight when it was written, and how its secrets are encrypted.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub manifest: Manifest,
    pub secrets_providers: Option<SecretsProviders>,
    /// Topologically sorted: every resource comes after what it depends on.
    pub resources: Vec<ResourceState>,
    pub pending_operations: Vec<PendingOperation>,
    /// Raw JSON of the `metadata` object, kept verbatim (may be empty).
    pub metadata: Option<String>,
}

impl Snapshot {
    /// An empty snapshot written by Converge now-ish: `time` is an RFC 3339
    /// timestamp supplied by the caller (this crate reads no clock).
    pub fn empty(time: impl Into<String>) -> Self {
        Snapshot {
            manifest: Manifest::converge(time),
            secrets_providers: None,
            resources: Vec::new(),
            pending_operations: Vec::new(),
            metadata: None,
        }
    }
}

/// Meta-information about the tool that wrote a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// RFC 3339 timestamp, kept as written.
    pub time: String,
    pub magic: String,
    pub version: String,
    /// Raw JSON of the `plugins` list, kept verbatim when present.
    pub plugins: Option<String>,
}

impl Manifest {
    /// The manifest Converge writes: its own version and the matching magic
    /// (hex SHA-256 of the version string).
    pub fn converge(time: impl Into<String>) -> Self {
        let version = format!("converge-{}", env!("CARGO_PKG_VERSION"));
        Manifest {
            time: time.into(),
            magic: converge_model::sha256_hex(version.as_bytes()),
            version,
            plugins: None,
        }
    }
}

/// The secrets provider a snapshot's ciphertexts belong to: its type
/// (`passphrase`, …) and its state as raw JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretsProviders {
    pub kind: String,
    /// Raw JSON of `state`, e.g. `{"salt":"v1:…"}`.
    pub state: Option<String>,
}

/// An operation that had begun and not ended when the snapshot was written.
/// After a crash, each names a real object that may or may not exist.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingOperation {
    pub resource: ResourceState,
    pub kind: OperationType,
}

/// What a pending operation was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperationType {
    Creating,
    Updating,
    Deleting,
    Reading,
    Importing,
}

impl OperationType {
    pub fn as_str(self) -> &'static str {
        match self {
            OperationType::Creating => "creating",
            OperationType::Updating => "updating",
            OperationType::Deleting => "deleting",
            OperationType::Reading => "reading",
            OperationType::Importing => "importing",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "creating" => OperationType::Creating,
            "updating" => OperationType::Updating,
            "deleting" => OperationType::Deleting,
            "reading" => OperationType::Reading,
            "importing" => OperationType::Importing,
            _ => return None,
        })
    }
}

impl fmt::Display for OperationType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

//! Pulumi's state JSON, read and written: the backend checkpoint file
//! (`{"version", "checkpoint": {"stack", "config", "latest"}}`) and the
//! `stack export` file (`{"version", "deployment"}`).
//!
//! - Versions 3 and 4 are read. Version 4 carries a `features` list; a
//!   feature this module does not know is refused, since the state may mean
//!   something Converge would get wrong. Converge writes version 3, or
//!   version 4 with `["refreshBeforeUpdate"]` when a resource needs it.
//! - Output is byte-stable: pretty JSON with 4-space indentation like
//!   Pulumi's, fields in a fixed order, property maps sorted by key, numbers
//!   formatted as Go formats them, and a trailing newline. Writing what was
//!   read gives the same bytes.
//! - Secrets go through a [`SecretsMode`]: decrypted on read and encrypted on
//!   write, or kept as opaque ciphertext when no key is at hand.
//! - Resource fields this version does not know are kept verbatim in
//!   [`ResourceState::unknown_fields`](converge_model::ResourceState) and
//!   written back; unknown top-level keys are ignored.
//!
//! [`values`] holds the property-value codec, public for the CLI (stack
//! outputs) and the journal.

mod decrypt;
pub(crate) mod dto;
pub(crate) mod json_text;
mod property_path;
pub(crate) mod props_out;
mod raw_values;
pub(crate) mod resource;
mod resource_list;
pub mod values;

use converge_model::{ProviderReferenceError, UrnError};
use serde::Serialize;
use serde_json::Value;

use crate::json_limits::{self, unchecked_from_slice, JsonLimitError};
use crate::secrets::SecretsMode;
use crate::snapshot::{Manifest, Snapshot};

pub use decrypt::decrypt_snapshot;
pub use dto::{DEPLOYMENT_KEYS, FILE_KEYS, OPERATION_KEYS, RESOURCE_KEYS};
pub use json_text::to_pretty_json;
use props_out::{PropsWriter, WriteFailure};
pub use resource_list::{resources_from_json, resources_to_json};
pub use values::{
    property_map_from_json, property_map_to_json, property_value_from_json, property_value_to_json,
    PropertyValueError, PropertyValueErrorKind,
};

/// The oldest state version Converge reads.
pub const OLDEST_VERSION: i64 = 3;
/// The newest state version Converge reads and writes.
pub const LATEST_VERSION: i64 = 4;
/// The version-4 features Converge understands.
pub const KNOWN_FEATURES: &[&str] = &[FEATURE_REFRESH_BEFORE_UPDATE];
/// Resources with `refreshBeforeUpdate` set.
pub const FEATURE_REFRESH_BEFORE_UPDATE: &str = "refreshBeforeUpdate";

/// A stack's backend file: its name, its config as stored (raw JSON), and
/// its latest snapshot if it has been deployed.
#[derive(Debug, Clone, PartialEq)]
pub struct StackCheckpoint {
    pub stack: String,
    /// Raw JSON text of the `config` object, kept as it was.
    pub config: Option<String>,
    pub latest: Option<Snapshot>,
}

/// Why state JSON could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("the state is not valid JSON (line {line}, column {column}): {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("the state has an unexpected value (line {line}, column {column}): {message}")]
    Shape {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("the state has no `version` field; it is not a Pulumi state file")]
    MissingVersion,
    #[error("the state's `version` must be an integer, found {0}")]
    BadVersion(String),
    #[error(
        "state version {0} is too old for Converge, which reads versions 3 and 4; upgrade it with Pulumi first (`pulumi stack export` | `pulumi stack import`)"
    )]
    VersionTooOld(i64),
    #[error(
        "state version {0} is newer than this version of Converge supports (3 and 4); upgrade Converge"
    )]
    VersionTooNew(i64),
    #[error("the state's `features` must be a list of strings, found {0}")]
    BadFeatures(String),
    #[error("this state needs feature {0:?} which this version of Converge does not support; upgrade Converge")]
    UnknownFeature(String),
    #[error("the state has no `{section}` object{hint}")]
    MissingSection {
        section: &'static str,
        hint: &'static str,
    },
    #[error("{location}: the required field `{field}` is missing")]
    MissingField {
        location: String,
        field: &'static str,
    },
    #[error("{location}: `{field}`: {source}")]
    BadUrn {
        location: String,
        field: String,
        #[source]
        source: UrnError,
    },
    #[error("{location}: `provider`: {source}")]
    BadProvider {
        location: String,
        #[source]
        source: ProviderReferenceError,
    },
    #[error(
        "pending_operations[{index}]: unknown operation type {kind:?} (expected creating, updating, deleting, reading or importing)"
    )]
    UnknownOperation { index: usize, kind: String },
    #[error(
        "resource {urn}: `custom` is false but it has an `id`; only custom resources have IDs"
    )]
    IdWithoutCustom { urn: String },
    #[error(
        "{location}: `customTimeouts.{field}`: {value} is not a number of seconds or a duration"
    )]
    BadTimeout {
        location: String,
        field: &'static str,
        value: String,
    },
    /// A property value, e.g. a secret that does not decrypt.
    #[error("resource {urn}: {property}: {source}")]
    Property {
        urn: String,
        property: String,
        #[source]
        source: PropertyValueErrorKind,
    },
    /// Where the text was going failed (a store that stopped reading it).
    #[error("the state's text could not be written: {0}")]
    Write(#[source] std::io::Error),
    /// Too large or nested too deep to be read ([`crate::json_limits`]).
    #[error("{0}")]
    Limit(#[from] JsonLimitError),
    #[error("{field}: the raw JSON kept for it is invalid: {source}")]
    RawJson {
        field: String,
        #[source]
        source: serde_json::Error,
    },
}

impl CheckpointError {
    pub(crate) fn from_json(e: serde_json::Error) -> Self {
        let (line, column) = (e.line(), e.column());
        let text = e.to_string();
        let message = text
            .strip_suffix(&format!(" at line {line} column {column}"))
            .unwrap_or(&text)
            .to_owned();
        if e.is_data() {
            CheckpointError::Shape {
                line,
                column,
                message,
            }
        } else {
            CheckpointError::Syntax {
                line,
                column,
                message,
            }
        }
    }
}

/// Reads a backend checkpoint file.
pub fn read_checkpoint(
    bytes: &[u8],
    mode: SecretsMode<'_>,
) -> Result<StackCheckpoint, CheckpointError> {
    let header = read_header(bytes)?;
    if header.checkpoint.is_none() {
        return Err(CheckpointError::MissingSection {
            section: "checkpoint",
            hint: if header.deployment.is_some() {
                "; it holds a `deployment`, as a `stack export` file does"
            } else {
                ""
            },
        });
    }
    let file: dto::CheckpointFile =
        unchecked_from_slice(bytes).map_err(CheckpointError::from_json)?;
    let checkpoint = file.checkpoint.ok_or(CheckpointError::MissingSection {
        section: "checkpoint",
        hint: "",
    })?;
    let stack = checkpoint
        .stack
        .ok_or_else(|| CheckpointError::MissingField {
            location: "the checkpoint".to_owned(),
            field: "stack",
        })?;
    let latest = checkpoint
        .latest
        .map(|d| resource::snapshot_from_dto(d, mode))
        .transpose()?;
    Ok(StackCheckpoint {
        stack,
        config: checkpoint.config.map(|v| v.to_string()),
        latest,
    })
}

/// Writes a backend checkpoint file.
pub fn write_checkpoint(
    cp: &StackCheckpoint,
    mode: SecretsMode<'_>,
) -> Result<Vec<u8>, CheckpointError> {
    write_checkpoint_into(cp.view(), mode, Vec::new())
}

/// A checkpoint to write, borrowed: [`write_checkpoint_into`] copies none
/// of it, so the snapshot an operation produced is written as it is held.
#[derive(Debug, Clone, Copy)]
pub struct CheckpointView<'a> {
    pub stack: &'a str,
    /// Raw JSON text of the `config` object.
    pub config: Option<&'a str>,
    pub latest: Option<&'a Snapshot>,
    /// Written instead of `latest`'s own manifest (the one a new writer
    /// stamps); `None` writes the snapshot's.
    pub manifest: Option<&'a Manifest>,
}

impl StackCheckpoint {
    /// This checkpoint, borrowed, with the snapshot's own manifest.
    pub fn view(&self) -> CheckpointView<'_> {
        CheckpointView {
            stack: &self.stack,
            config: self.config.as_deref(),
            latest: self.latest.as_ref(),
            manifest: None,
        }
    }
}

/// [`write_checkpoint`] of `view` into `buffer`, whose bytes are
/// discarded and whose capacity is kept: a buffer about the size of the
/// checkpoint being replaced keeps the text from growing by doubling into
/// fresh memory, which at 100,000 resources was most of the write's time.
pub fn write_checkpoint_into(
    view: CheckpointView<'_>,
    mode: SecretsMode<'_>,
    buffer: Vec<u8>,
) -> Result<Vec<u8>, CheckpointError> {
    let mut out = buffer;
    out.clear();
    write_checkpoint_to(view, mode, &mut out)?;
    Ok(out)
}

/// [`write_checkpoint`] of `view` into `out` as the text is produced (a
/// store reading it as it comes need not wait for a whole copy). A write
/// error of `out` is [`CheckpointError::Write`]; whatever was written
/// before a failure is not a checkpoint.
pub fn write_checkpoint_to(
    view: CheckpointView<'_>,
    mode: SecretsMode<'_>,
    out: impl std::io::Write,
) -> Result<(), CheckpointError> {
    let (version, features) = version_for(view.latest);
    let failure = WriteFailure::default();
    let writer = PropsWriter {
        mode,
        failure: &failure,
    };
    let latest = view
        .latest
        .map(|s| resource::snapshot_to_dto(s, view.manifest.unwrap_or(&s.manifest), writer))
        .transpose()?;
    let file = dto::CheckpointFile {
        version,
        features,
        checkpoint: Some(dto::Checkpoint {
            stack: Some(view.stack.to_owned()),
            config: resource::parse_raw(view.config, "config")?,
            latest,
        }),
    };
    json_text::to_pretty_writer(&file, out).map_err(|error| write_error(error, &failure))
}

/// Reads a `stack export` file.
pub fn read_deployment(bytes: &[u8], mode: SecretsMode<'_>) -> Result<Snapshot, CheckpointError> {
    let header = read_header(bytes)?;
    if header.deployment.is_none() {
        return Err(CheckpointError::MissingSection {
            section: "deployment",
            hint: if header.checkpoint.is_some() {
                "; it holds a `checkpoint`, as a backend state file does"
            } else {
                ""
            },
        });
    }
    let file: dto::DeploymentFile =
        unchecked_from_slice(bytes).map_err(CheckpointError::from_json)?;
    let deployment = file.deployment.ok_or(CheckpointError::MissingSection {
        section: "deployment",
        hint: "",
    })?;
    resource::snapshot_from_dto(deployment, mode)
}

/// Writes a `stack export` file.
pub fn write_deployment(
    snapshot: &Snapshot,
    mode: SecretsMode<'_>,
) -> Result<Vec<u8>, CheckpointError> {
    let (version, features) = version_for(Some(snapshot));
    let failure = WriteFailure::default();
    let writer = PropsWriter {
        mode,
        failure: &failure,
    };
    let file = dto::DeploymentFile {
        version,
        features,
        deployment: Some(resource::snapshot_to_dto(
            snapshot,
            &snapshot.manifest,
            writer,
        )?),
    };
    to_bytes(&file, &failure, Vec::new())
}

/// Checks the size and depth ([`json_limits::check`]), then the version
/// and features, before anything else is read.
fn read_header(bytes: &[u8]) -> Result<dto::Header, CheckpointError> {
    json_limits::check(bytes)?;
    let header: dto::Header = unchecked_from_slice(bytes).map_err(CheckpointError::from_json)?;
    let version = match &header.version {
        None | Some(Value::Null) => return Err(CheckpointError::MissingVersion),
        Some(v) => v
            .as_i64()
            .ok_or_else(|| CheckpointError::BadVersion(v.to_string()))?,
    };
    if version < OLDEST_VERSION {
        return Err(CheckpointError::VersionTooOld(version));
    }
    if version > LATEST_VERSION {
        return Err(CheckpointError::VersionTooNew(version));
    }
    match &header.features {
        None | Some(Value::Null) => {}
        Some(Value::Array(features)) => {
            for feature in features {
                let name = feature
                    .as_str()
                    .ok_or_else(|| CheckpointError::BadFeatures(feature.to_string()))?;
                if !KNOWN_FEATURES.contains(&name) {
                    return Err(CheckpointError::UnknownFeature(name.to_owned()));
                }
            }
        }
        Some(other) => return Err(CheckpointError::BadFeatures(other.to_string())),
    }
    Ok(header)
}

/// Version 3 unless a resource uses a version-4 feature.
fn version_for(snapshot: Option<&Snapshot>) -> (i64, Vec<String>) {
    let refresh = snapshot.is_some_and(|s| {
        s.resources
            .iter()
            .chain(s.pending_operations.iter().map(|op| &op.resource))
            .any(|r| r.refresh_before_update)
    });
    if refresh {
        (
            LATEST_VERSION,
            vec![FEATURE_REFRESH_BEFORE_UPDATE.to_owned()],
        )
    } else {
        (OLDEST_VERSION, Vec::new())
    }
}

/// The file's text, in `buffer` (cleared first); a value that could not be
/// written is reported as `failure` recorded it.
fn to_bytes(
    file: &impl Serialize,
    failure: &WriteFailure,
    buffer: Vec<u8>,
) -> Result<Vec<u8>, CheckpointError> {
    json_text::to_pretty_bytes(file, buffer).map_err(|error| write_error(error, failure))
}

/// The error of a serializer that stopped with `error`: the writer's own
/// failure, or a value that could not be written as `failure` recorded it.
fn write_error(error: serde_json::Error, failure: &WriteFailure) -> CheckpointError {
    match error.is_io() {
        true => CheckpointError::Write(std::io::Error::from(error)),
        false => failure.to_error(error, "the state"),
    }
}

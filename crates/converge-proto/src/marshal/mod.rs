//! Conversion between `google.protobuf.Struct`/`Value` and Converge's
//! [`PropertyMap`]/[`PropertyValue`], as the Pulumi SDKs, engine and
//! providers encode property values on the wire.
//!
//! Plain JSON values map one to one (numbers are doubles). The other kinds
//! are objects carrying the key [`SIG_KEY`], whose value names the kind:
//!
//! | kind | signature | other keys |
//! |---|---|---|
//! | secret | [`SECRET_SIG`] | `value` |
//! | resource reference | [`RESOURCE_REFERENCE_SIG`] | `urn`, `id` (custom resources), `packageVersion` |
//! | asset | [`ASSET_SIG`] | `hash`, one of `text`, `path`, `uri` |
//! | archive | [`ARCHIVE_SIG`] | `hash`, one of `assets`, `path`, `uri` |
//! | output value | [`OUTPUT_VALUE_SIG`] | `value` (absent: unknown), `secret`, `dependencies` |
//!
//! An unknown value is the string [`UNKNOWN_STRING`]; when reading, the typed
//! unknown sentinels of older peers are recognised too. Keys a special object
//! does not define are ignored (the Node.js SDK adds `__pulumiAsset`).
//!
//! # What the peer accepts
//!
//! [`MarshalOptions`] says which kinds the other side understands (its
//! `acceptSecrets`, `acceptResources`, `keepUnknowns`/preview, output value
//! support). Kinds it does not accept are downgraded the way Pulumi's engine
//! does, in both directions:
//!
//! - a secret becomes its plain value;
//! - a resource reference becomes its ID (custom resources) or its URN
//!   (components);
//! - an output value becomes its value, wrapped as a secret if it is secret
//!   (then downgraded again if secrets are not kept), or unknown if it is not
//!   known; its dependencies are lost;
//! - an unknown value is left out: an object drops the key, and, like Pulumi,
//!   writing drops the element from an array while reading leaves `null` in
//!   its place. A secret or output whose value is left out this way is left
//!   out as a whole (Pulumi would write a secret with no `value`, which its
//!   own reader rejects). With `reject_unknowns` an unknown is an error
//!   instead.
//!
//! A resource reference's unknown ID is written as [`UNKNOWN_STRING`] when
//! unknowns are kept and as `""` otherwise; reading, `""` and the sentinel
//! are both an unknown ID (Pulumi's engine records unknown IDs as `""`).

mod decode;
mod dependencies;
mod encode;
#[cfg(test)]
mod tests;

use converge_model::{PathElement, PropertyMap, PropertyPath, PropertyValue, UrnError};
use prost_types::{Struct, Value};

pub use converge_model::UNKNOWN_STRING;
pub use dependencies::dependency_map;

/// The key that marks an object as a special value.
pub const SIG_KEY: &str = "4dabf18193072939515e22adb298388d";
/// The signature of a secret.
pub const SECRET_SIG: &str = "1b47061264138c4ac30d75fd1eb44270";
/// The signature of a resource reference.
pub const RESOURCE_REFERENCE_SIG: &str = "5cf8f73096256a8f31e491e813e4eb8e";
/// The signature of an asset.
pub const ASSET_SIG: &str = "c44067f5952c0a294b673a41bacd8c17";
/// The signature of an archive.
pub const ARCHIVE_SIG: &str = "0def7320c3a5731c473e5ecbe6d01bc7";
/// The signature of an output value.
pub const OUTPUT_VALUE_SIG: &str = "d0e6a833031e9bbcd3f4e8bde6ca49a4";

/// Typed unknown sentinels that older peers send; all read as unknown.
const TYPED_UNKNOWN_STRINGS: [&str; 6] = [
    "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7", // bool
    "3eeb2bf0-c639-47a8-9e75-3b44932eb421", // number
    "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2", // array
    "030794c1-ac77-496b-92df-f27374a8bd58", // asset
    "e48ece36-62e2-4504-bad9-02848725956a", // archive
    "dd056dcd-154b-4c76-9bd3-c8f88648b5ff", // object
];

/// True if `s` is one of the strings that stand for an unknown value.
pub fn is_unknown_string(s: &str) -> bool {
    s == UNKNOWN_STRING || TYPED_UNKNOWN_STRINGS.contains(&s)
}

/// What the peer understands, and what to refuse. `Default` is a peer that
/// understands nothing beyond plain values; [`MarshalOptions::full`] keeps
/// every kind. Set fields from the peer's handshake, e.g.
/// `MarshalOptions { keep_secrets: accept_secrets, ..MarshalOptions::full() }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MarshalOptions {
    /// Keep unknown values; otherwise they are left out.
    pub keep_unknowns: bool,
    /// Fail on unknown values (takes precedence over `keep_unknowns`).
    pub reject_unknowns: bool,
    /// Keep secrets; otherwise they become their plain values.
    pub keep_secrets: bool,
    /// Keep resource references; otherwise they become their ID or URN.
    pub keep_resources: bool,
    /// Keep output values; otherwise they become plain, secret or unknown.
    pub keep_output_values: bool,
    /// Fail on assets and archives.
    pub reject_assets: bool,
    /// Leave out object keys whose value is null.
    pub skip_nulls: bool,
    /// Leave out object keys starting with `__` (internal keys such as
    /// `__defaults`).
    pub skip_internal_keys: bool,
}

impl MarshalOptions {
    /// Keeps every kind of value: the form for peers that support them all
    /// and for round trips.
    pub const fn full() -> Self {
        MarshalOptions {
            keep_unknowns: true,
            reject_unknowns: false,
            keep_secrets: true,
            keep_resources: true,
            keep_output_values: true,
            reject_assets: false,
            skip_nulls: false,
            skip_internal_keys: false,
        }
    }

    /// Whether an object key is left out.
    fn skips_key(&self, key: &str, is_null: bool) -> bool {
        (self.skip_nulls && is_null) || (self.skip_internal_keys && key.starts_with("__"))
    }
}

/// Why a value could not be converted. Every error names the property path
/// where it happened (empty for the top-level value).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MarshalError {
    #[error("{}: unexpected unknown value", show(.path))]
    UnknownRejected { path: PropertyPath },
    #[error("{}: unexpected {kind}", show(.path))]
    AssetRejected {
        path: PropertyPath,
        /// `"asset"` or `"archive"`.
        kind: &'static str,
    },
    #[error("{}: unrecognized signature {signature}", show(.path))]
    UnrecognizedSignature {
        path: PropertyPath,
        /// The signature, rendered for the message.
        signature: String,
    },
    #[error("{}: malformed {what}: {problem}", show(.path))]
    Malformed {
        path: PropertyPath,
        /// The kind of special value, e.g. `"secret"`.
        what: &'static str,
        problem: String,
    },
    #[error("{}: {source}", show(.path))]
    InvalidUrn {
        path: PropertyPath,
        #[source]
        source: UrnError,
    },
}

impl MarshalError {
    /// Where in the value the error happened.
    pub fn path(&self) -> &PropertyPath {
        match self {
            MarshalError::UnknownRejected { path }
            | MarshalError::AssetRejected { path, .. }
            | MarshalError::UnrecognizedSignature { path, .. }
            | MarshalError::Malformed { path, .. }
            | MarshalError::InvalidUrn { path, .. } => path,
        }
    }
}

fn show(path: &PropertyPath) -> String {
    if path.elements().is_empty() {
        "top-level value".to_owned()
    } else {
        format!("property {path}")
    }
}

/// The path to the value being converted, kept as borrowed steps while
/// descending and turned into a [`PropertyPath`] only for errors.
#[derive(Debug, Default)]
struct PathStack<'a>(Vec<Step<'a>>);

#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

impl PathStack<'_> {
    fn to_path(&self) -> PropertyPath {
        PropertyPath::new(
            self.0
                .iter()
                .map(|step| match step {
                    Step::Key(key) => PathElement::Key((*key).to_owned()),
                    Step::Index(i) => PathElement::Index(*i),
                })
                .collect(),
        )
    }
}

/// Writes a property map as a `Struct`.
pub fn marshal_properties(
    props: &PropertyMap,
    opts: MarshalOptions,
) -> Result<Struct, MarshalError> {
    encode::Encoder::new(opts).properties(props)
}

/// Writes one value; `None` if the value is left out (an unknown that is not
/// kept).
pub fn marshal_value(
    value: &PropertyValue,
    opts: MarshalOptions,
) -> Result<Option<Value>, MarshalError> {
    encode::Encoder::new(opts).value(value)
}

/// Reads a property map from a `Struct`.
pub fn unmarshal_properties(
    props: &Struct,
    opts: MarshalOptions,
) -> Result<PropertyMap, MarshalError> {
    decode::Decoder::new(opts).properties(props)
}

/// Reads one value; `None` if the value is left out (an unknown that is not
/// kept).
pub fn unmarshal_value(
    value: &Value,
    opts: MarshalOptions,
) -> Result<Option<PropertyValue>, MarshalError> {
    decode::Decoder::new(opts).value(value)
}

//! The value model of Converge: everything the engine, the state format and the
//! providers agree on, with no IO and no wire format of its own.
//!
//! - [`PropertyValue`]: Pulumi's data exchange types (seed 001), secrets and
//!   output values included.
//! - [`Urn`]: the URN grammar of seed 001, parsed and validated.
//! - [`PropertyPath`]: Pulumi's property-path syntax (`a.b[0]["k.x"]`, `*`).
//! - [`ResourceState`]: one resource as the checkpoint records it.
//! - [`CustomTimeouts`]: per-operation timeouts and Go's duration syntax.
//! - [`diff`]: detailed-diff vocabulary and a deep diff of property maps.

pub mod diff;
pub mod path;
pub mod property_map;
pub mod resource;
pub mod timeouts;
pub mod urn;
pub mod urn_pattern;
pub mod value;

pub use diff::{diff_objects, DiffKind, PropertyDiff};
pub use path::{
    peel, PathElement, PathResetError, PathSetError, Peeled, PropertyPath, PropertyPathError,
    PropertyPathErrorKind,
};
pub use resource::{DependencyKind, ProviderReference, ProviderReferenceError, ResourceState};
pub use timeouts::{go_duration_seconds, CustomTimeouts, TimeoutError};
pub use urn::{
    is_default_provider, package_of, provider_package, provider_type, Urn, UrnError,
    PROVIDER_TYPE_PREFIX, STACK_TYPE,
};
pub use urn_pattern::UrnPattern;
pub use value::{
    sha256_hex, Archive, ArchiveMember, Asset, OutputValue, PropertyMap, PropertyValue,
    ResourceReference, UNKNOWN_STRING,
};

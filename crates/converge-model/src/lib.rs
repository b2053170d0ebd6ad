//! The value model of Converge: everything the engine, the state format and the
//! providers agree on, with no IO and no wire format of its own.
//!
//! - [`PropertyValue`]: Pulumi's data exchange types (seed 001), secrets and
//!   output values included.
//! - [`Urn`]: the URN grammar of seed 001, parsed and validated.
//! - [`PropertyPath`]: Pulumi's property-path syntax (`a.b[0]["k.x"]`, `*`).
//! - [`ResourceState`]: one resource as the checkpoint records it.
//! - [`diff`]: detailed-diff vocabulary and a deep diff of property maps.

// pub mod diff; (being written)
// pub mod path; (being written)
pub mod resource;
pub mod urn;
pub mod value;

// pub use diff::{diff_objects, DiffKind, PropertyDiff};
// pub use path::{PathElement, PropertyPath, PropertyPathError};
pub use resource::{CustomTimeouts, DependencyKind, ProviderReference, ProviderReferenceError, ResourceState};
pub use urn::{Urn, UrnError};
pub use value::{
    Archive, ArchiveMember, Asset, OutputValue, PropertyMap, PropertyValue, ResourceReference,
    sha256_hex, UNKNOWN_STRING,
};

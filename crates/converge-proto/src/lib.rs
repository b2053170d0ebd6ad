//! Converge's wire schema: the `pulumirpc` gRPC protocol spoken by Pulumi's
//! SDKs, provider plugins and language hosts, Terraform's `tfplugin5`/`tfplugin6`
//! provider protocol, and the conversion between `google.protobuf.Struct`
//! and Converge's [`PropertyValue`].
//!
//! - [`pulumirpc`]: prost messages and tonic clients and servers generated
//!   from our own `.proto` files in `proto/` (same names, numbers and types as
//!   Pulumi's; `tests/descriptors.rs` checks them against the installed Python
//!   SDK). Servers answer `Unimplemented` for methods an implementation does
//!   not override.
//! - [`tfplugin6`], [`tfplugin5`]: the same for Terraform's provider plugin
//!   protocol, versions 6 and 5 (`tests/proto/tf_descriptors.rs` checks 6
//!   against PyPI's `tf`, `tests/proto/tfplugin5_descriptors.rs` checks 5
//!   against PyPI's `tfplugin-proto-all`).
//! - [`plugin`]: go-plugin's controller and stdio services, which
//!   Terraform providers serve beside `tfplugin6.Provider`.
//! - [`google::rpc::Status`]: the message a gRPC error's details decode to.
//! - [`marshal`]: `Struct`/`Value` ↔ [`PropertyMap`]/[`PropertyValue`], with
//!   Pulumi's signature-keyed special objects and [`MarshalOptions`] for what
//!   the peer accepts.
//! - [`MessageLimits`]: raises tonic's 4 MiB message limit to Pulumi's
//!   400 MiB on any generated client or server.
//! - [`codec`]: the codec of every generated client and server: prost
//!   (built without its 100-level recursion limit), with nesting bounded at
//!   [`MAX_MESSAGE_DEPTH`] (Pulumi's 10,000) by [`nesting`] before decoding.
//!
//! This crate holds no logic beyond marshalling.
//!
//! [`PropertyValue`]: converge_model::PropertyValue
//! [`PropertyMap`]: converge_model::PropertyMap

pub mod codec;
mod limits;
pub mod marshal;
pub mod nesting;

pub use codec::{decode_message, DecodeMessageError};
pub use limits::{MessageLimits, MAX_MESSAGE_SIZE};
pub use marshal::{
    marshal_properties, marshal_value, unmarshal_properties, unmarshal_value, MarshalError,
    MarshalOptions,
};
pub use nesting::{TooDeep, MAX_MESSAGE_DEPTH};

/// Generated code for package `pulumirpc` (and `pulumirpc.codegen`).
/// `google.protobuf` types map to [`prost_types`]; `Empty` maps to `()`.
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod pulumirpc {
    include!(concat!(env!("OUT_DIR"), "/pulumirpc.rs"));

    /// Generated code for package `pulumirpc.codegen`.
    pub mod codegen {
        include!(concat!(env!("OUT_DIR"), "/pulumirpc.codegen.rs"));
    }
}

/// Generated code for package `tfplugin5`: Terraform's provider plugin
/// protocol, version 5 (most released providers), from our own
/// `proto/tfplugin5/tfplugin5.proto` (the field numbers of protocol 5.5).
/// Client and server.
pub mod tfplugin5 {
    include!(concat!(env!("OUT_DIR"), "/tfplugin5.rs"));
}

/// Generated code for package `tfplugin6`: Terraform's provider plugin
/// protocol, version 6, from our own `proto/tfplugin6/tfplugin6.proto` (same
/// names, numbers and types as the `tf` framework's; `tests/tf_descriptors.rs`
/// checks them). A client talks to a Terraform provider plugin; the server
/// answers `Unimplemented` for methods an implementation does not override.
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod tfplugin6 {
    include!(concat!(env!("OUT_DIR"), "/tfplugin6.rs"));
}

/// Generated code for package `plugin`: go-plugin's `GRPCController` and
/// `GRPCStdio` services, served by Terraform providers beside their
/// provider service (`proto/plugin/`, checked against PyPI's `tf`).
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
pub mod plugin {
    include!(concat!(env!("OUT_DIR"), "/plugin.rs"));
}

/// Generated code for the Google packages we define ourselves.
pub mod google {
    /// Generated code for package `google.rpc`.
    #[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all)]
    pub mod rpc {
        include!(concat!(env!("OUT_DIR"), "/google.rpc.rs"));
    }
}

/// The serialized `FileDescriptorSet` of every file in `proto/` and its
/// imports, as compiled by the build script (for gRPC reflection and the
/// compatibility test).
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/converge_descriptor_set.bin"));

//! Providers as the engine sees them.
//!
//! - [`Provider`]: every method of the resource provider protocol (seed 001),
//!   async, on `converge-model` types — never protobuf. The gRPC plugin
//!   client, the built-in providers and the testkit's
//!   mocks all implement it.
//! - [`ProviderLoader`]: finds a provider for `(package, version)`.
//! - [`parameterization`]: parameterized packages (`RegisterPackage`,
//!   `Parameterize`) and how a provider resource records one.
//! - [`PackageSchema`] (`schema`): a package's canonical tokens, the
//!   rule that resolves the short forms programs write, and what the
//!   schema says of each member's properties.
//! - [`terraform`]: Terraform provider plugins (tfplugin6): their values.
//! - [`registry::ProviderRegistry`]: the configured provider instances of one
//!   deployment, keyed by provider reference (`<urn>::<id>`).
//! - [`policy`]: policy packs (`pulumirpc.Analyzer`): the [`policy::Analyzer`]
//!   trait the engine calls, packs' directories, configuration and processes.
//! - [`child`]: what every child process Converge starts has in common:
//!   its own process group, registered until it is ended
//!   ([`child::GroupLeader`]), so that [`child::end_all_groups`] on any
//!   exit path leaves none behind.

pub mod builtin;
pub mod child;
pub mod host;
pub mod parameterization;
pub mod policy;
pub mod provider;
pub mod registry;
pub mod schema;
pub mod terraform;

pub use provider::{
    CallRequest, CallResponse, CheckFailure, CheckRequest, CheckResponse, ConfigureRequest,
    ConstructOptions, ConstructRequest, ConstructResponse, CreateRequest, CreateResponse,
    DeleteRequest, DeploymentContext, DiffChanges, DiffConfigRequest, DiffRequest, DiffResponse,
    InvokeRequest, InvokeResponse, ParameterizeRequest, ParameterizeResponse, PluginInfo, Provider,
    ProviderError, ReadRequest, ReadResponse, UpdateRequest, UpdateResponse,
};
pub use registry::{ProviderLoader, ProviderRegistry, RegistryError};
pub use schema::{MemberKind, PackageSchema, SchemaError, UnknownToken};

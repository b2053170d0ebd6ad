//! An in-process Terraform provider (tfplugin6) for the Terraform
//! adapter's lifecycle tests: [`TfMock`] answers each RPC with a closure
//! the test gives or with Terraform-like defaults, records every request
//! (and its answer) decoded, and is served by tonic on `127.0.0.1:0`
//! ([`TfMock::serve`]). [`TfMockConnector`] connects the adapter
//! (`converge_terraform::TerraformProvider`) to it and [`TfMockLoader`]
//! answers its package with the adapter, so a [`Lifecycle`](crate::Lifecycle)
//! world runs the engine against it.
//!
//! Values are Terraform's: objects of the schema's attribute names
//! (snake_case), decoded from and encoded to msgpack with the types the
//! schema implies; `PropertyValue::Unknown` is Terraform's unknown.
//!
//! Defaults (each replaced by its `on_*` closure, which may call the
//! `default_*` method and adjust what it returns):
//!
//! | RPC | default |
//! |---|---|
//! | `GetProviderSchema` | the schema given to [`TfMock::new`] |
//! | `ValidateProviderConfig`, `ConfigureProvider`, `ValidateResourceConfig`, `ValidateDataResourceConfig` | no diagnostics |
//! | `UpgradeResourceState` | the raw JSON decoded as is, whatever its version |
//! | `PlanResourceChange` | the proposed new state with computed nulls made unknown; `planned_private` = `prior_private`; no `requires_replace` |
//! | `ApplyResourceChange` | create: the planned state with unknowns filled (`id` = a new [`MockCloud`] object's ID) stored in the cloud; update: the same, stored over the object; delete (null plan): the object removed; `private` = `planned_private` |
//! | `ReadResource` | the cloud object's attributes, or null when it is gone; `private` unchanged |
//! | `ImportResourceState` | the cloud object's attributes, no private data |
//! | `ReadDataSource` | the configuration with computed nulls filled |
//!
//! The cloud's objects are the Terraform objects; their URN is made up
//! (`urn:pulumi:terraform::mock::<token>::<type name>`, the token as the
//! adapter names the type), since a provider never sees URNs, so the
//! tracking check of [`Lifecycle`](crate::Lifecycle) matches them by ID.
//! Creates, updates, reads and deletes go through the cloud's counters and
//! fault switch.

mod defaults;
pub mod schema;
mod server;

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use converge_model::PropertyMap;
use converge_plugin::registry::{ProviderLoader, RegistryError};
use converge_plugin::terraform::values::CtyType;
use converge_plugin::{Provider, ProviderError};
use converge_proto::tfplugin6::{self as tf, Diagnostic};
use converge_terraform::provider::Shared;
use converge_terraform::session::{Connection, Connector};
use converge_terraform::TerraformProvider;
use tonic::transport::Channel;

use crate::cloud::MockCloud;
use schema::BlockInfo;

/// `UpgradeResourceState`'s request: the recorded state's schema version
/// and its raw JSON, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct UpgradeCall {
    pub type_name: String,
    pub version: i64,
    pub raw_json: serde_json::Value,
}

/// What `UpgradeResourceState` answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpgradeResult {
    pub state: Option<PropertyMap>,
    pub diagnostics: Vec<Diagnostic>,
}

/// `PlanResourceChange`'s request (null values are `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanCall {
    pub type_name: String,
    pub prior_state: Option<PropertyMap>,
    pub proposed_new_state: Option<PropertyMap>,
    pub config: Option<PropertyMap>,
    pub prior_private: Vec<u8>,
}

/// What `PlanResourceChange` answers. `requires_replace` holds top-level
/// attribute names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanResult {
    pub planned_state: Option<PropertyMap>,
    pub requires_replace: Vec<String>,
    pub planned_private: Vec<u8>,
    pub diagnostics: Vec<Diagnostic>,
}

/// `ApplyResourceChange`'s request: a create (no prior state), an update,
/// or a delete (no planned state).
#[derive(Debug, Clone, PartialEq)]
pub struct ApplyCall {
    pub type_name: String,
    pub prior_state: Option<PropertyMap>,
    pub planned_state: Option<PropertyMap>,
    pub config: Option<PropertyMap>,
    pub planned_private: Vec<u8>,
}

impl ApplyCall {
    /// True for the apply of a delete (a null planned state).
    pub fn is_delete(&self) -> bool {
        self.planned_state.is_none()
    }
}

/// What `ApplyResourceChange` answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ApplyResult {
    pub new_state: Option<PropertyMap>,
    pub private: Vec<u8>,
    pub diagnostics: Vec<Diagnostic>,
}

/// `ReadResource`'s request.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadCall {
    pub type_name: String,
    pub current_state: Option<PropertyMap>,
    pub private: Vec<u8>,
}

/// What `ReadResource` answers (`new_state` `None`: the object is gone).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadResult {
    pub new_state: Option<PropertyMap>,
    pub private: Vec<u8>,
    pub diagnostics: Vec<Diagnostic>,
}

/// `ImportResourceState`'s request.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportCall {
    pub type_name: String,
    pub id: String,
}

/// One object `ImportResourceState` answers with.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub type_name: String,
    pub state: Option<PropertyMap>,
    pub private: Vec<u8>,
}

/// What `ImportResourceState` answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportResult {
    pub imported: Vec<Imported>,
    pub diagnostics: Vec<Diagnostic>,
}

/// A configuration sent for validation, to configure the provider or to
/// read a data source (`type_name` empty for the provider's own).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigCall {
    pub type_name: String,
    pub config: Option<PropertyMap>,
}

/// What `ReadDataSource` answers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataResult {
    pub state: Option<PropertyMap>,
    pub diagnostics: Vec<Diagnostic>,
}

/// One call the mock received, decoded, with its answer where it has one.
#[derive(Debug, Clone, PartialEq)]
pub enum TfCall {
    GetProviderSchema,
    ValidateProviderConfig(ConfigCall),
    /// The configuration and the Terraform version Core said it is.
    ConfigureProvider(ConfigCall, String),
    ValidateResourceConfig(ConfigCall),
    ValidateDataResourceConfig(ConfigCall),
    UpgradeResourceState(UpgradeCall, UpgradeResult),
    PlanResourceChange(PlanCall, PlanResult),
    ApplyResourceChange(ApplyCall, ApplyResult),
    ReadResource(ReadCall, ReadResult),
    ImportResourceState(ImportCall, ImportResult),
    ReadDataSource(ConfigCall, DataResult),
}

impl TfCall {
    /// The RPC's name.
    pub fn rpc(&self) -> &'static str {
        match self {
            TfCall::GetProviderSchema => "GetProviderSchema",
            TfCall::ValidateProviderConfig(_) => "ValidateProviderConfig",
            TfCall::ConfigureProvider(..) => "ConfigureProvider",
            TfCall::ValidateResourceConfig(_) => "ValidateResourceConfig",
            TfCall::ValidateDataResourceConfig(_) => "ValidateDataResourceConfig",
            TfCall::UpgradeResourceState(..) => "UpgradeResourceState",
            TfCall::PlanResourceChange(..) => "PlanResourceChange",
            TfCall::ApplyResourceChange(..) => "ApplyResourceChange",
            TfCall::ReadResource(..) => "ReadResource",
            TfCall::ImportResourceState(..) => "ImportResourceState",
            TfCall::ReadDataSource(..) => "ReadDataSource",
        }
    }
}

/// An error diagnostic.
pub fn error(summary: &str) -> Diagnostic {
    Diagnostic {
        severity: tf::diagnostic::Severity::Error as i32,
        summary: summary.to_owned(),
        ..Default::default()
    }
}

/// The closure that answers one RPC: given the mock (for its defaults and
/// cloud) and the decoded request.
pub type TfHandler<Req, Resp> = Box<dyn Fn(&TfMock, &Req) -> Resp + Send + Sync>;

#[derive(Default)]
struct Handlers {
    validate_provider: Option<TfHandler<ConfigCall, Vec<Diagnostic>>>,
    configure: Option<TfHandler<ConfigCall, Vec<Diagnostic>>>,
    validate_resource: Option<TfHandler<ConfigCall, Vec<Diagnostic>>>,
    validate_data: Option<TfHandler<ConfigCall, Vec<Diagnostic>>>,
    upgrade: Option<TfHandler<UpgradeCall, UpgradeResult>>,
    plan: Option<TfHandler<PlanCall, PlanResult>>,
    apply: Option<TfHandler<ApplyCall, ApplyResult>>,
    read: Option<TfHandler<ReadCall, ReadResult>>,
    import: Option<TfHandler<ImportCall, ImportResult>>,
    read_data: Option<TfHandler<ConfigCall, DataResult>>,
}

/// A Terraform provider for tests; see the [module](self) docs.
pub struct TfMock {
    package: String,
    version: semver::Version,
    schema: tf::get_provider_schema::Response,
    provider: BlockInfo,
    resources: BTreeMap<String, BlockInfo>,
    data_sources: BTreeMap<String, BlockInfo>,
    cloud: Arc<MockCloud>,
    handlers: Handlers,
    calls: Mutex<Vec<TfCall>>,
}

impl fmt::Debug for TfMock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TfMock")
            .field("package", &self.package)
            .field("version", &self.version.to_string())
            .field("resources", &self.resources.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl TfMock {
    /// A provider of Terraform TYPE `package` (so its resource types are
    /// named `<package>_…`) with `schema`, version 1.0.0, a cloud of its
    /// own and every default.
    ///
    /// # Panics
    /// If the schema has an attribute whose type is not a cty type.
    pub fn new(package: &str, schema: tf::get_provider_schema::Response) -> TfMock {
        let read = |m: &std::collections::HashMap<String, tf::Schema>| {
            m.iter()
                .map(|(n, s)| {
                    let info = BlockInfo::read(s.block.as_ref())
                        .unwrap_or_else(|e| panic!("TfMock schema of {n}: {e}"));
                    (n.clone(), info)
                })
                .collect::<BTreeMap<_, _>>()
        };
        let provider = BlockInfo::read(schema.provider.as_ref().and_then(|s| s.block.as_ref()))
            .unwrap_or_else(|e| panic!("TfMock provider schema: {e}"));
        TfMock {
            package: package.to_owned(),
            version: semver::Version::new(1, 0, 0),
            resources: read(&schema.resource_schemas),
            data_sources: read(&schema.data_source_schemas),
            provider,
            schema,
            cloud: MockCloud::new(),
            handlers: Handlers::default(),
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Shares `cloud` (with the test's [`Lifecycle`](crate::Lifecycle)).
    pub fn with_cloud(mut self, cloud: Arc<MockCloud>) -> Self {
        self.cloud = cloud;
        self
    }

    /// The version the loader reports and matches on.
    pub fn with_version(mut self, version: semver::Version) -> Self {
        self.version = version;
        self
    }

    pub fn on_validate_provider_config(
        mut self,
        f: impl Fn(&TfMock, &ConfigCall) -> Vec<Diagnostic> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.validate_provider = Some(Box::new(f));
        self
    }

    pub fn on_configure(
        mut self,
        f: impl Fn(&TfMock, &ConfigCall) -> Vec<Diagnostic> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.configure = Some(Box::new(f));
        self
    }

    pub fn on_validate_resource_config(
        mut self,
        f: impl Fn(&TfMock, &ConfigCall) -> Vec<Diagnostic> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.validate_resource = Some(Box::new(f));
        self
    }

    pub fn on_validate_data_resource_config(
        mut self,
        f: impl Fn(&TfMock, &ConfigCall) -> Vec<Diagnostic> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.validate_data = Some(Box::new(f));
        self
    }

    pub fn on_upgrade(
        mut self,
        f: impl Fn(&TfMock, &UpgradeCall) -> UpgradeResult + Send + Sync + 'static,
    ) -> Self {
        self.handlers.upgrade = Some(Box::new(f));
        self
    }

    pub fn on_plan(
        mut self,
        f: impl Fn(&TfMock, &PlanCall) -> PlanResult + Send + Sync + 'static,
    ) -> Self {
        self.handlers.plan = Some(Box::new(f));
        self
    }

    pub fn on_apply(
        mut self,
        f: impl Fn(&TfMock, &ApplyCall) -> ApplyResult + Send + Sync + 'static,
    ) -> Self {
        self.handlers.apply = Some(Box::new(f));
        self
    }

    pub fn on_read(
        mut self,
        f: impl Fn(&TfMock, &ReadCall) -> ReadResult + Send + Sync + 'static,
    ) -> Self {
        self.handlers.read = Some(Box::new(f));
        self
    }

    pub fn on_import(
        mut self,
        f: impl Fn(&TfMock, &ImportCall) -> ImportResult + Send + Sync + 'static,
    ) -> Self {
        self.handlers.import = Some(Box::new(f));
        self
    }

    pub fn on_read_data_source(
        mut self,
        f: impl Fn(&TfMock, &ConfigCall) -> DataResult + Send + Sync + 'static,
    ) -> Self {
        self.handlers.read_data = Some(Box::new(f));
        self
    }

    pub fn package(&self) -> &str {
        &self.package
    }

    pub fn version(&self) -> &semver::Version {
        &self.version
    }

    pub fn cloud(&self) -> &Arc<MockCloud> {
        &self.cloud
    }

    /// The object type of resource type (or data source) `type_name`.
    pub fn object_type(&self, type_name: &str) -> Option<CtyType> {
        self.resources
            .get(type_name)
            .or_else(|| self.data_sources.get(type_name))
            .map(BlockInfo::object_type)
    }

    /// Every call so far, in order of arrival.
    pub fn calls(&self) -> Vec<TfCall> {
        lock(&self.calls).clone()
    }

    /// The RPC names of every call so far, in order.
    pub fn rpcs(&self) -> Vec<&'static str> {
        lock(&self.calls).iter().map(TfCall::rpc).collect()
    }

    /// Forgets the calls so far.
    pub fn clear_calls(&self) {
        lock(&self.calls).clear();
    }

    pub fn upgrades(&self) -> Vec<(UpgradeCall, UpgradeResult)> {
        self.select(|c| match c {
            TfCall::UpgradeResourceState(q, r) => Some((q.clone(), r.clone())),
            _ => None,
        })
    }

    pub fn plans(&self) -> Vec<(PlanCall, PlanResult)> {
        self.select(|c| match c {
            TfCall::PlanResourceChange(q, r) => Some((q.clone(), r.clone())),
            _ => None,
        })
    }

    pub fn applies(&self) -> Vec<(ApplyCall, ApplyResult)> {
        self.select(|c| match c {
            TfCall::ApplyResourceChange(q, r) => Some((q.clone(), r.clone())),
            _ => None,
        })
    }

    pub fn reads(&self) -> Vec<(ReadCall, ReadResult)> {
        self.select(|c| match c {
            TfCall::ReadResource(q, r) => Some((q.clone(), r.clone())),
            _ => None,
        })
    }

    pub fn imports(&self) -> Vec<(ImportCall, ImportResult)> {
        self.select(|c| match c {
            TfCall::ImportResourceState(q, r) => Some((q.clone(), r.clone())),
            _ => None,
        })
    }

    /// The configurations `ConfigureProvider` received.
    pub fn configures(&self) -> Vec<ConfigCall> {
        self.select(|c| match c {
            TfCall::ConfigureProvider(q, _) => Some(q.clone()),
            _ => None,
        })
    }

    fn select<T>(&self, f: impl Fn(&TfCall) -> Option<T>) -> Vec<T> {
        lock(&self.calls).iter().filter_map(f).collect()
    }

    fn record(&self, call: TfCall) {
        lock(&self.calls).push(call);
    }

    /// Serves the mock with tonic on `127.0.0.1:0` (plaintext) and
    /// connects a channel to it. The server runs on the current tokio
    /// runtime until the last clone of the returned [`TfServer`] is
    /// dropped.
    pub async fn serve(self) -> Result<TfServer, ServeError> {
        server::serve(Arc::new(self)).await
    }
}

/// Why [`TfMock::serve`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("could not listen on 127.0.0.1: {0}")]
    Listen(#[from] std::io::Error),
    #[error("could not connect to the mock at {address}: {source}")]
    Connect {
        address: SocketAddr,
        source: tonic::transport::Error,
    },
}

/// A served [`TfMock`]: its address, a channel to it, the mock itself.
/// Cheap to clone; the server stops when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct TfServer(Arc<server::Running>);

impl TfServer {
    pub fn mock(&self) -> &Arc<TfMock> {
        &self.0.mock
    }

    pub fn address(&self) -> SocketAddr {
        self.0.address
    }

    pub fn channel(&self) -> Channel {
        self.0.channel.clone()
    }

    /// A connector that opens the adapter's connections to this server.
    pub fn connector(&self) -> TfMockConnector {
        TfMockConnector(self.clone())
    }

    /// A loader that answers the mock's package with the adapter
    /// connected to this server.
    pub fn loader(&self) -> TfMockLoader {
        TfMockLoader {
            server: self.clone(),
            shared: Shared {
                version: Some(self.mock().version.clone()),
                ..Shared::default()
            },
        }
    }
}

/// Connects the adapter to a [`TfServer`]: a channel to it and no process.
#[derive(Debug, Clone)]
pub struct TfMockConnector(TfServer);

#[async_trait]
impl Connector for TfMockConnector {
    async fn connect(&self) -> Result<Connection, ProviderError> {
        Ok(Connection {
            channel: self.0.channel(),
            protocol: 6,
            process: None,
        })
    }
}

/// Answers the mock's package (with no version asked, or its version) with
/// `TerraformProvider` connected to the mock; every other package is not
/// found. Every provider it gives shares one unconfigured connection, as
/// the Terraform loader's do per executable.
#[derive(Debug)]
pub struct TfMockLoader {
    server: TfServer,
    shared: Shared,
}

#[async_trait]
impl ProviderLoader for TfMockLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        let mock = self.server.mock();
        if package != mock.package() || version.is_some_and(|v| v != mock.version()) {
            return Err(RegistryError::NotFound {
                package: package.to_owned(),
                version: version.map(ToString::to_string),
            });
        }
        Ok(Arc::new(TerraformProvider::new(
            package,
            Arc::new(self.server.connector()),
            self.shared.clone(),
        )))
    }
}

#[cfg(test)]
mod tests;

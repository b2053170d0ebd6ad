//! The provider protocol (seed 001) as an async Rust trait.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use converge_model::{PropertyDiff, PropertyMap, Urn};

use crate::schema::PackageSchema;

/// A check failure: a property path and why its value is invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    pub property: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CheckRequest {
    pub urn: Urn,
    /// The last checked inputs; empty for a new resource or a replacement.
    pub olds: PropertyMap,
    pub news: PropertyMap,
    /// Deterministic seed for providers that generate random values.
    pub random_seed: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckResponse {
    pub inputs: PropertyMap,
    pub failures: Vec<CheckFailure>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DiffRequest {
    pub urn: Urn,
    pub id: String,
    pub old_inputs: PropertyMap,
    pub old_outputs: PropertyMap,
    pub new_inputs: PropertyMap,
    pub ignore_changes: Vec<String>,
}

/// `DiffConfig`: the same question for a provider's configuration.
pub type DiffConfigRequest = DiffRequest;

/// Whether the provider found changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiffChanges {
    /// The provider cannot tell: the engine compares inputs itself.
    #[default]
    Unknown,
    None,
    Some,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiffResponse {
    pub changes: DiffChanges,
    /// Top-level properties whose change requires replacement.
    pub replace_keys: Vec<String>,
    pub stable_keys: Vec<String>,
    pub changed_keys: Vec<String>,
    /// Property path → change, when the provider computes a detailed diff.
    pub detailed_diff: Option<BTreeMap<String, PropertyDiff>>,
    pub delete_before_replace: bool,
    /// The old outputs as the provider reads them now, when that can
    /// differ from what is recorded in form only: a Terraform provider's
    /// state upgraded to its current schema version (seed 004's Upgraded
    /// State). When the diff finds no change, the engine records these in
    /// place of the old outputs (the Same step), so the state follows the
    /// provider's schema without an update. `None` (Pulumi plugins, whose
    /// protocol has no such field): the recorded outputs stand.
    pub upgraded_outputs: Option<PropertyMap>,
}

impl DiffResponse {
    pub fn none() -> Self {
        DiffResponse {
            changes: DiffChanges::None,
            ..DiffResponse::default()
        }
    }

    /// True if any change in this diff requires replacement.
    pub fn requires_replacement(&self) -> bool {
        !self.replace_keys.is_empty()
            || self
                .detailed_diff
                .as_ref()
                .is_some_and(|d| d.values().any(|p| p.kind.is_replace()))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConfigureRequest {
    pub urn: Option<Urn>,
    pub inputs: PropertyMap,
    pub accept_secrets: bool,
    pub accept_resources: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateRequest {
    pub urn: Urn,
    pub properties: PropertyMap,
    pub timeout: Option<Duration>,
    pub preview: bool,
    /// The outputs this resource's preview planned (seed 004's initial
    /// planned state), when the engine has them. A Terraform provider's
    /// final plan must agree with every value known there; Pulumi plugins
    /// ignore it.
    pub planned: Option<PropertyMap>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct CreateResponse {
    pub id: String,
    pub properties: PropertyMap,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReadRequest {
    pub urn: Urn,
    pub id: String,
    /// Last recorded inputs; `None` when importing.
    pub inputs: Option<PropertyMap>,
    /// Last recorded state; `None` when importing or reading.
    pub state: Option<PropertyMap>,
    /// The resource's read timeout (`customTimeouts.read`), if any.
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReadResponse {
    /// Empty when the object no longer exists.
    pub id: String,
    pub inputs: PropertyMap,
    pub properties: PropertyMap,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UpdateRequest {
    pub urn: Urn,
    pub id: String,
    pub old_inputs: PropertyMap,
    pub old_outputs: PropertyMap,
    pub new_inputs: PropertyMap,
    pub timeout: Option<Duration>,
    pub ignore_changes: Vec<String>,
    pub preview: bool,
    /// The outputs this resource's preview planned (seed 004's initial
    /// planned state), when the engine has them. A Terraform provider's
    /// final plan must agree with every value known there; Pulumi plugins
    /// ignore it.
    pub planned: Option<PropertyMap>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct UpdateResponse {
    pub properties: PropertyMap,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeleteRequest {
    pub urn: Urn,
    pub id: String,
    pub inputs: PropertyMap,
    pub outputs: PropertyMap,
    pub timeout: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InvokeRequest {
    pub token: String,
    pub args: PropertyMap,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct InvokeResponse {
    pub outputs: PropertyMap,
    pub failures: Vec<CheckFailure>,
}

/// The deployment a `Construct` or `Call` runs in: what a provider needs to
/// register resources with the engine's resource monitor itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeploymentContext {
    pub project: String,
    pub stack: String,
    pub organization: String,
    /// The stack's configuration, `"<namespace>:<key>"` → value (plaintext).
    pub config: BTreeMap<String, String>,
    /// Which configuration keys are secrets.
    pub config_secret_keys: Vec<String>,
    /// True in a preview: registrations made through the monitor are
    /// previewed, not executed.
    pub dry_run: bool,
    /// How many resource operations may run at once.
    pub parallel: usize,
    /// `host:port` of the engine's `pulumirpc.ResourceMonitor`.
    pub monitor_endpoint: String,
}

/// The resource options of a remote component, passed on to the provider,
/// which applies them when it registers the component.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConstructOptions {
    pub protect: Option<bool>,
    /// Former URNs of the component (alias specs already resolved).
    pub aliases: Vec<Urn>,
    pub additional_secret_outputs: Vec<String>,
    pub custom_timeouts: Option<converge_model::CustomTimeouts>,
    pub deleted_with: Option<Urn>,
    pub delete_before_replace: Option<bool>,
    pub ignore_changes: Vec<String>,
    pub replace_on_changes: Vec<String>,
    pub retain_on_delete: Option<bool>,
}

/// `Construct`: build a component resource (a "remote component") by
/// registering it and its children with the monitor of `context`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConstructRequest {
    pub context: DeploymentContext,
    pub type_token: String,
    pub name: String,
    /// The component's parent; `None` for the stack.
    pub parent: Option<Urn>,
    pub inputs: PropertyMap,
    /// Input property → the resources its value depends on.
    pub input_dependencies: BTreeMap<String, Vec<Urn>>,
    /// Package → provider reference `<urn>::<id>` for the component's
    /// children.
    pub providers: BTreeMap<String, String>,
    pub dependencies: Vec<Urn>,
    pub options: ConstructOptions,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConstructResponse {
    /// The component the provider registered.
    pub urn: Urn,
    /// The component's outputs.
    pub state: PropertyMap,
    /// Output property → the resources its value depends on.
    pub state_dependencies: BTreeMap<String, Vec<Urn>>,
}

/// `Call`: a method of a component (`<type>/<method>`, with the component
/// as argument `__self__`) or a function that may register resources.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRequest {
    pub context: DeploymentContext,
    pub token: String,
    pub args: PropertyMap,
    /// Argument → the resources its value depends on.
    pub arg_dependencies: BTreeMap<String, Vec<Urn>>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallResponse {
    pub outputs: PropertyMap,
    /// Returned property → the resources its value depends on.
    pub return_dependencies: BTreeMap<String, Vec<Urn>>,
    pub failures: Vec<CheckFailure>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PluginInfo {
    pub version: Option<semver::Version>,
}

/// Why a provider call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The provider reported an error.
    #[error("{0}")]
    Failed(String),
    /// The provider does not implement this method.
    #[error("the provider does not implement {0}")]
    Unimplemented(&'static str),
    /// The object was created or updated but did not finish initialising:
    /// it exists and must be recorded, with these errors.
    #[error("{}", reasons.join("; "))]
    PartialFailure {
        id: String,
        properties: PropertyMap,
        reasons: Vec<String>,
    },
    /// The provider process went away or the call could not be made.
    #[error("provider unavailable: {0}")]
    Unavailable(String),
}

impl ProviderError {
    pub fn failed(msg: impl fmt::Display) -> Self {
        ProviderError::Failed(msg.to_string())
    }
}

/// What a plugin is asked to become (`Parameterize`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParameterizeRequest {
    /// Command-line style arguments (`pulumi package add <plugin> <args>`).
    Args(Vec<String>),
    /// A package recorded earlier: its name, version and value.
    Value(crate::parameterization::Parameterization),
}

/// The package a plugin became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterizeResponse {
    pub name: String,
    pub version: String,
}

/// A resource provider (seed 001). Methods a provider does not support
/// answer [`ProviderError::Unimplemented`] by default.
#[async_trait]
pub trait Provider: Send + Sync + fmt::Debug {
    /// The package this provider serves (`aws`, `random`, …).
    fn package(&self) -> &str;

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        Ok(PluginInfo::default())
    }

    /// The canonical tokens of the package's schema (`GetSchema`), for
    /// resolving the short type tokens programs write.
    async fn schema(&self) -> Result<Arc<PackageSchema>, ProviderError> {
        Err(ProviderError::Unimplemented("GetSchema"))
    }

    /// Makes this instance the provider of a parameterized package. Called
    /// once, before anything else; the instance then serves that package
    /// only.
    async fn parameterize(
        &self,
        _req: ParameterizeRequest,
    ) -> Result<ParameterizeResponse, ProviderError> {
        Err(ProviderError::Unimplemented("Parameterize"))
    }

    async fn check_config(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        Ok(CheckResponse {
            inputs: req.news,
            failures: Vec::new(),
        })
    }

    async fn diff_config(&self, _req: DiffConfigRequest) -> Result<DiffResponse, ProviderError> {
        Ok(DiffResponse::default())
    }

    async fn configure(&self, _req: ConfigureRequest) -> Result<(), ProviderError> {
        Ok(())
    }

    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        Ok(CheckResponse {
            inputs: req.news,
            failures: Vec::new(),
        })
    }

    async fn diff(&self, _req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        Ok(DiffResponse::default())
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError>;

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError>;

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError>;

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError>;

    async fn invoke(&self, _req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        Err(ProviderError::Unimplemented("Invoke"))
    }

    /// Builds a remote component: the provider registers it and its
    /// children through the monitor named in the request's context.
    async fn construct(&self, _req: ConstructRequest) -> Result<ConstructResponse, ProviderError> {
        Err(ProviderError::Unimplemented("Construct"))
    }

    /// Runs a component method or a resource-registering function.
    async fn call(&self, _req: CallRequest) -> Result<CallResponse, ProviderError> {
        Err(ProviderError::Unimplemented("Call"))
    }

    /// Asks the provider to stop outstanding work (advisory).
    async fn cancel(&self) -> Result<(), ProviderError> {
        Ok(())
    }
}

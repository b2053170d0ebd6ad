//! The provider protocol (seed 001) as an async Rust trait.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use converge_model::{PropertyDiff, PropertyMap, Urn};

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

/// A resource provider (seed 001). Methods a provider does not support
/// answer [`ProviderError::Unimplemented`] by default.
#[async_trait]
pub trait Provider: Send + Sync + fmt::Debug {
    /// The package this provider serves (`aws`, `random`, …).
    fn package(&self) -> &str;

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        Ok(PluginInfo::default())
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

    /// Asks the provider to stop outstanding work (advisory).
    async fn cancel(&self) -> Result<(), ProviderError> {
        Ok(())
    }
}

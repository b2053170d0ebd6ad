//! Policy packs as the engine sees them.
//!
//! - [`Analyzer`]: what the engine asks of one pack — `Remediate` and
//!   `Analyze` on a resource's checked inputs, `AnalyzeStack` on the
//!   stack's resources at the end — on `converge-model` types. The gRPC
//!   pack process ([`PolicyPackProcess`]) and the engine tests' mocks
//!   implement it.
//! - [`pack`]: a pack's directory and its `PulumiPolicy.yaml`, and the
//!   command that runs it (Python in the pack's virtualenv, Node.js with
//!   the runner `@pulumi/pulumi` ships, or an executable).
//! - [`config`]: each policy's enforcement level and settings — from the
//!   pack, then from a `--policy-pack-config` file — validated against
//!   the policy's JSON schema before anything runs.
//! - [`process`]: a running pack: launch, port, `GetAnalyzerInfo`,
//!   `Configure`, `ConfigureStack`, the calls, and its process group
//!   ended with it.

pub mod config;
pub mod pack;
pub mod process;
mod wire;

use std::collections::BTreeMap;
use std::fmt;

use async_trait::async_trait;
use converge_model::PropertyMap;

pub use config::{ConfigError, PackConfig, PolicyConfig};
pub use pack::{PackError, PolicyPackDir, UnknownKey};
pub use process::{PackStartOptions, PolicyPackProcess};

/// What a policy's violation does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum EnforcementLevel {
    /// Reported; the operation goes on.
    Advisory,
    /// Reported; a preview fails, an update stops before the resource.
    Mandatory,
    /// The pack fixes the inputs itself (`Remediate`).
    Remediate,
    /// Not evaluated.
    Disabled,
}

impl EnforcementLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            EnforcementLevel::Advisory => "advisory",
            EnforcementLevel::Mandatory => "mandatory",
            EnforcementLevel::Remediate => "remediate",
            EnforcementLevel::Disabled => "disabled",
        }
    }

    /// The level named `text`, as packs and config files spell it.
    pub fn parse(text: &str) -> Option<EnforcementLevel> {
        match text {
            "advisory" => Some(EnforcementLevel::Advisory),
            "mandatory" => Some(EnforcementLevel::Mandatory),
            "remediate" => Some(EnforcementLevel::Remediate),
            "disabled" => Some(EnforcementLevel::Disabled),
            _ => None,
        }
    }
}

impl fmt::Display for EnforcementLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How severe a policy says its violations are (`PolicySeverity`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum PolicySeverity {
    Low,
    Medium,
    High,
    Critical,
}

impl PolicySeverity {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicySeverity::Low => "low",
            PolicySeverity::Medium => "medium",
            PolicySeverity::High => "high",
            PolicySeverity::Critical => "critical",
        }
    }
}

impl fmt::Display for PolicySeverity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One policy of a pack, as the pack describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyInfo {
    pub name: String,
    pub description: String,
    /// Its level: the pack's default, and once the pack is configured
    /// (`PolicyPackProcess::info`), the one in effect.
    pub enforcement_level: EnforcementLevel,
    /// Its settings' JSON schema: the `properties` object and `required`.
    pub config_schema: Option<PolicySchema>,
    /// A stack policy (`AnalyzeStack`) rather than a resource policy.
    pub stack: bool,
}

/// A policy's settings schema.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicySchema {
    pub properties: serde_json::Map<String, serde_json::Value>,
    pub required: Vec<String>,
}

/// What a pack says of itself (`GetAnalyzerInfo`), with the version of
/// its `PulumiPolicy.yaml` when that names one.
#[derive(Debug, Clone, PartialEq)]
pub struct PackInfo {
    pub name: String,
    pub version: String,
    pub policies: Vec<PolicyInfo>,
    /// The pack's own configuration (`initialConfig`), by policy name.
    pub initial_config: BTreeMap<String, PolicyConfig>,
}

impl PackInfo {
    /// `name@version`, as violations are grouped.
    pub fn label(&self) -> String {
        format!("{}@v{}", self.name, self.version)
    }
}

/// One resource as a pack sees it: its checked inputs, before any change.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnalyzedResource {
    pub urn: String,
    pub type_token: String,
    pub name: String,
    pub properties: PropertyMap,
    pub options: AnalyzedOptions,
    pub provider: Option<AnalyzedProvider>,
}

/// The options of an [`AnalyzedResource`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnalyzedOptions {
    pub protect: bool,
    pub ignore_changes: Vec<String>,
    pub delete_before_replace: Option<bool>,
    pub additional_secret_outputs: Vec<String>,
    pub aliases: Vec<String>,
    pub parent: Option<String>,
}

/// The provider of an [`AnalyzedResource`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AnalyzedProvider {
    pub urn: String,
    pub type_token: String,
    pub name: String,
    pub properties: PropertyMap,
}

/// One resource of the stack for `AnalyzeStack`: its outputs (inputs for
/// a component), parent and dependencies.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StackResource {
    pub resource: AnalyzedResource,
    pub parent: Option<String>,
    pub dependencies: Vec<String>,
    pub property_dependencies: BTreeMap<String, Vec<String>>,
}

/// One violation a pack reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyDiagnostic {
    pub policy_name: String,
    pub pack_name: String,
    pub pack_version: String,
    pub description: String,
    pub message: String,
    pub enforcement_level: EnforcementLevel,
    /// The resource at fault; `None`: the one analyzed (or, for a stack
    /// policy, none in particular).
    pub urn: Option<String>,
    /// The severity the pack gave the violation, if any.
    pub severity: Option<PolicySeverity>,
}

/// Inputs one remediation policy rewrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Remediation {
    pub policy_name: String,
    pub pack_name: String,
    pub pack_version: String,
    pub description: String,
    /// The resource's inputs after the remediation; `None` when it could
    /// not run (see `diagnostic`).
    pub properties: Option<PropertyMap>,
    pub diagnostic: Option<String>,
}

/// Why a pack could not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnalyzerError {
    #[error("policy pack {pack}: {call} failed: {message}")]
    Call {
        pack: String,
        call: &'static str,
        message: String,
    },
    #[error("policy pack {pack}: {call}: the values could not be converted: {message}")]
    Values {
        pack: String,
        call: &'static str,
        message: String,
    },
}

/// A policy pack, as the engine calls it.
#[async_trait]
pub trait Analyzer: Send + Sync + fmt::Debug {
    /// The pack's name, version and policies.
    fn info(&self) -> &PackInfo;

    /// The remediation policies' fixes to one resource's inputs, in the
    /// order they apply (each sees the inputs the one before left).
    async fn remediate(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<Remediation>, AnalyzerError>;

    /// The resource policies' violations by one resource.
    async fn analyze(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError>;

    /// The stack policies' violations by the stack's resources.
    async fn analyze_stack(
        &self,
        resources: &[StackResource],
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError>;
}

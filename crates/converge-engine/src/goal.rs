//! What a program asks for: resource registrations and reads, in engine
//! terms. The gRPC resource monitor and in-process programs both produce
//! these.

use std::collections::BTreeMap;

use converge_model::{CustomTimeouts, PropertyMap, Urn};

/// A `RegisterResource` request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourceGoal {
    pub type_token: String,
    pub name: String,
    /// Custom (provider-managed) or component.
    pub custom: bool,
    /// The parent resource; `None` means the stack (or nothing, for the
    /// stack itself).
    pub parent: Option<Urn>,
    pub inputs: PropertyMap,
    /// An explicit provider reference `<urn>::<id>`; `None` uses the
    /// default provider of the package.
    pub provider: Option<String>,
    /// The provider version the program asks for (default providers).
    pub version: Option<String>,
    pub dependencies: Vec<Urn>,
    pub property_dependencies: BTreeMap<String, Vec<Urn>>,
    pub options: ResourceOptions,
}

/// Resource options (Pulumi's names).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourceOptions {
    pub protect: bool,
    /// `Some(true)`: always delete before replacing.
    pub delete_before_replace: Option<bool>,
    pub ignore_changes: Vec<String>,
    pub replace_on_changes: Vec<String>,
    pub retain_on_delete: bool,
    pub deleted_with: Option<Urn>,
    /// Former URNs of this resource.
    pub aliases: Vec<Urn>,
    pub custom_timeouts: Option<CustomTimeouts>,
    pub additional_secret_outputs: Vec<String>,
    /// Adopt an existing object with this ID instead of creating one.
    pub import_id: Option<String>,
}

/// A `ReadResource` request: an external object, read, never managed.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadGoal {
    pub type_token: String,
    pub name: String,
    pub id: String,
    pub parent: Option<Urn>,
    pub inputs: PropertyMap,
    pub provider: Option<String>,
    pub version: Option<String>,
    pub dependencies: Vec<Urn>,
}

/// What a registration answers.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisterResult {
    pub urn: Urn,
    /// Empty for components; unknown in previews of new resources.
    pub id: Option<String>,
    pub outputs: PropertyMap,
}

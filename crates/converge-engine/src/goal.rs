//! What a program asks for: resource registrations and reads, function
//! invocations, method calls and remote components, in engine terms. The
//! gRPC resource monitor and in-process programs both produce these.

use std::collections::BTreeMap;

use converge_model::{CustomTimeouts, PropertyMap, PropertyValue, Urn};

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
    /// Former identities of this resource. The engine resolves them to
    /// URNs and adds those inherited from the parent's aliases.
    pub aliases: Vec<Alias>,
    pub custom_timeouts: Option<CustomTimeouts>,
    pub additional_secret_outputs: Vec<String>,
    /// Adopt an existing object with this ID instead of creating one.
    pub import_id: Option<String>,
    /// Where an imported resource's desired inputs come from.
    pub import_inputs: ImportInputs,
    /// Property paths whose changes the display leaves out.
    pub hide_diffs: Vec<String>,
    /// Replace this resource whenever one of these is replaced in the
    /// same deployment.
    pub replace_with: Vec<Urn>,
    /// A value whose change replaces the resource: when the recorded one
    /// and this one are both present and differ (secrets compared by
    /// their values), or this one is not known yet (a preview).
    pub replacement_trigger: Option<PropertyValue>,
    /// The program's hooks to run around this resource's steps, by name
    /// (registered by the program; see [`crate::hooks`]).
    pub hooks: crate::hooks::HookBinding,
    /// The program's state migration callbacks, run in order over the old
    /// state before it is diffed (see `step_generator::migrations`).
    pub state_migrations: Vec<crate::step_generator::migrations::MigrationCallback>,
}

/// Where the desired inputs of an imported resource come from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ImportInputs {
    /// The program's (the `import` resource option): the object is read
    /// and imported, then diffed against them as any resource is: a
    /// difference is an update after the import, one that needs a
    /// replacement is an error.
    #[default]
    Program,
    /// What the provider's Read returned — only these keys, if given —
    /// (`converge import`, which has no program): nothing to diff.
    Read { properties: Option<Vec<String>> },
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
    /// `read` bounds the provider's Read.
    pub custom_timeouts: Option<CustomTimeouts>,
}

/// What a registration answers.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisterResult {
    pub urn: Urn,
    /// Empty for components; unknown in previews of new resources.
    pub id: Option<String>,
    pub outputs: PropertyMap,
}

/// A former identity of a resource (Pulumi's alias).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Alias {
    /// Its whole former URN.
    Urn(Urn),
    /// What was different: every part left `None` is as it is now.
    Spec(AliasSpec),
}

impl From<Urn> for Alias {
    fn from(urn: Urn) -> Self {
        Alias::Urn(urn)
    }
}

/// The parts of a former URN that differ from the resource's current one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AliasSpec {
    pub name: Option<String>,
    pub type_token: Option<String>,
    pub stack: Option<String>,
    pub project: Option<String>,
    pub parent: AliasParent,
}

/// Where an alias says the resource's parent used to be.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AliasParent {
    /// The current parent (so the parent's own aliases apply too).
    #[default]
    Current,
    /// No parent (the stack).
    None,
    Urn(Urn),
}

/// An `Invoke` of a provider function (a data source), or of the engine's
/// own `pulumi:pulumi:getResource`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InvokeGoal {
    /// The function's token, e.g. `aws:ec2:getAmi`.
    pub token: String,
    pub args: PropertyMap,
    /// An explicit provider reference `<urn>::<id>`; `None` uses the
    /// default provider of the token's package.
    pub provider: Option<String>,
    /// The provider version the program asks for (default providers).
    pub version: Option<String>,
}

/// A `Call` of a component method (or a function that may register
/// resources).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallGoal {
    pub token: String,
    pub args: PropertyMap,
    /// Argument → the resources its value depends on.
    pub arg_dependencies: BTreeMap<String, Vec<Urn>>,
    pub provider: Option<String>,
    pub version: Option<String>,
}

/// A remote component: a component resource its provider's `Construct`
/// builds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConstructGoal {
    pub resource: ResourceGoal,
    /// `protect` and `retainOnDelete` as the program set them (`None`:
    /// not set), for the provider to apply.
    pub protect: Option<bool>,
    pub retain_on_delete: Option<bool>,
    /// Package → provider reference, for the component's children.
    pub providers: BTreeMap<String, String>,
}

/// What a provider running a `Construct` or `Call` needs to reach the
/// program's side besides what the deployment knows: the organization, the
/// program's configuration, and the monitor endpoint it registers
/// resources with.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProgramContext {
    pub organization: String,
    /// Configuration, `"<namespace>:<key>"` → value (plaintext).
    pub config: BTreeMap<String, String>,
    /// Which configuration keys are secrets.
    pub config_secret_keys: Vec<String>,
    /// `host:port` of the resource monitor serving the program.
    pub monitor_endpoint: String,
}

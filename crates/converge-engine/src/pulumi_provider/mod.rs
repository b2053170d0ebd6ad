//! The engine's own provider of package `pulumi`, which the SDKs address
//! as Pulumi's engine has it: the `pulumi:pulumi:StackReference` and
//! `pulumi:index:Stash` (`stash`) resources and the functions `pulumi:pulumi:readStackOutputs` and
//! `pulumi:pulumi:readStackResourceOutputs` (`pulumi:pulumi:getResource`
//! needs the deployment and is answered in `monitor::functions`).
//!
//! It reads other stacks of the current stack's backend
//! ([`StackReferences`]), so it lives here, not among converge-plugin's
//! built-ins (which know no stacks or backends). [`PulumiLoader`] puts it in
//! front of any other loader; the deployment then gives it a default
//! provider resource `pulumi:providers:pulumi::default` like any package,
//! as Pulumi does.
//!
//! A stack reference is read (`ReadResource`, its ID the stack's name), so
//! it is read again on every preview, update and refresh. Deleting it
//! touches nothing: the referenced stack is only ever read.

mod stacks;
mod stash;

use std::sync::Arc;

use async_trait::async_trait;
use converge_model::{PropertyMap, PropertyValue, Urn};
use converge_plugin::{
    CheckFailure, CheckRequest, CheckResponse, CreateRequest, CreateResponse, DeleteRequest,
    DiffChanges, DiffRequest, DiffResponse, InvokeRequest, InvokeResponse, Provider, ProviderError,
    ProviderLoader, ReadRequest, ReadResponse, RegistryError, UpdateRequest, UpdateResponse,
};

pub use stacks::{OpenError, SecretsOpener, StackOutputs, StackReferenceError, StackReferences};
pub use stash::STASH;

/// The package this provider serves.
pub const PACKAGE: &str = "pulumi";
/// The stack reference resource.
pub const STACK_REFERENCE: &str = "pulumi:pulumi:StackReference";
/// `{name}` → `{name, outputs, secretOutputNames}`, as a stack reference.
pub const READ_STACK_OUTPUTS: &str = "pulumi:pulumi:readStackOutputs";
/// `{stackName}` → `{name, outputs: {<urn>: {type, outputs}}}`.
pub const READ_STACK_RESOURCE_OUTPUTS: &str = "pulumi:pulumi:readStackResourceOutputs";

/// The provider of package `pulumi`.
#[derive(Debug, Clone)]
pub struct PulumiProvider {
    stacks: StackReferences,
}

impl PulumiProvider {
    pub fn new(stacks: StackReferences) -> PulumiProvider {
        PulumiProvider { stacks }
    }

    /// A stack reference's outputs: `{name, outputs, secretOutputNames}`;
    /// all unknown while its name is.
    async fn read_reference(&self, name: &PropertyValue) -> Result<PropertyMap, ProviderError> {
        let text = match name {
            PropertyValue::String(s) => s,
            PropertyValue::Unknown => {
                return Ok(PropertyMap::from([
                    ("name".to_owned(), PropertyValue::Unknown),
                    ("outputs".to_owned(), PropertyValue::Unknown),
                    ("secretOutputNames".to_owned(), PropertyValue::Unknown),
                ]))
            }
            other => {
                return Err(ProviderError::failed(format!(
                    "a stack reference's name must be a string, not a {}",
                    other.kind_name()
                )))
            }
        };
        let read = self.stacks.outputs(text).await.map_err(failed)?;
        let names = read
            .secret_output_names
            .into_iter()
            .map(PropertyValue::String)
            .collect();
        Ok(PropertyMap::from([
            ("name".to_owned(), name.clone()),
            ("outputs".to_owned(), PropertyValue::Object(read.outputs)),
            ("secretOutputNames".to_owned(), PropertyValue::Array(names)),
        ]))
    }
}

fn failed(e: StackReferenceError) -> ProviderError {
    ProviderError::failed(e)
}

/// The provider's resource types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    StackReference,
    Stash,
}

fn kind_of(urn: &Urn) -> Result<Kind, ProviderError> {
    match urn.type_token() {
        STACK_REFERENCE => Ok(Kind::StackReference),
        STASH => Ok(Kind::Stash),
        other => Err(ProviderError::failed(format!(
            "the pulumi provider has no resource type {other} (it has {STACK_REFERENCE} \
             and {STASH})"
        ))),
    }
}

fn only_stack_references(urn: &Urn) -> Result<(), ProviderError> {
    match kind_of(urn)? {
        Kind::StackReference => Ok(()),
        Kind::Stash => Err(ProviderError::failed(format!(
            "{STASH} is a resource the engine keeps, not one it reads"
        ))),
    }
}

/// The one property a stack reference takes. The SDKs also declare its
/// outputs, unset, which serialize as nothing or null.
fn unknown_property(inputs: &PropertyMap) -> Option<&str> {
    inputs
        .iter()
        .find(|(k, v)| k.as_str() != "name" && !matches!(v, PropertyValue::Null))
        .map(|(k, _)| k.as_str())
}

fn string_arg<'a>(args: &'a PropertyMap, key: &str, token: &str) -> Result<&'a str, ProviderError> {
    match args.get(key) {
        Some(PropertyValue::String(s)) => Ok(s),
        _ => Err(ProviderError::failed(format!(
            "{token} takes a string argument {key:?}"
        ))),
    }
}

#[async_trait]
impl Provider for PulumiProvider {
    fn package(&self) -> &str {
        PACKAGE
    }

    /// For programs that register a stack reference rather than read it
    /// (older SDKs): `name` only, a string.
    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        if kind_of(&req.urn)? == Kind::Stash {
            return Ok(stash::check(req));
        }
        let failure = |property: &str, reason: String| CheckResponse {
            inputs: PropertyMap::new(),
            failures: vec![CheckFailure {
                property: property.to_owned(),
                reason,
            }],
        };
        if let Some(k) = unknown_property(&req.news) {
            return Ok(failure(k, format!("unknown property {k:?}")));
        }
        match req.news.get("name") {
            Some(PropertyValue::String(_) | PropertyValue::Unknown) => Ok(CheckResponse {
                inputs: req.news.into_iter().filter(|(k, _)| k == "name").collect(),
                failures: Vec::new(),
            }),
            Some(_) => Ok(failure("name", "property \"name\" must be a string".into())),
            None => Ok(failure("name", "missing required property \"name\"".into())),
        }
    }

    /// Another stack is another resource: a new name replaces it. The same
    /// stack with other outputs than recorded is an update, so a registered
    /// reference follows its stack as a read one does.
    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        if kind_of(&req.urn)? == Kind::Stash {
            return Ok(stash::diff(&req));
        }
        let name = req.new_inputs.get("name");
        if req.old_inputs.get("name") != name {
            return Ok(DiffResponse {
                changes: DiffChanges::Some,
                replace_keys: vec!["name".to_owned()],
                changed_keys: vec!["name".to_owned()],
                ..DiffResponse::default()
            });
        }
        let current = self
            .read_reference(name.unwrap_or(&PropertyValue::Null))
            .await?;
        let changed: Vec<String> = current
            .iter()
            .filter(|(k, v)| req.old_outputs.get(k.as_str()) != Some(v))
            .map(|(k, _)| k.clone())
            .collect();
        if changed.is_empty() {
            return Ok(DiffResponse::none());
        }
        Ok(DiffResponse {
            changes: DiffChanges::Some,
            changed_keys: changed,
            ..DiffResponse::default()
        })
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        if kind_of(&req.urn)? == Kind::Stash {
            return Ok(stash::create(req));
        }
        let name = req
            .properties
            .get("name")
            .cloned()
            .unwrap_or(PropertyValue::Null);
        let properties = self.read_reference(&name).await?;
        let id = if req.preview {
            String::new()
        } else {
            uuid::Uuid::new_v4().to_string()
        };
        Ok(CreateResponse { id, properties })
    }

    /// Reads the referenced stack's current outputs. The name is the
    /// recorded input (the ID, failing that, as the SDKs make them equal).
    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        if kind_of(&req.urn)? == Kind::Stash && req.state.is_some() {
            return Ok(stash::read(req));
        }
        only_stack_references(&req.urn)?;
        let inputs = req.inputs.unwrap_or_default();
        if let Some(k) = unknown_property(&inputs) {
            return Err(ProviderError::failed(format!(
                "a stack reference has no property {k:?} (only \"name\")"
            )));
        }
        let name = inputs
            .get("name")
            .cloned()
            .unwrap_or_else(|| PropertyValue::String(req.id.clone()));
        let properties = self.read_reference(&name).await?;
        Ok(ReadResponse {
            id: req.id,
            inputs: PropertyMap::from([("name".to_owned(), name)]),
            properties,
        })
    }

    /// The referenced stack's outputs changed: read them again.
    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        if kind_of(&req.urn)? == Kind::Stash {
            return Ok(stash::update(req));
        }
        let name = req
            .new_inputs
            .get("name")
            .cloned()
            .unwrap_or(PropertyValue::Null);
        Ok(UpdateResponse {
            properties: self.read_reference(&name).await?,
        })
    }

    /// Forgets the reference or the stash; the referenced stack is never
    /// touched.
    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        kind_of(&req.urn).map(|_| ())
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        let outputs = match req.token.as_str() {
            READ_STACK_OUTPUTS => {
                let name = string_arg(&req.args, "name", READ_STACK_OUTPUTS)?;
                self.read_reference(&PropertyValue::from(name)).await?
            }
            READ_STACK_RESOURCE_OUTPUTS => {
                let name = string_arg(&req.args, "stackName", READ_STACK_RESOURCE_OUTPUTS)?;
                let outputs = self.stacks.resource_outputs(name).await.map_err(failed)?;
                PropertyMap::from([
                    ("name".to_owned(), PropertyValue::from(name)),
                    ("outputs".to_owned(), PropertyValue::Object(outputs)),
                ])
            }
            other => {
                return Err(ProviderError::failed(format!(
                    "the pulumi provider has no function {other} (it has \
                     {READ_STACK_OUTPUTS}, {READ_STACK_RESOURCE_OUTPUTS} and {})",
                    crate::monitor::GET_RESOURCE
                )))
            }
        };
        Ok(InvokeResponse {
            outputs,
            failures: Vec::new(),
        })
    }
}

/// Serves package `pulumi` with one [`PulumiProvider`]; every other
/// package from the loader it wraps.
#[derive(Debug, Clone)]
pub struct PulumiLoader {
    inner: Arc<dyn ProviderLoader>,
    provider: Arc<PulumiProvider>,
}

impl PulumiLoader {
    pub fn new(inner: Arc<dyn ProviderLoader>, stacks: StackReferences) -> PulumiLoader {
        PulumiLoader {
            inner,
            provider: Arc::new(PulumiProvider::new(stacks)),
        }
    }
}

#[async_trait]
impl ProviderLoader for PulumiLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        if package == PACKAGE {
            return Ok(self.provider.clone());
        }
        self.inner.load(package, version).await
    }
}

//! The built-in `random` provider: pulumi-random 4.x's resources.
//!
//! These are logical resources: Create draws values from the OS's CSPRNG
//! (or, where upstream takes a `seed`, from ChaCha20 seeded by the seed's
//! SHA-256), Read returns the recorded state, Delete does nothing. Every
//! input, `keepers` included, forces replacement, as upstream. Seeded
//! results are deterministic but not the same numbers upstream's Go
//! generator draws.
//!
//! IDs and import IDs (from the package's docs and upstream's behaviour):
//!
//! | resource        | ID                      | import ID                       |
//! |-----------------|-------------------------|---------------------------------|
//! | RandomString    | the result              | the value                       |
//! | RandomPassword  | `none`                  | the value                       |
//! | RandomInteger   | the result              | `result,min,max[,seed]`         |
//! | RandomId        | b64Url without prefix   | `[prefix,]b64url`               |
//! | RandomBytes     | `none`                  | the value as standard base64    |
//! | RandomUuid/4/7  | the result              | the UUID                        |
//! | RandomPet       | the pet name            | not importable                  |
//! | RandomShuffle   | `-`                     | not importable                  |

use async_trait::async_trait;
use converge_model::{PropertyMap, PropertyValue};

use super::spec::{self, Spec};
use crate::provider::{
    CheckRequest, CheckResponse, CreateRequest, CreateResponse, DeleteRequest, DiffConfigRequest,
    DiffRequest, DiffResponse, PluginInfo, ReadRequest, ReadResponse, UpdateRequest,
    UpdateResponse,
};
use crate::{Provider, ProviderError};

mod pet;
mod specs;
mod strings;
mod values;

pub use strings::{LOWER, NUMERIC, SPECIAL, UPPER};

/// The package name.
pub const PACKAGE: &str = "random";

/// The resource types of the package.
pub const TOKENS: [&str; 10] = [
    specs::STRING.token,
    specs::PASSWORD.token,
    specs::INTEGER.token,
    specs::PET.token,
    specs::UUID.token,
    specs::UUID4.token,
    specs::UUID7.token,
    specs::ID.token,
    specs::SHUFFLE.token,
    specs::BYTES.token,
];

/// The package schema.
pub fn schema() -> serde_json::Value {
    let resources: Vec<&Spec> = Kind::ALL.iter().map(|k| k.spec()).collect();
    let mut schema = spec::package_json(
        PACKAGE,
        super::RANDOM_VERSION,
        "Random values (strings, passwords, integers, ids, pet names, uuids, shuffles, bytes), \
         generated once and kept in the state. Built into Converge.",
        &resources,
        &[],
    );
    // The published SDK whose programs it serves.
    schema["language"] = serde_json::json!({
        "python": {"packageName": "pulumi_random"},
        "nodejs": {"packageName": "@pulumi/random"},
    });
    schema
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    String,
    Password,
    Integer,
    Pet,
    Uuid,
    Uuid4,
    Uuid7,
    Id,
    Shuffle,
    Bytes,
}

impl Kind {
    const ALL: [Kind; 10] = [
        Kind::String,
        Kind::Password,
        Kind::Integer,
        Kind::Pet,
        Kind::Uuid,
        Kind::Uuid4,
        Kind::Uuid7,
        Kind::Id,
        Kind::Shuffle,
        Kind::Bytes,
    ];

    fn spec(self) -> &'static Spec {
        match self {
            Kind::String => &specs::STRING,
            Kind::Password => &specs::PASSWORD,
            Kind::Integer => &specs::INTEGER,
            Kind::Pet => &specs::PET,
            Kind::Uuid => &specs::UUID,
            Kind::Uuid4 => &specs::UUID4,
            Kind::Uuid7 => &specs::UUID7,
            Kind::Id => &specs::ID,
            Kind::Shuffle => &specs::SHUFFLE,
            Kind::Bytes => &specs::BYTES,
        }
    }

    fn of(token: &str) -> Result<Kind, ProviderError> {
        Kind::ALL
            .into_iter()
            .find(|k| k.spec().token == token)
            .ok_or_else(|| crate::builtin::unknown_type(PACKAGE, token))
    }

    /// Validation beyond types, on known values.
    fn validate(self, inputs: &PropertyMap) -> Vec<crate::CheckFailure> {
        match self {
            Kind::String | Kind::Password => strings::validate(inputs),
            _ => values::validate(self, inputs),
        }
    }

    /// Generates the output-only values and the ID.
    fn generate(self, inputs: &PropertyMap) -> Result<(String, PropertyMap), ProviderError> {
        match self {
            Kind::String | Kind::Password => strings::generate(self == Kind::Password, inputs),
            Kind::Pet => Ok((pet::generate(inputs), PropertyMap::new())),
            _ => values::generate(self, inputs),
        }
    }

    /// Inputs and output-only values of an imported resource, and its ID.
    fn import(self, id: &str) -> Result<(String, PropertyMap, PropertyMap), ProviderError> {
        match self {
            Kind::String | Kind::Password => strings::import(self == Kind::Password, id),
            Kind::Pet | Kind::Shuffle => Err(ProviderError::failed(format!(
                "{} cannot be imported",
                self.spec().token
            ))),
            _ => values::import(self, id),
        }
    }
}

/// The outputs: the inputs, then the generated values (secret where the
/// schema says so).
fn outputs(kind: Kind, inputs: &PropertyMap, generated: PropertyMap) -> PropertyMap {
    let mut out = inputs.clone();
    for (k, v) in generated {
        let secret = kind.spec().outputs.iter().any(|p| p.name == k && p.secret);
        let v = if secret && !matches!(v, PropertyValue::Secret(_)) {
            PropertyValue::secret(v)
        } else {
            v
        };
        out.insert(k, v);
    }
    out
}

/// pulumi-random's provider (version [`super::RANDOM_VERSION`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomProvider;

impl RandomProvider {
    pub fn new() -> Self {
        RandomProvider
    }
}

#[async_trait]
impl Provider for RandomProvider {
    fn package(&self) -> &str {
        PACKAGE
    }

    async fn schema(&self) -> Result<std::sync::Arc<crate::PackageSchema>, ProviderError> {
        crate::builtin::provider_schema(PACKAGE)
    }

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        Ok(PluginInfo {
            version: super::version(PACKAGE),
        })
    }

    async fn diff_config(&self, _req: DiffConfigRequest) -> Result<DiffResponse, ProviderError> {
        // No configuration: nothing in it can matter.
        Ok(DiffResponse::none())
    }

    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        let kind = Kind::of(req.urn.type_token())?;
        let mut news = req.news;
        if matches!(kind, Kind::String | Kind::Password) {
            if let Some(f) = strings::sync_numeric(&mut news) {
                return Ok(CheckResponse {
                    inputs: news,
                    failures: vec![f],
                });
            }
        }
        let mut checked = spec::check(kind.spec(), &news);
        if checked.failures.is_empty() {
            checked.failures = kind.validate(&checked.inputs);
        }
        Ok(checked)
    }

    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        let spec = Kind::of(req.urn.type_token())?.spec();
        let olds = if req.old_outputs.is_empty() {
            &req.old_inputs
        } else {
            &req.old_outputs
        };
        Ok(spec::diff(
            spec,
            olds,
            &req.new_inputs,
            &req.ignore_changes,
            |k| spec.input(k).is_some_and(|p| p.replace),
        ))
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        let kind = Kind::of(req.urn.type_token())?;
        if req.preview || spec::any_unknown(&req.properties) {
            let unknowns = kind
                .spec()
                .outputs
                .iter()
                .map(|p| (p.name.to_owned(), PropertyValue::Unknown))
                .collect();
            return Ok(CreateResponse {
                id: String::new(),
                properties: outputs(kind, &req.properties, unknowns),
            });
        }
        let (id, generated) = kind.generate(&req.properties)?;
        Ok(CreateResponse {
            id,
            properties: outputs(kind, &req.properties, generated),
        })
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        let kind = Kind::of(req.urn.type_token())?;
        if let Some(state) = req.state {
            let inputs = req.inputs.unwrap_or_else(|| {
                state
                    .iter()
                    .filter(|(k, _)| kind.spec().input(k).is_some())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            });
            return Ok(ReadResponse {
                id: req.id,
                inputs,
                properties: state,
            });
        }
        let (id, inputs, generated) = kind.import(&req.id)?;
        Ok(ReadResponse {
            id,
            properties: outputs(kind, &inputs, generated),
            inputs,
        })
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        let spec = Kind::of(req.urn.type_token())?.spec();
        Ok(UpdateResponse {
            properties: spec::merge_inputs(spec, &req.old_outputs, &req.new_inputs),
        })
    }

    async fn delete(&self, _req: DeleteRequest) -> Result<(), ProviderError> {
        Ok(())
    }
}

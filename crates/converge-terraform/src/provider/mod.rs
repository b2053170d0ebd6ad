//! [`TerraformProvider`]: Converge's `Provider` trait over tfplugin6,
//! playing Terraform Core's part (seeds 003/004).
//!
//! | Pulumi call | Terraform calls |
//! |---|---|
//! | `CheckConfig` | `ValidateProviderConfig` |
//! | `Configure` | a new connection, `GetProviderSchema`, `ConfigureProvider` |
//! | `Check` | `ValidateResourceConfig` |
//! | `Diff` | `UpgradeResourceState`, proposed new state, `PlanResourceChange` |
//! | `Create` / `Update` | `UpgradeResourceState`, `PlanResourceChange` (again at apply, checked against the first), `ApplyResourceChange` (checked) |
//! | `Delete` | `UpgradeResourceState`, `ApplyResourceChange` with a null plan |
//! | `Read` (refresh) | `UpgradeResourceState`, `ReadResource` |
//! | `Read` (import) | `ImportResourceState`, `ReadResource` |
//! | `Invoke` | `ValidateDataResourceConfig`, `ReadDataSource` |

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_model::{PropertyDiff, PropertyMap, PropertyValue, Urn};
use converge_plugin::host::{LogSeverity, PluginLogLine, PluginLogSource, PluginLogger};
use converge_plugin::provider::{
    CheckFailure, CheckRequest, CheckResponse, ConfigureRequest, CreateRequest, CreateResponse,
    DeleteRequest, DiffChanges, DiffRequest, DiffResponse, InvokeRequest, InvokeResponse,
    PluginInfo, ReadRequest, ReadResponse, UpdateRequest, UpdateResponse,
};
use converge_plugin::schema::PackageSchema;
use converge_plugin::terraform::values::{decode_dynamic_value, encode_dynamic_value, CtyType};
use converge_plugin::{Provider, ProviderError};
use converge_proto::tfplugin6::{self as tf, DynamicValue};
use sha2::Digest as _;
use tokio::sync::OnceCell;

use crate::contract::Subject;
use crate::diagnostics::Findings;
use crate::meta::Meta;
use crate::proposed::proposed_new;
use crate::session::{Connector, Member, Session};
use crate::shape::{
    bare, config_to_tf, conform, mark_sensitive, raw_state_json, state_to_tf, tf_to_pulumi,
    ConfigKind, SecretAttrs,
};

mod calls;
mod change;
mod read;
mod timeouts;

use timeouts::Timed;

/// The Terraform Core version `ConfigureProvider` announces: the protocol
/// 6 release line whose behaviour Converge follows (providers may log it
/// or gate features on it).
const TERRAFORM_VERSION: &str = "1.9.0";

/// Provider inputs that are Pulumi's, not the provider's configuration.
const ENGINE_CONFIG_KEYS: &[&str] = &["version", "pluginDownloadURL"];

/// The digest of a provider configuration as sent (its msgpack bytes).
type ConfigKey = [u8; 32];

/// A session opened once, by whichever caller comes first.
type SessionCell = Arc<OnceCell<Arc<Session>>>;

/// What the provider instances of one executable share with their loader.
#[derive(Clone, Default)]
pub struct Shared {
    /// The unconfigured connection: schema and provider-config checks.
    pub spare: SessionCell,
    /// One configured connection per provider configuration: every
    /// instance configured alike (the default provider's preview and
    /// update, concurrent steps) shares one process, as Terraform runs one
    /// per configuration.
    pub configured: Arc<Mutex<HashMap<ConfigKey, SessionCell>>>,
    /// Every session opened, kept until the loader shuts them down (each
    /// through go-plugin's `Shutdown`).
    pub sessions: Arc<Mutex<Vec<Arc<Session>>>>,
    pub logger: Option<PluginLogger>,
    pub version: Option<semver::Version>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// A Terraform provider as a Converge provider (one instance per provider
/// resource; configuring it opens its own connection).
#[derive(Debug)]
pub struct TerraformProvider {
    package: String,
    connector: Arc<dyn Connector>,
    shared: Shared,
    configured: OnceCell<Arc<Session>>,
    /// The first plan of each resource (Terraform names) and whether it
    /// planned a create or an update, made by `Diff` or a preview, for the
    /// second-plan rule when the engine has none.
    first_plans: Mutex<HashMap<Urn, (ChangeKind, PropertyMap)>>,
}

/// What a plan was for: the second-plan rule compares like with like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChangeKind {
    Create,
    Update,
}

/// A plan: the planned state (Terraform names) and what came with it.
#[derive(Debug, Clone)]
struct Plan {
    planned: PropertyMap,
    private: Vec<u8>,
    requires_replace: Vec<String>,
}

/// A create or update to apply: the planned change and what it came from.
#[derive(Debug, Clone, Copy)]
struct Change<'a> {
    urn: &'a Urn,
    member: &'a Member,
    /// `None` when creating.
    prior: Option<&'a Prior>,
    plan: &'a Plan,
    config: &'a PropertyMap,
    /// Attributes whose configured value was secret.
    secrets: &'a SecretAttrs,
}

/// The prior state of a resource, upgraded to the current schema.
#[derive(Debug, Clone)]
struct Prior {
    state: PropertyMap,
    secrets: SecretAttrs,
    private: Vec<u8>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn failed(msg: impl std::fmt::Display) -> ProviderError {
    ProviderError::Failed(msg.to_string())
}

fn object_type(member: &Member) -> CtyType {
    member.schema.block.implied_type()
}

fn encode(value: Option<&PropertyMap>, ty: &CtyType) -> Result<DynamicValue, ProviderError> {
    let v = match value {
        Some(m) => PropertyValue::Object(m.clone()),
        None => PropertyValue::Null,
    };
    encode_dynamic_value(&v, ty).map_err(|e| failed(format!("could not encode a value: {e}")))
}

/// Decodes an object of `ty`; `None` for null.
fn decode(
    value: Option<&DynamicValue>,
    ty: &CtyType,
) -> Result<Option<PropertyMap>, ProviderError> {
    let Some(value) = value else { return Ok(None) };
    match decode_dynamic_value(value, ty)
        .map_err(|e| failed(format!("the provider sent a malformed value: {e}")))?
    {
        PropertyValue::Null => Ok(None),
        PropertyValue::Object(m) => Ok(Some(m)),
        other => Err(failed(format!(
            "the provider sent {} where an object was expected",
            other.kind_name()
        ))),
    }
}

/// Pulumi properties as a Terraform configuration of `block`, converted
/// to the schema's types, and the attributes whose value was secret; what
/// does not fit is a check failure.
fn checked_config(
    block: &crate::schema::Block,
    props: &PropertyMap,
    kind: ConfigKind,
) -> Result<(PropertyMap, SecretAttrs), Vec<CheckFailure>> {
    let (config, secrets) = config_to_tf(block, props, kind).map_err(|f| {
        f.into_iter()
            .map(|x| CheckFailure {
                property: x.property,
                reason: x.reason,
            })
            .collect::<Vec<_>>()
    })?;
    let config = conform(block, &config).map_err(|e| {
        vec![CheckFailure {
            property: String::new(),
            reason: e.to_string(),
        }]
    })?;
    Ok((config, secrets))
}

/// Check failures met outside a check: one error with every reason.
fn failures_error(failures: Vec<CheckFailure>) -> ProviderError {
    failed(
        failures
            .into_iter()
            .map(|x| x.reason)
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The provider configuration among a provider resource's inputs.
fn provider_props(inputs: &PropertyMap) -> PropertyMap {
    inputs
        .iter()
        .filter(|(k, _)| !ENGINE_CONFIG_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// A null `provider_meta`, sent with every resource call.
fn null_meta() -> Option<DynamicValue> {
    Some(DynamicValue {
        msgpack: vec![0xc0],
        json: Vec::new(),
    })
}

/// The object's ID: its `id` attribute.
fn id_of(state: &PropertyMap) -> Option<String> {
    match state.get("id").map(bare) {
        Some(PropertyValue::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

impl TerraformProvider {
    pub fn new(package: &str, connector: Arc<dyn Connector>, shared: Shared) -> Self {
        TerraformProvider {
            package: package.to_owned(),
            connector,
            shared,
            configured: OnceCell::new(),
            first_plans: Mutex::new(HashMap::new()),
        }
    }

    async fn open(&self) -> Result<Arc<Session>, ProviderError> {
        let session =
            Arc::new(Session::open(&self.package, self.connector.connect().await?).await?);
        lock(&self.shared.sessions).push(session.clone());
        Ok(session)
    }

    async fn spare(&self) -> Result<Arc<Session>, ProviderError> {
        self.shared
            .spare
            .get_or_try_init(|| self.open())
            .await
            .cloned()
    }

    /// The configured session, or the unconfigured one before `Configure`.
    async fn session(&self) -> Result<Arc<Session>, ProviderError> {
        match self.configured.get() {
            Some(s) => Ok(s.clone()),
            None => self.spare().await,
        }
    }

    fn warn(&self, findings: &Findings, urn: Option<&Urn>) {
        for w in &findings.warnings {
            let message = match urn {
                Some(u) => format!("{u}: {}", w.line()),
                None => w.line(),
            };
            tracing::warn!(package = self.package, "{message}");
            if let Some(logger) = &self.shared.logger {
                logger(&PluginLogLine {
                    package: Some(self.package.clone()),
                    pid: None,
                    source: PluginLogSource::Engine(LogSeverity::Warning),
                    message,
                });
            }
        }
    }

    fn resource<'a>(&self, s: &'a Session, urn: &Urn) -> Result<&'a Member, ProviderError> {
        let token = urn.type_token();
        s.resources.get(token).ok_or_else(|| {
            failed(format!(
                "Terraform provider {} has no resource type {token}",
                self.package
            ))
        })
    }

    fn subject<'a>(&'a self, urn: &'a Urn, member: &'a Member) -> Subject<'a> {
        Subject {
            provider: &self.package,
            urn,
            block: &member.schema.block,
        }
    }

    /// Pulumi inputs as a Terraform configuration; bad properties fail.
    fn config(
        &self,
        member: &Member,
        props: &PropertyMap,
    ) -> Result<(PropertyMap, SecretAttrs), ProviderError> {
        checked_config(&member.schema.block, props, ConfigKind::Arguments).map_err(failures_error)
    }

    /// Outputs in Pulumi's shape, with `__meta`.
    fn outputs(
        &self,
        member: &Member,
        state: &PropertyMap,
        secrets: &SecretAttrs,
        private: &[u8],
    ) -> PropertyMap {
        let mut out = tf_to_pulumi(&member.schema.block, state, secrets);
        Meta {
            schema_version: Some(member.schema.version),
            private: private.to_vec(),
        }
        .write(&mut out);
        out
    }

    /// A preview's outputs: the planned state in Pulumi's shape, without
    /// `__meta`. The schema version and private data that state records
    /// are the apply's, not the plan's (a plan's private data is only
    /// handed to the apply), so they are no part of what the preview
    /// promises the apply will produce.
    fn planned_outputs(
        &self,
        member: &Member,
        planned: &PropertyMap,
        secrets: &SecretAttrs,
    ) -> PropertyMap {
        tf_to_pulumi(&member.schema.block, planned, secrets)
    }

    /// The configured session for `config` (the provider configuration's
    /// encoding): the one already configured alike, or a new connection
    /// configured now. Concurrent callers wait for one configuration.
    async fn configured_for(
        &self,
        config: DynamicValue,
        urn: Option<&Urn>,
    ) -> Result<Arc<Session>, ProviderError> {
        let key: ConfigKey = sha2::Sha256::digest(&config.msgpack).into();
        let cell = lock(&self.shared.configured)
            .entry(key)
            .or_default()
            .clone();
        let session = cell
            .get_or_try_init(|| async {
                let s = self.open().await?;
                let block = &s.schema.provider;
                let response = s
                    .client()
                    .configure_provider(tf::configure_provider::Request {
                        terraform_version: TERRAFORM_VERSION.to_owned(),
                        config: Some(config),
                    })
                    .await
                    .map_err(|e| s.rpc_error("ConfigureProvider", &e))?
                    .into_inner();
                let findings = Findings::read(&response.diagnostics, Some(block));
                self.warn(&findings, urn);
                if findings.has_errors() {
                    return Err(failed(format!(
                        "could not configure the Terraform provider {}: {}",
                        self.package,
                        findings.error_lines().join("; ")
                    )));
                }
                Ok(s)
            })
            .await?;
        Ok(session.clone())
    }
}

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
use tokio::sync::OnceCell;

use crate::contract::Subject;
use crate::diagnostics::Findings;
use crate::meta::Meta;
use crate::proposed::proposed_new;
use crate::session::{Connector, Member, Session};
use crate::shape::{
    bare, config_to_tf, raw_state_json, state_to_tf, tf_to_pulumi, ConfigKind, SecretAttrs,
};

/// Provider inputs that are Pulumi's, not the provider's configuration.
const ENGINE_CONFIG_KEYS: &[&str] = &["version", "pluginDownloadURL"];

/// What the provider instances of one executable share with their loader.
#[derive(Clone, Default)]
pub struct Shared {
    /// The unconfigured connection: schema and provider-config checks.
    pub spare: Arc<OnceCell<Arc<Session>>>,
    /// Every session opened, for shutdown.
    pub sessions: Arc<Mutex<Vec<std::sync::Weak<Session>>>>,
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
        lock(&self.shared.sessions).push(Arc::downgrade(&session));
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
        config_to_tf(&member.schema.block, props, ConfigKind::Arguments).map_err(|f| {
            failed(
                f.iter()
                    .map(|x| x.reason.clone())
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
    }

    /// Recorded outputs, upgraded to the current schema version
    /// (`UpgradeResourceState`, on every prior state before it is used).
    async fn prior(
        &self,
        s: &Session,
        urn: &Urn,
        member: &Member,
        outputs: &PropertyMap,
    ) -> Result<Prior, ProviderError> {
        let meta = Meta::read(outputs);
        let (raw, secrets) = state_to_tf(&member.schema.block, outputs);
        let version = meta.schema_version.unwrap_or(0);
        let response = s
            .client()
            .upgrade_resource_state(tf::upgrade_resource_state::Request {
                type_name: member.tf_type.clone(),
                version,
                raw_state: Some(tf::RawState {
                    json: raw_state_json(&raw),
                    flatmap: Default::default(),
                }),
            })
            .await
            .map_err(|e| s.rpc_error("UpgradeResourceState", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(urn));
        if findings.has_errors() {
            return Err(failed(format!(
                "{urn}: could not upgrade its state from schema version {version} to {}: {}",
                member.schema.version,
                findings.error_lines().join("; ")
            )));
        }
        let state = decode(response.upgraded_state.as_ref(), &object_type(member))?
            .ok_or_else(|| failed(format!("{urn}: UpgradeResourceState returned no state")))?;
        Ok(Prior {
            state,
            secrets,
            private: meta.private,
        })
    }

    /// `PlanResourceChange`, checked by seed 003's planning rule.
    async fn plan(
        &self,
        s: &Session,
        urn: &Urn,
        member: &Member,
        prior: Option<&Prior>,
        config: &PropertyMap,
    ) -> Result<Plan, ProviderError> {
        let ty = object_type(member);
        let prior_state = prior.map(|p| &p.state);
        let proposed = proposed_new(&member.schema.block, prior_state, config);
        let response = s
            .client()
            .plan_resource_change(tf::plan_resource_change::Request {
                type_name: member.tf_type.clone(),
                prior_state: Some(encode(prior_state, &ty)?),
                proposed_new_state: Some(encode(Some(&proposed), &ty)?),
                config: Some(encode(Some(config), &ty)?),
                prior_private: prior.map(|p| p.private.clone()).unwrap_or_default(),
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("PlanResourceChange", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(urn));
        if findings.has_errors() {
            return Err(failed(findings.error_lines().join("; ")));
        }
        let planned = decode(response.planned_state.as_ref(), &ty)?.ok_or_else(|| {
            failed(format!(
                "provider {} planned to destroy {urn} when asked to create or update it",
                self.package
            ))
        })?;
        self.subject(urn, member)
            .check_plan(config, prior_state, &planned)
            .map_err(failed)?;
        let requires_replace = response
            .requires_replace
            .iter()
            .filter_map(|p| match p.steps.first()?.selector.as_ref()? {
                tf::attribute_path::step::Selector::AttributeName(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        Ok(Plan {
            planned,
            private: response.planned_private,
            requires_replace,
        })
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

    /// The second-plan rule: the final plan against the first (the
    /// engine's, from the preview, or this instance's own from `Diff`).
    fn check_final_plan(
        &self,
        kind: ChangeKind,
        urn: &Urn,
        member: &Member,
        engine_first: Option<&PropertyMap>,
        last: &PropertyMap,
    ) -> Result<(), ProviderError> {
        let own = lock(&self.first_plans)
            .remove(urn)
            .filter(|(k, _)| *k == kind)
            .map(|(_, plan)| plan);
        let first = match engine_first {
            Some(outputs) => Some(state_to_tf(&member.schema.block, outputs).0),
            None => own,
        };
        match first {
            Some(first) => self
                .subject(urn, member)
                .check_final_plan(&first, last)
                .map_err(failed),
            None => Ok(()),
        }
    }

    /// `ApplyResourceChange` of a create or update, checked by seed 003's
    /// apply rule. An object the provider returns is always handed back
    /// to be recorded, as a partial failure when something went wrong.
    async fn apply(
        &self,
        s: &Session,
        c: Change<'_>,
    ) -> Result<(String, PropertyMap), ProviderError> {
        let Change {
            urn,
            member,
            prior,
            plan,
            config,
            secrets,
        } = c;
        let ty = object_type(member);
        let response = s
            .client()
            .apply_resource_change(tf::apply_resource_change::Request {
                type_name: member.tf_type.clone(),
                prior_state: Some(encode(prior.map(|p| &p.state), &ty)?),
                planned_state: Some(encode(Some(&plan.planned), &ty)?),
                config: Some(encode(Some(config), &ty)?),
                planned_private: plan.private.clone(),
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("ApplyResourceChange", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(urn));
        let new_state = decode(response.new_state.as_ref(), &ty)?;
        let Some(new_state) = new_state else {
            return Err(failed(if findings.has_errors() {
                findings.error_lines().join("; ")
            } else {
                format!(
                    "provider {} returned no object after applying {urn}",
                    self.package
                )
            }));
        };
        let mut all_secrets = secrets.clone();
        if let Some(p) = prior {
            all_secrets.extend(p.secrets.iter().cloned());
        }
        let outputs = self.outputs(
            member,
            &crate::contract::recordable(&new_state),
            &all_secrets,
            &response.private,
        );
        let id = id_of(&new_state)
            .or_else(|| prior.and_then(|p| id_of(&p.state)))
            .unwrap_or_else(|| "(no id)".to_owned());
        let mut reasons = findings.error_lines();
        if let Err(v) = self
            .subject(urn, member)
            .check_apply(&plan.planned, &new_state)
        {
            reasons.push(v.to_string());
        }
        if reasons.is_empty() {
            Ok((id, outputs))
        } else {
            Err(ProviderError::PartialFailure {
                id,
                properties: outputs,
                reasons,
            })
        }
    }

    /// Inputs of an imported object: the attributes a configuration may
    /// set that it has.
    fn inputs_of(&self, member: &Member, state: &PropertyMap) -> PropertyMap {
        let block = &member.schema.block;
        let configurable: PropertyMap = state
            .iter()
            .filter(|(k, v)| {
                !matches!(v, PropertyValue::Null)
                    && (block.blocks.contains_key(*k)
                        || block
                            .attributes
                            .get(*k)
                            .is_some_and(|a| a.required || a.optional))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        tf_to_pulumi(block, &configurable, &SecretAttrs::new())
    }

    async fn read_resource(
        &self,
        s: &Session,
        urn: &Urn,
        member: &Member,
        current: &PropertyMap,
        private: Vec<u8>,
    ) -> Result<Option<(PropertyMap, Vec<u8>)>, ProviderError> {
        let ty = object_type(member);
        let response = s
            .client()
            .read_resource(tf::read_resource::Request {
                type_name: member.tf_type.clone(),
                current_state: Some(encode(Some(current), &ty)?),
                private,
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("ReadResource", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(urn));
        if findings.has_errors() {
            return Err(failed(findings.error_lines().join("; ")));
        }
        Ok(decode(response.new_state.as_ref(), &ty)?.map(|state| (state, response.private)))
    }
}

fn differs(a: Option<&PropertyValue>, b: Option<&PropertyValue>) -> bool {
    let null = PropertyValue::Null;
    let (a, b) = (bare(a.unwrap_or(&null)), bare(b.unwrap_or(&null)));
    matches!(b, PropertyValue::Unknown) && !matches!(a, PropertyValue::Unknown) || a != b
}

#[async_trait]
impl Provider for TerraformProvider {
    fn package(&self) -> &str {
        &self.package
    }

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        Ok(PluginInfo {
            version: self.shared.version.clone(),
        })
    }

    async fn schema(&self) -> Result<Arc<PackageSchema>, ProviderError> {
        let s = self.spare().await?;
        Ok(Arc::new(PackageSchema {
            name: self.package.clone(),
            version: self.shared.version.as_ref().map(ToString::to_string),
            resources: s.resources.keys().cloned().collect(),
            functions: s.functions.keys().cloned().collect(),
        }))
    }

    async fn check_config(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        let s = self.spare().await?;
        let block = &s.schema.provider;
        let props: PropertyMap = req
            .news
            .iter()
            .filter(|(k, _)| !ENGINE_CONFIG_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let config = match config_to_tf(block, &props, ConfigKind::ProviderConfig) {
            Ok((c, _)) => c,
            Err(f) => {
                return Ok(CheckResponse {
                    inputs: req.news,
                    failures: f
                        .into_iter()
                        .map(|x| CheckFailure {
                            property: x.property,
                            reason: x.reason,
                        })
                        .collect(),
                })
            }
        };
        let response = s
            .client()
            .validate_provider_config(tf::validate_provider_config::Request {
                config: Some(encode(Some(&config), &block.implied_type())?),
            })
            .await
            .map_err(|e| s.rpc_error("ValidateProviderConfig", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(block));
        self.warn(&findings, Some(&req.urn));
        Ok(CheckResponse {
            inputs: req.news,
            failures: findings
                .errors
                .into_iter()
                .map(|f| CheckFailure {
                    property: f.property.unwrap_or_default(),
                    reason: f.message,
                })
                .collect(),
        })
    }

    async fn configure(&self, req: ConfigureRequest) -> Result<(), ProviderError> {
        let s = self.open().await?;
        let block = &s.schema.provider;
        let props: PropertyMap = req
            .inputs
            .iter()
            .filter(|(k, _)| !ENGINE_CONFIG_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let (config, _) = config_to_tf(block, &props, ConfigKind::ProviderConfig).map_err(|f| {
            failed(
                f.iter()
                    .map(|x| x.reason.clone())
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })?;
        let response = s
            .client()
            .configure_provider(tf::configure_provider::Request {
                terraform_version: "1.9.0".to_owned(),
                config: Some(encode(Some(&config), &block.implied_type())?),
            })
            .await
            .map_err(|e| s.rpc_error("ConfigureProvider", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(block));
        self.warn(&findings, req.urn.as_ref());
        if findings.has_errors() {
            return Err(failed(format!(
                "could not configure the Terraform provider {}: {}",
                self.package,
                findings.error_lines().join("; ")
            )));
        }
        let _ = self.configured.set(s);
        Ok(())
    }

    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let config = match config_to_tf(&member.schema.block, &req.news, ConfigKind::Arguments) {
            Ok((c, _)) => c,
            Err(f) => {
                return Ok(CheckResponse {
                    inputs: req.news,
                    failures: f
                        .into_iter()
                        .map(|x| CheckFailure {
                            property: x.property,
                            reason: x.reason,
                        })
                        .collect(),
                })
            }
        };
        let response = s
            .client()
            .validate_resource_config(tf::validate_resource_config::Request {
                type_name: member.tf_type.clone(),
                config: Some(encode(Some(&config), &object_type(member))?),
            })
            .await
            .map_err(|e| s.rpc_error("ValidateResourceConfig", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(&req.urn));
        Ok(CheckResponse {
            inputs: req.news,
            failures: findings
                .errors
                .into_iter()
                .map(|f| CheckFailure {
                    property: f.property.unwrap_or_default(),
                    reason: f.message,
                })
                .collect(),
        })
    }

    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let prior = self.prior(&s, &req.urn, member, &req.old_outputs).await?;
        let (config, _) = self.config(member, &req.new_inputs)?;
        let plan = self
            .plan(&s, &req.urn, member, Some(&prior), &config)
            .await?;
        let mut detailed = BTreeMap::new();
        let mut changed = Vec::new();
        let mut replace = Vec::new();
        let names: std::collections::BTreeSet<&String> =
            prior.state.keys().chain(plan.planned.keys()).collect();
        for name in names {
            if !differs(prior.state.get(name), plan.planned.get(name)) {
                continue;
            }
            let pulumi = crate::names::pulumi_name(name);
            let replaces = plan.requires_replace.contains(name);
            let configurable = member
                .schema
                .block
                .attributes
                .get(name)
                .is_none_or(|a| !a.computed_only());
            if !configurable && !replaces {
                // A computed value that follows from the change: shown
                // as the output it is, not as a change asked for.
                continue;
            }
            if replaces {
                replace.push(pulumi.clone());
            }
            let kind = match (replaces, prior.state.get(name).map(bare)) {
                (false, None | Some(PropertyValue::Null)) => converge_model::DiffKind::Add,
                (true, None | Some(PropertyValue::Null)) => converge_model::DiffKind::AddReplace,
                (false, _)
                    if matches!(plan.planned.get(name).map(bare), Some(PropertyValue::Null)) =>
                {
                    converge_model::DiffKind::Delete
                }
                (false, _) => converge_model::DiffKind::Update,
                (true, _) => converge_model::DiffKind::UpdateReplace,
            };
            detailed.insert(
                pulumi.clone(),
                PropertyDiff {
                    kind,
                    input_diff: true,
                },
            );
            changed.push(pulumi);
        }
        // Nothing to apply: the state to record is the prior state as the
        // provider upgraded it (seed 004's Upgraded State, in its current
        // schema version), not the form an older release wrote.
        let upgraded_outputs = changed
            .is_empty()
            .then(|| self.outputs(member, &prior.state, &prior.secrets, &prior.private));
        // A replacement's create plans from no prior state, so the
        // replacement is planned as Terraform Core plans it, as a create,
        // and that plan is the first plan its final plan answers to.
        let first = if replace.is_empty() {
            (ChangeKind::Update, plan.planned)
        } else {
            let create = self.plan(&s, &req.urn, member, None, &config).await?;
            (ChangeKind::Create, create.planned)
        };
        lock(&self.first_plans).insert(req.urn.clone(), first);
        Ok(DiffResponse {
            changes: if changed.is_empty() {
                DiffChanges::None
            } else {
                DiffChanges::Some
            },
            replace_keys: replace,
            stable_keys: Vec::new(),
            changed_keys: changed,
            detailed_diff: Some(detailed),
            delete_before_replace: false,
            upgraded_outputs,
        })
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        if !member.schema.block.attributes.contains_key("id") {
            return Err(failed(format!(
                "Terraform resource type {} has no id attribute, which Converge needs to track its objects",
                member.tf_type
            )));
        }
        let (config, secrets) = self.config(member, &req.properties)?;
        let plan = self.plan(&s, &req.urn, member, None, &config).await?;
        if req.preview {
            let outputs = self.planned_outputs(member, &plan.planned, &secrets);
            lock(&self.first_plans)
                .insert(req.urn.clone(), (ChangeKind::Create, plan.planned.clone()));
            return Ok(CreateResponse {
                id: id_of(&plan.planned).unwrap_or_default(),
                properties: outputs,
            });
        }
        self.check_final_plan(
            ChangeKind::Create,
            &req.urn,
            member,
            req.planned.as_ref(),
            &plan.planned,
        )?;
        let (id, properties) = self
            .apply(
                &s,
                Change {
                    urn: &req.urn,
                    member,
                    prior: None,
                    plan: &plan,
                    config: &config,
                    secrets: &secrets,
                },
            )
            .await?;
        Ok(CreateResponse { id, properties })
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let prior = self.prior(&s, &req.urn, member, &req.old_outputs).await?;
        let (config, secrets) = self.config(member, &req.new_inputs)?;
        let plan = self
            .plan(&s, &req.urn, member, Some(&prior), &config)
            .await?;
        if req.preview {
            let mut all = secrets.clone();
            all.extend(prior.secrets.iter().cloned());
            return Ok(UpdateResponse {
                properties: self.planned_outputs(member, &plan.planned, &all),
            });
        }
        self.check_final_plan(
            ChangeKind::Update,
            &req.urn,
            member,
            req.planned.as_ref(),
            &plan.planned,
        )?;
        let (_, properties) = self
            .apply(
                &s,
                Change {
                    urn: &req.urn,
                    member,
                    prior: Some(&prior),
                    plan: &plan,
                    config: &config,
                    secrets: &secrets,
                },
            )
            .await?;
        Ok(UpdateResponse { properties })
    }

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let prior = self.prior(&s, &req.urn, member, &req.outputs).await?;
        let ty = object_type(member);
        let response = s
            .client()
            .apply_resource_change(tf::apply_resource_change::Request {
                type_name: member.tf_type.clone(),
                prior_state: Some(encode(Some(&prior.state), &ty)?),
                planned_state: Some(encode(None, &ty)?),
                config: Some(encode(None, &ty)?),
                planned_private: prior.private.clone(),
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("ApplyResourceChange", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(&req.urn));
        if findings.has_errors() {
            return Err(failed(findings.error_lines().join("; ")));
        }
        if decode(response.new_state.as_ref(), &ty)?.is_some() {
            return Err(failed(format!(
                "provider {} {}: it returned an object after deleting {}, so the object may still exist",
                self.package, "produced an inconsistent result after apply", req.urn
            )));
        }
        Ok(())
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        let s = self.session().await?;
        let member = self.resource(&s, &req.urn)?;
        let Some(recorded) = &req.state else {
            return self.import(&s, &req, member).await;
        };
        let prior = self.prior(&s, &req.urn, member, recorded).await?;
        let Some((state, private)) = self
            .read_resource(&s, &req.urn, member, &prior.state, prior.private.clone())
            .await?
        else {
            return Ok(ReadResponse::default());
        };
        let properties = self.outputs(member, &state, &prior.secrets, &private);
        Ok(ReadResponse {
            id: id_of(&state).unwrap_or_else(|| req.id.clone()),
            inputs: req
                .inputs
                .clone()
                .unwrap_or_else(|| self.inputs_of(member, &state)),
            properties,
        })
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        let s = self.session().await?;
        let member = s.functions.get(&req.token).ok_or_else(|| {
            failed(format!(
                "Terraform provider {} has no data source {}",
                self.package, req.token
            ))
        })?;
        let block = &member.schema.block;
        let ty = object_type(member);
        let (config, secrets) = match config_to_tf(block, &req.args, ConfigKind::Arguments) {
            Ok(c) => c,
            Err(f) => {
                return Ok(InvokeResponse {
                    outputs: PropertyMap::new(),
                    failures: f
                        .into_iter()
                        .map(|x| CheckFailure {
                            property: x.property,
                            reason: x.reason,
                        })
                        .collect(),
                })
            }
        };
        let validated = s
            .client()
            .validate_data_resource_config(tf::validate_data_resource_config::Request {
                type_name: member.tf_type.clone(),
                config: Some(encode(Some(&config), &ty)?),
            })
            .await
            .map_err(|e| s.rpc_error("ValidateDataResourceConfig", &e))?
            .into_inner();
        let findings = Findings::read(&validated.diagnostics, Some(block));
        self.warn(&findings, None);
        if findings.has_errors() {
            return Ok(InvokeResponse {
                outputs: PropertyMap::new(),
                failures: findings
                    .errors
                    .into_iter()
                    .map(|f| CheckFailure {
                        property: f.property.unwrap_or_default(),
                        reason: f.message,
                    })
                    .collect(),
            });
        }
        let response = s
            .client()
            .read_data_source(tf::read_data_source::Request {
                type_name: member.tf_type.clone(),
                config: Some(encode(Some(&config), &ty)?),
                provider_meta: null_meta(),
            })
            .await
            .map_err(|e| s.rpc_error("ReadDataSource", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(block));
        self.warn(&findings, None);
        if findings.has_errors() {
            return Err(failed(format!(
                "{}: {}",
                req.token,
                findings.error_lines().join("; ")
            )));
        }
        let state = decode(response.state.as_ref(), &ty)?.unwrap_or_default();
        Ok(InvokeResponse {
            outputs: tf_to_pulumi(block, &state, &secrets),
            failures: Vec::new(),
        })
    }
}

impl TerraformProvider {
    /// `ImportResourceState` then `ReadResource`: the object `req.id`
    /// names, or none (an empty ID) when it does not exist.
    async fn import(
        &self,
        s: &Session,
        req: &ReadRequest,
        member: &Member,
    ) -> Result<ReadResponse, ProviderError> {
        let ty = object_type(member);
        let response = s
            .client()
            .import_resource_state(tf::import_resource_state::Request {
                type_name: member.tf_type.clone(),
                id: req.id.clone(),
            })
            .await
            .map_err(|e| s.rpc_error("ImportResourceState", &e))?
            .into_inner();
        let findings = Findings::read(&response.diagnostics, Some(&member.schema.block));
        self.warn(&findings, Some(&req.urn));
        if findings.has_errors() {
            return Err(failed(findings.error_lines().join("; ")));
        }
        let Some(imported) = response
            .imported_resources
            .iter()
            .find(|r| r.type_name == member.tf_type)
        else {
            return Ok(ReadResponse::default());
        };
        let Some(stub) = decode(imported.state.as_ref(), &ty)? else {
            return Ok(ReadResponse::default());
        };
        let Some((state, private)) = self
            .read_resource(s, &req.urn, member, &stub, imported.private.clone())
            .await?
        else {
            return Ok(ReadResponse::default());
        };
        Ok(ReadResponse {
            id: id_of(&state).unwrap_or_else(|| req.id.clone()),
            inputs: self.inputs_of(member, &state),
            properties: self.outputs(member, &state, &SecretAttrs::new(), &private),
        })
    }

    /// Asks every connection this provider opened to close.
    pub async fn shutdown(&self, grace: std::time::Duration) {
        if let Some(s) = self.configured.get() {
            s.shutdown(grace).await;
        }
    }
}

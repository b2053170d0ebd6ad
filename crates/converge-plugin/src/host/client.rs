//! [`GrpcProvider`]: a provider plugin process behind the [`Provider`] trait.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use converge_model::Urn;
use converge_proto::pulumirpc as wire;

use super::convert::{
    annotate_secrets, config_variables, diff_response, failures, from_wire, receive, status_error,
    to_wire, Caps,
};
use super::loader::HostShared;
use super::process::{PluginCommand, PluginProcess};
use crate::provider::{
    CallRequest, CallResponse, CheckRequest, CheckResponse, ConfigureRequest, ConstructRequest,
    ConstructResponse, CreateRequest, CreateResponse, DeleteRequest, DiffConfigRequest,
    DiffRequest, DiffResponse, InvokeRequest, InvokeResponse, ParameterizeRequest,
    ParameterizeResponse, PluginInfo, ReadRequest, ReadResponse, UpdateRequest, UpdateResponse,
};
use crate::schema::PackageSchema;
use crate::{Provider, ProviderError};

/// The process a provider talks to and how.
#[derive(Clone)]
struct Target {
    process: Arc<PluginProcess>,
    caps: Caps,
    /// False when `Configure` was given unknown values (a preview): the
    /// plugin is not configured, and calls answer as Pulumi does then.
    known: bool,
}

/// A provider plugin process speaking `pulumirpc.ResourceProvider`.
///
/// Before `Configure` (CheckConfig, DiffConfig, GetPluginInfo, GetSchema)
/// it uses the loader's shared, unconfigured process of its plugin.
/// `Configure` takes that process for itself — or, if another provider
/// already took it, starts a process of its own — because a plugin holds
/// one configuration: two provider resources of one package never share a
/// configured process. Dropping the last handle of a configured process
/// kills it.
///
/// Values are sent as the plugin accepts them (Handshake, then Configure's
/// `acceptSecrets` / `acceptResources` / `acceptOutputs`); unknowns only to
/// Check, Diff and previews. A plugin that does not accept secrets gets
/// plain values, and outputs whose inputs were secret are marked secret
/// again. A plugin without `supportsPreview` is not called for preview
/// creates and updates (the inputs stand for the outputs). `Unimplemented`
/// CheckConfig, DiffConfig, Configure, Check, Diff and Cancel fall back to the
/// trait's defaults; other methods answer [`ProviderError::Unimplemented`].
///
/// A parameterized provider (`Parameterize`) has a process of its own from
/// the start, since the call changes what the plugin serves; `Configure`
/// keeps that process, and any process started later for it is
/// parameterized the same way first.
pub struct GrpcProvider {
    package: String,
    command: PluginCommand,
    version: Option<semver::Version>,
    shared: Arc<HostShared>,
    /// The process calls go to; replaced by `Configure`.
    state: Mutex<State>,
}

struct State {
    target: Target,
    configured: bool,
    /// What `Parameterize` was given, for any process started later.
    parameters: Option<wire::ParameterizeRequest>,
    /// The target process is this provider's own, parameterized and not
    /// configured yet: `Configure` uses it.
    owned: bool,
}

impl fmt::Debug for GrpcProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcProvider")
            .field("package", &self.package)
            .field("command", &self.command)
            .field("version", &self.version)
            .field("pid", &self.pid())
            .finish_non_exhaustive()
    }
}

fn timeout_secs(t: Option<Duration>) -> f64 {
    t.map_or(0.0, |d| d.as_secs_f64())
}

fn name_type(urn: &Urn) -> (String, String) {
    (urn.name().to_owned(), urn.type_token().to_owned())
}

impl GrpcProvider {
    pub(crate) fn new(shared: Arc<HostShared>, initial: Arc<PluginProcess>) -> Self {
        let caps = initial
            .handshake
            .as_ref()
            .map(Caps::from_handshake)
            .unwrap_or_default();
        GrpcProvider {
            package: initial.package.clone(),
            command: initial.command.clone(),
            version: initial.version.clone(),
            shared,
            state: Mutex::new(State {
                target: Target {
                    process: initial,
                    caps,
                    known: true,
                },
                configured: false,
                parameters: None,
                owned: false,
            }),
        }
    }

    /// The plugin executable (for a dynamic provider: its interpreter).
    pub fn path(&self) -> &Path {
        &self.command.program
    }

    /// How the plugin's processes are started.
    pub fn command(&self) -> &PluginCommand {
        &self.command
    }

    /// The version the plugin reported (`None`: unversioned).
    pub fn version(&self) -> Option<&semver::Version> {
        self.version.as_ref()
    }

    /// The process this provider currently talks to.
    pub fn pid(&self) -> Option<u32> {
        self.target().process.pid
    }

    /// True once `Configure` succeeded with known values.
    pub fn is_configured(&self) -> bool {
        let state = self.lock();
        state.configured && state.target.known
    }

    /// The package schema (`GetSchema`) as JSON text.
    pub async fn get_schema(&self, version: i32) -> Result<String, ProviderError> {
        let t = self.target();
        let req = wire::GetSchemaRequest {
            version,
            ..Default::default()
        };
        let resp = t.process.client().get_schema(req).await;
        Ok(self.answer("GetSchema", &t, resp, false)?.schema)
    }

    /// The schema's tokens, asked of the plugin once per loader (cached by
    /// plugin and version).
    async fn package_schema(&self) -> Result<Arc<PackageSchema>, ProviderError> {
        let version = self.version.as_ref();
        if self.lock().parameters.is_some() {
            // The package it became: not the plugin's own schema.
            let text = self.get_schema(0).await?;
            return PackageSchema::from_text(&text)
                .map(Arc::new)
                .map_err(|e| ProviderError::failed(format!("GetSchema of {}: {e}", self.package)));
        }
        if let Some(s) = self.shared.cached_schema(&self.command, version) {
            return Ok(s);
        }
        let text = self.get_schema(0).await?;
        let schema = PackageSchema::from_text(&text)
            .map_err(|e| ProviderError::failed(format!("GetSchema of {}: {e}", self.package)))?;
        let schema = Arc::new(schema);
        self.shared
            .cache_schema(&self.command, version, schema.clone());
        Ok(schema)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn target(&self) -> Target {
        self.lock().target.clone()
    }

    fn set_target(&self, target: Target) {
        let mut state = self.lock();
        state.target = target;
        state.configured = true;
        state.owned = false;
    }

    /// A new process for this provider alone. Never the shared
    /// unconfigured one, which other providers of the plugin may be
    /// talking to: once parameterized it serves another package.
    async fn own_process(&self) -> Result<Arc<PluginProcess>, ProviderError> {
        self.shared
            .launch(&self.package, &self.command)
            .await
            .map_err(|e| ProviderError::Unavailable(e.to_string()))
    }

    async fn send_parameterize(
        &self,
        process: &Arc<PluginProcess>,
        req: wire::ParameterizeRequest,
    ) -> Result<wire::ParameterizeResponse, ProviderError> {
        let t = Target {
            process: process.clone(),
            caps: Caps::default(),
            known: true,
        };
        let resp = process.client().parameterize(req).await;
        self.answer("Parameterize", &t, resp, false)
    }

    fn answer<T>(
        &self,
        method: &'static str,
        t: &Target,
        resp: Result<tonic::Response<T>, tonic::Status>,
        preview: bool,
    ) -> Result<T, ProviderError> {
        resp.map(tonic::Response::into_inner)
            .map_err(|s| status_error(method, &s, preview, || t.process.death_note()))
    }

    fn unconfigured(&self, method: &str) -> ProviderError {
        ProviderError::Failed(format!(
            "{method}: the {} provider's configuration is not known yet",
            self.package
        ))
    }

    async fn check_like(
        &self,
        method: &'static str,
        req: CheckRequest,
    ) -> Result<CheckResponse, ProviderError> {
        let t = self.target();
        let passthrough = CheckResponse {
            inputs: req.news.clone(),
            failures: Vec::new(),
        };
        if !t.known {
            return Ok(passthrough);
        }
        let (name, type_) = name_type(&req.urn);
        let send = t.caps.send(true);
        let wire_req = wire::CheckRequest {
            urn: req.urn.to_string(),
            olds: to_wire(method, &req.olds, send)?,
            news: to_wire(method, &req.news, send)?,
            random_seed: req.random_seed.clone(),
            name,
            r#type: type_,
            ..Default::default()
        };
        let mut client = t.process.client();
        let resp = if method == "CheckConfig" {
            client.check_config(wire_req).await
        } else {
            client.check(wire_req).await
        };
        let resp = match self.answer(method, &t, resp, true) {
            Err(ProviderError::Unimplemented(_)) => return Ok(passthrough),
            other => other?,
        };
        let mut inputs = match resp.inputs {
            Some(s) => from_wire(method, Some(&s), receive(true))?,
            None => req.news.clone(),
        };
        if !t.caps.accept_secrets {
            annotate_secrets(&mut inputs, &req.news);
        }
        Ok(CheckResponse {
            inputs,
            failures: failures(resp.failures),
        })
    }

    async fn diff_like(
        &self,
        method: &'static str,
        req: DiffRequest,
    ) -> Result<DiffResponse, ProviderError> {
        let t = self.target();
        if !t.known {
            return Ok(DiffResponse::default());
        }
        let (name, type_) = name_type(&req.urn);
        let send = t.caps.send(true);
        let wire_req = wire::DiffRequest {
            id: req.id.clone(),
            urn: req.urn.to_string(),
            olds: to_wire(method, &req.old_outputs, send)?,
            news: to_wire(method, &req.new_inputs, send)?,
            ignore_changes: req.ignore_changes.clone(),
            old_inputs: to_wire(method, &req.old_inputs, send)?,
            name,
            r#type: type_,
        };
        let mut client = t.process.client();
        let resp = if method == "DiffConfig" {
            client.diff_config(wire_req).await
        } else {
            client.diff(wire_req).await
        };
        match self.answer(method, &t, resp, true) {
            Err(ProviderError::Unimplemented(_)) => Ok(DiffResponse::default()),
            other => other.map(diff_response),
        }
    }
}

#[async_trait]
impl Provider for GrpcProvider {
    fn package(&self) -> &str {
        &self.package
    }

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        Ok(PluginInfo {
            version: self.version.clone(),
        })
    }

    async fn schema(&self) -> Result<Arc<PackageSchema>, ProviderError> {
        self.package_schema().await
    }

    async fn parameterize(
        &self,
        req: ParameterizeRequest,
    ) -> Result<ParameterizeResponse, ProviderError> {
        use wire::parameterize_request::{Parameters, ParametersArgs, ParametersValue};
        let parameters = match req {
            ParameterizeRequest::Args(args) => Parameters::Args(ParametersArgs { args }),
            ParameterizeRequest::Value(p) => Parameters::Value(ParametersValue {
                name: p.name,
                version: p.version.to_string(),
                value: p.value,
            }),
        };
        let wire_req = wire::ParameterizeRequest {
            parameters: Some(parameters),
        };
        let process = self.own_process().await?;
        let resp = self.send_parameterize(&process, wire_req.clone()).await?;
        let caps = process
            .handshake
            .as_ref()
            .map(Caps::from_handshake)
            .unwrap_or_default();
        let mut state = self.lock();
        state.target = Target {
            process,
            caps,
            known: true,
        };
        state.parameters = Some(wire_req);
        state.owned = true;
        Ok(ParameterizeResponse {
            name: resp.name,
            version: resp.version,
        })
    }

    async fn check_config(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        self.check_like("CheckConfig", req).await
    }

    async fn diff_config(&self, req: DiffConfigRequest) -> Result<DiffResponse, ProviderError> {
        self.diff_like("DiffConfig", req).await
    }

    async fn configure(&self, req: ConfigureRequest) -> Result<(), ProviderError> {
        if req.inputs.values().any(|v| v.contains_unknowns()) {
            // Pulumi does not configure a plugin with unknown values: until
            // they are known (in a preview) calls answer conservatively.
            let process = self.target().process;
            self.set_target(Target {
                process,
                caps: Caps::default(),
                known: false,
            });
            return Ok(());
        }
        let (current, owned, parameters) = {
            let state = self.lock();
            let t = &state.target;
            (t.process.clone(), state.owned, state.parameters.clone())
        };
        let process = if owned {
            current
        } else if current.claim() {
            self.shared.forget_spare(&current);
            current
        } else {
            let process = self
                .shared
                .launch(&self.package, &self.command)
                .await
                .map_err(|e| ProviderError::Unavailable(e.to_string()))?;
            if let Some(parameters) = parameters {
                self.send_parameterize(&process, parameters).await?;
            }
            process
        };
        let opts = converge_proto::MarshalOptions {
            keep_unknowns: false,
            keep_secrets: req.accept_secrets,
            keep_resources: req.accept_resources,
            ..Default::default()
        };
        let (name, type_) = match &req.urn {
            Some(urn) => (
                Some(urn.name().to_owned()),
                Some(urn.type_token().to_owned()),
            ),
            None => (None, None),
        };
        let wire_req = wire::ConfigureRequest {
            variables: config_variables(&self.package, &req.inputs),
            args: to_wire("Configure", &req.inputs, opts)?,
            accept_secrets: req.accept_secrets,
            accept_resources: req.accept_resources,
            sends_old_inputs: true,
            sends_old_inputs_to_delete: true,
            id: None,
            urn: req.urn.as_ref().map(ToString::to_string),
            name,
            r#type: type_,
        };
        let mut t = Target {
            process,
            caps: Caps::default(),
            known: true,
        };
        let resp = t.process.client().configure(wire_req).await;
        t.caps = match self.answer("Configure", &t, resp, false) {
            Ok(r) => Caps::from_configure(&r),
            Err(ProviderError::Unimplemented(_)) => Caps::default(),
            Err(e) => return Err(e),
        };
        self.set_target(t);
        Ok(())
    }

    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        self.check_like("Check", req).await
    }

    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        self.diff_like("Diff", req).await
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        let t = self.target();
        if !t.known || (req.preview && !t.caps.supports_preview) {
            if !req.preview {
                return Err(self.unconfigured("Create"));
            }
            return Ok(CreateResponse {
                id: String::new(),
                properties: req.properties,
            });
        }
        let (name, type_) = name_type(&req.urn);
        let wire_req = wire::CreateRequest {
            urn: req.urn.to_string(),
            properties: to_wire("Create", &req.properties, t.caps.send(req.preview))?,
            timeout: timeout_secs(req.timeout),
            preview: req.preview,
            name,
            r#type: type_,
            ..Default::default()
        };
        let resp = t.process.client().create(wire_req).await;
        let resp = self.answer("Create", &t, resp, req.preview)?;
        let mut properties = from_wire("Create", resp.properties.as_ref(), receive(req.preview))?;
        if !t.caps.accept_secrets {
            annotate_secrets(&mut properties, &req.properties);
        }
        Ok(CreateResponse {
            id: resp.id,
            properties,
        })
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        let t = self.target();
        if !t.known {
            return Ok(ReadResponse {
                id: req.id,
                inputs: req.inputs.unwrap_or_default(),
                properties: req.state.unwrap_or_default(),
            });
        }
        let (name, type_) = name_type(&req.urn);
        let send = t.caps.send(false);
        let wire_req = wire::ReadRequest {
            id: req.id.clone(),
            urn: req.urn.to_string(),
            properties: to_wire("Read", &req.state.clone().unwrap_or_default(), send)?,
            inputs: match &req.inputs {
                Some(inputs) => to_wire("Read", inputs, send)?,
                None => None,
            },
            name,
            r#type: type_,
            timeout: timeout_secs(req.timeout),
            ..Default::default()
        };
        let resp = t.process.client().read(wire_req).await;
        let resp = self.answer("Read", &t, resp, false)?;
        let mut properties = from_wire("Read", resp.properties.as_ref(), receive(false))?;
        let mut inputs = from_wire("Read", resp.inputs.as_ref(), receive(false))?;
        if !t.caps.accept_secrets {
            if let Some(old) = &req.state {
                annotate_secrets(&mut properties, old);
            }
            if let Some(old) = &req.inputs {
                annotate_secrets(&mut inputs, old);
            }
        }
        Ok(ReadResponse {
            id: resp.id,
            inputs,
            properties,
        })
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        let t = self.target();
        if !t.known || (req.preview && !t.caps.supports_preview) {
            if !req.preview {
                return Err(self.unconfigured("Update"));
            }
            return Ok(UpdateResponse {
                properties: req.new_inputs,
            });
        }
        let (name, type_) = name_type(&req.urn);
        let send = t.caps.send(req.preview);
        let wire_req = wire::UpdateRequest {
            id: req.id.clone(),
            urn: req.urn.to_string(),
            olds: to_wire("Update", &req.old_outputs, send)?,
            news: to_wire("Update", &req.new_inputs, send)?,
            timeout: timeout_secs(req.timeout),
            ignore_changes: req.ignore_changes.clone(),
            preview: req.preview,
            old_inputs: to_wire("Update", &req.old_inputs, send)?,
            name,
            r#type: type_,
            ..Default::default()
        };
        let resp = t.process.client().update(wire_req).await;
        let resp = self.answer("Update", &t, resp, req.preview)?;
        let mut properties = from_wire("Update", resp.properties.as_ref(), receive(req.preview))?;
        if !t.caps.accept_secrets {
            annotate_secrets(&mut properties, &req.new_inputs);
        }
        Ok(UpdateResponse { properties })
    }

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        let t = self.target();
        if !t.known {
            return Err(self.unconfigured("Delete"));
        }
        let (name, type_) = name_type(&req.urn);
        let send = t.caps.send(false);
        let wire_req = wire::DeleteRequest {
            id: req.id.clone(),
            urn: req.urn.to_string(),
            properties: to_wire("Delete", &req.outputs, send)?,
            timeout: timeout_secs(req.timeout),
            old_inputs: to_wire("Delete", &req.inputs, send)?,
            name,
            r#type: type_,
            ..Default::default()
        };
        let resp = t.process.client().delete(wire_req).await;
        self.answer("Delete", &t, resp, false)
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        let t = self.target();
        if !t.known {
            return Ok(InvokeResponse::default());
        }
        let wire_req = wire::InvokeRequest {
            tok: req.token.clone(),
            args: to_wire("Invoke", &req.args, t.caps.send(false))?,
            preview: false,
        };
        let resp = t.process.client().invoke(wire_req).await;
        let resp = self.answer("Invoke", &t, resp, false)?;
        Ok(InvokeResponse {
            outputs: from_wire("Invoke", resp.r#return.as_ref(), receive(false))?,
            failures: failures(resp.failures),
        })
    }

    async fn construct(&self, req: ConstructRequest) -> Result<ConstructResponse, ProviderError> {
        let t = self.target();
        super::construct::construct(&t.process, t.caps, t.known, req).await
    }

    async fn call(&self, req: CallRequest) -> Result<CallResponse, ProviderError> {
        let t = self.target();
        super::construct::call(&t.process, t.caps, t.known, req).await
    }

    async fn cancel(&self) -> Result<(), ProviderError> {
        let t = self.target();
        let resp = t.process.client().cancel(()).await;
        match self.answer("Cancel", &t, resp, false) {
            Ok(()) | Err(ProviderError::Unimplemented(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

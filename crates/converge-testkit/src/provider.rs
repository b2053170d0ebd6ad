//! A mock provider with one optional closure per RPC (Pulumi's
//! `deploytest.Provider`), and defaults that keep the [`MockCloud`]
//! consistent with what the engine is told.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use converge_model::{diff_objects, PathElement, PropertyMap, PropertyPath};
use converge_plugin::{
    CallRequest, CallResponse, CheckRequest, CheckResponse, ConfigureRequest, ConstructRequest,
    ConstructResponse, CreateRequest, CreateResponse, DeleteRequest, DiffChanges,
    DiffConfigRequest, DiffRequest, DiffResponse, InvokeRequest, InvokeResponse, PackageSchema,
    PluginInfo, Provider, ProviderError, ReadRequest, ReadResponse, UpdateRequest, UpdateResponse,
};

use crate::cloud::{CloudOp, MockCloud};

/// The closure that answers one RPC.
pub type Handler<Req, Resp> = Box<dyn Fn(Req) -> Result<Resp, ProviderError> + Send + Sync>;

/// The future an [`AsyncHandler`] returns.
pub type HandlerFuture<Resp> = Pin<Box<dyn Future<Output = Result<Resp, ProviderError>> + Send>>;

/// The closure that answers an RPC that does asynchronous work of its own
/// (`Construct` registers resources with the engine's monitor).
pub type AsyncHandler<Req, Resp> = Box<dyn Fn(Req) -> HandlerFuture<Resp> + Send + Sync>;

/// The RPCs a [`MockProvider`] answers, as its call log records them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rpc {
    PluginInfo,
    CheckConfig,
    DiffConfig,
    Configure,
    Check,
    Diff,
    Create,
    Read,
    Update,
    Delete,
    Invoke,
    Construct,
    Call,
    /// The engine asked the provider to stop its outstanding work.
    Cancel,
}

impl Rpc {
    /// Seed 001: a provider is configured before any resource operation or
    /// function call.
    fn needs_configure(self) -> bool {
        !matches!(
            self,
            Rpc::PluginInfo | Rpc::CheckConfig | Rpc::DiffConfig | Rpc::Configure | Rpc::Cancel
        )
    }
}

#[derive(Default)]
struct Handlers {
    check_config: Option<Handler<CheckRequest, CheckResponse>>,
    diff_config: Option<Handler<DiffConfigRequest, DiffResponse>>,
    configure: Option<Handler<ConfigureRequest, ()>>,
    check: Option<Handler<CheckRequest, CheckResponse>>,
    diff: Option<Handler<DiffRequest, DiffResponse>>,
    create: Option<Handler<CreateRequest, CreateResponse>>,
    read: Option<Handler<ReadRequest, ReadResponse>>,
    update: Option<Handler<UpdateRequest, UpdateResponse>>,
    delete: Option<Handler<DeleteRequest, ()>>,
    invoke: Option<Handler<InvokeRequest, InvokeResponse>>,
    construct: Option<AsyncHandler<ConstructRequest, ConstructResponse>>,
    call: Option<Handler<CallRequest, CallResponse>>,
}

impl Handlers {
    fn names(&self) -> Vec<&'static str> {
        let set = [
            ("check_config", self.check_config.is_some()),
            ("diff_config", self.diff_config.is_some()),
            ("configure", self.configure.is_some()),
            ("check", self.check.is_some()),
            ("diff", self.diff.is_some()),
            ("create", self.create.is_some()),
            ("read", self.read.is_some()),
            ("update", self.update.is_some()),
            ("delete", self.delete.is_some()),
            ("invoke", self.invoke.is_some()),
            ("construct", self.construct.is_some()),
            ("call", self.call.is_some()),
        ];
        set.into_iter()
            .filter(|(_, s)| *s)
            .map(|(n, _)| n)
            .collect()
    }
}

/// A [`Provider`] for tests. Every RPC is answered by its closure if one was
/// given, else by a default:
///
/// - `Check`, `CheckConfig`: the new inputs, no failures.
/// - `Diff`, `DiffConfig`: [`diff_objects`] of old and new inputs, leaving
///   out paths under `ignore_changes`: `DiffChanges::None`, or
///   `DiffChanges::Some` with the changed top-level keys and a detailed diff
///   (`input_diff: true`). Changes at or around a
///   [`replace_on_changes`](Self::replace_on_changes) path (resources only)
///   require replacement.
/// - `Configure`: accepted (and recorded: [`configured_with`](Self::configured_with)).
/// - `Create`: stores the object in the cloud and returns its ID, with
///   properties = inputs; a preview returns ID `""` and touches nothing.
/// - `Read`: the cloud object (inputs as given, or its properties when
///   importing); ID `""` if it is gone or of another type.
/// - `Update`: replaces the object's properties with the new inputs (a
///   preview touches nothing); fails if the object is gone.
/// - `Delete`: removes the object; fails, naming the ID, if it is gone.
/// - `Invoke`, `Construct`, `Call`: `Unimplemented`.
///
/// Around every RPC: the call is logged, then the provider sleeps for its
/// [`latency`](Self::latency) and that RPC's
/// [`latency_of`](Self::latency_of). Create and update (unless previews),
/// read and delete are counted by the cloud and may be failed by its fault
/// switch, before the closure or default runs.
pub struct MockProvider {
    package: String,
    version: semver::Version,
    cloud: Arc<MockCloud>,
    latency: Duration,
    /// Extra latency of single RPCs.
    latency_of: BTreeMap<Rpc, Duration>,
    replace_on_changes: Vec<PropertyPath>,
    strict_lifecycle: bool,
    /// What `schema` answers (`None`: GetSchema is unimplemented).
    schema: Option<Arc<PackageSchema>>,
    handlers: Handlers,
    config: Mutex<Option<PropertyMap>>,
    calls: Mutex<Vec<Rpc>>,
}

impl fmt::Debug for MockProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MockProvider")
            .field("package", &self.package)
            .field("version", &self.version.to_string())
            .field("latency", &self.latency)
            .field("handlers", &self.handlers.names())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MockProvider {
    /// A provider for `package`, version 1.0.0, no latency, no closures,
    /// with a cloud of its own.
    pub fn new(package: impl Into<String>) -> Self {
        MockProvider {
            package: package.into(),
            version: semver::Version::new(1, 0, 0),
            cloud: MockCloud::new(),
            latency: Duration::ZERO,
            latency_of: BTreeMap::new(),
            replace_on_changes: Vec::new(),
            strict_lifecycle: false,
            schema: None,
            handlers: Handlers::default(),
            config: Mutex::new(None),
            calls: Mutex::new(Vec::new()),
        }
    }

    /// Shares `cloud` (usually with the test and other providers).
    pub fn with_cloud(mut self, cloud: Arc<MockCloud>) -> Self {
        self.cloud = cloud;
        self
    }

    /// The version `plugin_info` reports and the loader matches on.
    pub fn with_version(mut self, version: semver::Version) -> Self {
        self.version = version;
        self
    }

    /// Sleeps this long at the start of every RPC.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Sleeps this long (on top of [`latency`](Self::latency)) at the start
    /// of every `rpc` call: a slow `Read`, say.
    pub fn latency_of(mut self, rpc: Rpc, latency: Duration) -> Self {
        self.latency_of.insert(rpc, latency);
        self
    }

    /// Makes the default `Diff` require replacement for changes at, inside
    /// or around these property paths (like Pulumi's `replaceOnChanges`).
    ///
    /// # Panics
    /// If a path does not parse.
    pub fn replace_on_changes<S: AsRef<str>>(mut self, paths: impl IntoIterator<Item = S>) -> Self {
        for p in paths {
            let p = p.as_ref();
            let path = PropertyPath::parse(p).unwrap_or_else(|e| panic!("replace_on_changes: {e}"));
            self.replace_on_changes.push(path);
        }
        self
    }

    /// Fails (`ProviderError::Failed`) every resource operation and invoke
    /// made before `Configure` succeeded, as seed 001's lifecycle forbids.
    pub fn strict_lifecycle(mut self) -> Self {
        self.strict_lifecycle = true;
        self
    }

    /// Answers `schema` with this package schema (JSON, as a plugin's
    /// `GetSchema` gives it).
    ///
    /// # Panics
    /// If it is not a schema.
    pub fn with_schema(mut self, schema: &serde_json::Value) -> Self {
        let parsed =
            PackageSchema::from_json(schema).unwrap_or_else(|e| panic!("with_schema: {e}"));
        self.schema = Some(Arc::new(parsed));
        self
    }

    pub fn on_check_config(
        mut self,
        f: impl Fn(CheckRequest) -> Result<CheckResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.check_config = Some(Box::new(f));
        self
    }

    pub fn on_diff_config(
        mut self,
        f: impl Fn(DiffConfigRequest) -> Result<DiffResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.diff_config = Some(Box::new(f));
        self
    }

    pub fn on_configure(
        mut self,
        f: impl Fn(ConfigureRequest) -> Result<(), ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.configure = Some(Box::new(f));
        self
    }

    pub fn on_check(
        mut self,
        f: impl Fn(CheckRequest) -> Result<CheckResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.check = Some(Box::new(f));
        self
    }

    pub fn on_diff(
        mut self,
        f: impl Fn(DiffRequest) -> Result<DiffResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.diff = Some(Box::new(f));
        self
    }

    pub fn on_create(
        mut self,
        f: impl Fn(CreateRequest) -> Result<CreateResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.create = Some(Box::new(f));
        self
    }

    pub fn on_read(
        mut self,
        f: impl Fn(ReadRequest) -> Result<ReadResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.read = Some(Box::new(f));
        self
    }

    pub fn on_update(
        mut self,
        f: impl Fn(UpdateRequest) -> Result<UpdateResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.update = Some(Box::new(f));
        self
    }

    pub fn on_delete(
        mut self,
        f: impl Fn(DeleteRequest) -> Result<(), ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.delete = Some(Box::new(f));
        self
    }

    pub fn on_invoke(
        mut self,
        f: impl Fn(InvokeRequest) -> Result<InvokeResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.invoke = Some(Box::new(f));
        self
    }

    /// Answers `Construct`. The closure's future typically connects to
    /// `req.context.monitor_endpoint` and registers the component and its
    /// children there, as a real component provider does.
    pub fn on_construct<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ConstructRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ConstructResponse, ProviderError>> + Send + 'static,
    {
        self.handlers.construct = Some(Box::new(move |req| Box::pin(f(req))));
        self
    }

    pub fn on_call(
        mut self,
        f: impl Fn(CallRequest) -> Result<CallResponse, ProviderError> + Send + Sync + 'static,
    ) -> Self {
        self.handlers.call = Some(Box::new(f));
        self
    }

    pub fn version(&self) -> &semver::Version {
        &self.version
    }

    pub fn cloud(&self) -> &Arc<MockCloud> {
        &self.cloud
    }

    /// The inputs of the last successful `Configure`, if any.
    pub fn configured_with(&self) -> Option<PropertyMap> {
        lock(&self.config).clone()
    }

    /// Every RPC received so far, in order of arrival.
    pub fn calls(&self) -> Vec<Rpc> {
        lock(&self.calls).clone()
    }

    pub fn call_count(&self, rpc: Rpc) -> usize {
        lock(&self.calls).iter().filter(|c| **c == rpc).count()
    }

    async fn enter(&self, rpc: Rpc) -> Result<(), ProviderError> {
        lock(&self.calls).push(rpc);
        let latency = self.latency + self.latency_of.get(&rpc).copied().unwrap_or_default();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if self.strict_lifecycle && rpc.needs_configure() && lock(&self.config).is_none() {
            return Err(ProviderError::Failed(format!(
                "provider {}: {rpc:?} called before Configure",
                self.package
            )));
        }
        Ok(())
    }

    fn default_create(&self, req: CreateRequest) -> CreateResponse {
        let id = if req.preview {
            String::new()
        } else {
            self.cloud
                .insert(&req.urn, &self.package, req.properties.clone())
        };
        CreateResponse {
            id,
            properties: req.properties,
        }
    }

    fn default_read(&self, req: ReadRequest) -> ReadResponse {
        match self.cloud.get(&req.id) {
            Some(object) if object.type_token == req.urn.type_token() => ReadResponse {
                id: object.id,
                inputs: req.inputs.unwrap_or_else(|| object.properties.clone()),
                properties: object.properties,
            },
            _ => ReadResponse::default(),
        }
    }

    fn default_update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        if !req.preview {
            self.cloud.set_properties(&req.id, req.new_inputs.clone())?;
        }
        Ok(UpdateResponse {
            properties: req.new_inputs,
        })
    }
}

/// The default `Diff`: see [`MockProvider`].
fn default_diff(
    req: &DiffRequest,
    replace_on: &[PropertyPath],
) -> Result<DiffResponse, ProviderError> {
    let ignore = req
        .ignore_changes
        .iter()
        .map(|p| PropertyPath::parse(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ProviderError::Failed(format!("ignoreChanges: {e}")))?;
    let mut response = DiffResponse::none();
    let mut detailed = BTreeMap::new();
    for (path, mut diff) in diff_objects(&req.old_inputs, &req.new_inputs) {
        if ignore.iter().any(|p| p.contains(&path)) {
            continue;
        }
        diff.input_diff = true;
        let key = match path.elements().first() {
            Some(PathElement::Key(k)) => k.clone(),
            _ => path.to_string(),
        };
        if replace_on
            .iter()
            .any(|p| p.contains(&path) || path.contains(p))
        {
            diff.kind = diff.kind.with_replace();
            if !response.replace_keys.contains(&key) {
                response.replace_keys.push(key.clone());
            }
        }
        if !response.changed_keys.contains(&key) {
            response.changed_keys.push(key);
        }
        detailed.insert(path.to_string(), diff);
    }
    if !detailed.is_empty() {
        response.changes = DiffChanges::Some;
        response.detailed_diff = Some(detailed);
    }
    Ok(response)
}

#[async_trait]
impl Provider for MockProvider {
    fn package(&self) -> &str {
        &self.package
    }

    async fn plugin_info(&self) -> Result<PluginInfo, ProviderError> {
        self.enter(Rpc::PluginInfo).await?;
        Ok(PluginInfo {
            version: Some(self.version.clone()),
        })
    }

    async fn schema(&self) -> Result<Arc<PackageSchema>, ProviderError> {
        self.schema
            .clone()
            .ok_or(ProviderError::Unimplemented("GetSchema"))
    }

    async fn check_config(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        self.enter(Rpc::CheckConfig).await?;
        match &self.handlers.check_config {
            Some(f) => f(req),
            None => Ok(CheckResponse {
                inputs: req.news,
                failures: Vec::new(),
            }),
        }
    }

    async fn diff_config(&self, req: DiffConfigRequest) -> Result<DiffResponse, ProviderError> {
        self.enter(Rpc::DiffConfig).await?;
        match &self.handlers.diff_config {
            Some(f) => f(req),
            None => default_diff(&req, &[]),
        }
    }

    async fn configure(&self, req: ConfigureRequest) -> Result<(), ProviderError> {
        self.enter(Rpc::Configure).await?;
        let inputs = req.inputs.clone();
        if let Some(f) = &self.handlers.configure {
            f(req)?;
        }
        *lock(&self.config) = Some(inputs);
        Ok(())
    }

    async fn check(&self, req: CheckRequest) -> Result<CheckResponse, ProviderError> {
        self.enter(Rpc::Check).await?;
        match &self.handlers.check {
            Some(f) => f(req),
            None => Ok(CheckResponse {
                inputs: req.news,
                failures: Vec::new(),
            }),
        }
    }

    async fn diff(&self, req: DiffRequest) -> Result<DiffResponse, ProviderError> {
        self.enter(Rpc::Diff).await?;
        match &self.handlers.diff {
            Some(f) => f(req),
            None => default_diff(&req, &self.replace_on_changes),
        }
    }

    async fn cancel(&self) -> Result<(), ProviderError> {
        lock(&self.calls).push(Rpc::Cancel);
        Ok(())
    }

    async fn create(&self, req: CreateRequest) -> Result<CreateResponse, ProviderError> {
        self.enter(Rpc::Create).await?;
        if !req.preview {
            self.cloud.enter(CloudOp::Create, &req.urn)?;
        }
        match &self.handlers.create {
            Some(f) => f(req),
            None => Ok(self.default_create(req)),
        }
    }

    async fn read(&self, req: ReadRequest) -> Result<ReadResponse, ProviderError> {
        self.enter(Rpc::Read).await?;
        self.cloud.enter(CloudOp::Read, &req.urn)?;
        match &self.handlers.read {
            Some(f) => f(req),
            None => Ok(self.default_read(req)),
        }
    }

    async fn update(&self, req: UpdateRequest) -> Result<UpdateResponse, ProviderError> {
        self.enter(Rpc::Update).await?;
        if !req.preview {
            self.cloud.enter(CloudOp::Update, &req.urn)?;
        }
        match &self.handlers.update {
            Some(f) => f(req),
            None => self.default_update(req),
        }
    }

    async fn delete(&self, req: DeleteRequest) -> Result<(), ProviderError> {
        self.enter(Rpc::Delete).await?;
        self.cloud.enter(CloudOp::Delete, &req.urn)?;
        match &self.handlers.delete {
            Some(f) => f(req),
            None => self.cloud.remove(&req.id).map(drop),
        }
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<InvokeResponse, ProviderError> {
        self.enter(Rpc::Invoke).await?;
        match &self.handlers.invoke {
            Some(f) => f(req),
            None => Err(ProviderError::Unimplemented("Invoke")),
        }
    }

    async fn construct(&self, req: ConstructRequest) -> Result<ConstructResponse, ProviderError> {
        self.enter(Rpc::Construct).await?;
        match &self.handlers.construct {
            Some(f) => f(req).await,
            None => Err(ProviderError::Unimplemented("Construct")),
        }
    }

    async fn call(&self, req: CallRequest) -> Result<CallResponse, ProviderError> {
        self.enter(Rpc::Call).await?;
        match &self.handlers.call {
            Some(f) => f(req),
            None => Err(ProviderError::Unimplemented("Call")),
        }
    }
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;

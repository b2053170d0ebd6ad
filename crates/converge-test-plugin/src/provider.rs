//! The `pulumirpc.ResourceProvider` service of `pulumi-resource-convergetest`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use converge_proto::google::rpc;
use converge_proto::marshal::UNKNOWN_STRING;
use converge_proto::pulumirpc::engine_client::EngineClient;
use converge_proto::pulumirpc::resource_provider_server::ResourceProvider;
use converge_proto::pulumirpc::{
    diff_response::DiffChanges, property_diff::Kind, CallRequest, CallResponse, CheckFailure,
    CheckRequest, CheckResponse, ConfigureRequest, ConfigureResponse, ConstructRequest,
    ConstructResponse, CreateRequest, CreateResponse, DeleteRequest, DiffRequest, DiffResponse,
    ErrorResourceInitFailed, GetSchemaRequest, GetSchemaResponse, InvokeRequest, InvokeResponse,
    LogRequest, LogSeverity, ParameterizeRequest, ParameterizeResponse, PluginInfo, PropertyDiff,
    ReadRequest, ReadResponse, UpdateRequest, UpdateResponse,
};
use prost::Message;
use prost_types::{value::Kind as V, Struct, Value};
use tokio::sync::Mutex;
use tonic::{Code, Request, Response, Status};

use crate::cloud::{json_to_struct, struct_to_json, Cloud, CloudObject};
use crate::{CLOUD_FILE_ENV, COMPONENT, COUNT, DELAY_ENV, DESCRIBE, HANG_ENV, PACKAGE, THING};

/// The provider: its version, engine address and configuration.
#[derive(Debug)]
pub struct TestProvider {
    version: String,
    engine: String,
    /// `Some` once configured: the cloud file named by the config, if any.
    config: Mutex<Option<Option<PathBuf>>>,
    /// Serialises read-modify-write of the cloud file.
    cloud: Mutex<()>,
    /// How long each resource operation takes ([`DELAY_ENV`]).
    delay: Option<Duration>,
    /// Resource operations never answer ([`HANG_ENV`]).
    hang: bool,
    /// Set by `Cancel`.
    cancelled: tokio::sync::watch::Sender<bool>,
    /// The package `Parameterize` made this process, and its parameter.
    parameterized: std::sync::Mutex<Option<(String, String)>>,
}

fn s(v: impl Into<String>) -> Value {
    Value {
        kind: Some(V::StringValue(v.into())),
    }
}

fn n(v: f64) -> Value {
    Value {
        kind: Some(V::NumberValue(v)),
    }
}

fn get_str<'a>(props: &'a Option<Struct>, key: &str) -> Option<&'a str> {
    match props.as_ref()?.fields.get(key)?.kind.as_ref()? {
        V::StringValue(s) => Some(s),
        _ => None,
    }
}

fn field<'a>(props: &'a Option<Struct>, key: &str) -> Option<&'a Value> {
    props.as_ref()?.fields.get(key)
}

fn io_status(e: std::io::Error) -> Status {
    Status::internal(format!("cloud file: {e}"))
}

impl TestProvider {
    pub fn new(version: String, engine: String) -> Self {
        TestProvider {
            version,
            engine,
            config: Mutex::new(None),
            cloud: Mutex::new(()),
            delay: std::env::var(DELAY_ENV)
                .ok()
                .and_then(|ms| ms.parse().ok())
                .map(Duration::from_millis),
            hang: std::env::var_os(HANG_ENV).is_some(),
            cancelled: tokio::sync::watch::Sender::new(false),
            parameterized: std::sync::Mutex::new(None),
        }
    }

    /// The package this process serves and its parameter, if
    /// `Parameterize` made it another.
    fn became(&self) -> Option<(String, String)> {
        self.parameterized
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Refuses a URN that is not a thing of the package this process
    /// serves.
    fn require_thing(&self, urn: &str) -> Result<(), Status> {
        let thing = match self.became() {
            Some((package, _)) => format!("{package}:index:Thing"),
            None => THING.to_owned(),
        };
        let type_token = urn.split("::").nth(2).unwrap_or_default();
        if type_token.rsplit('$').next() == Some(thing.as_str()) {
            Ok(())
        } else {
            Err(Status::invalid_argument(format!(
                "unknown resource type in {urn}: this plugin serves {thing}"
            )))
        }
    }

    /// The time a resource operation takes: [`DELAY_ENV`], cut short by
    /// `Cancel` (then `Err`); forever with [`HANG_ENV`].
    async fn work(&self) -> Result<(), Status> {
        if self.hang {
            std::future::pending::<()>().await;
        }
        let Some(delay) = self.delay else {
            return Ok(());
        };
        let mut cancelled = self.cancelled.subscribe();
        tokio::select! {
            () = tokio::time::sleep(delay) => Ok(()),
            _ = cancelled.wait_for(|c| *c) => Err(Status::cancelled("cancelled by the engine")),
        }
    }

    async fn cloud_path(&self) -> Result<PathBuf, Status> {
        let configured = self.config.lock().await.clone().flatten();
        configured
            .or_else(|| std::env::var_os(CLOUD_FILE_ENV).map(PathBuf::from))
            .ok_or_else(|| {
                Status::failed_precondition(format!(
                    "no cloud file: set config cloudFile or {CLOUD_FILE_ENV}"
                ))
            })
    }

    /// Runs `f` on the cloud and saves it.
    async fn with_cloud<T>(&self, f: impl FnOnce(&mut Cloud) -> T) -> Result<T, Status> {
        let path = self.cloud_path().await?;
        let _guard = self.cloud.lock().await;
        // Several plugin processes may share one cloud file: a lock file
        // (created exclusively) serialises them too.
        let lock = path.with_extension("lock");
        let start = std::time::Instant::now();
        while std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
            .is_err()
        {
            if start.elapsed() > std::time::Duration::from_secs(5) {
                // A holder killed mid-write left it: take it over.
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        let result = (|| {
            let mut cloud = Cloud::load(&path).map_err(io_status)?;
            let out = f(&mut cloud);
            cloud.save(&path).map_err(io_status)?;
            Ok(out)
        })();
        let _ = std::fs::remove_file(&lock);
        result
    }

    /// The outputs of a thing: inputs plus `length` and `pluginVersion`,
    /// and `nested` when the input `nest` asks for it.
    fn outputs(&self, news: &Option<Struct>, preview: bool) -> Struct {
        let mut out = news.clone().unwrap_or_default();
        if let Some(V::NumberValue(levels)) = field(news, "nest").and_then(|v| v.kind.as_ref()) {
            out.fields.insert("nested".into(), nested(*levels as usize));
        }
        let length = match get_str(news, "value") {
            Some(v) if !preview || v != UNKNOWN_STRING => n(v.chars().count() as f64),
            _ => s(UNKNOWN_STRING),
        };
        out.fields.insert("length".into(), length);
        out.fields
            .insert("pluginVersion".into(), s(self.version.clone()));
        if let Some((package, parameter)) = self.became() {
            out.fields.insert("package".into(), s(package));
            out.fields.insert("parameter".into(), s(parameter));
        }
        out
    }

    /// Sends one `Engine.Log` to the engine address (best effort).
    fn log_to_engine(&self, message: String) {
        let engine = self.engine.clone();
        tokio::spawn(async move {
            let call = async {
                let mut client = EngineClient::connect(format!("http://{engine}"))
                    .await
                    .ok()?;
                let req = LogRequest {
                    severity: LogSeverity::Info.into(),
                    message,
                    ..LogRequest::default()
                };
                client.log(req).await.ok()
            };
            let _ = tokio::time::timeout(Duration::from_secs(2), call).await;
        });
    }
}

/// `{"level": {"level": ... "bottom" ...}}`, `levels` objects deep.
fn nested(levels: usize) -> Value {
    let mut v = s("bottom");
    for _ in 0..levels {
        v = Value {
            kind: Some(V::StructValue(Struct {
                fields: [("level".to_string(), v)].into(),
            })),
        };
    }
    v
}

fn check_thing(news: &Option<Struct>) -> (Struct, Vec<CheckFailure>) {
    let mut inputs = news.clone().unwrap_or_default();
    let mut failures = Vec::new();
    match field(news, "value").and_then(|v| v.kind.as_ref()) {
        Some(V::StringValue(_)) => {}
        _ => failures.push(CheckFailure {
            property: "value".into(),
            reason: "value must be a string".into(),
        }),
    }
    inputs
        .fields
        .entry("size".into())
        .or_insert_with(|| s("small"));
    (inputs, failures)
}

fn diff_keys(olds: &Option<Struct>, news: &Option<Struct>, keys: &[(&str, bool)]) -> DiffResponse {
    let mut resp = DiffResponse {
        has_detailed_diff: true,
        ..DiffResponse::default()
    };
    for (key, replaces) in keys {
        let (old, new) = (field(olds, key), field(news, key));
        if old == new || (*key == "size" && same_size(old, new)) {
            continue;
        }
        let kind = match (old.is_some(), new.is_some(), replaces) {
            (false, _, false) => Kind::Add,
            (false, _, true) => Kind::AddReplace,
            (true, false, false) => Kind::Delete,
            (true, false, true) => Kind::DeleteReplace,
            (true, true, false) => Kind::Update,
            (true, true, true) => Kind::UpdateReplace,
        };
        resp.diffs.push((*key).to_owned());
        if *replaces {
            resp.replaces.push((*key).to_owned());
        }
        let diff = PropertyDiff {
            kind: kind.into(),
            input_diff: true,
        };
        resp.detailed_diff.insert((*key).to_owned(), diff);
    }
    resp.changes = if resp.diffs.is_empty() {
        DiffChanges::DiffNone
    } else {
        DiffChanges::DiffSome
    }
    .into();
    resp
}

/// Sizes are case-insensitive: the cloud may answer `"SMALL"` for
/// `"small"` (a provider's normalisation, not drift).
fn same_size(old: Option<&Value>, new: Option<&Value>) -> bool {
    let text = |v: Option<&Value>| match v.and_then(|v| v.kind.as_ref()) {
        Some(V::StringValue(s)) => Some(s.to_ascii_lowercase()),
        _ => None,
    };
    text(old).is_some() && text(old) == text(new)
}

#[tonic::async_trait]
impl ResourceProvider for TestProvider {
    async fn get_plugin_info(&self, _: Request<()>) -> Result<Response<PluginInfo>, Status> {
        Ok(Response::new(PluginInfo {
            version: self.version.clone(),
        }))
    }

    /// Becomes package `<name>` whose things carry the parameter: from a
    /// recorded value (its bytes as text), or from arguments
    /// `<name> <parameter…>`.
    async fn parameterize(
        &self,
        request: Request<ParameterizeRequest>,
    ) -> Result<Response<ParameterizeResponse>, Status> {
        use converge_proto::pulumirpc::parameterize_request::Parameters;
        let (name, version, parameter) = match request.into_inner().parameters {
            Some(Parameters::Value(v)) => {
                let text = String::from_utf8(v.value).map_err(|_| {
                    Status::invalid_argument("the parameter value is not UTF-8 text")
                })?;
                (v.name, v.version, text)
            }
            Some(Parameters::Args(a)) if !a.args.is_empty() => {
                (a.args[0].clone(), "1.0.0".to_owned(), a.args[1..].join(" "))
            }
            _ => {
                return Err(Status::invalid_argument(
                    "Parameterize needs a value or arguments <name> <parameter…>",
                ))
            }
        };
        if name.is_empty() {
            return Err(Status::invalid_argument("the package name is empty"));
        }
        *self.parameterized.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((name.clone(), parameter));
        Ok(Response::new(ParameterizeResponse { name, version }))
    }

    async fn get_schema(
        &self,
        _: Request<GetSchemaRequest>,
    ) -> Result<Response<GetSchemaResponse>, Status> {
        let schema = serde_json::json!({
            "name": PACKAGE,
            "version": self.version,
            "config": {"variables": {"cloudFile": {"type": "string"}}},
            "resources": {THING: {
                "inputProperties": {"value": {"type": "string"}, "size": {"type": "string"},
                                    "fail": {"type": "string"}},
                "requiredInputs": ["value"],
                "properties": {"value": {"type": "string"}, "size": {"type": "string"},
                               "fail": {"type": "string"},
                               "length": {"type": "number"}, "pluginVersion": {"type": "string"}},
            }, COMPONENT: {
                "isComponent": true,
                "inputProperties": {"value": {"type": "string"}},
                "properties": {"childId": {"type": "string"}, "childLength": {"type": "number"}},
                "methods": {"describe": DESCRIBE},
            }},
            "functions": {
                COUNT: {"inputs": {"properties": {"tag": {"type": "string"}}},
                        "outputs": {"properties": {"count": {"type": "number"},
                                                   "version": {"type": "string"},
                                                   "tag": {"type": "string"}}}},
                DESCRIBE: {
                    "inputs": {"properties": {"__self__": {"$ref": format!("#/resources/{COMPONENT}")},
                                              "greeting": {"type": "string"}}},
                    "outputs": {"properties": {"description": {"type": "string"}}},
                },
            },
        });
        Ok(Response::new(GetSchemaResponse {
            schema: schema.to_string(),
        }))
    }

    async fn check_config(
        &self,
        request: Request<CheckRequest>,
    ) -> Result<Response<CheckResponse>, Status> {
        let req = request.into_inner();
        // Before `Configure`, the cloud is known only from the environment;
        // when the configuration names another (`cloudFile`), or there is
        // none, nothing is logged. Logging is best effort: it never changes
        // the answer.
        if field(&req.news, "cloudFile").is_none() && self.cloud_path().await.is_ok() {
            let entry = crate::config_echo::check_config_entry(&req.news);
            let _ = self.with_cloud(|c| c.log.push(entry)).await;
        }
        let mut failures = Vec::new();
        if let Some(v) = field(&req.news, "cloudFile") {
            let unknown = matches!(&v.kind, Some(V::StringValue(x)) if x == UNKNOWN_STRING);
            if !unknown && !matches!(v.kind, Some(V::StringValue(_))) {
                failures.push(CheckFailure {
                    property: "cloudFile".into(),
                    reason: "cloudFile must be a string".into(),
                });
            }
        }
        Ok(Response::new(CheckResponse {
            inputs: req.news,
            failures,
        }))
    }

    async fn diff_config(
        &self,
        request: Request<DiffRequest>,
    ) -> Result<Response<DiffResponse>, Status> {
        let req = request.into_inner();
        Ok(Response::new(diff_keys(
            &req.olds,
            &req.news,
            &[("cloudFile", false)],
        )))
    }

    async fn configure(
        &self,
        request: Request<ConfigureRequest>,
    ) -> Result<Response<ConfigureResponse>, Status> {
        let req = request.into_inner();
        let mut config = self.config.lock().await;
        if config.is_some() {
            return Err(Status::failed_precondition(
                "convergetest is already configured; a plugin process holds one configuration",
            ));
        }
        let from_args = get_str(&req.args, "cloudFile").map(str::to_owned);
        let from_vars = req
            .variables
            .get(&format!("{PACKAGE}:config:cloudFile"))
            .cloned();
        if from_args.is_some() && from_args != from_vars {
            return Err(Status::invalid_argument(
                "args and variables disagree about cloudFile",
            ));
        }
        *config = Some(from_args.map(PathBuf::from));
        drop(config);
        let echo = crate::config_echo::configure_entry(&req.args, &req.variables);
        self.with_cloud(|c| {
            c.log.push("configure".into());
            c.log.push(echo);
        })
        .await?;
        self.log_to_engine(format!("convergetest {} configured", self.version));
        Ok(Response::new(ConfigureResponse {
            accept_secrets: true,
            supports_preview: true,
            accept_resources: true,
            accept_outputs: false,
            supports_autonaming_configuration: false,
        }))
    }

    async fn check(
        &self,
        request: Request<CheckRequest>,
    ) -> Result<Response<CheckResponse>, Status> {
        let req = request.into_inner();
        self.require_thing(&req.urn)?;
        let (inputs, failures) = check_thing(&req.news);
        Ok(Response::new(CheckResponse {
            inputs: Some(inputs),
            failures,
        }))
    }

    async fn diff(&self, request: Request<DiffRequest>) -> Result<Response<DiffResponse>, Status> {
        let req = request.into_inner();
        self.require_thing(&req.urn)?;
        let keys = [("value", false), ("size", true), ("fail", false)];
        Ok(Response::new(diff_keys(&req.olds, &req.news, &keys)))
    }

    async fn create(
        &self,
        request: Request<CreateRequest>,
    ) -> Result<Response<CreateResponse>, Status> {
        let req = request.into_inner();
        self.require_thing(&req.urn)?;
        let outputs = self.outputs(&req.properties, req.preview);
        if req.preview {
            return Ok(Response::new(CreateResponse {
                id: String::new(),
                properties: Some(outputs),
                refresh_before_update: false,
            }));
        }
        let fail = get_str(&req.properties, "fail");
        if fail == Some("create") {
            return Err(Status::unknown("create failed on purpose"));
        }
        if let Some(path) = fail.and_then(|f| f.strip_prefix("create-until:")) {
            if !std::path::Path::new(path).exists() {
                return Err(Status::unknown(format!(
                    "create failed: {path} does not exist"
                )));
            }
        }
        let urn = req.urn.clone();
        let stored = struct_to_json(&outputs);
        let id = self
            .with_cloud(move |c| {
                c.next += 1;
                let id = format!("thing-{}", c.next);
                c.objects.insert(
                    id.clone(),
                    CloudObject {
                        urn,
                        properties: stored,
                    },
                );
                c.log.push(format!("create {id}"));
                id
            })
            .await?;
        // The object exists; its provisioning takes the time (and a
        // cancelled one is reported with its ID).
        let reason = match self.work().await {
            Err(cancelled) => Some(cancelled.message().to_owned()),
            Ok(()) if fail == Some("init") => Some("the thing is not healthy".to_owned()),
            Ok(()) => None,
        };
        if let Some(reason) = reason {
            let detail = ErrorResourceInitFailed {
                id,
                properties: Some(outputs),
                reasons: vec![reason],
                inputs: req.properties,
                refresh_before_update: false,
            };
            let status = rpc::Status {
                code: Code::Unknown as i32,
                message: "resource initialization failed".into(),
                details: vec![prost_types::Any {
                    type_url: "type.googleapis.com/pulumirpc.ErrorResourceInitFailed".into(),
                    value: detail.encode_to_vec(),
                }],
            };
            return Err(Status::with_details(
                Code::Unknown,
                "resource initialization failed",
                status.encode_to_vec().into(),
            ));
        }
        Ok(Response::new(CreateResponse {
            id,
            properties: Some(outputs),
            refresh_before_update: false,
        }))
    }

    async fn read(&self, request: Request<ReadRequest>) -> Result<Response<ReadResponse>, Status> {
        let req = request.into_inner();
        self.require_thing(&req.urn)?;
        self.work().await?;
        let id = req.id.clone();
        let found = self
            .with_cloud(move |c| c.objects.get(&id).cloned())
            .await?;
        let Some(object) = found else {
            return Ok(Response::new(ReadResponse::default()));
        };
        let properties = json_to_struct(&object.properties);
        let mut inputs = Struct::default();
        for key in ["value", "size", "fail"] {
            if let Some(v) = properties.fields.get(key) {
                inputs.fields.insert(key.into(), v.clone());
            }
        }
        Ok(Response::new(ReadResponse {
            id: req.id,
            properties: Some(properties),
            inputs: Some(inputs),
            refresh_before_update: false,
        }))
    }

    async fn update(
        &self,
        request: Request<UpdateRequest>,
    ) -> Result<Response<UpdateResponse>, Status> {
        let req = request.into_inner();
        self.require_thing(&req.urn)?;
        let outputs = self.outputs(&req.news, req.preview);
        if !req.preview {
            self.work().await?;
            let (id, stored) = (req.id.clone(), struct_to_json(&outputs));
            let updated = self
                .with_cloud(move |c| match c.objects.get_mut(&id) {
                    Some(o) => {
                        o.properties = stored;
                        c.log.push(format!("update {id}"));
                        true
                    }
                    None => false,
                })
                .await?;
            if !updated {
                return Err(Status::not_found(format!("no thing {}", req.id)));
            }
        }
        Ok(Response::new(UpdateResponse {
            properties: Some(outputs),
            refresh_before_update: false,
        }))
    }

    async fn delete(&self, request: Request<DeleteRequest>) -> Result<Response<()>, Status> {
        let req = request.into_inner();
        self.require_thing(&req.urn)?;
        self.work().await?;
        let id = req.id;
        self.with_cloud(move |c| {
            if c.objects.remove(&id).is_some() {
                c.log.push(format!("delete {id}"));
            }
        })
        .await?;
        Ok(Response::new(()))
    }

    async fn invoke(
        &self,
        request: Request<InvokeRequest>,
    ) -> Result<Response<InvokeResponse>, Status> {
        let req = request.into_inner();
        // Parameterized, the function is the package's own.
        let count = match self.became() {
            Some((package, _)) => format!("{package}:index:count"),
            None => COUNT.to_owned(),
        };
        if req.tok != count {
            return Err(Status::invalid_argument(format!(
                "unknown function {}",
                req.tok
            )));
        }
        let count = self.with_cloud(|c| c.objects.len()).await?;
        let mut fields = HashMap::from([
            ("count".to_owned(), n(count as f64)),
            ("version".to_owned(), s(self.version.clone())),
        ]);
        if let Some(tag) = field(&req.args, "tag") {
            fields.insert("tag".to_owned(), tag.clone());
        }
        if let Some((package, parameter)) = self.became() {
            fields.insert("package".to_owned(), s(package));
            fields.insert("parameter".to_owned(), s(parameter));
        }
        Ok(Response::new(InvokeResponse {
            r#return: Some(Struct {
                fields: fields.into_iter().collect(),
            }),
            failures: Vec::new(),
        }))
    }

    async fn construct(
        &self,
        request: Request<ConstructRequest>,
    ) -> Result<Response<ConstructResponse>, Status> {
        crate::component::construct(request.into_inner())
            .await
            .map(Response::new)
    }

    async fn call(&self, request: Request<CallRequest>) -> Result<Response<CallResponse>, Status> {
        crate::component::call(request.into_inner()).map(Response::new)
    }

    async fn cancel(&self, _: Request<()>) -> Result<Response<()>, Status> {
        eprintln!("convergetest: cancel");
        self.cancelled.send_replace(true);
        if self.cloud_path().await.is_ok() {
            self.with_cloud(|c| c.log.push("cancel".into())).await?;
        }
        Ok(Response::new(()))
    }
}

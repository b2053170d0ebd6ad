//! One test provider, installed in a temporary mirror, launched the
//! go-plugin way and driven with the raw tfplugin6 client: each call takes
//! and returns model values, encoded by the schema's object types.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::time::Duration;

use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::terraform::process::{LaunchOptions, ProviderProcess};
use converge_plugin::terraform::values::{decode_msgpack, encode_msgpack, CtyType};
use converge_proto::tfplugin6::provider_client::ProviderClient;
use converge_proto::tfplugin6::{
    apply_resource_change, attribute_path, configure_provider, diagnostic, get_metadata,
    get_provider_schema, import_resource_state, plan_resource_change, read_data_source,
    read_resource, schema, stop_provider, upgrade_resource_state, validate_resource_config,
    Diagnostic, DynamicValue, RawState,
};
use converge_testkit::terraform_mirror::{install, tf_python, TestProvider};
use tempfile::TempDir;
use tonic::transport::Channel;

/// A running test provider and its schemas.
pub struct Session {
    process: ProviderProcess,
    client: ProviderClient<Channel>,
    pub schema: get_provider_schema::Response,
    _mirror: TempDir,
    _home: TempDir,
}

/// What PlanResourceChange answered.
#[derive(Debug)]
pub struct Planned {
    pub state: PropertyValue,
    pub requires_replace: Vec<String>,
    pub private: Vec<u8>,
    pub diagnostics: Vec<Diagnostic>,
}

/// What ApplyResourceChange or ReadResource answered.
#[derive(Debug)]
pub struct Outcome {
    pub state: PropertyValue,
    pub private: Vec<u8>,
    pub diagnostics: Vec<Diagnostic>,
}

impl Session {
    /// Installs and launches `provider` at `version` with `env` added to its
    /// environment; `None` (after saying so) when CONVERGE_TEST_TF_PYTHON is
    /// unset.
    pub async fn start(
        provider: TestProvider,
        version: &str,
        env: &[(&str, OsString)],
    ) -> Option<Session> {
        let Some(python) = tf_python() else {
            eprintln!("skipped: CONVERGE_TEST_TF_PYTHON is not set (scripts/test sets it)");
            return None;
        };
        let mirror = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let executable = install(mirror.path(), provider, version);
        let mut options = LaunchOptions {
            env: vec![
                ("CONVERGE_TEST_TF_PYTHON".into(), python),
                ("HOME".into(), home.path().into()),
            ],
            ..LaunchOptions::default()
        };
        options
            .env
            .extend(env.iter().map(|(k, v)| (OsString::from(k), v.clone())));
        let process = ProviderProcess::launch(&executable, &options)
            .await
            .unwrap_or_else(|e| panic!("{} {version} did not start: {e}", provider.type_name()));
        let mut client = ProviderClient::new(process.channel());
        let schema = client
            .get_provider_schema(get_provider_schema::Request {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(errors(&schema.diagnostics), Vec::<String>::new());
        Some(Session {
            process,
            client,
            schema,
            _mirror: mirror,
            _home: home,
        })
    }

    /// Asks the provider to exit and checks that it did.
    pub async fn shutdown(self) {
        let status = self.process.shutdown(Duration::from_secs(30)).await;
        assert!(
            status.is_some_and(|s| s.success()),
            "the provider exited cleanly: {status:?}"
        );
    }

    /// GetMetadata's resource and data source type names.
    pub async fn metadata(&mut self) -> (Vec<String>, Vec<String>) {
        let reply = self
            .client
            .get_metadata(get_metadata::Request {})
            .await
            .unwrap()
            .into_inner();
        (
            reply.resources.into_iter().map(|r| r.type_name).collect(),
            reply
                .data_sources
                .into_iter()
                .map(|d| d.type_name)
                .collect(),
        )
    }

    /// StopProvider: its error text, empty when it stopped.
    pub async fn stop_provider(&mut self) -> String {
        self.client
            .stop_provider(stop_provider::Request {})
            .await
            .unwrap()
            .into_inner()
            .error
    }

    pub fn resource_block(&self, type_name: &str) -> &schema::Block {
        block(&self.schema.resource_schemas[type_name])
    }

    pub fn resource_version(&self, type_name: &str) -> i64 {
        self.schema.resource_schemas[type_name].version
    }

    fn resource_type(&self, type_name: &str) -> CtyType {
        object_type(self.resource_block(type_name))
    }

    pub async fn configure(&mut self, config: serde_json::Value) -> Vec<Diagnostic> {
        let ty = object_type(block(self.schema.provider.as_ref().unwrap()));
        self.client
            .configure_provider(configure_provider::Request {
                terraform_version: "converge-test".into(),
                config: Some(dynamic(&pv(config), &ty)),
            })
            .await
            .unwrap()
            .into_inner()
            .diagnostics
    }

    /// PlanResourceChange with the proposed new state merged as Core does
    /// (configured values, else the prior computed values); a null
    /// `config` plans a delete.
    pub async fn plan(
        &mut self,
        type_name: &str,
        prior: &PropertyValue,
        config: &PropertyValue,
        prior_private: &[u8],
    ) -> Planned {
        let ty = self.resource_type(type_name);
        let proposed = propose(self.resource_block(type_name), prior, config);
        let reply = self
            .client
            .plan_resource_change(plan_resource_change::Request {
                type_name: type_name.into(),
                prior_state: Some(dynamic(prior, &ty)),
                proposed_new_state: Some(dynamic(&proposed, &ty)),
                config: Some(dynamic(config, &ty)),
                prior_private: prior_private.to_vec(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        Planned {
            state: decode(reply.planned_state.as_ref(), &ty),
            requires_replace: reply.requires_replace.iter().map(path_text).collect(),
            private: reply.planned_private,
            diagnostics: reply.diagnostics,
        }
    }

    pub async fn apply(
        &mut self,
        type_name: &str,
        prior: &PropertyValue,
        planned: &PropertyValue,
        config: &PropertyValue,
        planned_private: &[u8],
    ) -> Outcome {
        let ty = self.resource_type(type_name);
        let reply = self
            .client
            .apply_resource_change(apply_resource_change::Request {
                type_name: type_name.into(),
                prior_state: Some(dynamic(prior, &ty)),
                planned_state: Some(dynamic(planned, &ty)),
                config: Some(dynamic(config, &ty)),
                planned_private: planned_private.to_vec(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        Outcome {
            state: decode(reply.new_state.as_ref(), &ty),
            private: reply.private,
            diagnostics: reply.diagnostics,
        }
    }

    /// Plans, checks the plan has no error, and applies it.
    pub async fn plan_and_apply(
        &mut self,
        type_name: &str,
        prior: &PropertyValue,
        config: &PropertyValue,
        private: &[u8],
    ) -> (Planned, Outcome) {
        let planned = self.plan(type_name, prior, config, private).await;
        assert_eq!(errors(&planned.diagnostics), Vec::<String>::new());
        let applied = self
            .apply(type_name, prior, &planned.state, config, &planned.private)
            .await;
        (planned, applied)
    }

    pub async fn read(
        &mut self,
        type_name: &str,
        current: &PropertyValue,
        private: &[u8],
    ) -> Outcome {
        let ty = self.resource_type(type_name);
        let reply = self
            .client
            .read_resource(read_resource::Request {
                type_name: type_name.into(),
                current_state: Some(dynamic(current, &ty)),
                private: private.to_vec(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        Outcome {
            state: decode(reply.new_state.as_ref(), &ty),
            private: reply.private,
            diagnostics: reply.diagnostics,
        }
    }

    pub async fn validate(&mut self, type_name: &str, config: &PropertyValue) -> Vec<Diagnostic> {
        let ty = self.resource_type(type_name);
        self.client
            .validate_resource_config(validate_resource_config::Request {
                type_name: type_name.into(),
                config: Some(dynamic(config, &ty)),
            })
            .await
            .unwrap()
            .into_inner()
            .diagnostics
    }

    /// ImportResourceState: the imported objects (type name, state,
    /// private) and the diagnostics.
    pub async fn import(
        &mut self,
        type_name: &str,
        id: &str,
    ) -> (Vec<(String, PropertyValue, Vec<u8>)>, Vec<Diagnostic>) {
        let ty = self.resource_type(type_name);
        let reply = self
            .client
            .import_resource_state(import_resource_state::Request {
                type_name: type_name.into(),
                id: id.into(),
            })
            .await
            .unwrap()
            .into_inner();
        let imported = reply
            .imported_resources
            .into_iter()
            .map(|r| (r.type_name, decode(r.state.as_ref(), &ty), r.private))
            .collect();
        (imported, reply.diagnostics)
    }

    /// UpgradeResourceState of a raw JSON state stored at `version`.
    pub async fn upgrade(
        &mut self,
        type_name: &str,
        version: i64,
        raw: &serde_json::Value,
    ) -> (PropertyValue, Vec<Diagnostic>) {
        let ty = self.resource_type(type_name);
        let reply = self
            .client
            .upgrade_resource_state(upgrade_resource_state::Request {
                type_name: type_name.into(),
                version,
                raw_state: Some(RawState {
                    json: serde_json::to_vec(raw).unwrap(),
                    ..Default::default()
                }),
            })
            .await
            .unwrap()
            .into_inner();
        (
            decode(reply.upgraded_state.as_ref(), &ty),
            reply.diagnostics,
        )
    }

    pub async fn read_data(
        &mut self,
        type_name: &str,
        config: &PropertyValue,
    ) -> (PropertyValue, Vec<Diagnostic>) {
        let ty = object_type(block(&self.schema.data_source_schemas[type_name]));
        let reply = self
            .client
            .read_data_source(read_data_source::Request {
                type_name: type_name.into(),
                config: Some(dynamic(config, &ty)),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        // tf's own data source code sends an empty value with an error.
        let state = match reply.state.as_ref() {
            Some(v) if !v.msgpack.is_empty() => decode(Some(v), &ty),
            _ => PropertyValue::Null,
        };
        (state, reply.diagnostics)
    }
}

fn block(schema: &converge_proto::tfplugin6::Schema) -> &schema::Block {
    schema.block.as_ref().expect("a schema has a block")
}

/// The object type of a schema block, from its attributes' type JSON.
pub fn object_type(block: &schema::Block) -> CtyType {
    let attributes: BTreeMap<String, CtyType> = block
        .attributes
        .iter()
        .map(|a| (a.name.clone(), CtyType::from_json(&a.r#type).unwrap()))
        .collect();
    CtyType::Object {
        attributes,
        optional: BTreeSet::new(),
    }
}

/// seed 004's proposed new state: each attribute's configured value, else
/// (computed ones) its prior value; null when `config` is (a delete).
fn propose(block: &schema::Block, prior: &PropertyValue, config: &PropertyValue) -> PropertyValue {
    if matches!(config, PropertyValue::Null) {
        return PropertyValue::Null;
    }
    let mut out = PropertyMap::new();
    for attribute in &block.attributes {
        let configured = get(config, &attribute.name);
        let value = if !matches!(configured, PropertyValue::Null) || !attribute.computed {
            configured.clone()
        } else {
            get(prior, &attribute.name).clone()
        };
        out.insert(attribute.name.clone(), value);
    }
    PropertyValue::Object(out)
}

fn dynamic(value: &PropertyValue, ty: &CtyType) -> DynamicValue {
    DynamicValue {
        msgpack: encode_msgpack(value, ty).unwrap(),
        json: Vec::new(),
    }
}

fn decode(value: Option<&DynamicValue>, ty: &CtyType) -> PropertyValue {
    match value {
        Some(v) if !v.msgpack.is_empty() => decode_msgpack(&v.msgpack, ty).unwrap(),
        _ => panic!("expected a msgpack value, got {value:?}"),
    }
}

fn path_text(path: &converge_proto::tfplugin6::AttributePath) -> String {
    path.steps
        .iter()
        .map(|step| match &step.selector {
            Some(attribute_path::step::Selector::AttributeName(name)) => name.clone(),
            other => format!("{other:?}"),
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// The summaries of the error diagnostics.
pub fn errors(diagnostics: &[Diagnostic]) -> Vec<String> {
    diagnostics
        .iter()
        .filter(|d| d.severity == diagnostic::Severity::Error as i32)
        .map(|d| d.summary.clone())
        .collect()
}

/// The attribute an error diagnostic names, as `a.b`.
pub fn error_attribute(diagnostics: &[Diagnostic]) -> Option<String> {
    diagnostics
        .iter()
        .find(|d| d.severity == diagnostic::Severity::Error as i32)
        .and_then(|d| d.attribute.as_ref())
        .map(path_text)
}

/// A JSON value as a model value (numbers as f64).
pub fn pv(value: serde_json::Value) -> PropertyValue {
    match value {
        serde_json::Value::Null => PropertyValue::Null,
        serde_json::Value::Bool(b) => PropertyValue::Bool(b),
        serde_json::Value::Number(n) => PropertyValue::Number(n.as_f64().unwrap()),
        serde_json::Value::String(s) => PropertyValue::String(s),
        serde_json::Value::Array(items) => {
            PropertyValue::Array(items.into_iter().map(pv).collect())
        }
        serde_json::Value::Object(map) => {
            PropertyValue::Object(map.into_iter().map(|(k, v)| (k, pv(v))).collect())
        }
    }
}

/// An attribute of an object value (null when absent or not an object).
pub fn get<'a>(value: &'a PropertyValue, name: &str) -> &'a PropertyValue {
    const NULL: &PropertyValue = &PropertyValue::Null;
    match value {
        PropertyValue::Object(map) => map.get(name).unwrap_or(NULL),
        _ => NULL,
    }
}

/// `value` with one attribute replaced.
pub fn with(value: &PropertyValue, name: &str, new: PropertyValue) -> PropertyValue {
    let PropertyValue::Object(map) = value else {
        panic!("not an object: {value:?}");
    };
    let mut map = map.clone();
    map.insert(name.to_owned(), new);
    PropertyValue::Object(map)
}

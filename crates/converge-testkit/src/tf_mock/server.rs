//! The [`TfMock`] as a tonic `tfplugin6.Provider` service: each request
//! decoded with the schema's types, answered by the test's closure or the
//! default, recorded with its answer, and encoded back. A request the mock
//! cannot decode is `INVALID_ARGUMENT` (the adapter sent something a real
//! provider would refuse); an answer it cannot encode is `INTERNAL` (the
//! test's closure made a value the schema does not allow).

use std::net::SocketAddr;
use std::sync::Arc;

use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::terraform::values::{decode_dynamic_value, encode_dynamic_value, CtyType};
use converge_proto::tfplugin6::provider_server::{Provider, ProviderServer};
use converge_proto::tfplugin6::{self as tf, attribute_path, AttributePath, DynamicValue};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Endpoint, Server};
use tonic::{Request, Response, Status};

use super::{
    error, ApplyCall, ConfigCall, ImportCall, PlanCall, ReadCall, ServeError, TfCall, TfMock,
    TfServer, UpgradeCall,
};

/// A running server; stopped when dropped.
#[derive(Debug)]
pub(super) struct Running {
    pub(super) mock: Arc<TfMock>,
    pub(super) address: SocketAddr,
    pub(super) channel: Channel,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(super) async fn serve(mock: Arc<TfMock>) -> Result<TfServer, ServeError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let service = ProviderServer::from_arc(Arc::new(Service(Arc::clone(&mock))))
        .max_decoding_message_size(256 * 1024 * 1024);
    let task = tokio::spawn(async move {
        // Ends only when aborted (or the listener fails, which the test
        // then sees as a failed call).
        let _ = Server::builder()
            .add_service(service)
            .serve_with_incoming(TcpIncoming::from(listener))
            .await;
    });
    let connected = match Endpoint::from_shared(format!("http://{address}")) {
        Ok(endpoint) => endpoint.connect().await,
        Err(e) => Err(e),
    };
    let channel = match connected {
        Ok(channel) => channel,
        Err(source) => {
            task.abort();
            return Err(ServeError::Connect { address, source });
        }
    };
    Ok(TfServer(Arc::new(Running {
        mock,
        address,
        channel,
        task,
    })))
}

struct Service(Arc<TfMock>);

fn decode(
    value: Option<&DynamicValue>,
    ty: &CtyType,
    what: &str,
) -> Result<Option<PropertyMap>, Status> {
    let Some(value) = value else { return Ok(None) };
    match decode_dynamic_value(value, ty) {
        Ok(PropertyValue::Null) => Ok(None),
        Ok(PropertyValue::Object(m)) => Ok(Some(m)),
        Ok(other) => Err(Status::invalid_argument(format!(
            "{what}: expected an object, got {}",
            other.kind_name()
        ))),
        Err(e) => Err(Status::invalid_argument(format!("{what}: {e}"))),
    }
}

fn encode(value: Option<&PropertyMap>, ty: &CtyType, what: &str) -> Result<DynamicValue, Status> {
    let v = value.map_or(PropertyValue::Null, |m| PropertyValue::Object(m.clone()));
    encode_dynamic_value(&v, ty)
        .map_err(|e| Status::internal(format!("the test's {what} does not fit the schema: {e}")))
}

fn attribute_path(name: &str) -> AttributePath {
    AttributePath {
        steps: vec![attribute_path::Step {
            selector: Some(attribute_path::step::Selector::AttributeName(
                name.to_owned(),
            )),
        }],
    }
}

impl Service {
    fn resource_type(&self, type_name: &str) -> Option<CtyType> {
        self.0.resources.get(type_name).map(|b| b.object_type())
    }

    fn data_type(&self, type_name: &str) -> Option<CtyType> {
        self.0.data_sources.get(type_name).map(|b| b.object_type())
    }
}

fn unknown(type_name: &str) -> Vec<tf::Diagnostic> {
    vec![error(&format!("unknown type {type_name:?}"))]
}

#[tonic::async_trait]
impl Provider for Service {
    async fn get_provider_schema(
        &self,
        _request: Request<tf::get_provider_schema::Request>,
    ) -> Result<Response<tf::get_provider_schema::Response>, Status> {
        self.0.record(TfCall::GetProviderSchema);
        Ok(Response::new(self.0.schema.clone()))
    }

    async fn validate_provider_config(
        &self,
        request: Request<tf::validate_provider_config::Request>,
    ) -> Result<Response<tf::validate_provider_config::Response>, Status> {
        let r = request.into_inner();
        let ty = self.0.provider.object_type();
        let call = ConfigCall {
            type_name: String::new(),
            config: decode(r.config.as_ref(), &ty, "config")?,
        };
        let diagnostics = match &self.0.handlers.validate_provider {
            Some(f) => f(&self.0, &call),
            None => Vec::new(),
        };
        self.0.record(TfCall::ValidateProviderConfig(call));
        Ok(Response::new(tf::validate_provider_config::Response {
            diagnostics,
        }))
    }

    async fn configure_provider(
        &self,
        request: Request<tf::configure_provider::Request>,
    ) -> Result<Response<tf::configure_provider::Response>, Status> {
        let r = request.into_inner();
        let ty = self.0.provider.object_type();
        let call = ConfigCall {
            type_name: String::new(),
            config: decode(r.config.as_ref(), &ty, "config")?,
        };
        let diagnostics = match &self.0.handlers.configure {
            Some(f) => f(&self.0, &call),
            None => Vec::new(),
        };
        self.0
            .record(TfCall::ConfigureProvider(call, r.terraform_version));
        Ok(Response::new(tf::configure_provider::Response {
            diagnostics,
        }))
    }

    async fn validate_resource_config(
        &self,
        request: Request<tf::validate_resource_config::Request>,
    ) -> Result<Response<tf::validate_resource_config::Response>, Status> {
        let r = request.into_inner();
        let Some(ty) = self.resource_type(&r.type_name) else {
            return Ok(Response::new(tf::validate_resource_config::Response {
                diagnostics: unknown(&r.type_name),
            }));
        };
        let call = ConfigCall {
            config: decode(r.config.as_ref(), &ty, "config")?,
            type_name: r.type_name,
        };
        let diagnostics = match &self.0.handlers.validate_resource {
            Some(f) => f(&self.0, &call),
            None => Vec::new(),
        };
        self.0.record(TfCall::ValidateResourceConfig(call));
        Ok(Response::new(tf::validate_resource_config::Response {
            diagnostics,
        }))
    }

    async fn validate_data_resource_config(
        &self,
        request: Request<tf::validate_data_resource_config::Request>,
    ) -> Result<Response<tf::validate_data_resource_config::Response>, Status> {
        let r = request.into_inner();
        let Some(ty) = self.data_type(&r.type_name) else {
            return Ok(Response::new(tf::validate_data_resource_config::Response {
                diagnostics: unknown(&r.type_name),
            }));
        };
        let call = ConfigCall {
            config: decode(r.config.as_ref(), &ty, "config")?,
            type_name: r.type_name,
        };
        let diagnostics = match &self.0.handlers.validate_data {
            Some(f) => f(&self.0, &call),
            None => Vec::new(),
        };
        self.0.record(TfCall::ValidateDataResourceConfig(call));
        Ok(Response::new(tf::validate_data_resource_config::Response {
            diagnostics,
        }))
    }

    async fn upgrade_resource_state(
        &self,
        request: Request<tf::upgrade_resource_state::Request>,
    ) -> Result<Response<tf::upgrade_resource_state::Response>, Status> {
        let r = request.into_inner();
        let Some(ty) = self.resource_type(&r.type_name) else {
            return Ok(Response::new(tf::upgrade_resource_state::Response {
                upgraded_state: None,
                diagnostics: unknown(&r.type_name),
            }));
        };
        let json = r.raw_state.map(|s| s.json).unwrap_or_default();
        let raw_json = serde_json::from_slice(&json)
            .map_err(|e| Status::invalid_argument(format!("raw_state.json is not JSON: {e}")))?;
        let call = UpgradeCall {
            type_name: r.type_name,
            version: r.version,
            raw_json,
        };
        let result = match &self.0.handlers.upgrade {
            Some(f) => f(&self.0, &call),
            None => self.0.default_upgrade(&call),
        };
        let response = tf::upgrade_resource_state::Response {
            upgraded_state: Some(encode(result.state.as_ref(), &ty, "upgraded state")?),
            diagnostics: result.diagnostics.clone(),
        };
        self.0.record(TfCall::UpgradeResourceState(call, result));
        Ok(Response::new(response))
    }

    async fn read_resource(
        &self,
        request: Request<tf::read_resource::Request>,
    ) -> Result<Response<tf::read_resource::Response>, Status> {
        let r = request.into_inner();
        let Some(ty) = self.resource_type(&r.type_name) else {
            return Ok(Response::new(tf::read_resource::Response {
                diagnostics: unknown(&r.type_name),
                ..Default::default()
            }));
        };
        let call = ReadCall {
            current_state: decode(r.current_state.as_ref(), &ty, "current_state")?,
            type_name: r.type_name,
            private: r.private,
        };
        let result = match &self.0.handlers.read {
            Some(f) => f(&self.0, &call),
            None => self.0.default_read(&call),
        };
        let response = tf::read_resource::Response {
            new_state: Some(encode(result.new_state.as_ref(), &ty, "read state")?),
            diagnostics: result.diagnostics.clone(),
            private: result.private.clone(),
        };
        self.0.record(TfCall::ReadResource(call, result));
        Ok(Response::new(response))
    }

    async fn plan_resource_change(
        &self,
        request: Request<tf::plan_resource_change::Request>,
    ) -> Result<Response<tf::plan_resource_change::Response>, Status> {
        let r = request.into_inner();
        let Some(ty) = self.resource_type(&r.type_name) else {
            return Ok(Response::new(tf::plan_resource_change::Response {
                diagnostics: unknown(&r.type_name),
                ..Default::default()
            }));
        };
        let call = PlanCall {
            prior_state: decode(r.prior_state.as_ref(), &ty, "prior_state")?,
            proposed_new_state: decode(r.proposed_new_state.as_ref(), &ty, "proposed_new_state")?,
            config: decode(r.config.as_ref(), &ty, "config")?,
            prior_private: r.prior_private,
            type_name: r.type_name,
        };
        let result = match &self.0.handlers.plan {
            Some(f) => f(&self.0, &call),
            None => self.0.default_plan(&call),
        };
        let response = tf::plan_resource_change::Response {
            planned_state: Some(encode(result.planned_state.as_ref(), &ty, "planned state")?),
            requires_replace: result
                .requires_replace
                .iter()
                .map(|n| attribute_path(n))
                .collect(),
            planned_private: result.planned_private.clone(),
            diagnostics: result.diagnostics.clone(),
            legacy_type_system: false,
        };
        self.0.record(TfCall::PlanResourceChange(call, result));
        Ok(Response::new(response))
    }

    async fn apply_resource_change(
        &self,
        request: Request<tf::apply_resource_change::Request>,
    ) -> Result<Response<tf::apply_resource_change::Response>, Status> {
        let r = request.into_inner();
        let Some(ty) = self.resource_type(&r.type_name) else {
            return Ok(Response::new(tf::apply_resource_change::Response {
                diagnostics: unknown(&r.type_name),
                ..Default::default()
            }));
        };
        let call = ApplyCall {
            prior_state: decode(r.prior_state.as_ref(), &ty, "prior_state")?,
            planned_state: decode(r.planned_state.as_ref(), &ty, "planned_state")?,
            config: decode(r.config.as_ref(), &ty, "config")?,
            planned_private: r.planned_private,
            type_name: r.type_name,
        };
        let result = match &self.0.handlers.apply {
            Some(f) => f(&self.0, &call),
            None => self.0.default_apply(&call),
        };
        let response = tf::apply_resource_change::Response {
            new_state: Some(encode(result.new_state.as_ref(), &ty, "new state")?),
            private: result.private.clone(),
            diagnostics: result.diagnostics.clone(),
            legacy_type_system: false,
        };
        self.0.record(TfCall::ApplyResourceChange(call, result));
        Ok(Response::new(response))
    }

    async fn import_resource_state(
        &self,
        request: Request<tf::import_resource_state::Request>,
    ) -> Result<Response<tf::import_resource_state::Response>, Status> {
        let r = request.into_inner();
        let call = ImportCall {
            type_name: r.type_name,
            id: r.id,
        };
        if self.resource_type(&call.type_name).is_none() {
            return Ok(Response::new(tf::import_resource_state::Response {
                imported_resources: Vec::new(),
                diagnostics: unknown(&call.type_name),
            }));
        }
        let result = match &self.0.handlers.import {
            Some(f) => f(&self.0, &call),
            None => self.0.default_import(&call),
        };
        let mut imported_resources = Vec::new();
        for i in &result.imported {
            let ty = self.resource_type(&i.type_name).ok_or_else(|| {
                Status::internal(format!("the test imported an unknown type {}", i.type_name))
            })?;
            imported_resources.push(tf::import_resource_state::ImportedResource {
                type_name: i.type_name.clone(),
                state: Some(encode(i.state.as_ref(), &ty, "imported state")?),
                private: i.private.clone(),
            });
        }
        let response = tf::import_resource_state::Response {
            imported_resources,
            diagnostics: result.diagnostics.clone(),
        };
        self.0.record(TfCall::ImportResourceState(call, result));
        Ok(Response::new(response))
    }

    async fn read_data_source(
        &self,
        request: Request<tf::read_data_source::Request>,
    ) -> Result<Response<tf::read_data_source::Response>, Status> {
        let r = request.into_inner();
        let Some(ty) = self.data_type(&r.type_name) else {
            return Ok(Response::new(tf::read_data_source::Response {
                state: None,
                diagnostics: unknown(&r.type_name),
            }));
        };
        let call = ConfigCall {
            config: decode(r.config.as_ref(), &ty, "config")?,
            type_name: r.type_name,
        };
        let result = match &self.0.handlers.read_data {
            Some(f) => f(&self.0, &call),
            None => self.0.default_read_data(&call),
        };
        let response = tf::read_data_source::Response {
            state: Some(encode(result.state.as_ref(), &ty, "data source state")?),
            diagnostics: result.diagnostics.clone(),
        };
        self.0.record(TfCall::ReadDataSource(call, result));
        Ok(Response::new(response))
    }
}

//! The remote component [`COMPONENT`] (`Construct`) and its method
//! [`DESCRIBE`] (`Call`).
//!
//! `Construct` works as a component provider built with a Pulumi SDK does:
//! as a gRPC client of the engine's monitor at `monitorEndpoint`, it
//! registers the component (the given type, name, parent and options), a
//! child [`THING`] `<name>-child` parented to it whose `value` (and `size`)
//! are the component's, and the component's outputs; it answers the
//! component's URN and state `{value, childId, childLength}`, the child's
//! outputs depending on the child; with the input `childRef: true`, also
//! `child`, a resource reference to the child.
//!
//! `Call` of [`DESCRIBE`] takes the component as `__self__` and a string
//! `greeting`, and returns `description = "<greeting>, <component name>!"`,
//! depending on the component, and `argDependencies`: what the engine told
//! it each argument depends on (`{argument: [URN…]}`, the arguments with
//! dependencies only), so a test can see what reached the provider.

use std::collections::HashMap;
use std::time::Duration;

use converge_proto::marshal::UNKNOWN_STRING;
use converge_proto::pulumirpc::resource_monitor_client::ResourceMonitorClient;
use converge_proto::pulumirpc::{
    call_response, construct_response, register_resource_request, CallRequest, CallResponse,
    CheckFailure, ConstructRequest, ConstructResponse, RegisterResourceOutputsRequest,
    RegisterResourceRequest,
};
use converge_proto::MessageLimits;
use prost_types::{value::Kind as V, Struct, Value};
use tonic::transport::Channel;
use tonic::Status;

use crate::{COMPONENT, DESCRIBE, PACKAGE, THING};

/// How long connecting to the engine's monitor may take.
const CONNECT: Duration = Duration::from_secs(10);

fn s(v: impl Into<String>) -> Value {
    Value {
        kind: Some(V::StringValue(v.into())),
    }
}

fn unknown() -> Value {
    s(UNKNOWN_STRING)
}

fn field<'a>(props: &'a Option<Struct>, key: &str) -> Option<&'a Value> {
    props.as_ref()?.fields.get(key)
}

async fn connect(endpoint: &str) -> Result<ResourceMonitorClient<Channel>, Status> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{endpoint}"))
        .map_err(|e| Status::invalid_argument(format!("monitor endpoint {endpoint:?}: {e}")))?
        .connect_timeout(CONNECT);
    let channel = tokio::time::timeout(CONNECT, channel.connect())
        .await
        .map_err(|_| Status::unknown(format!("monitor {endpoint}: connect timed out")))?
        .map_err(|e| Status::unknown(format!("monitor {endpoint}: {e}")))?;
    Ok(ResourceMonitorClient::new(channel).with_message_limits())
}

/// A monitor error, passed on with what was being done. Its code is not:
/// the engine would read `Unavailable` as this plugin being gone.
fn monitor_error(what: &str, status: Status) -> Status {
    Status::unknown(format!("{what}: {}", status.message()))
}

pub async fn construct(req: ConstructRequest) -> Result<ConstructResponse, Status> {
    if req.r#type != COMPONENT {
        return Err(Status::invalid_argument(format!(
            "unknown component type {}",
            req.r#type
        )));
    }
    let value = match field(&req.inputs, "value") {
        Some(
            v @ Value {
                kind: Some(V::StringValue(_)),
            },
        ) => v.clone(),
        _ => return Err(Status::invalid_argument("value must be a string")),
    };
    let mut monitor = connect(&req.monitor_endpoint).await?;
    let comp = monitor
        .register_resource(RegisterResourceRequest {
            r#type: req.r#type.clone(),
            name: req.name.clone(),
            parent: req.parent.clone(),
            custom: false,
            object: req.inputs.clone(),
            protect: req.protect,
            dependencies: req.dependencies.clone(),
            property_dependencies: req
                .input_dependencies
                .iter()
                .map(|(k, d)| {
                    let urns = d.urns.clone();
                    (
                        k.clone(),
                        register_resource_request::PropertyDependencies { urns },
                    )
                })
                .collect(),
            accept_secrets: true,
            accept_resources: true,
            aliases: req.aliases.clone(),
            alias_specs: true,
            providers: req.providers.clone(),
            retain_on_delete: req.retain_on_delete,
            ..RegisterResourceRequest::default()
        })
        .await
        .map_err(|e| monitor_error("registering the component", e))?
        .into_inner();

    let mut child_inputs = Struct::default();
    child_inputs.fields.insert("value".into(), value.clone());
    if let Some(size) = field(&req.inputs, "size") {
        child_inputs.fields.insert("size".into(), size.clone());
    }
    let value_deps = req
        .input_dependencies
        .get("value")
        .map(|d| d.urns.clone())
        .unwrap_or_default();
    let child = monitor
        .register_resource(RegisterResourceRequest {
            r#type: THING.to_owned(),
            name: format!("{}-child", req.name),
            parent: comp.urn.clone(),
            custom: true,
            object: Some(child_inputs),
            // The component's provider for this package, if the program
            // gave one; else the engine's default provider.
            provider: req.providers.get(PACKAGE).cloned().unwrap_or_default(),
            dependencies: value_deps.clone(),
            property_dependencies: HashMap::from([(
                "value".to_owned(),
                register_resource_request::PropertyDependencies { urns: value_deps },
            )]),
            accept_secrets: true,
            accept_resources: true,
            ..RegisterResourceRequest::default()
        })
        .await
        .map_err(|e| monitor_error("registering the child", e))?
        .into_inner();

    let child_id = if child.id.is_empty() {
        unknown()
    } else {
        s(child.id.clone())
    };
    let child_length = field(&child.object, "length")
        .cloned()
        .unwrap_or_else(unknown);
    let mut state = Struct {
        fields: [
            ("value".to_owned(), value),
            ("childId".to_owned(), child_id.clone()),
            ("childLength".to_owned(), child_length),
        ]
        .into_iter()
        .collect(),
    };
    if matches!(
        field(&req.inputs, "childRef").and_then(|v| v.kind.as_ref()),
        Some(V::BoolValue(true))
    ) {
        state
            .fields
            .insert("child".to_owned(), resource_reference(&child.urn, child_id));
    }
    monitor
        .register_resource_outputs(RegisterResourceOutputsRequest {
            urn: comp.urn.clone(),
            outputs: Some(state.clone()),
        })
        .await
        .map_err(|e| monitor_error("registering the component's outputs", e))?;
    let on_child = || construct_response::PropertyDependencies {
        urns: vec![child.urn.clone()],
    };
    Ok(ConstructResponse {
        urn: comp.urn,
        state: Some(state),
        state_dependencies: HashMap::from([
            ("childId".to_owned(), on_child()),
            ("childLength".to_owned(), on_child()),
        ]),
    })
}

/// A resource reference to `urn` with the ID `id` (unknown in a preview
/// of a new resource), in Pulumi's wire form.
fn resource_reference(urn: &str, id: Value) -> Value {
    let id = match id.kind {
        Some(V::StringValue(s)) if s != UNKNOWN_STRING => s,
        _ => String::new(),
    };
    Value {
        kind: Some(V::StructValue(Struct {
            fields: [
                (
                    "4dabf18193072939515e22adb298388d".to_owned(),
                    s("5cf8f73096256a8f31e491e813e4eb8e"),
                ),
                ("urn".to_owned(), s(urn)),
                ("id".to_owned(), s(id)),
                ("packageVersion".to_owned(), s("")),
            ]
            .into_iter()
            .collect(),
        })),
    }
}

/// The URN of a resource argument: a resource reference (`urn` field) or,
/// for an engine that sends references as plain values, the URN string.
fn resource_urn(v: &Value) -> Option<&str> {
    match v.kind.as_ref()? {
        V::StringValue(urn) => Some(urn),
        V::StructValue(reference) => match reference.fields.get("urn")?.kind.as_ref()? {
            V::StringValue(urn) => Some(urn),
            _ => None,
        },
        _ => None,
    }
}

/// What `req` says each argument depends on, as an object of URN lists
/// (the arguments with dependencies only).
fn argument_dependencies(req: &CallRequest) -> Value {
    let fields = req
        .arg_dependencies
        .iter()
        .filter(|(_, deps)| !deps.urns.is_empty())
        .map(|(arg, deps)| {
            let urns = deps.urns.iter().cloned().map(s).collect();
            (
                arg.clone(),
                Value {
                    kind: Some(V::ListValue(prost_types::ListValue { values: urns })),
                },
            )
        })
        .collect();
    Value {
        kind: Some(V::StructValue(Struct { fields })),
    }
}

pub fn call(req: CallRequest) -> Result<CallResponse, Status> {
    if req.tok != DESCRIBE {
        return Err(Status::invalid_argument(format!(
            "unknown method {}",
            req.tok
        )));
    }
    let me = field(&req.args, "__self__").and_then(resource_urn);
    let greeting = match field(&req.args, "greeting").and_then(|v| v.kind.as_ref()) {
        Some(V::StringValue(g)) => Some(g.clone()),
        _ => None,
    };
    let (Some(me), Some(greeting)) = (me, greeting) else {
        return Ok(CallResponse {
            failures: vec![CheckFailure {
                property: "__self__".into(),
                reason: "describe needs the component (__self__) and a string greeting".into(),
            }],
            ..CallResponse::default()
        });
    };
    let name = me.rsplit("::").next().unwrap_or(me);
    let description = if greeting == UNKNOWN_STRING {
        unknown()
    } else {
        s(format!("{greeting}, {name}!"))
    };
    Ok(CallResponse {
        r#return: Some(Struct {
            fields: [
                ("description".to_owned(), description),
                ("argDependencies".to_owned(), argument_dependencies(&req)),
            ]
            .into_iter()
            .collect(),
        }),
        return_dependencies: HashMap::from([(
            "description".to_owned(),
            call_response::ReturnDependencies {
                urns: vec![me.to_owned()],
            },
        )]),
        failures: Vec::new(),
    })
}

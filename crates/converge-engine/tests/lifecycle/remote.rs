//! Remote components: the program registers a component with `remote`
//! through the gRPC monitor; the component provider's `Construct` registers
//! the component and its child through the same monitor. Every journal
//! prefix must replay to a valid snapshot and every cloud object be tracked
//! (the `Lifecycle` checks), across create, update, preview and destroy,
//! and when `Construct` fails halfway.

use std::collections::BTreeMap;

use converge_engine::grpc::{MonitorServer, MonitorServerOptions};
use converge_engine::StepOp;
use converge_model::{PropertyMap, PropertyValue, Urn};
use converge_plugin::{ConstructRequest, ConstructResponse, ProviderError};
use converge_proto::pulumirpc::resource_monitor_client::ResourceMonitorClient;
use converge_proto::pulumirpc::{RegisterResourceOutputsRequest, RegisterResourceRequest};
use converge_proto::{marshal_properties, unmarshal_properties, MarshalOptions};
use converge_testkit::{program, TestProgram};
use tonic::transport::Channel;

use super::*;

const COMP: &str = "pkg:index:Comp";

fn wire(props: &PropertyMap) -> Option<prost_types::Struct> {
    Some(marshal_properties(props, MarshalOptions::full()).unwrap())
}

async fn connect(endpoint: &str) -> Result<ResourceMonitorClient<Channel>, String> {
    ResourceMonitorClient::connect(format!("http://{endpoint}"))
        .await
        .map_err(|e| e.to_string())
}

async fn register(
    client: &mut ResourceMonitorClient<Channel>,
    req: RegisterResourceRequest,
) -> Result<(String, String, PropertyMap), String> {
    let resp = client
        .register_resource(req)
        .await
        .map_err(|s| s.message().to_owned())?
        .into_inner();
    let object = resp.object.unwrap_or_default();
    let outputs = unmarshal_properties(&object, MarshalOptions::full()).unwrap();
    Ok((resp.urn, resp.id, outputs))
}

/// The component provider: registers the component, a child `Thing` with
/// the component's `v`, then (unless `v` is `"fail"`) the component's
/// outputs; answers `{childId, v}`.
async fn construct(req: ConstructRequest) -> Result<ConstructResponse, ProviderError> {
    let failed = |e: String| ProviderError::Failed(e);
    let mut client = connect(&req.context.monitor_endpoint)
        .await
        .map_err(failed)?;
    let (comp, _, _) = register(
        &mut client,
        RegisterResourceRequest {
            r#type: req.type_token.clone(),
            name: req.name.clone(),
            parent: req.parent.as_ref().map(Urn::to_string).unwrap_or_default(),
            object: wire(&req.inputs),
            accept_secrets: true,
            ..RegisterResourceRequest::default()
        },
    )
    .await
    .map_err(failed)?;
    let v = req.inputs.get("v").cloned().unwrap_or(PropertyValue::Null);
    let (_, child_id, _) = register(
        &mut client,
        RegisterResourceRequest {
            r#type: T.to_owned(),
            name: format!("{}-child", req.name),
            parent: comp.clone(),
            custom: true,
            object: wire(&PropertyMap::from([("v".to_owned(), v.clone())])),
            accept_secrets: true,
            ..RegisterResourceRequest::default()
        },
    )
    .await
    .map_err(failed)?;
    if v == s("fail") {
        return Err(ProviderError::Failed("the component broke".to_owned()));
    }
    let child_id = if child_id.is_empty() {
        PropertyValue::Unknown
    } else {
        s(&child_id)
    };
    let state = PropertyMap::from([("childId".to_owned(), child_id), ("v".to_owned(), v)]);
    client
        .register_resource_outputs(RegisterResourceOutputsRequest {
            urn: comp.clone(),
            outputs: wire(&state),
        })
        .await
        .map_err(|s| failed(s.message().to_owned()))?;
    Ok(ConstructResponse {
        urn: Urn::parse(&comp).map_err(|e| failed(e.to_string()))?,
        state,
        state_dependencies: BTreeMap::new(),
    })
}

/// A program (over gRPC, as a language host's) with one remote component
/// `web` whose input `v` is `v`; it checks what the registration answers.
fn remote_program(v: &'static str) -> TestProgram {
    program(move |m| async move {
        let preview = m.is_preview();
        let server = MonitorServer::start(m, MonitorServerOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let mut client = connect(&server.address()).await?;
        let (stack, _, _) = register(
            &mut client,
            RegisterResourceRequest {
                r#type: "pulumi:pulumi:Stack".to_owned(),
                name: "proj-test".to_owned(),
                ..RegisterResourceRequest::default()
            },
        )
        .await?;
        let answer = register(
            &mut client,
            RegisterResourceRequest {
                r#type: COMP.to_owned(),
                name: "web".to_owned(),
                parent: stack,
                remote: true,
                object: wire(&inputs(&[("v", v)])),
                accept_secrets: true,
                ..RegisterResourceRequest::default()
            },
        )
        .await;
        server.shutdown().await;
        let (urn, id, outputs) = answer?;
        assert_eq!(urn, "urn:pulumi:test::proj::pkg:index:Comp::web");
        assert_eq!(id, "");
        assert_eq!(outputs["v"], s(v));
        assert_eq!(
            matches!(outputs["childId"], PropertyValue::Unknown),
            preview,
            "{outputs:?}"
        );
        Ok(())
    })
}

fn component_provider() -> MockProvider {
    provider().on_construct(construct)
}

#[tokio::test]
async fn remote_components_are_created_updated_and_destroyed() {
    let (mut w, cloud) = world(component_provider());

    let r = w.preview(&remote_program("1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "web-child"), vec![StepOp::Create]);

    let r = w.up(&remote_program("1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "web"), vec![StepOp::Create]);
    assert_eq!(ops_of(&r, "web-child"), vec![StepOp::Create]);
    assert_eq!(cloud.len(), 1);
    let web = w.resource("web").unwrap().clone();
    assert!(!web.custom);
    assert_eq!(web.outputs["v"], s("1"));
    let child = w.resource("web-child").unwrap();
    assert_eq!(child.parent.as_ref(), Some(&web.urn));
    assert_eq!(web.outputs["childId"], s(child.id.as_deref().unwrap()));

    let r = w.up(&remote_program("1")).await;
    expect_ok(&r);
    assert!(
        all_ops(&r).iter().all(|(_, op)| *op == StepOp::Same),
        "{:?}",
        all_ops(&r)
    );

    let r = w.up(&remote_program("2")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "web-child"), vec![StepOp::Update]);
    assert_eq!(ops_of(&r, "web"), vec![StepOp::Update]);
    assert_eq!(cloud.objects()[0].properties["v"], s("2"));
    assert_eq!(cloud.counts().creates, 1);

    let r = w.destroy().await;
    expect_ok(&r);
    assert_eq!(cloud.len(), 0);
    assert!(w.snapshot.resources.is_empty());
}

#[tokio::test]
async fn a_construct_that_fails_halfway_keeps_what_it_registered() {
    let (mut w, cloud) = world(component_provider());
    let r = w.up(&remote_program("fail")).await;
    let error = r.error.as_ref().expect("the update failed").to_string();
    assert!(error.contains("the component broke"), "{error}");
    // The child was created before the failure: it is in the state.
    assert_eq!(cloud.len(), 1);
    let child = w.resource("web-child").expect("the child is tracked");
    assert_eq!(child.parent.as_ref(), Some(&w.resource("web").unwrap().urn));

    let r = w.up(&remote_program("1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "web-child"), vec![StepOp::Update]);
    assert_eq!(cloud.len(), 1);
}

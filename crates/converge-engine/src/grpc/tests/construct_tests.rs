//! Remote components and calls over the wire: the program and the
//! component provider (a mock whose `Construct` is a real gRPC client of
//! the monitor) both talk to the server.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use converge_model::{PropertyMap, PropertyValue, ResourceReference, Urn};
use converge_plugin::{
    CallRequest, CallResponse, ConstructRequest, ConstructResponse, ProviderError,
};
use converge_proto::pulumirpc::resource_monitor_client::ResourceMonitorClient;
use converge_proto::pulumirpc::{
    resource_call_request, RegisterResourceOutputsRequest, RegisterResourceRequest,
    ResourceCallRequest,
};
use converge_proto::{marshal_properties, unmarshal_properties, MarshalOptions};
use converge_testkit::MockProvider;

use super::{empty, grpc_program, outputs, props, register, request, stack, up, wire, Clients};
use crate::events::{EventSink, StepOp};

const COMP: &str = "pkg:index:Comp";
const THING: &str = "pkg:index:Thing";

fn provider_error(e: impl std::fmt::Display) -> ProviderError {
    ProviderError::Failed(e.to_string())
}

/// What a component provider does in `Construct`: registers the component
/// and a child `Thing` (input `value` = the component's `value`) with the
/// monitor, registers the component's outputs, and answers
/// `{urn, state: {childId, echo}}` with `childId` depending on the child.
async fn build_component(req: ConstructRequest) -> Result<ConstructResponse, ProviderError> {
    let addr = format!("http://{}", req.context.monitor_endpoint);
    let mut monitor = ResourceMonitorClient::connect(addr)
        .await
        .map_err(provider_error)?;
    let parent = req.parent.as_ref().map(ToString::to_string);
    let comp = monitor
        .register_resource(RegisterResourceRequest {
            r#type: req.type_token.clone(),
            name: req.name.clone(),
            parent: parent.unwrap_or_default(),
            custom: false,
            object: Some(wire(req.inputs.clone())),
            accept_secrets: true,
            ..RegisterResourceRequest::default()
        })
        .await
        .map_err(provider_error)?
        .into_inner();
    let value = req
        .inputs
        .get("value")
        .cloned()
        .unwrap_or(PropertyValue::Null);
    let child = monitor
        .register_resource(RegisterResourceRequest {
            r#type: THING.to_owned(),
            name: format!("{}-child", req.name),
            parent: comp.urn.clone(),
            custom: true,
            object: Some(wire(props([("value", value.clone())]))),
            provider: req.providers.get("pkg").cloned().unwrap_or_default(),
            accept_secrets: true,
            ..RegisterResourceRequest::default()
        })
        .await
        .map_err(provider_error)?
        .into_inner();
    let child_id = if child.id.is_empty() {
        PropertyValue::Unknown
    } else {
        PropertyValue::string(child.id.clone())
    };
    let state = props([("childId", child_id), ("echo", value)]);
    monitor
        .register_resource_outputs(RegisterResourceOutputsRequest {
            urn: comp.urn.clone(),
            outputs: Some(wire(state.clone())),
        })
        .await
        .map_err(provider_error)?;
    Ok(ConstructResponse {
        urn: Urn::parse(&comp.urn).map_err(provider_error)?,
        state,
        state_dependencies: BTreeMap::from([(
            "childId".to_owned(),
            vec![Urn::parse(&child.urn).map_err(provider_error)?],
        )]),
    })
}

/// A mock provider of `pkg` whose `Construct` builds the component; the
/// requests it received are kept.
fn component_provider(seen: Arc<Mutex<Vec<ConstructRequest>>>) -> MockProvider {
    MockProvider::new("pkg").on_construct(move |req| {
        seen.lock().unwrap().push(req.clone());
        build_component(req)
    })
}

fn remote(stack: &str, value: &str) -> RegisterResourceRequest {
    let mut req = request(COMP, "c", false, stack);
    req.remote = true;
    req.object = Some(wire(props([("value", PropertyValue::string(value))])));
    req
}

#[tokio::test]
async fn a_remote_component_is_constructed_by_its_provider() {
    let program = grpc_program(|mut c: Clients| async move {
        let stack = stack(&mut c).await?;
        let comp = register(&mut c, remote(&stack, "hello")).await?;
        assert_eq!(comp.urn, "urn:pulumi:test::proj::pkg:index:Comp::c");
        assert_eq!(comp.id, "");
        let out = outputs(&comp);
        assert_eq!(out["echo"], PropertyValue::string("hello"));
        assert!(matches!(&out["childId"], PropertyValue::String(id) if !id.is_empty()));
        assert_eq!(
            comp.property_dependencies["childId"].urns,
            vec!["urn:pulumi:test::proj::pkg:index:Comp$pkg:index:Thing::c-child".to_owned()]
        );
        Ok(())
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let result = up(empty(), component_provider(Arc::clone(&seen)), &program).await;
    assert_eq!(result.error, None);

    let seen = seen.lock().unwrap();
    let [req] = seen.as_slice() else {
        panic!("{} constructs", seen.len())
    };
    assert_eq!((req.type_token.as_str(), req.name.as_str()), (COMP, "c"));
    assert_eq!(
        req.parent.as_ref().map(Urn::as_str),
        Some("urn:pulumi:test::proj::pulumi:pulumi:Stack::proj-test")
    );
    assert_eq!(
        (req.context.project.as_str(), req.context.stack.as_str()),
        ("proj", "test")
    );
    assert!(!req.context.dry_run);
    assert!(req.context.monitor_endpoint.starts_with("127.0.0.1:"));

    let snap = &result.snapshot;
    let find = |name: &str| {
        snap.resources
            .iter()
            .find(|r| r.urn.name() == name)
            .unwrap_or_else(|| panic!("no {name} in the snapshot"))
    };
    let comp = find("c");
    assert!(!comp.custom && comp.id.is_none() && comp.provider.is_none());
    assert_eq!(comp.outputs["echo"], PropertyValue::string("hello"));
    let child = find("c-child");
    assert_eq!(child.parent.as_ref(), Some(&comp.urn));
    assert_eq!(child.inputs["value"], PropertyValue::string("hello"));
    let provider = child.provider.as_ref().expect("the child has a provider");
    assert_eq!(provider.urn.name(), "default");
    converge_state::integrity::verify(snap).expect("the snapshot verifies");
}

#[tokio::test]
async fn a_preview_constructs_with_dry_run() {
    let program = grpc_program(|mut c: Clients| async move {
        let stack = stack(&mut c).await?;
        let comp = register(&mut c, remote(&stack, "hello")).await?;
        assert_eq!(outputs(&comp)["childId"], PropertyValue::Unknown);
        Ok(())
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let provider = component_provider(Arc::clone(&seen));
    let ctx = super::context(empty(), provider, EventSink::discard());
    let result = crate::preview(ctx, &program).await;
    assert_eq!(result.error, None);
    assert!(seen.lock().unwrap()[0].context.dry_run);
    let creates = result.plan.counts().get(&StepOp::Create).copied();
    // Stack, component, child (the default provider is not counted).
    assert_eq!(creates, Some(3), "{:?}", result.plan.counts());
}

#[tokio::test]
async fn an_explicit_provider_constructs_and_no_default_provider_is_made() {
    let program = grpc_program(|mut c: Clients| async move {
        let stack = stack(&mut c).await?;
        let explicit = register(
            &mut c,
            request("pulumi:providers:pkg", "explicit", true, &stack),
        )
        .await?;
        let reference = format!("{}::{}", explicit.urn, explicit.id);
        let mut comp = remote(&stack, "hello");
        comp.provider = reference.clone();
        comp.providers = [("pkg".to_owned(), reference.clone())].into();
        register(&mut c, comp).await?;
        // A reference to a provider this deployment does not know fails.
        let mut unknown = remote(&stack, "x");
        unknown.name = "other".to_owned();
        unknown.provider = reference.replace("explicit", "nowhere");
        let err = register(&mut c, unknown).await.unwrap_err();
        assert!(err.contains("nowhere"), "{err}");
        Ok(())
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let result = up(empty(), component_provider(Arc::clone(&seen)), &program).await;
    let error = result
        .error
        .expect("the unknown provider fails")
        .to_string();
    assert!(error.contains("nowhere"), "{error}");
    assert_eq!(seen.lock().unwrap().len(), 1);
    let providers: Vec<&str> = result
        .snapshot
        .resources
        .iter()
        .filter(|r| r.is_provider())
        .map(|r| r.urn.name())
        .collect();
    assert_eq!(providers, vec!["explicit"]);
    let child = result
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.name() == "c-child")
        .unwrap();
    assert_eq!(child.provider.as_ref().unwrap().urn.name(), "explicit");
}

#[tokio::test]
async fn a_construct_that_fails_fails_the_deployment() {
    let program = grpc_program(|mut c: Clients| async move {
        let stack = stack(&mut c).await?;
        let err = register(&mut c, remote(&stack, "x")).await.unwrap_err();
        assert!(err.contains("no components today"), "{err}");
        Ok(())
    });
    let provider = MockProvider::new("pkg")
        .on_construct(|_| async { Err(ProviderError::Failed("no components today".to_owned())) });
    let result = up(empty(), provider, &program).await;
    let error = result.error.expect("the deployment failed").to_string();
    assert!(
        error.contains("construct of pkg:index:Comp \"c\" failed: no components today"),
        "{error}"
    );
}

#[tokio::test]
async fn a_constructed_urn_must_have_been_registered() {
    let program = grpc_program(|mut c: Clients| async move {
        let stack = stack(&mut c).await?;
        let err = register(&mut c, remote(&stack, "x")).await.unwrap_err();
        assert!(err.contains("which it did not register"), "{err}");
        Ok(())
    });
    let provider = MockProvider::new("pkg").on_construct(|_| async {
        Ok(ConstructResponse {
            urn: Urn::parse("urn:pulumi:test::proj::pkg:index:Comp::ghost").unwrap(),
            state: PropertyMap::new(),
            state_dependencies: BTreeMap::new(),
        })
    });
    let result = up(empty(), provider, &program).await;
    assert!(result.error.is_some());
}

#[tokio::test]
async fn calls_run_on_the_default_provider_with_the_component_as_self() {
    let program = grpc_program(|mut c: Clients| async move {
        let stack = stack(&mut c).await?;
        let comp = register(&mut c, remote(&stack, "hello")).await?;
        let self_ref = PropertyValue::ResourceReference(Box::new(ResourceReference {
            urn: Urn::parse(&comp.urn).unwrap(),
            id: None,
            package_version: String::new(),
        }));
        let args = props([
            ("__self__", self_ref),
            ("prefix", PropertyValue::string("hi")),
        ]);
        let resp = c
            .monitor
            .call(ResourceCallRequest {
                tok: "pkg:index:Comp/describe".to_owned(),
                args: Some(marshal_properties(&args, MarshalOptions::full()).unwrap()),
                arg_dependencies: [(
                    "__self__".to_owned(),
                    resource_call_request::ArgumentDependencies {
                        urns: vec![comp.urn.clone()],
                    },
                )]
                .into(),
                ..ResourceCallRequest::default()
            })
            .await
            .map_err(|s| s.to_string())?
            .into_inner();
        let ret =
            unmarshal_properties(resp.r#return.as_ref().unwrap(), MarshalOptions::full()).unwrap();
        assert_eq!(
            ret["description"],
            PropertyValue::string(format!("hi {}", comp.urn))
        );
        assert_eq!(resp.return_dependencies["description"].urns, vec![comp.urn]);
        Ok(())
    });
    let calls = Arc::new(Mutex::new(Vec::<CallRequest>::new()));
    let seen_calls = Arc::clone(&calls);
    let provider = component_provider(Arc::default()).on_call(move |req| {
        seen_calls.lock().unwrap().push(req.clone());
        let Some(PropertyValue::ResourceReference(me)) = req.args.get("__self__") else {
            return Err(ProviderError::Failed("no __self__".to_owned()));
        };
        let Some(PropertyValue::String(prefix)) = req.args.get("prefix") else {
            return Err(ProviderError::Failed("no prefix".to_owned()));
        };
        Ok(CallResponse {
            outputs: props([(
                "description",
                PropertyValue::string(format!("{prefix} {}", me.urn)),
            )]),
            return_dependencies: BTreeMap::from([("description".to_owned(), vec![me.urn.clone()])]),
            failures: Vec::new(),
        })
    });
    let result = up(empty(), provider, &program).await;
    assert_eq!(result.error, None);
    let calls = calls.lock().unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].token, "pkg:index:Comp/describe");
    assert_eq!(
        calls[0].arg_dependencies["__self__"][0].as_str(),
        "urn:pulumi:test::proj::pkg:index:Comp::c"
    );
    assert!(calls[0].context.monitor_endpoint.starts_with("127.0.0.1:"));
    // One default provider served the component, its child and the call.
    let providers = result
        .snapshot
        .resources
        .iter()
        .filter(|r| r.is_provider())
        .count();
    assert_eq!(providers, 1);
}

#[tokio::test]
async fn a_failed_call_is_the_programs_error_only() {
    let program = grpc_program(|mut c: Clients| async move {
        let status = c
            .monitor
            .call(ResourceCallRequest {
                tok: "pkg:index:broken".to_owned(),
                args: Some(wire(PropertyMap::new())),
                ..ResourceCallRequest::default()
            })
            .await
            .unwrap_err();
        assert!(status.message().contains("out of order"), "{status:?}");
        Ok(())
    });
    let provider =
        MockProvider::new("pkg").on_call(|_| Err(ProviderError::Failed("out of order".to_owned())));
    let result = up(empty(), provider, &program).await;
    assert_eq!(result.error, None);
}

//! Transforms over the wire: a `Callbacks` server of the test's own plays
//! the program's part (the language crate's and the CLI's tests run the
//! real SDKs). Pulumi's order — the resource's own transforms, then its
//! ancestors', then the stack's — each seeing what the one before left;
//! options a transform sets reach the engine; invoke transforms change an
//! invoke's arguments.

use converge_proto::pulumirpc::callbacks_server::{Callbacks, CallbacksServer};
use converge_proto::pulumirpc::{
    Callback, CallbackInvokeRequest, CallbackInvokeResponse, TransformInvokeRequest,
    TransformInvokeResponse, TransformRequest, TransformResponse,
};
use prost::Message;
use tonic::{Request, Response, Status};

use super::*;

/// Transforms by token: `own`, `parent` and `stack` append their name to
/// the `value` property; `protect` protects; `inspect` logs how each
/// property arrived; `tag` adds an invoke argument. Every call is logged
/// as `token:name`.
#[derive(Debug, Default)]
struct Functions {
    log: Arc<Mutex<Vec<String>>>,
}

#[tonic::async_trait]
impl Callbacks for Functions {
    async fn invoke(
        &self,
        request: Request<CallbackInvokeRequest>,
    ) -> Result<Response<CallbackInvokeResponse>, Status> {
        let req = request.into_inner();
        let response = if req.token == "tag" {
            let mut invoke = TransformInvokeRequest::decode(req.request.as_slice())
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            self.log
                .lock()
                .unwrap()
                .push(format!("tag:{}", invoke.token));
            let mut args = unmarshal_properties(
                &invoke.args.take().unwrap_or_default(),
                MarshalOptions::full(),
            )
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
            args.insert("tag".to_owned(), PropertyValue::string("transformed"));
            TransformInvokeResponse {
                args: Some(wire(args)),
                options: invoke.options,
            }
            .encode_to_vec()
        } else {
            let t = TransformRequest::decode(req.request.as_slice())
                .map_err(|e| Status::invalid_argument(e.to_string()))?;
            self.log
                .lock()
                .unwrap()
                .push(format!("{}:{}", req.token, t.name));
            let mut props =
                unmarshal_properties(&t.properties.unwrap_or_default(), MarshalOptions::full())
                    .map_err(|e| Status::invalid_argument(e.to_string()))?;
            let mut options = t.options.unwrap_or_default();
            match req.token.as_str() {
                "protect" => options.protect = Some(true),
                // Logs how each property arrived: plain, or an output value.
                "inspect" => {
                    let mut kinds: Vec<String> = props
                        .iter()
                        .map(|(k, v)| {
                            let kind = if matches!(v, PropertyValue::Output(_)) {
                                "output"
                            } else {
                                "plain"
                            };
                            format!("{k}={kind}")
                        })
                        .collect();
                    kinds.sort();
                    self.log.lock().unwrap().push(kinds.join(","));
                }
                token => {
                    // As `props["value"].apply(…)` in an SDK: an output
                    // stays an output with its dependencies.
                    let changed = match props.remove("value") {
                        Some(PropertyValue::Output(mut o)) => {
                            let before = match o.element.as_deref() {
                                Some(PropertyValue::String(s)) => s.clone(),
                                _ => String::new(),
                            };
                            o.element =
                                Some(Box::new(PropertyValue::string(format!("{before}+{token}"))));
                            PropertyValue::Output(o)
                        }
                        Some(PropertyValue::String(s)) => {
                            PropertyValue::string(format!("{s}+{token}"))
                        }
                        _ => PropertyValue::string(format!("+{token}")),
                    };
                    props.insert("value".to_owned(), changed);
                }
            }
            TransformResponse {
                properties: Some(wire(props)),
                options: Some(options),
            }
            .encode_to_vec()
        };
        Ok(Response::new(CallbackInvokeResponse { response }))
    }
}

/// Serves `functions` on 127.0.0.1; returns its address.
async fn serve(functions: Functions) -> String {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CallbacksServer::new(functions))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    addr
}

fn callback(target: &str, token: &str) -> Callback {
    Callback {
        target: target.to_owned(),
        token: token.to_owned(),
        accepts_byte_string: false,
    }
}

#[tokio::test]
async fn a_resource_s_own_then_its_ancestors_then_the_stack_s_transforms_run() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let target = serve(Functions { log: log.clone() }).await;
    let program = grpc_program(move |mut c| {
        let target = target.clone();
        async move {
            let stack = stack(&mut c).await?;
            c.monitor
                .register_stack_transform(callback(&target, "stack"))
                .await
                .map_err(|s| s.to_string())?;
            let mut comp = request("my:index:Comp", "comp", false, &stack);
            comp.transforms = vec![callback(&target, "parent")];
            let comp = register(&mut c, comp).await?;
            let mut inner = request("my:index:Inner", "inner", false, &comp.urn);
            inner.transforms = vec![callback(&target, "protect")];
            let inner = register(&mut c, inner).await?;
            let mut thing = request("pkg:index:Thing", "t", true, &inner.urn);
            thing.object = Some(wire(props([("value", PropertyValue::string("v"))])));
            thing.transforms = vec![callback(&target, "own")];
            let t = register(&mut c, thing).await?;
            assert_eq!(
                outputs(&t)["value"],
                PropertyValue::string("v+own+parent+stack")
            );
            Ok(())
        }
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
    let snap = &result.snapshot;
    let find = |name: &str| {
        snap.resources
            .iter()
            .find(|r| r.urn.name() == name)
            .unwrap()
    };
    let t = find("t");
    assert_eq!(
        t.inputs["value"],
        PropertyValue::string("v+own+parent+stack")
    );
    // `inner`'s transform protects its descendants (and itself).
    assert!(t.protect && find("inner").protect);
    assert!(!find("comp").protect);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "parent:comp",
            "stack:comp",
            "protect:inner",
            "parent:inner",
            "stack:inner",
            "own:t",
            "protect:t",
            "parent:t",
            "stack:t",
        ]
    );
}

#[tokio::test]
async fn a_transformed_property_keeps_its_dependencies() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let target = serve(Functions { log }).await;
    let program = grpc_program(move |mut c| {
        let target = target.clone();
        async move {
            let stack = stack(&mut c).await?;
            let dep = register(&mut c, request("pkg:index:Thing", "dep", true, &stack)).await?;
            let mut thing = request("pkg:index:Thing", "t", true, &stack);
            thing.object = Some(wire(props([("value", PropertyValue::string("v"))])));
            thing.dependencies = vec![dep.urn.clone()];
            thing.property_dependencies.insert(
                "value".to_owned(),
                converge_proto::pulumirpc::register_resource_request::PropertyDependencies {
                    urns: vec![dep.urn.clone()],
                },
            );
            thing.transforms = vec![callback(&target, "own")];
            register(&mut c, thing).await?;
            Ok(())
        }
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
    let t = named(&result, "t");
    let dep = named(&result, "dep");
    assert_eq!(t.dependencies, vec![dep.urn.clone()]);
    assert_eq!(t.property_dependencies["value"], vec![dep.urn.clone()]);
}

#[tokio::test]
async fn an_invoke_transform_changes_the_arguments() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let target = serve(Functions { log: log.clone() }).await;
    let provider = MockProvider::new("pkg").on_invoke(|req| {
        Ok(InvokeResponse {
            outputs: req.args,
            failures: Vec::new(),
        })
    });
    let program = grpc_program(move |mut c| {
        let target = target.clone();
        async move {
            stack(&mut c).await?;
            c.monitor
                .register_stack_invoke_transform(callback(&target, "tag"))
                .await
                .map_err(|s| s.to_string())?;
            let answer = c
                .monitor
                .invoke(ResourceInvokeRequest {
                    tok: "pkg:index:echo".to_owned(),
                    args: Some(wire(props([("a", PropertyValue::string("x"))]))),
                    ..ResourceInvokeRequest::default()
                })
                .await
                .map_err(|s| s.to_string())?
                .into_inner();
            let ret = unmarshal_properties(&answer.r#return.unwrap(), MarshalOptions::full())
                .map_err(|e| e.to_string())?;
            assert_eq!(ret["a"], PropertyValue::string("x"));
            assert_eq!(ret["tag"], PropertyValue::string("transformed"));
            Ok(())
        }
    });
    let result = up(empty(), provider, &program).await;
    assert_eq!(result.error, None);
    assert_eq!(*log.lock().unwrap(), ["tag:pkg:index:echo"]);
}

#[tokio::test]
async fn the_monitor_supports_transforms() {
    let program = grpc_program(|mut c| async move {
        for feature in ["transforms", "invokeTransforms"] {
            let answer = c
                .monitor
                .supports_feature(SupportsFeatureRequest {
                    id: feature.to_owned(),
                })
                .await
                .map_err(|s| s.to_string())?
                .into_inner();
            assert!(answer.has_support, "{feature}");
        }
        Ok(())
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
}

/// A property without dependencies reaches a transform as the plain value
/// the program sent (an SDK would make an output value an `Output`, which
/// `props.length * 2` cannot use); one with dependencies as an output
/// value carrying them.
#[tokio::test]
async fn only_properties_with_dependencies_reach_a_transform_as_outputs() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let target = serve(Functions { log: log.clone() }).await;
    let program = grpc_program(move |mut c| {
        let target = target.clone();
        async move {
            let stack = stack(&mut c).await?;
            let dep = register(&mut c, request("pkg:index:Thing", "dep", true, &stack)).await?;
            let mut thing = request("pkg:index:Thing", "t", true, &stack);
            thing.object = Some(wire(props([
                ("fed", PropertyValue::string("f")),
                ("length", PropertyValue::Number(5.0)),
                ("secret", PropertyValue::secret(PropertyValue::string("s"))),
            ])));
            thing.dependencies = vec![dep.urn.clone()];
            thing.property_dependencies.insert(
                "fed".to_owned(),
                converge_proto::pulumirpc::register_resource_request::PropertyDependencies {
                    urns: vec![dep.urn.clone()],
                },
            );
            thing.transforms = vec![callback(&target, "inspect")];
            register(&mut c, thing).await?;
            Ok(())
        }
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
    assert_eq!(
        *log.lock().unwrap(),
        ["inspect:t", "fed=output,length=plain,secret=plain"]
    );
    let t = result
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.name() == "t")
        .unwrap();
    assert_eq!(t.property_dependencies["fed"].len(), 1);
}

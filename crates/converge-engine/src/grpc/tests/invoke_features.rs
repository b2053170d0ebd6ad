//! The invoke and call features over the wire: `invokeParent` (an invoke
//! parented to a resource runs on the provider its parent names),
//! `invokeDependsOn` and `invokeOutputValues` (an invoke waits for what it
//! depends on and is unknown while that does not exist), and
//! `callOutputValues` (an argument's output values join its
//! dependencies).

use std::collections::BTreeMap;

use converge_model::{OutputValue, Urn};
use converge_plugin::CallResponse;
use converge_proto::pulumirpc::{ResourceCallRequest, ResourceInvokeResponse};

use super::*;

/// What a call's provider is told each argument depends on.
type ArgumentDependencies = BTreeMap<String, Vec<Urn>>;

fn output(value: PropertyValue, dependencies: Vec<Urn>) -> PropertyValue {
    PropertyValue::Output(Box::new(OutputValue {
        element: Some(Box::new(value)),
        secret: false,
        dependencies,
    }))
}

async fn invoke(
    c: &mut Clients,
    req: ResourceInvokeRequest,
) -> Result<ResourceInvokeResponse, String> {
    c.monitor
        .invoke(req)
        .await
        .map(tonic::Response::into_inner)
        .map_err(|s| format!("{:?}: {}", s.code(), s.message()))
}

fn answer() -> MockProvider {
    MockProvider::new("pkg").on_invoke(|req| {
        Ok(InvokeResponse {
            outputs: props([(
                "x",
                req.args
                    .get("x")
                    .map(|x| x.unwrapped().clone())
                    .unwrap_or(PropertyValue::Null),
            )]),
            failures: Vec::new(),
        })
    })
}

fn has_default_provider(result: &OperationResult) -> bool {
    result
        .snapshot
        .resources
        .iter()
        .any(|r| r.urn.as_str().ends_with("pulumi:providers:pkg::default"))
}

#[tokio::test]
async fn an_invoke_runs_on_the_provider_its_parent_names() {
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        let explicit = register(
            &mut c,
            request("pulumi:providers:pkg", "explicit", true, &stack),
        )
        .await?;
        let reference = format!("{}::{}", explicit.urn, explicit.id);
        let mut comp = request("my:index:Comp", "c", false, &stack);
        comp.providers = [("pkg".to_owned(), reference)].into();
        let comp = register(&mut c, comp).await?;
        // A component under it names no provider: its parent's is found.
        let inner = register(&mut c, request("my:index:Inner", "i", false, &comp.urn)).await?;
        for parent in [&comp.urn, &inner.urn] {
            let got = invoke(
                &mut c,
                ResourceInvokeRequest {
                    tok: "pkg:index:echo".to_owned(),
                    args: Some(wire(props([("x", PropertyValue::string("v"))]))),
                    parent: parent.clone(),
                    ..ResourceInvokeRequest::default()
                },
            )
            .await?;
            assert!(!got.unknown);
        }
        // A parent naming a provider this deployment does not know fails:
        // the parent's provider is the one asked for, not the default.
        let mut bogus = request("my:index:Comp", "bogus", false, &stack);
        bogus.providers = [(
            "pkg".to_owned(),
            "urn:pulumi:test::proj::pulumi:providers:pkg::nowhere::id".to_owned(),
        )]
        .into();
        let bogus = register(&mut c, bogus).await?;
        let err = invoke(
            &mut c,
            ResourceInvokeRequest {
                tok: "pkg:index:echo".to_owned(),
                args: Some(wire(PropertyMap::new())),
                parent: bogus.urn,
                ..ResourceInvokeRequest::default()
            },
        )
        .await
        .unwrap_err();
        assert!(err.contains("nowhere"), "{err}");
        Ok(())
    });
    let result = up(empty(), answer(), &program).await;
    assert_eq!(result.error, None);
    // No invoke needed the default provider.
    assert!(!has_default_provider(&result));
}

/// Registers a Thing `t`, then invokes with an argument that is an output
/// value depending on it, and with an unknown argument.
fn invoking_with_output_values(log: Arc<Mutex<Vec<String>>>) -> GrpcProgram {
    grpc_program(move |mut c| {
        let log = log.clone();
        async move {
            let stack = stack(&mut c).await?;
            let t = register(&mut c, request("pkg:index:Thing", "t", true, &stack)).await?;
            let t_urn = Urn::parse(&t.urn).unwrap();
            let args = props([("x", output(PropertyValue::string("v"), vec![t_urn]))]);
            let got = invoke(
                &mut c,
                ResourceInvokeRequest {
                    tok: "pkg:index:echo".to_owned(),
                    args: Some(wire(args)),
                    ..ResourceInvokeRequest::default()
                },
            )
            .await?;
            let ret = got
                .r#return
                .map(|r| unmarshal_properties(&r, MarshalOptions::full()).unwrap());
            log.lock().unwrap().push(format!("{} {ret:?}", got.unknown));
            let unknown = props([("x", PropertyValue::Unknown)]);
            let got = invoke(
                &mut c,
                ResourceInvokeRequest {
                    tok: "pkg:index:echo".to_owned(),
                    args: Some(wire(unknown)),
                    ..ResourceInvokeRequest::default()
                },
            )
            .await?;
            log.lock()
                .unwrap()
                .push(format!("unknown argument: {}", got.unknown));
            Ok(())
        }
    })
}

#[tokio::test]
async fn an_invoke_waits_for_what_its_output_values_depend_on() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let program = invoking_with_output_values(seen.clone());
    // A preview: `t` is still to be created, so the result is unknown and
    // the provider is not asked.
    let ctx = context(empty(), answer(), EventSink::discard());
    let result = crate::preview(ctx, &program).await;
    assert_eq!(result.error, None);
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["true None".to_owned(), "unknown argument: true".to_owned()]
    );
    seen.lock().unwrap().clear();
    // An update: `t` exists, and the provider gets the plain value.
    let result = up(empty(), answer(), &program).await;
    assert_eq!(result.error, None);
    let want = format!(
        "false {:?}",
        Some(props([("x", PropertyValue::string("v"))]))
    );
    assert_eq!(
        *seen.lock().unwrap(),
        vec![want, "unknown argument: true".to_owned()]
    );
}

#[tokio::test]
async fn a_calls_output_values_join_its_argument_dependencies() {
    let seen: Arc<Mutex<Vec<ArgumentDependencies>>> = Arc::default();
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        let t = register(&mut c, request("pkg:index:Thing", "t", true, &stack)).await?;
        let u = register(&mut c, request("pkg:index:Thing", "u", true, &stack)).await?;
        let t_urn = Urn::parse(&t.urn).unwrap();
        let args = props([
            ("x", output(PropertyValue::string("v"), vec![t_urn])),
            ("plain", PropertyValue::string("p")),
        ]);
        c.monitor
            .call(ResourceCallRequest {
                tok: "pkg:index:fn".to_owned(),
                args: Some(wire(args)),
                arg_dependencies: [(
                    "x".to_owned(),
                    converge_proto::pulumirpc::resource_call_request::ArgumentDependencies {
                        urns: vec![u.urn.clone()],
                    },
                )]
                .into(),
                ..ResourceCallRequest::default()
            })
            .await
            .map_err(|s| s.to_string())?;
        Ok(())
    });
    let recorded = seen.clone();
    let provider = MockProvider::new("pkg").on_call(move |req| {
        recorded.lock().unwrap().push(req.arg_dependencies.clone());
        Ok(CallResponse::default())
    });
    let result = up(empty(), provider, &program).await;
    assert_eq!(result.error, None);
    let seen = seen.lock().unwrap();
    let deps = &seen[0]["x"];
    let names: Vec<&str> = deps.iter().map(|u| u.name()).collect();
    assert_eq!(names, vec!["u", "t"]);
    assert!(!seen[0].contains_key("plain"));
}

//! The monitor over the wire, driven by tonic clients in place of an SDK
//! (the language crate's tests run the real SDKs).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::{InvokeResponse, ProviderError};
use converge_proto::pulumirpc::alias::{self, Spec};
use converge_proto::pulumirpc::engine_client::EngineClient;
use converge_proto::pulumirpc::resource_monitor_client::ResourceMonitorClient;
use converge_proto::pulumirpc::{
    Alias, LogRequest, LogSeverity, RegisterResourceOutputsRequest, RegisterResourceRequest,
    RegisterResourceResponse, RequirePulumiVersionRequest, ResourceInvokeRequest,
    SupportsFeatureRequest,
};
use converge_proto::{marshal_properties, unmarshal_properties, MarshalOptions};
use converge_state::Snapshot;
use converge_testkit::{MockLoader, MockProvider};
use tonic::transport::Channel;

use super::{MonitorServer, MonitorServerOptions};
use crate::events::{EngineEvent, EventSink, Severity, StepOp};
use crate::{DeploymentOptions, DiscardSink, Monitor, OperationContext, OperationResult, Program};

#[derive(Debug, Clone)]
struct Clients {
    monitor: ResourceMonitorClient<Channel>,
    engine: EngineClient<Channel>,
}

type Script =
    dyn Fn(Clients) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync;

/// A "program" that talks to the monitor over gRPC.
struct GrpcProgram {
    script: Box<Script>,
    errors: Arc<Mutex<Vec<String>>>,
}

fn grpc_program<F, Fut>(f: F) -> GrpcProgram
where
    F: Fn(Clients) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    GrpcProgram {
        script: Box::new(move |c| Box::pin(f(c))),
        errors: Arc::default(),
    }
}

#[async_trait]
impl Program for GrpcProgram {
    async fn run(&self, monitor: Monitor) -> Result<(), String> {
        let server = MonitorServer::start(monitor, MonitorServerOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        let addr = format!("http://{}", server.address());
        let clients = Clients {
            monitor: ResourceMonitorClient::connect(addr.clone())
                .await
                .map_err(|e| e.to_string())?,
            engine: EngineClient::connect(addr)
                .await
                .map_err(|e| e.to_string())?,
        };
        let result = (self.script)(clients).await;
        *self.errors.lock().unwrap() = server.error_messages();
        server.shutdown().await;
        result
    }
}

fn context(base: Snapshot, provider: MockProvider, events: EventSink) -> OperationContext {
    OperationContext {
        base: Arc::new(base),
        // Package `pulumi` (the builtin provider, whose default provider
        // `pulumi:pulumi:getResource` records) is a mock here.
        loader: Arc::new(MockLoader::single(provider).with_provider(MockProvider::new("pulumi"))),
        sink: Arc::new(DiscardSink),
        events,
        options: DeploymentOptions::new("test", "proj"),
    }
}

async fn up(base: Snapshot, provider: MockProvider, program: &GrpcProgram) -> OperationResult {
    crate::update(context(base, provider, EventSink::discard()), program).await
}

fn empty() -> Snapshot {
    Snapshot::empty("2026-01-01T00:00:00Z")
}

fn wire(props: PropertyMap) -> prost_types::Struct {
    marshal_properties(&props, MarshalOptions::full()).unwrap()
}

fn props<const N: usize>(pairs: [(&str, PropertyValue); N]) -> PropertyMap {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

fn request(ty: &str, name: &str, custom: bool, parent: &str) -> RegisterResourceRequest {
    RegisterResourceRequest {
        r#type: ty.to_owned(),
        name: name.to_owned(),
        custom,
        parent: parent.to_owned(),
        accept_secrets: true,
        accept_resources: true,
        ..RegisterResourceRequest::default()
    }
}

async fn register(
    c: &mut Clients,
    req: RegisterResourceRequest,
) -> Result<RegisterResourceResponse, String> {
    c.monitor
        .register_resource(req)
        .await
        .map(tonic::Response::into_inner)
        .map_err(|s| format!("{:?}: {}", s.code(), s.message()))
}

async fn stack(c: &mut Clients) -> Result<String, String> {
    Ok(
        register(c, request("pulumi:pulumi:Stack", "proj-test", false, ""))
            .await?
            .urn,
    )
}

fn outputs(resp: &RegisterResourceResponse) -> PropertyMap {
    unmarshal_properties(resp.object.as_ref().unwrap(), MarshalOptions::full()).unwrap()
}

/// The resource of the operation's snapshot named `name`.
fn named<'a>(result: &'a OperationResult, name: &str) -> &'a converge_model::ResourceState {
    result
        .snapshot
        .resources
        .iter()
        .find(|r| r.urn.name() == name)
        .unwrap_or_else(|| panic!("no resource {name}"))
}

#[tokio::test]
async fn registers_stack_component_and_custom_resource() {
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        let comp = register(&mut c, request("my:index:Comp", "c", false, &stack)).await?;
        let mut thing = request("pkg:index:Thing", "t", true, &comp.urn);
        thing.object = Some(wire(props([
            ("a", PropertyValue::string("x")),
            ("s", PropertyValue::secret(PropertyValue::string("hidden"))),
        ])));
        thing.dependencies = vec![comp.urn.clone()];
        let t = register(&mut c, thing.clone()).await?;
        assert_eq!(
            t.urn,
            "urn:pulumi:test::proj::my:index:Comp$pkg:index:Thing::t"
        );
        assert!(!t.id.is_empty());
        assert_eq!(
            outputs(&t)["s"],
            PropertyValue::secret(PropertyValue::string("hidden"))
        );
        // A program that does not accept secrets gets plain values.
        thing.name = "t2".to_owned();
        thing.accept_secrets = false;
        let t2 = register(&mut c, thing).await?;
        assert_eq!(outputs(&t2)["s"], PropertyValue::string("hidden"));
        c.monitor
            .register_resource_outputs(RegisterResourceOutputsRequest {
                urn: stack,
                outputs: Some(wire(props([("out", PropertyValue::string("v"))]))),
            })
            .await
            .map_err(|s| s.to_string())?;
        c.monitor
            .signal_and_wait_for_shutdown(())
            .await
            .map_err(|s| s.to_string())?;
        Ok(())
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
    assert_eq!(find("proj-test").outputs["out"], PropertyValue::string("v"));
    let t = find("t");
    assert_eq!(t.parent.as_ref(), Some(&find("c").urn));
    assert_eq!(t.dependencies, vec![find("c").urn.clone()]);
    assert!(t.provider.is_some());
}

#[tokio::test]
async fn preview_answers_unknown_ids() {
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        let mut thing = request("pkg:index:Thing", "t", true, &stack);
        thing.object = Some(wire(props([("a", PropertyValue::string("x"))])));
        let t = register(&mut c, thing).await?;
        assert_eq!(t.id, "");
        assert_eq!(outputs(&t)["a"], PropertyValue::string("x"));
        Ok(())
    });
    let ctx = context(empty(), MockProvider::new("pkg"), EventSink::discard());
    let result = crate::preview(ctx, &program).await;
    assert_eq!(result.error, None);
}

#[tokio::test]
async fn negotiates_features() {
    let program = grpc_program(|mut c| async move {
        let info = c
            .monitor
            .get_deployment_info(())
            .await
            .map_err(|s| s.to_string())?
            .into_inner();
        assert_eq!(
            (info.project.as_str(), info.stack.as_str()),
            ("proj", "test")
        );
        assert_eq!(info.supported_features.len(), 18);
        for (id, want) in [
            ("secrets", true),
            ("resourceReferences", true),
            ("outputValues", true),
            ("deletedWith", true),
            ("aliasSpecs", true),
            ("transforms", true),
            ("invokeTransforms", true),
            ("resourceHooks", true),
            ("errorHooks", true),
            ("sendsOptionsToHooks", true),
            ("parameterization", true),
            ("replaceWith", true),
            ("replacementTrigger", true),
            ("invokeDependsOn", true),
            ("invokeParent", true),
            ("invokeOutputValues", true),
            ("callOutputValues", true),
            ("byteString", false),
            ("stateMigrations", true),
            ("noSuchFeature", false),
        ] {
            let got = c
                .monitor
                .supports_feature(SupportsFeatureRequest { id: id.to_owned() })
                .await
                .map_err(|s| s.to_string())?
                .into_inner()
                .has_support;
            assert_eq!(got, want, "{id}");
        }
        let ok = c
            .engine
            .require_pulumi_version(RequirePulumiVersionRequest {
                pulumi_version_range: ">=3.0.0".to_owned(),
            })
            .await;
        assert!(ok.is_ok());
        let too_new = c
            .engine
            .require_pulumi_version(RequirePulumiVersionRequest {
                pulumi_version_range: ">=4.0.0".to_owned(),
            })
            .await;
        assert_eq!(too_new.unwrap_err().code(), tonic::Code::FailedPrecondition);
        Ok(())
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
}

#[tokio::test]
async fn alias_specs_and_inherited_parent_aliases_keep_resources() {
    // The component's type is part of its child's URN, so renaming and
    // retyping it moves the child too: the child finds its old state
    // through its parent's alias.
    fn program(ty: &'static str, name: &'static str, alias: Option<Spec>) -> GrpcProgram {
        grpc_program(move |mut c| {
            let alias = alias.clone();
            async move {
                let stack = stack(&mut c).await?;
                let mut comp = request(ty, name, false, &stack);
                if let Some(spec) = alias {
                    comp.alias_specs = true;
                    comp.aliases = vec![Alias {
                        alias: Some(alias::Alias::Spec(spec)),
                    }];
                }
                let comp = register(&mut c, comp).await?;
                let mut thing = request("pkg:index:Thing", "t", true, &comp.urn);
                thing.object = Some(wire(props([("a", PropertyValue::string("x"))])));
                register(&mut c, thing).await?;
                Ok(())
            }
        })
    }
    let old = Spec {
        name: "c".to_owned(),
        r#type: "my:index:Old".to_owned(),
        parent: Some(alias::spec::Parent::ParentUrn(String::new())),
        ..Spec::default()
    };
    let first = up(
        empty(),
        MockProvider::new("pkg"),
        &program("my:index:Old", "c", None),
    )
    .await;
    assert_eq!(first.error, None);
    let second = up(
        Snapshot::clone(&first.snapshot),
        MockProvider::new("pkg"),
        &program("my:index:New", "c2", Some(old)),
    )
    .await;
    assert_eq!(second.error, None);
    let counts = second.plan.counts();
    assert_eq!(counts.get(&StepOp::Create), None, "{counts:?}");
    assert_eq!(counts.get(&StepOp::Delete), None, "{counts:?}");
    let urns: Vec<&str> = second
        .snapshot
        .resources
        .iter()
        .map(|r| r.urn.as_str())
        .collect();
    assert!(
        urns.contains(&"urn:pulumi:test::proj::my:index:New$pkg:index:Thing::t"),
        "{urns:?}"
    );
    assert_eq!(urns.len(), 4, "{urns:?}");
}

#[tokio::test]
async fn logs_become_diagnostics_and_errors_are_kept() {
    let program = grpc_program(|mut c| async move {
        for (severity, message) in [
            (LogSeverity::Debug, "quiet"),
            (LogSeverity::Info, "hello"),
            (LogSeverity::Error, "boom\n"),
            // Node's coloured stack frames: plain text in the display.
            (LogSeverity::Error, "at \u{1b}[90m(index.ts:3:7)\u{1b}[39m"),
        ] {
            c.engine
                .log(LogRequest {
                    severity: severity as i32,
                    message: message.to_owned(),
                    ..LogRequest::default()
                })
                .await
                .map_err(|s| s.to_string())?;
        }
        Ok(())
    });
    let (events, mut rx) = EventSink::channel();
    let result = crate::update(context(empty(), MockProvider::new("pkg"), events), &program).await;
    assert_eq!(result.error, None);
    let mut diagnostics = Vec::new();
    while let Ok(e) = rx.try_recv() {
        if let EngineEvent::Diagnostic {
            severity, message, ..
        } = e
        {
            diagnostics.push((severity, message));
        }
    }
    assert_eq!(
        diagnostics,
        vec![
            (Severity::Info, "hello".to_owned()),
            (Severity::Error, "boom".to_owned()),
            (Severity::Error, "at (index.ts:3:7)".to_owned())
        ]
    );
    assert_eq!(
        *program.errors.lock().unwrap(),
        vec!["boom".to_owned(), "at (index.ts:3:7)".to_owned()]
    );
}

#[tokio::test]
async fn invokes_get_resource_and_provider_functions() {
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        let mut thing = request("pkg:index:Thing", "t", true, &stack);
        thing.object = Some(wire(props([("a", PropertyValue::string("x"))])));
        let t = register(&mut c, thing).await?;
        let got = c
            .monitor
            .invoke(ResourceInvokeRequest {
                tok: "pulumi:pulumi:getResource".to_owned(),
                args: Some(wire(props([("urn", PropertyValue::string(t.urn.clone()))]))),
                accept_resources: true,
                ..ResourceInvokeRequest::default()
            })
            .await
            .map_err(|s| s.to_string())?
            .into_inner();
        let ret =
            unmarshal_properties(got.r#return.as_ref().unwrap(), MarshalOptions::full()).unwrap();
        assert_eq!(ret["id"], PropertyValue::string(t.id.clone()));
        let PropertyValue::String(provider) = &ret["provider"] else {
            panic!("getResource answers the provider reference: {ret:?}")
        };
        assert!(
            provider.starts_with("urn:pulumi:test::proj::pulumi:providers:pkg::default::"),
            "{provider}"
        );
        assert_eq!(
            ret["state"],
            PropertyValue::Object(props([("a", PropertyValue::string("x"))]))
        );
        let answer = c
            .monitor
            .invoke(ResourceInvokeRequest {
                tok: "pkg:index:answer".to_owned(),
                args: Some(wire(PropertyMap::new())),
                ..ResourceInvokeRequest::default()
            })
            .await
            .map_err(|s| s.to_string())?
            .into_inner();
        let ret = unmarshal_properties(answer.r#return.as_ref().unwrap(), MarshalOptions::full())
            .unwrap();
        assert_eq!(ret["answer"], PropertyValue::Number(42.0));
        Ok(())
    });
    let provider = MockProvider::new("pkg").on_invoke(|req| {
        assert_eq!(req.token, "pkg:index:answer");
        Ok(InvokeResponse {
            outputs: props([("answer", PropertyValue::Number(42.0))]),
            failures: Vec::new(),
        })
    });
    let result = up(empty(), provider, &program).await;
    assert_eq!(result.error, None);
}

#[tokio::test]
async fn unsupported_calls_answer_promptly() {
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        // A transform whose program cannot be reached fails its
        // registration at once, naming it.
        let mut transformed = request("pkg:index:Thing", "t", true, &stack);
        transformed.transforms = vec![converge_proto::pulumirpc::Callback {
            target: "127.0.0.1:1".to_owned(),
            ..converge_proto::pulumirpc::Callback::default()
        }];
        let err = register(&mut c, transformed).await.unwrap_err();
        assert!(err.starts_with("Unavailable"), "{err}");
        assert!(
            err.contains("transform at 127.0.0.1:1 cannot be reached"),
            "{err}"
        );
        Ok(())
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
}

#[tokio::test]
async fn a_failed_step_tells_the_program_the_monitor_is_shutting_down() {
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        let err = register(&mut c, request("pkg:index:Thing", "t", true, &stack))
            .await
            .unwrap_err();
        assert!(err.starts_with("Unavailable"), "{err}");
        Err("the program stopped".to_owned())
    });
    let provider =
        MockProvider::new("pkg").on_create(|_| Err(ProviderError::Failed("no quota".to_owned())));
    let result = up(empty(), provider, &program).await;
    let error = result.error.unwrap().to_string();
    assert!(error.contains("no quota"), "{error}");
}

mod asset_hashes;
#[path = "construct_tests.rs"]
mod construct;

mod invoke_features;
mod transforms;

mod packages;

/// The `StepStarted` of each step of a program that registers Thing `t`
/// with input `a`, run on `base` into a sink with or without states.
async fn starts(
    cloud: &Arc<converge_testkit::MockCloud>,
    base: Snapshot,
    a: &'static str,
    step_states: bool,
) -> (OperationResult, Vec<EngineEvent>) {
    let program = grpc_program(move |mut c| async move {
        let stack = stack(&mut c).await?;
        let mut thing = request("pkg:index:Thing", "t", true, &stack);
        thing.object = Some(wire(props([("a", PropertyValue::string(a))])));
        register(&mut c, thing).await?;
        Ok(())
    });
    let provider = MockProvider::new("pkg").with_cloud(cloud.clone());
    let provider = provider.on_diff(|req| {
        Ok(match req.old_inputs == req.new_inputs {
            true => converge_plugin::DiffResponse::none(),
            false => converge_plugin::DiffResponse {
                changes: converge_plugin::DiffChanges::Some,
                changed_keys: vec!["a".into()],
                ..Default::default()
            },
        })
    });
    let (events, mut rx) = EventSink::channel();
    let events = match step_states {
        true => events.with_step_states(),
        false => events,
    };
    let result = crate::update(context(base, provider, events), &program).await;
    assert_eq!(result.error, None);
    let mut started = Vec::new();
    while let Ok(e) = rx.try_recv() {
        if matches!(&e, EngineEvent::StepStarted { urn, .. } if urn.name() == "t") {
            started.push(e);
        }
    }
    (result, started)
}

#[tokio::test]
async fn a_step_starts_with_its_states_and_diff_when_the_sink_wants_them() {
    let cloud = converge_testkit::MockCloud::new();
    let (created, started) = starts(&cloud, empty(), "x", true).await;
    let [EngineEvent::StepStarted {
        op: StepOp::Create,
        old: None,
        new: Some(new),
        ..
    }] = &started[..]
    else {
        panic!("{started:?}")
    };
    assert_eq!(new.inputs["a"], PropertyValue::string("x"));
    assert!(new.provider.is_some(), "{new:?}");

    let base = (*created.snapshot).clone();
    let (_, started) = starts(&cloud, base.clone(), "y", true).await;
    let [EngineEvent::StepStarted {
        op: StepOp::Update,
        old: Some(old),
        new: Some(new),
        diff,
        ..
    }] = &started[..]
    else {
        panic!("{started:?}")
    };
    assert_eq!(old.inputs["a"], PropertyValue::string("x"));
    assert_eq!(new.inputs["a"], PropertyValue::string("y"));
    assert_eq!(diff.keys().collect::<Vec<_>>(), ["a"]);

    // A sink that does not want them gets the step alone.
    let (_, started) = starts(&cloud, base, "y", false).await;
    let [EngineEvent::StepStarted {
        op: StepOp::Update,
        old: None,
        new: None,
        diff,
        ..
    }] = &started[..]
    else {
        panic!("{started:?}")
    };
    assert!(diff.is_empty());
}

/// A child inherits `retainOnDelete`, `deletedWith` and `protect` from
/// its parent when its registration leaves them unset, through every
/// generation, as Pulumi's monitor gives them; an explicit `false` stays.
#[tokio::test]
async fn children_inherit_retain_on_delete_deleted_with_and_protect() {
    let program = grpc_program(|mut c| async move {
        let stack = stack(&mut c).await?;
        let x = register(&mut c, request("pkg:index:Thing", "x", true, &stack)).await?;
        let mut comp = request("my:index:Comp", "c", false, &stack);
        comp.retain_on_delete = Some(true);
        comp.deleted_with = x.urn.clone();
        let comp = register(&mut c, comp).await?;
        let inner = register(&mut c, request("my:index:Comp", "inner", false, &comp.urn)).await?;
        register(&mut c, request("pkg:index:Thing", "kept", true, &inner.urn)).await?;
        let mut own = request("pkg:index:Thing", "own", true, &comp.urn);
        own.retain_on_delete = Some(false);
        register(&mut c, own).await?;
        let mut guarded = request("my:index:Comp", "guarded", false, &stack);
        guarded.protect = Some(true);
        let guarded = register(&mut c, guarded).await?;
        register(&mut c, request("pkg:index:Thing", "g", true, &guarded.urn)).await?;
        Ok(())
    });
    let result = up(empty(), MockProvider::new("pkg"), &program).await;
    assert_eq!(result.error, None);
    let find = |name: &str| {
        result
            .snapshot
            .resources
            .iter()
            .find(|r| r.urn.name() == name)
            .unwrap()
            .clone()
    };
    let (x, kept, own, g) = (find("x"), find("kept"), find("own"), find("g"));
    assert!(kept.retain_on_delete, "{kept:?}");
    assert_eq!(kept.deleted_with.as_ref(), Some(&x.urn));
    assert!(!own.retain_on_delete, "{own:?}");
    assert_eq!(own.deleted_with.as_ref(), Some(&x.urn));
    assert!(g.protect && !kept.protect);
    assert!(!x.retain_on_delete && x.deleted_with.is_none());
}

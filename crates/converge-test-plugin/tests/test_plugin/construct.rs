//! `GrpcProvider::construct` and `call` against the real plugin process:
//! marshalling of arguments, resource references, dependencies and
//! failures; a plugin whose configuration is not known; a monitor that
//! cannot be reached. (The full Construct through the engine's monitor is
//! tested end to end through the `converge` binary.)

use crate::common;

use std::collections::BTreeMap;

use common::*;
use converge_model::{PropertyMap, PropertyValue, ResourceReference, Urn};
use converge_plugin::{
    CallRequest, ConstructOptions, ConstructRequest, DeploymentContext, Provider, ProviderError,
};
use converge_test_plugin::{COMPONENT, DESCRIBE};

fn comp_urn() -> Urn {
    Urn::parse("urn:pulumi:test::proj::convergetest:index:Component::web").unwrap()
}

fn context(monitor_endpoint: &str) -> DeploymentContext {
    DeploymentContext {
        project: "proj".into(),
        stack: "test".into(),
        parallel: 4,
        monitor_endpoint: monitor_endpoint.into(),
        ..DeploymentContext::default()
    }
}

fn describe(args: PropertyMap) -> CallRequest {
    CallRequest {
        context: context("127.0.0.1:1"),
        token: DESCRIBE.into(),
        args,
        arg_dependencies: BTreeMap::from([("__self__".to_owned(), vec![comp_urn()])]),
    }
}

fn construct_request(monitor_endpoint: &str) -> ConstructRequest {
    ConstructRequest {
        context: context(monitor_endpoint),
        type_token: COMPONENT.into(),
        name: "web".into(),
        parent: None,
        inputs: props(&[("value", s("v"))]),
        input_dependencies: BTreeMap::new(),
        providers: BTreeMap::new(),
        dependencies: Vec::new(),
        options: ConstructOptions::default(),
    }
}

#[tokio::test]
async fn call_and_construct_over_the_wire() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    install(&plugins, "1.0.0");
    let logs = Logs::default();
    let loader = loader(dir_only(&plugins), &tmp.path().join("cloud.json"), &logs);
    let p = loader.load_plugin("convergetest", None).await.unwrap();
    p.configure(configure_request(PropertyMap::new()))
        .await
        .unwrap();

    // The component travels as a resource reference (the plugin accepts
    // them); the answer's dependencies come back as URNs.
    let me = PropertyValue::ResourceReference(Box::new(ResourceReference {
        urn: comp_urn(),
        id: None,
        package_version: String::new(),
    }));
    let answer = p
        .call(describe(props(&[("__self__", me), ("greeting", s("Hi"))])))
        .await
        .unwrap();
    assert_eq!(answer.outputs["description"], s("Hi, web!"));
    assert_eq!(answer.return_dependencies["description"], vec![comp_urn()]);
    assert!(answer.failures.is_empty());

    // Missing arguments are failures, not errors.
    let failed = p
        .call(describe(props(&[("greeting", s("Hi"))])))
        .await
        .unwrap();
    assert_eq!(failed.failures[0].property, "__self__");

    // A method the plugin does not have is the plugin's error.
    let mut unknown = describe(PropertyMap::new());
    unknown.token = "convergetest:index:Component/nothing".into();
    let err = p.call(unknown).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Failed(m) if m.contains("unknown method")),
        "{err:?}"
    );

    // A monitor nobody listens on: Construct fails promptly, as the
    // plugin's error (not as the plugin being unavailable).
    let err = p
        .construct(construct_request("127.0.0.1:1"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Failed(m) if m.contains("monitor 127.0.0.1:1")),
        "{err:?}"
    );
    loader.shutdown().await;
}

#[tokio::test]
async fn a_provider_configured_with_unknowns_does_not_construct() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    install(&plugins, "1.0.0");
    let logs = Logs::default();
    let loader = loader(dir_only(&plugins), &tmp.path().join("cloud.json"), &logs);
    let p = loader.load_plugin("convergetest", None).await.unwrap();
    p.configure(configure_request(props(&[(
        "cloudFile",
        PropertyValue::Unknown,
    )])))
    .await
    .unwrap();
    let mut req = construct_request("127.0.0.1:1");
    req.context.dry_run = true;
    let err = p.construct(req).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Failed(m) if m.contains("configuration is not known yet")),
        "{err:?}"
    );
    let answer = p.call(describe(PropertyMap::new())).await.unwrap();
    assert!(answer.outputs.is_empty() && answer.failures.is_empty());
    loader.shutdown().await;
}

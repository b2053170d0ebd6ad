//! `fn::invoke` goes through the engine's `Monitor::invoke`, as an SDK's
//! invoke does: on the explicit provider (`options.provider`) with that
//! provider's configuration, else on the package's default provider,
//! configured from the stack's `<package>:<key>` configuration.

use std::sync::{Arc, Mutex};

use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::{InvokeResponse, Provider};
use converge_testkit::{Lifecycle, MockCloud, MockLoader, MockProvider};

use super::*;

const GET_IMAGE: &str = "variables:
  ami:
    fn::invoke:
      function: pkg:index:getImage
      arguments:
        name: ubuntu
      return: id
resources:
  a:
    type: pkg:index:Thing
    properties:
      image: ${ami}
";

fn default_config(w: &mut Lifecycle, region: &str) {
    w.options
        .provider_config
        .insert("pkg".to_owned(), [("region".to_owned(), s(region))].into());
}

#[tokio::test]
async fn invoke_runs_on_the_default_provider_configured_from_the_stack() {
    let invoked = log();
    let seen = invoked.clone();
    let (mut w, _, provider) = world(provider().on_invoke(move |req| {
        let name = req.args.get("name").and_then(|v| v.as_str()).unwrap_or("");
        seen.lock()
            .unwrap()
            .push(format!("{} name={name}", req.token));
        let outputs: PropertyMap = [("id".to_owned(), s(&format!("img-{name}")))].into();
        Ok(InvokeResponse {
            outputs,
            failures: Vec::new(),
        })
    }));
    default_config(&mut w, "eu-west-1");
    let p = Project::new();
    let program = p.program(GET_IMAGE);

    // A preview invokes too (functions are not mutations).
    let r = w.preview(&program).await;
    expect_ok(&r);
    let r = w.up(&program).await;
    expect_ok(&r);
    assert_eq!(state(&w, "a").inputs.get("image"), Some(&s("img-ubuntu")));
    assert_eq!(
        entries(&invoked),
        vec!["pkg:index:getImage name=ubuntu"; 2],
        "the function ran once per operation"
    );
    // The provider that answered was configured with the stack's
    // configuration for its package.
    assert_eq!(
        provider.configured_with(),
        Some([("region".to_owned(), s("eu-west-1"))].into())
    );
    // It is the default provider resources of the package use.
    let default = state(&w, "default");
    assert_eq!(default.type_token, "pulumi:providers:pkg");
    assert_eq!(default.inputs.get("region"), Some(&s("eu-west-1")));
}

#[tokio::test]
async fn invoke_failures_are_errors_at_the_call() {
    let (mut w, _, _) = world(provider().on_invoke(|_| {
        Ok(InvokeResponse {
            outputs: PropertyMap::new(),
            failures: vec![converge_plugin::CheckFailure {
                property: "name".to_owned(),
                reason: "no such image".to_owned(),
            }],
        })
    }));
    let e = expect_err(&w.up(&Project::new().program(GET_IMAGE)).await);
    assert!(
        e.contains("Pulumi.yaml:5:5: fn::invoke of pkg:index:getImage failed: name: no such image"),
        "{e}"
    );
    assert!(w.resource("a").is_none());
}

/// A loader whose every load is a new instance that answers
/// `pkg:index:getRegion` with the region it was configured with.
fn regional_world() -> Lifecycle {
    let cloud = MockCloud::new();
    let version = MockProvider::new("pkg").version().clone();
    let factory_cloud = cloud.clone();
    let loader = MockLoader::new().with_factory("pkg", version, move || {
        let region: Arc<Mutex<Option<PropertyValue>>> = Arc::default();
        let configured = Arc::clone(&region);
        let provider = MockProvider::new("pkg")
            .with_cloud(factory_cloud.clone())
            .on_configure(move |req| {
                *configured.lock().unwrap() = req.inputs.get("region").cloned();
                Ok(())
            })
            .on_invoke(move |_| {
                let region = region
                    .lock()
                    .unwrap()
                    .clone()
                    .unwrap_or(PropertyValue::Null);
                Ok(InvokeResponse {
                    outputs: [("region".to_owned(), region)].into(),
                    failures: Vec::new(),
                })
            });
        Arc::new(provider) as Arc<dyn Provider>
    });
    Lifecycle::new(cloud, Arc::new(loader))
}

#[tokio::test]
async fn invoke_with_an_explicit_provider_runs_on_that_provider() {
    let mut w = regional_world();
    default_config(&mut w, "eu-west-1");
    let program = Project::new().program(
        "resources:
  usEast:
    type: pulumi:providers:pkg
    properties:
      region: us-east-1
  a:
    type: pkg:index:Thing
    properties:
      explicit: ${fromExplicit}
      default: ${fromDefault}
variables:
  fromExplicit:
    fn::invoke:
      function: pkg:index:getRegion
      options:
        provider: ${usEast}
      return: region
  fromDefault:
    fn::invoke:
      function: pkg:index:getRegion
      return: region
",
    );
    expect_ok(&w.preview(&program).await);
    expect_ok(&w.up(&program).await);
    let a = state(&w, "a");
    assert_eq!(a.inputs.get("explicit"), Some(&s("us-east-1")));
    assert_eq!(a.inputs.get("default"), Some(&s("eu-west-1")));
    // A second run finds both providers in the state and answers alike.
    let r = w.up(&program).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
}

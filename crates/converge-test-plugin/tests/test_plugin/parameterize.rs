//! `Parameterize` through the plugin host: a parameterized provider takes
//! a process of its own (the plugin now serves another package), two
//! parameterizations never share one, and `Configure` keeps it.

use crate::common;

use common::*;
use converge_model::{PropertyValue, Urn};
use converge_plugin::host::{PluginDirectory, PluginLoader};
use converge_plugin::parameterization::Parameterization;
use converge_plugin::{CreateRequest, ParameterizeRequest, Provider};
use converge_test_plugin::VERSION_ENV;

fn parameters(name: &str, value: &str) -> ParameterizeRequest {
    ParameterizeRequest::Value(Parameterization {
        name: name.to_owned(),
        version: semver::Version::new(2, 0, 0),
        value: value.as_bytes().to_vec(),
    })
}

fn create(urn: Urn) -> CreateRequest {
    CreateRequest {
        urn,
        properties: props(&[("value", s("v"))]),
        timeout: None,
        preview: false,
        planned: None,
    }
}

#[tokio::test]
async fn each_parameterization_has_a_process_of_its_own_that_configure_keeps() {
    let tmp = tempfile::tempdir().unwrap();
    let cloud_file = tmp.path().join("cloud.json");
    let logs = Logs::default();
    let mut options = options(
        PluginDirectory::new(tmp.path()).with_ambient(false),
        &cloud_file,
        &logs,
    );
    options.env.push((VERSION_ENV.into(), "1.0.0".into()));
    install(tmp.path(), "1.0.0");
    let loader = PluginLoader::new(options);

    let plain = loader.load_plugin("convergetest", None).await.unwrap();
    let alpha = loader.load_plugin("convergetest", None).await.unwrap();
    let beta = loader.load_plugin("convergetest", None).await.unwrap();
    let answer = alpha
        .parameterize(parameters("alpha", "first"))
        .await
        .unwrap();
    assert_eq!(
        (answer.name.as_str(), answer.version.as_str()),
        ("alpha", "2.0.0")
    );
    beta.parameterize(parameters("beta", "second"))
        .await
        .unwrap();
    assert_ne!(alpha.pid(), plain.pid());
    assert_ne!(beta.pid(), plain.pid());
    assert_ne!(alpha.pid(), beta.pid());

    let pid = alpha.pid();
    alpha
        .configure(configure_request(props(&[(
            "cloudFile",
            s(cloud_file.to_str().unwrap()),
        )])))
        .await
        .unwrap();
    assert_eq!(
        alpha.pid(),
        pid,
        "Configure keeps the parameterized process"
    );
    let thing = Urn::parse("urn:pulumi:test::proj::alpha:index:Thing::t").unwrap();
    let made = alpha.create(create(thing)).await.unwrap();
    assert_eq!(
        made.properties.get("package"),
        Some(&PropertyValue::from("alpha"))
    );
    assert_eq!(
        made.properties.get("parameter"),
        Some(&PropertyValue::from("first"))
    );
    // The process serves its package now, not the plugin's own.
    let err = alpha.create(create(urn("u"))).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("this plugin serves alpha:index:Thing"),
        "{err}"
    );
    loader.shutdown().await;
}

//! Explicit providers registered with the `version` option: the version
//! becomes the provider's `version` input before `CheckConfig`, as a
//! default provider's does, so the plugin of that version serves it —
//! and two versions of one package side by side each get their own.

use std::sync::Arc;

use converge_engine::EngineError;
use converge_model::PropertyValue;
use converge_plugin::CreateResponse;
use converge_testkit::{custom, program, register_stack, MockCloud, MockLoader, TestProgram};

use super::*;

const PROVIDER: &str = "pulumi:providers:pkg";

/// A version of package `pkg` whose creates tag their outputs with it.
fn at(version: semver::Version, cloud: &Arc<MockCloud>) -> Arc<MockProvider> {
    let tag = version.to_string();
    let objects = cloud.clone();
    Arc::new(
        MockProvider::new("pkg")
            .with_cloud(cloud.clone())
            .with_version(version)
            .on_create(move |req| {
                let id = objects.insert(&req.urn, "pkg", req.properties.clone());
                let mut properties = req.properties;
                properties.insert("servedBy".to_owned(), tag.clone().into());
                Ok(CreateResponse { id, properties })
            }),
    )
}

/// Providers `p1` at 1.0.0 and `p2` at `second`, each managing one thing.
fn side_by_side(second: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut refs = Vec::new();
        for (name, version) in [("p1", "1.0.0"), ("p2", second)] {
            let mut g = custom(PROVIDER, name, Default::default());
            g.version = Some(version.to_owned());
            let p = reg(&m, &stack, g).await?;
            refs.push(format!("{}::{}", p.urn, p.id.unwrap_or_default()));
        }
        for (name, provider) in [("a", &refs[0]), ("b", &refs[1])] {
            let mut g = custom(T, name, inputs(&[("k", name)]));
            g.provider = Some(provider.clone());
            reg(&m, &stack, g).await?;
        }
        Ok(())
    })
}

#[tokio::test]
async fn two_versions_of_a_package_side_by_side_each_serve_their_provider() {
    let cloud = MockCloud::new();
    let v1 = at(semver::Version::new(1, 0, 0), &cloud);
    let v2 = at(semver::Version::new(2, 0, 0), &cloud);
    let loader = MockLoader::new()
        .with_provider(v1.clone())
        .with_provider(v2.clone());
    let mut w = converge_testkit::Lifecycle::new(cloud, Arc::new(loader));
    expect_ok(&w.up(&side_by_side("2.0.0")).await);

    let version = |p: &MockProvider| p.configured_with().and_then(|c| c.get("version").cloned());
    assert_eq!(version(&v1), Some(PropertyValue::from("1.0.0")));
    assert_eq!(version(&v2), Some(PropertyValue::from("2.0.0")));
    for (name, served_by) in [("a", "1.0.0"), ("b", "2.0.0")] {
        let r = w.resource(name).unwrap();
        assert_eq!(
            r.outputs.get("servedBy"),
            Some(&PropertyValue::from(served_by)),
            "{name}"
        );
    }
    // The version is recorded with the provider's inputs, as Pulumi does.
    assert_eq!(
        w.resource("p2").unwrap().inputs.get("version"),
        Some(&PropertyValue::from("2.0.0"))
    );
}

#[tokio::test]
async fn a_version_that_is_not_semver_is_refused_naming_it() {
    let cloud = MockCloud::new();
    let loader = MockLoader::new().with_provider(at(semver::Version::new(1, 0, 0), &cloud));
    let mut w = converge_testkit::Lifecycle::new(cloud, Arc::new(loader));
    let r = w.up(&side_by_side("two")).await;
    match &r.error {
        Some(e @ EngineError::Provider { .. }) => {
            assert!(e.to_string().contains("invalid version \"two\""), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

//! (b) Version selection among installed plugins, and the GrpcProvider's
//! calls made directly: plugin info, schema, config, invoke, partial
//! failures, one configuration per process.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use converge_model::PropertyValue;
use converge_plugin::host::{ChainLoader, PluginDirectory, PluginLoader};
use converge_plugin::schema::TypeSpec;
use converge_plugin::{
    CheckRequest, CreateRequest, DeleteRequest, InvokeRequest, MemberKind, Provider, ProviderError,
    ProviderLoader, ReadRequest, RegistryError,
};
use converge_test_plugin::{COUNT, THING, VERSION_ENV};
use semver::Version;

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

#[tokio::test]
async fn the_newest_compatible_installed_version_serves() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    let one = install(&plugins, "1.0.0");
    let two = install(&plugins, "2.1.0");
    // An unfinished install is ignored.
    install(&plugins, "2.5.0");
    std::fs::write(plugins.join("resource-convergetest-v2.5.0.partial"), "").unwrap();
    let logs = Logs::default();
    let loader = loader(dir_only(&plugins), &tmp.path().join("c.json"), &logs);

    let installed: Vec<Version> = loader
        .options()
        .directory
        .installed("convergetest")
        .into_iter()
        .map(|p| p.version)
        .collect();
    assert_eq!(installed, vec![v("1.0.0"), v("2.1.0")]);

    assert_eq!(
        loader
            .resolve("convergetest", Some(&v("1.0.0")))
            .await
            .unwrap(),
        one
    );
    assert_eq!(
        loader
            .resolve("convergetest", Some(&v("2.0.0")))
            .await
            .unwrap(),
        two
    );
    assert_eq!(loader.resolve("convergetest", None).await.unwrap(), two);

    // The process really is that version.
    for (request, expected) in [
        (Some(v("1.0.0")), "1.0.0"),
        (Some(v("2.0.0")), "2.1.0"),
        (None, "2.1.0"),
    ] {
        let p = loader.load("convergetest", request.as_ref()).await.unwrap();
        assert_eq!(p.plugin_info().await.unwrap().version, Some(v(expected)));
    }
    // One unconfigured process per version, reused.
    assert_eq!(loader.pids().len(), 2);

    let err = loader
        .load("convergetest", Some(&v("3.0.0")))
        .await
        .unwrap_err();
    assert!(matches!(err, RegistryError::NotFound { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(concat!("no provider plugin found for package convergetest version ^3.0.0; installed: 1.0.0, 2.1.0", " (looked for")),
        "{err}"
    );
    let err = loader.load("nosuchpkg", None).await.unwrap_err();
    assert!(
        err.to_string().starts_with(concat!(
            "no provider plugin found for package nosuchpkg",
            " (looked for"
        )),
        "{err}"
    );
    loader.shutdown().await;
}

#[tokio::test]
async fn an_installed_plugin_wins_over_the_builtin_and_the_builtin_fills_in() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    // A plugin that calls itself "random" (the built-in's package).
    let dir = plugins.join("resource-random-v4.30.0");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(BIN, dir.join("pulumi-resource-random")).unwrap();
    let logs = Logs::default();
    let plugin_loader = std::sync::Arc::new(loader(
        dir_only(&plugins),
        &tmp.path().join("c.json"),
        &logs,
    ));
    let chain = ChainLoader::plugins_then_builtins(plugin_loader.clone());

    let p = chain.load("random", Some(&v("4.0.0"))).await.unwrap();
    assert!(format!("{p:?}").contains("GrpcProvider"), "{p:?}");
    // No plugin for this major version: the built-in (4.x) cannot serve 3.x
    // either, so nothing is found.
    assert!(chain.load("random", Some(&v("3.0.0"))).await.is_err());
    // No plugin of the package at all: the built-in serves.
    let p = chain.load("command", None).await.unwrap();
    assert!(!format!("{p:?}").contains("GrpcProvider"), "{p:?}");
    plugin_loader.shutdown().await;
}

#[tokio::test]
async fn a_grpc_provider_speaks_every_method() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    install(&plugins, "1.2.3");
    let cloud_file = tmp.path().join("cloud.json");
    let logs = Logs::default();
    let loader = loader(dir_only(&plugins), &cloud_file, &logs);
    let p = loader.load_plugin("convergetest", None).await.unwrap();
    assert_eq!(p.version(), Some(&v("1.2.3")));

    let schema: serde_json::Value = serde_json::from_str(&p.get_schema(0).await.unwrap()).unwrap();
    assert_eq!(schema["version"], "1.2.3");

    let bad = p
        .check_config(CheckRequest {
            urn: provider_urn(),
            olds: Default::default(),
            news: props(&[("cloudFile", PropertyValue::Number(1.0))]),
            random_seed: Vec::new(),
        })
        .await
        .unwrap();
    assert_eq!(bad.failures[0].property, "cloudFile");
    assert!(!p.is_configured());
    p.configure(configure_request(props(&[(
        "token",
        PropertyValue::secret(s("x")),
    )])))
    .await
    .unwrap();
    assert!(p.is_configured());

    // Check applies defaults and reports failures.
    let checked = p
        .check(CheckRequest {
            urn: urn("x"),
            olds: Default::default(),
            news: props(&[("value", PropertyValue::secret(s("shh")))]),
            random_seed: Vec::new(),
        })
        .await
        .unwrap();
    assert_eq!(checked.inputs.get("size"), Some(&s("small")));
    assert_eq!(
        checked.inputs.get("value"),
        Some(&PropertyValue::secret(s("shh")))
    );
    let failed = p
        .check(CheckRequest {
            urn: urn("x"),
            olds: Default::default(),
            news: props(&[("value", PropertyValue::Number(2.0))]),
            random_seed: Vec::new(),
        })
        .await
        .unwrap();
    assert_eq!(failed.failures[0].reason, "value must be a string");

    // Preview: unknowns kept, nothing real.
    let preview = p
        .create(CreateRequest {
            urn: urn("x"),
            properties: props(&[("value", PropertyValue::Unknown)]),
            timeout: None,
            preview: true,
            planned: None,
        })
        .await
        .unwrap();
    assert_eq!(
        preview.properties.get("length"),
        Some(&PropertyValue::Unknown)
    );
    assert!(cloud(&cloud_file).objects.is_empty());

    // A partial failure: the object exists and must be recorded.
    let err = p
        .create(CreateRequest {
            urn: urn("x"),
            properties: props(&[("value", s("abc")), ("fail", s("init"))]),
            timeout: Some(Duration::from_secs(30)),
            preview: false,
            planned: None,
        })
        .await
        .unwrap_err();
    let ProviderError::PartialFailure {
        id,
        properties,
        reasons,
    } = err
    else {
        panic!("{err:?}");
    };
    assert_eq!(reasons, vec!["the thing is not healthy".to_owned()]);
    assert_eq!(properties.get("length"), Some(&PropertyValue::Number(3.0)));
    assert!(cloud(&cloud_file).objects.contains_key(&id));

    let err = p
        .create(CreateRequest {
            urn: urn("y"),
            properties: props(&[("value", s("abc")), ("fail", s("create"))]),
            timeout: None,
            preview: false,
            planned: None,
        })
        .await
        .unwrap_err();
    assert_eq!(
        err,
        ProviderError::Failed("create failed on purpose".into())
    );

    // Read, invoke, delete, read again.
    let read = p
        .read(ReadRequest {
            urn: urn("x"),
            id: id.clone(),
            inputs: None,
            state: None,
            timeout: None,
        })
        .await
        .unwrap();
    assert_eq!(read.id, id);
    assert_eq!(read.inputs.get("value"), Some(&s("abc")));
    let out = p
        .invoke(InvokeRequest {
            token: COUNT.into(),
            args: Default::default(),
        })
        .await
        .unwrap();
    assert_eq!(out.outputs.get("count"), Some(&PropertyValue::Number(1.0)));
    let err = p
        .invoke(InvokeRequest {
            token: "convergetest:index:nope".into(),
            args: Default::default(),
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown function"), "{err}");
    p.delete(DeleteRequest {
        urn: urn("x"),
        id: id.clone(),
        inputs: read.inputs.clone(),
        outputs: read.properties.clone(),
        timeout: None,
    })
    .await
    .unwrap();
    let gone = p
        .read(ReadRequest {
            urn: urn("x"),
            id,
            inputs: None,
            state: None,
            timeout: None,
        })
        .await
        .unwrap();
    assert_eq!(gone.id, "");
    p.cancel().await.unwrap();
    assert!(cloud(&cloud_file).log.contains(&"cancel".to_owned()));
    loader.shutdown().await;
}

#[tokio::test]
async fn each_configured_provider_gets_a_process_of_its_own() {
    let tmp = tempfile::tempdir().unwrap();
    let (a_file, b_file) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    let logs = Logs::default();
    let mut options = options(
        PluginDirectory::new(tmp.path()).with_ambient(false),
        &a_file,
        &logs,
    );
    options.env.push((VERSION_ENV.into(), "9.9.9".into()));
    install(tmp.path(), "9.9.9");
    let loader = PluginLoader::new(options);

    let a = loader.load_plugin("convergetest", None).await.unwrap();
    let b = loader.load_plugin("convergetest", None).await.unwrap();
    assert_eq!(
        a.pid(),
        b.pid(),
        "before Configure both use the shared process"
    );
    a.configure(configure_request(props(&[(
        "cloudFile",
        s(a_file.to_str().unwrap()),
    )])))
    .await
    .unwrap();
    b.configure(configure_request(props(&[(
        "cloudFile",
        s(b_file.to_str().unwrap()),
    )])))
    .await
    .unwrap();
    assert_ne!(a.pid(), b.pid());
    for (p, file) in [(&a, &a_file), (&b, &b_file)] {
        p.create(CreateRequest {
            urn: urn("t"),
            properties: props(&[("value", s("v")), ("size", s("small"))]),
            timeout: None,
            preview: false,
            planned: None,
        })
        .await
        .unwrap();
        assert_eq!(cloud(file).objects.len(), 1);
    }
    // Configure with unknowns (a preview): no call, conservative answers.
    let c = loader.load_plugin("convergetest", None).await.unwrap();
    c.configure(configure_request(props(&[(
        "cloudFile",
        PropertyValue::Unknown,
    )])))
    .await
    .unwrap();
    let created = c
        .create(CreateRequest {
            urn: urn("u"),
            properties: props(&[("value", s("v"))]),
            timeout: None,
            preview: true,
            planned: None,
        })
        .await
        .unwrap();
    assert_eq!(created.properties, props(&[("value", s("v"))]));

    // Dropping a configured provider kills its process.
    let pid = a.pid().unwrap();
    drop(a);
    assert!(wait_dead(pid, Duration::from_secs(5)).await);
    loader.shutdown().await;
}

#[tokio::test]
async fn schema_tokens_are_asked_once_per_plugin_version() {
    let tmp = tempfile::tempdir().unwrap();
    let plugins = tmp.path().join("plugins");
    install(&plugins, "1.0.0");
    install(&plugins, "2.1.0");
    let logs = Logs::default();
    let loader = loader(dir_only(&plugins), &tmp.path().join("c.json"), &logs);

    let one = loader
        .load_plugin("convergetest", Some(&v("1.0.0")))
        .await
        .unwrap();
    let schema = one.schema().await.unwrap();
    assert_eq!(schema.version.as_deref(), Some("1.0.0"));
    assert_eq!(
        schema.resolve(MemberKind::Resource, "convergetest:Thing"),
        Ok(THING)
    );
    assert_eq!(
        schema.resolve(MemberKind::Function, "convergetest:count"),
        Ok(COUNT)
    );
    // With the properties of each member.
    let thing = schema.resource_spec(THING).unwrap();
    assert!(thing.output("length").is_some() && thing.output("lenght").is_none());
    assert!(thing.inputs.as_ref().unwrap().contains_key("value"));
    let count = schema.function_spec(COUNT).unwrap();
    let TypeSpec::Object(result) = &count.result else {
        panic!("{count:?}")
    };
    assert_eq!(result.get("count"), Some(&TypeSpec::Number));
    // Another provider of the same plugin and version: the cached answer.
    let again = loader
        .load_plugin("convergetest", Some(&v("1.0.0")))
        .await
        .unwrap();
    assert!(Arc::ptr_eq(&schema, &again.schema().await.unwrap()));
    // Another version is asked itself.
    let two = loader
        .load_plugin("convergetest", Some(&v("2.0.0")))
        .await
        .unwrap();
    assert_eq!(
        two.schema().await.unwrap().version.as_deref(),
        Some("2.1.0")
    );
    loader.shutdown().await;
}

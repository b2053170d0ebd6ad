//! Cancel and shutdown against a real Go provider (go-plugin): `cancel`
//! sends `StopProvider` to the configured process, as Terraform does on an
//! interrupt, and `shutdown` ends every process through go-plugin's
//! `Shutdown` (each logs `exit`; none is killed). Skipped without
//! `CONVERGE_TEST_GO` (fails under `CI=true`).

#![cfg(unix)]

use converge_model::PropertyValue;
use converge_plugin::provider::ConfigureRequest;
use converge_plugin::terraform::discovery::{current_os_arch, DiscoveryOptions};
use converge_plugin::terraform::process::LaunchOptions;
use converge_plugin::ProviderLoader;
use converge_terraform::{TerraformLoader, TerraformLoaderOptions};
use converge_testkit::go_provider::{self, Events};

#[tokio::test]
async fn cancel_stops_the_configured_process_and_shutdown_ends_every_one() {
    if !go_provider::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror");
    go_provider::install(&mirror, "2.0.0");
    let events = dir.path().join("events.log");
    let loader = TerraformLoader::new(TerraformLoaderOptions {
        discovery: DiscoveryOptions {
            dirs: vec![mirror],
            os_arch: current_os_arch(),
        },
        launch: LaunchOptions {
            env: vec![(go_provider::EVENTS_ENV.into(), events.clone().into())],
            ..LaunchOptions::default()
        },
        ..TerraformLoaderOptions::default()
    });
    let mut inputs = converge_model::PropertyMap::new();
    inputs.insert(
        "directory".to_owned(),
        PropertyValue::from(dir.path().display().to_string()),
    );
    // Two instances configured alike share one configured process.
    for _ in 0..2 {
        let provider = loader.load("gostore", None).await.unwrap();
        provider
            .configure(ConfigureRequest {
                urn: None,
                inputs: inputs.clone(),
                accept_secrets: true,
                accept_resources: true,
            })
            .await
            .unwrap();
        provider.cancel().await.unwrap();
    }
    loader.shutdown().await;
    let e = Events::read(&events);
    let configured = e.pids("configure");
    assert_eq!(configured.len(), 1, "{e:?}");
    assert_eq!(e.pids("stop"), vec![configured[0], configured[0]], "{e:?}");
    let started = e.pids("start");
    assert_eq!(
        started.len(),
        2,
        "the schema connection and the configured one: {e:?}"
    );
    let exited = e.pids("exit");
    for pid in started {
        assert!(
            exited.contains(&pid),
            "{pid} did not end through Shutdown: {e:?}"
        );
    }
}

/// A read past its custom timeout: the provider is told to stop and the
/// read fails naming the timeout (the state keeps the object).
#[tokio::test]
async fn a_read_past_its_custom_timeout_stops_the_provider() {
    if !go_provider::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror");
    go_provider::install(&mirror, "2.0.0");
    let events = dir.path().join("events.log");
    let loader = TerraformLoader::new(TerraformLoaderOptions {
        discovery: DiscoveryOptions {
            dirs: vec![mirror],
            os_arch: current_os_arch(),
        },
        launch: LaunchOptions {
            env: vec![(go_provider::EVENTS_ENV.into(), events.clone().into())],
            ..LaunchOptions::default()
        },
        ..TerraformLoaderOptions::default()
    });
    let mut config = converge_model::PropertyMap::new();
    config.insert(
        "directory".to_owned(),
        PropertyValue::from(dir.path().display().to_string()),
    );
    config.insert("readDelayMs".to_owned(), PropertyValue::Number(5000.0));
    let provider = loader.load("gostore", None).await.unwrap();
    provider
        .configure(ConfigureRequest {
            urn: None,
            inputs: config,
            accept_secrets: true,
            accept_resources: true,
        })
        .await
        .unwrap();
    let urn =
        converge_model::Urn::new("dev", "p", None, "gostore:index/item:Item", "item").unwrap();
    let mut inputs = converge_model::PropertyMap::new();
    inputs.insert("key".to_owned(), PropertyValue::from("k"));
    inputs.insert("value".to_owned(), PropertyValue::from("v"));
    let created = provider
        .create(converge_plugin::CreateRequest {
            urn: urn.clone(),
            properties: inputs.clone(),
            timeout: None,
            preview: false,
            planned: None,
        })
        .await
        .unwrap();
    let err = provider
        .read(converge_plugin::ReadRequest {
            urn: urn.clone(),
            id: created.id.clone(),
            inputs: Some(inputs),
            state: Some(created.properties),
            timeout: Some(std::time::Duration::from_millis(300)),
        })
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("read did not finish within its custom timeout (300ms)"),
        "{err}"
    );
    assert!(err.contains("was asked to stop"), "{err}");
    loader.shutdown().await;
    let e = Events::read(&events);
    assert_eq!(e.pids("stop").len(), 1, "{e:?}");
}

//! (d) Shutdown sends Cancel, then kills and reaps every plugin process;
//! dropping the loader or a provider kills too.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use converge_plugin::{CreateRequest, Provider, ProviderError, ProviderLoader};

fn create(name: &str) -> CreateRequest {
    CreateRequest {
        urn: urn(name),
        properties: props(&[("value", s("v")), ("size", s("small"))]),
        timeout: None,
        preview: false,
        planned: None,
    }
}

#[tokio::test]
async fn shutdown_cancels_then_kills_every_process() {
    let tmp = tempfile::tempdir().unwrap();
    install(tmp.path(), "1.0.0");
    let cloud_file = tmp.path().join("c.json");
    let logs = Logs::default();
    let loader = loader(dir_only(tmp.path()), &cloud_file, &logs);
    let configured = loader.load_plugin("convergetest", None).await.unwrap();
    configured
        .configure(configure_request(Default::default()))
        .await
        .unwrap();
    configured.create(create("a")).await.unwrap();
    // A second, unconfigured process (the shared one for CheckConfig).
    let spare = loader.load_plugin("convergetest", None).await.unwrap();
    let pids = loader.pids();
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(pids.contains(&configured.pid().unwrap()));
    assert!(pids.contains(&spare.pid().unwrap()));

    let start = Instant::now();
    loader.shutdown().await;
    assert!(start.elapsed() < Duration::from_secs(5));
    for pid in &pids {
        // Reaped, not merely killed: the pid is gone.
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "{pid}"
        );
    }
    assert!(loader.pids().is_empty());
    let log = cloud(&cloud_file).log;
    assert_eq!(log.iter().filter(|l| *l == "cancel").count(), 2, "{log:?}");

    // Nothing runs or starts afterwards.
    let err = configured.create(create("b")).await.unwrap_err();
    assert!(matches!(err, ProviderError::Unavailable(_)), "{err:?}");
    let err = loader.load("convergetest", None).await.unwrap_err();
    assert!(err.to_string().contains("shut down"), "{err}");
    // Idempotent.
    loader.shutdown().await;
}

#[tokio::test]
async fn dropping_the_loader_kills_its_plugins() {
    let tmp = tempfile::tempdir().unwrap();
    install(tmp.path(), "1.0.0");
    let logs = Logs::default();
    let loader = loader(dir_only(tmp.path()), &tmp.path().join("c.json"), &logs);
    let configured = loader.load_plugin("convergetest", None).await.unwrap();
    configured
        .configure(configure_request(Default::default()))
        .await
        .unwrap();
    let spare = loader.load_plugin("convergetest", None).await.unwrap();
    let pids = loader.pids();
    assert_eq!(pids.len(), 2);
    drop(spare);
    drop(loader);
    for pid in pids {
        assert!(
            wait_dead(pid, Duration::from_secs(5)).await,
            "{pid} outlived the loader"
        );
    }
    // The provider that outlived its loader reports it.
    let err = configured.create(create("c")).await.unwrap_err();
    assert!(matches!(err, ProviderError::Unavailable(_)), "{err:?}");
}

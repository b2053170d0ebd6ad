//! (c) Plugins that exit at once, print garbage, stay silent, or die
//! mid-run: clear errors (with their stderr), bounded waits, no process
//! left behind.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use converge_plugin::host::PluginLoader;
use converge_plugin::{CreateRequest, Provider, ProviderError, ProviderLoader, RegistryError};
use converge_test_plugin::MODE_ENV;

/// Loads the plugin installed in a fresh directory with `MODE_ENV=mode`;
/// returns the error text, how long it took, and the install directory.
async fn failed_load(mode: &str, startup: Duration) -> (String, Duration, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    install(tmp.path(), "1.0.0");
    let logs = Logs::default();
    let mut options = options(dir_only(tmp.path()), &tmp.path().join("c.json"), &logs);
    options.env.push((MODE_ENV.into(), mode.into()));
    options.startup_timeout = startup;
    let loader = PluginLoader::new(options);
    let start = Instant::now();
    let err = loader.load("convergetest", None).await.unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(
            &err,
            RegistryError::Provider {
                source: ProviderError::Unavailable(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(loader.pids().is_empty());
    (err.to_string(), took, tmp)
}

fn assert_nothing_left(dir: &tempfile::TempDir) {
    let needle = dir.path().to_str().unwrap().to_owned();
    let left = processes_mentioning(&needle);
    assert!(left.is_empty(), "plugin processes left behind: {left:?}");
}

#[tokio::test]
async fn a_plugin_that_exits_at_once_is_reported_with_its_stderr() {
    let (msg, took, dir) = failed_load("exit", Duration::from_secs(20)).await;
    assert!(msg.contains("exited before printing its port"), "{msg}");
    assert!(msg.contains("exit status: 3"), "{msg}");
    assert!(msg.contains("exiting at once, as asked"), "{msg}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_nothing_left(&dir);
}

#[tokio::test]
async fn a_plugin_that_prints_garbage_is_reported_and_killed() {
    let (msg, took, dir) = failed_load("garbage", Duration::from_secs(20)).await;
    assert!(msg.contains("instead of its port"), "{msg}");
    assert!(
        msg.contains("hello from convergetest, this is not a port"),
        "{msg}"
    );
    assert!(msg.contains("printing garbage"), "{msg}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_nothing_left(&dir);
}

#[tokio::test]
async fn a_silent_plugin_times_out_and_is_killed() {
    let (msg, took, dir) = failed_load("silent", Duration::from_millis(700)).await;
    assert!(msg.contains("did not print its port within 700ms"), "{msg}");
    assert!(msg.contains("saying nothing"), "{msg}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_nothing_left(&dir);
}

#[tokio::test]
async fn a_plugin_that_dies_mid_run_is_unavailable_with_its_exit_status() {
    let tmp = tempfile::tempdir().unwrap();
    install(tmp.path(), "1.0.0");
    let logs = Logs::default();
    let loader = loader(dir_only(tmp.path()), &tmp.path().join("c.json"), &logs);
    let p = loader.load_plugin("convergetest", None).await.unwrap();
    p.configure(configure_request(Default::default()))
        .await
        .unwrap();
    let pid = p.pid().unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(wait_dead(pid, Duration::from_secs(5)).await);
    let start = Instant::now();
    let err = p
        .create(CreateRequest {
            urn: urn("x"),
            properties: props(&[("value", s("v"))]),
            timeout: None,
            preview: false,
            planned: None,
        })
        .await
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(10));
    let ProviderError::Unavailable(msg) = &err else {
        panic!("{err:?}");
    };
    assert!(msg.starts_with("Create: "), "{msg}");
    assert!(msg.contains("exited: signal: 9"), "{msg}");
    assert!(msg.contains("serving on port"), "{msg}");
    // A new provider gets a new process.
    let again = loader.load_plugin("convergetest", None).await.unwrap();
    assert_ne!(again.pid(), Some(pid));
    loader.shutdown().await;
}

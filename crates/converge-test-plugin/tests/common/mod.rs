//! Helpers shared by the plugin host tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use converge_model::{PropertyMap, PropertyValue, Urn};
use converge_plugin::host::{PluginDirectory, PluginLoader, PluginLoaderOptions, PluginLogLine};
use converge_plugin::ConfigureRequest;
use converge_test_plugin::{Cloud, CLOUD_FILE_ENV, PACKAGE};

/// The plugin binary Cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_pulumi-resource-convergetest");

pub fn exe_name() -> String {
    format!("pulumi-resource-{PACKAGE}")
}

/// Installs the plugin as `resource-convergetest-v<version>/…` in
/// `plugins` (a symlink: the plugin reads its version from the directory
/// it was started from).
pub fn install(plugins: &Path, version: &str) -> PathBuf {
    let dir = plugins.join(format!("resource-{PACKAGE}-v{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(exe_name());
    std::os::unix::fs::symlink(BIN, &exe).unwrap();
    exe
}

/// A directory holding `pulumi-resource-convergetest` (for PATH).
pub fn bin_dir(root: &Path) -> PathBuf {
    let dir = root.join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(BIN, dir.join(exe_name())).unwrap();
    dir
}

/// Collected plugin log lines.
#[derive(Debug, Clone, Default)]
pub struct Logs(pub Arc<Mutex<Vec<PluginLogLine>>>);

impl Logs {
    pub fn lines(&self) -> Vec<PluginLogLine> {
        self.0.lock().unwrap().clone()
    }

    pub fn contains(&self, needle: &str) -> bool {
        self.lines().iter().any(|l| l.message.contains(needle))
    }
}

/// Options over `directory` with the cloud file in the env and a logger.
pub fn options(directory: PluginDirectory, cloud: &Path, logs: &Logs) -> PluginLoaderOptions {
    let sink = logs.0.clone();
    PluginLoaderOptions {
        directory,
        env: vec![(CLOUD_FILE_ENV.into(), cloud.into())],
        startup_timeout: Duration::from_secs(20),
        shutdown_grace: Duration::from_secs(2),
        logger: Some(Arc::new(move |line: &PluginLogLine| {
            sink.lock().unwrap().push(line.clone());
        })),
        ..PluginLoaderOptions::default()
    }
}

/// A plugin directory only (no PATH).
pub fn dir_only(plugins: &Path) -> PluginDirectory {
    PluginDirectory::new(plugins).with_ambient(false)
}

pub fn loader(directory: PluginDirectory, cloud: &Path, logs: &Logs) -> PluginLoader {
    PluginLoader::new(options(directory, cloud, logs))
}

pub fn cloud(path: &Path) -> Cloud {
    Cloud::load(path).unwrap()
}

pub fn s(v: &str) -> PropertyValue {
    PropertyValue::from(v)
}

pub fn props(pairs: &[(&str, PropertyValue)]) -> PropertyMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

pub fn urn(name: &str) -> Urn {
    Urn::parse(&format!(
        "urn:pulumi:test::proj::convergetest:index:Thing::{name}"
    ))
    .unwrap()
}

pub fn provider_urn() -> Urn {
    Urn::parse("urn:pulumi:test::proj::pulumi:providers:convergetest::default").unwrap()
}

pub fn configure_request(inputs: PropertyMap) -> ConfigureRequest {
    ConfigureRequest {
        urn: Some(provider_urn()),
        inputs,
        accept_secrets: true,
        accept_resources: true,
    }
}

/// True while `pid` is a live (not zombie) process.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
    }
}

/// Waits (bounded) until `pid` is dead.
pub async fn wait_dead(pid: u32, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    !alive(pid)
}

/// Live processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        })
        .filter(|pid| alive(*pid))
        .collect()
}

//! The plugin host against fake plugins (shell scripts): discovery in the
//! plugin directory and on PATH, version choice, and plugins that fail to
//! start. Real gRPC plugins are tested in `converge-test-plugin`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use converge_plugin::host::{ChainLoader, PluginDirectory, PluginLoader, PluginLoaderOptions};
use converge_plugin::{ProviderError, ProviderLoader, RegistryError};
use semver::Version;

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

fn script(path: &Path, body: &str) -> PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_owned()
}

fn install(plugins: &Path, package: &str, version: &str, body: &str) -> PathBuf {
    script(
        &plugins
            .join(format!("resource-{package}-v{version}"))
            .join(format!("pulumi-resource-{package}")),
        body,
    )
}

fn loader(directory: PluginDirectory) -> PluginLoader {
    PluginLoader::new(PluginLoaderOptions {
        directory,
        startup_timeout: Duration::from_secs(2),
        shutdown_grace: Duration::from_secs(1),
        ..PluginLoaderOptions::default()
    })
}

#[test]
fn the_plugin_directory_lists_executables_by_version() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    install(p, "aws", "5.1.0", "exit 0");
    install(p, "aws", "6.0.0", "exit 0");
    install(p, "aws", "6.2.1", "exit 0");
    install(p, "azure-native", "2.0.0", "exit 0");
    install(p, "azure", "1.0.0", "exit 0");
    // Not executable, not a version, unfinished: ignored.
    let plain = install(p, "aws", "7.0.0", "exit 0");
    std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::create_dir_all(p.join("resource-aws-vlatest")).unwrap();
    install(p, "aws", "8.0.0", "exit 0");
    std::fs::write(p.join("resource-aws-v8.0.0.partial"), "").unwrap();

    let dir = PluginDirectory::new(p).with_ambient(false);
    let versions = |pkg| -> Vec<String> {
        dir.installed(pkg)
            .into_iter()
            .map(|i| i.version.to_string())
            .collect()
    };
    assert_eq!(versions("aws"), ["5.1.0", "6.0.0", "6.2.1"]);
    assert_eq!(versions("azure"), ["1.0.0"]);
    assert_eq!(versions("azure-native"), ["2.0.0"]);
    assert!(versions("gcp").is_empty());

    assert_eq!(dir.select("aws", None).unwrap().version, v("6.2.1"));
    assert_eq!(
        dir.select("aws", Some(&v("5.0.0"))).unwrap().version,
        v("5.1.0")
    );
    assert_eq!(
        dir.select("aws", Some(&v("6.1.0"))).unwrap().version,
        v("6.2.1")
    );
    let err = dir.select("aws", Some(&v("6.3.0"))).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "no aws plugin compatible with version 6.3.0 (^6.3.0) is installed in {} \
             (installed versions: 5.1.0, 6.0.0, 6.2.1) or on PATH",
            p.display()
        )
    );
    assert_eq!(
        dir.select("aws", None).unwrap().path,
        p.join("resource-aws-v6.2.1/pulumi-resource-aws")
    );
    // A missing directory holds nothing.
    assert!(PluginDirectory::new(p.join("nope"))
        .installed("aws")
        .is_empty());
}

#[test]
fn ambient_plugins_come_from_the_search_path() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = (tmp.path().join("a"), tmp.path().join("b"));
    script(&second.join("pulumi-resource-foo"), "exit 0");
    let path = std::env::join_paths([&first, &second]).unwrap();
    let dir = PluginDirectory::new(tmp.path().join("plugins")).with_search_path(&path);
    assert_eq!(
        dir.clone().with_ambient(true).ambient("foo"),
        Some(second.join("pulumi-resource-foo"))
    );
    assert_eq!(dir.clone().with_ambient(true).ambient("bar"), None);
    assert_eq!(dir.with_ambient(false).ambient("foo"), None);
}

#[test]
fn the_default_directory_follows_pulumi_home() {
    // Read-only look at the environment: the rule, not a particular value.
    let expected = match std::env::var_os("PULUMI_HOME") {
        Some(h) if !h.is_empty() => Some(PathBuf::from(h).join("plugins")),
        _ => dirs_home().map(|h| h.join(".pulumi/plugins")),
    };
    assert_eq!(PluginDirectory::default_dir(), expected);
}

fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME").map(PathBuf::from)
}

async fn load_error(loader: &PluginLoader, package: &str) -> (String, Duration) {
    let start = Instant::now();
    let err = loader.load(package, None).await.unwrap_err();
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
    (err.to_string(), took)
}

#[tokio::test]
async fn a_plugin_that_exits_reports_its_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    install(
        tmp.path(),
        "foo",
        "1.0.0",
        "echo 'starting' >&2; echo 'fatal: no credentials' >&2; exit 7",
    );
    let loader = loader(PluginDirectory::new(tmp.path()).with_ambient(false));
    let (msg, took) = load_error(&loader, "foo").await;
    assert!(
        msg.contains("exited before printing its port (exit status: 7)"),
        "{msg}"
    );
    assert!(msg.contains("starting\n  fatal: no credentials"), "{msg}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[tokio::test]
async fn garbage_silence_and_dead_ports_fail_within_bounds() {
    let tmp = tempfile::tempdir().unwrap();
    install(
        tmp.path(),
        "garbage",
        "1.0.0",
        "echo 'listening on :8080'; sleep 30",
    );
    install(tmp.path(), "silent", "1.0.0", "sleep 30");
    install(tmp.path(), "noport", "1.0.0", "exec 1>&-; sleep 30");
    install(tmp.path(), "dead", "1.0.0", "echo 1; sleep 30");
    let loader = loader(PluginDirectory::new(tmp.path()).with_ambient(false));

    let (msg, took) = load_error(&loader, "garbage").await;
    assert!(
        msg.contains(r#"printed "listening on :8080" instead of its port"#),
        "{msg}"
    );
    assert!(msg.contains("it wrote nothing to stderr"), "{msg}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    let (msg, took) = load_error(&loader, "silent").await;
    assert!(msg.contains("did not print its port within 2s"), "{msg}");
    assert!(took < Duration::from_secs(6), "{took:?}");

    let (msg, took) = load_error(&loader, "noport").await;
    assert!(msg.contains("exited before printing its port"), "{msg}");
    assert!(took < Duration::from_secs(6), "{took:?}");

    let (msg, took) = load_error(&loader, "dead").await;
    assert!(
        msg.contains("printed port 1 but could not be connected to"),
        "{msg}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert!(loader.pids().is_empty());
}

#[tokio::test]
async fn a_broken_installed_plugin_is_reported_not_replaced_by_the_builtin() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    script(
        &bin.join("pulumi-resource-random"),
        "echo 'random: broken' >&2; exit 1",
    );
    let directory = PluginDirectory::new(tmp.path().join("plugins")).with_search_path(&bin);
    let plugins = Arc::new(loader(directory.with_ambient(true)));
    let chain = ChainLoader::plugins_then_builtins(plugins);
    let err = chain.load("random", None).await.unwrap_err();
    assert!(err.to_string().contains("random: broken"), "{err}");
    // A package with no plugin at all: the built-in serves it.
    let provider = chain.load("command", None).await.unwrap();
    assert_eq!(provider.package(), "command");
    // Neither knows it.
    let err = chain
        .load("nosuchpkg", Some(&v("1.0.0")))
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(concat!(
            "no provider plugin found for package nosuchpkg version ^1.0.0",
            " (looked for"
        )),
        "{err}"
    );
}

//! Converge's test Terraform providers, installed where OpenTofu
//! and `converge_plugin::terraform::discovery` look for providers: the
//! unpacked local mirror layout
//! `MIRROR/registry.opentofu.org/converge-test/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION`.
//!
//! The providers are Python files in this crate's `terraform/` directory,
//! written with PyPI's `tf` (a real tfplugin6 server and go-plugin
//! handshake). The installed executable is a small `sh` wrapper that runs
//! `$CONVERGE_TEST_TF_PYTHON` (the interpreter with `tf`; `scripts/test`
//! sets it) on the provider's file, with `CONVERGE_TEST_PROVIDER_VERSION`
//! selecting the release, `HOME` pointed beside the wrapper (`tf` caches
//! its TLS key under `~/.cache`) and no bytecode written beside the sources.
//!
//! ```no_run
//! use converge_testkit::terraform_mirror::{install, tf_python, TestProvider};
//!
//! if tf_python().is_none() {
//!     eprintln!("skipped: CONVERGE_TEST_TF_PYTHON is not set");
//!     return;
//! }
//! let mirror = tempfile::tempdir().unwrap();
//! let store = install(mirror.path(), TestProvider::Store, "2.0.0");
//! # let _ = store;
//! ```
//!
//! Unix only: the wrapper is a shell script.

#![cfg(unix)]

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The registry host of the installed providers.
pub const HOST: &str = "registry.opentofu.org";
/// Their namespace.
pub const NAMESPACE: &str = "converge-test";
/// The interpreter with PyPI's `tf`.
pub const TF_PYTHON_ENV: &str = "CONVERGE_TEST_TF_PYTHON";
/// Set by the wrapper: which release the provider file serves.
pub const VERSION_ENV: &str = "CONVERGE_TEST_PROVIDER_VERSION";

/// A test provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TestProvider {
    /// `store`: `store_item` objects as JSON files (resource and data
    /// source); 1.0.0 (schema version 1, `content`) and 2.0.0 (schema
    /// version 2, `value`, `secret_value`, state upgrade, private data).
    Store,
    /// `breaker`: `breaker_thing`, which breaks the contract rule its
    /// `rule` attribute names; 1.0.0.
    Breaker,
}

impl TestProvider {
    /// The provider's TYPE: `store` or `breaker`.
    pub fn type_name(self) -> &'static str {
        match self {
            TestProvider::Store => "store",
            TestProvider::Breaker => "breaker",
        }
    }

    /// The releases [`install`] can install.
    pub fn versions(self) -> &'static [&'static str] {
        match self {
            TestProvider::Store => &["1.0.0", "2.0.0"],
            TestProvider::Breaker => &["1.0.0"],
        }
    }

    /// The environment variable the provider reads its object directory
    /// from when its `directory` configuration is null.
    pub fn directory_env(self) -> &'static str {
        match self {
            TestProvider::Store => "STORE_DIRECTORY",
            TestProvider::Breaker => "BREAKER_DIRECTORY",
        }
    }

    /// The provider's Python file (absolute).
    pub fn source(self) -> PathBuf {
        let file = match self {
            TestProvider::Store => "store_provider.py",
            TestProvider::Breaker => "breaker_provider.py",
        };
        sources_dir().join(file)
    }
}

/// This crate's `terraform/` directory, where the providers' Python files
/// are.
pub fn sources_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("terraform")
}

/// `$CONVERGE_TEST_TF_PYTHON` when set and not empty; tests that need a
/// test provider skip with a message when it is `None`.
pub fn tf_python() -> Option<OsString> {
    std::env::var_os(TF_PYTHON_ENV).filter(|v| !v.is_empty())
}

/// Installs `provider` at `version` under `mirror_root` in OpenTofu's
/// unpacked layout and returns the executable's path,
/// `mirror_root/registry.opentofu.org/converge-test/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION`
/// (OS_ARCH from `converge_plugin::terraform::discovery::current_os_arch`).
/// Installing again overwrites the wrapper.
///
/// The wrapper runs `$CONVERGE_TEST_TF_PYTHON` as the provider's process
/// sees it, or else the value [`tf_python`] had when this was called (so a
/// provider launched with a cleared environment still starts); with
/// neither it exits with a message naming the variable.
///
/// # Panics
///
/// On a version that [`TestProvider::versions`] does not list, and when the
/// files cannot be written (a test setup failure).
pub fn install(mirror_root: &Path, provider: TestProvider, version: &str) -> PathBuf {
    assert!(
        provider.versions().contains(&version),
        "the test provider {} has no version {version}; it has {}",
        provider.type_name(),
        provider.versions().join(", ")
    );
    let type_name = provider.type_name();
    let platform_dir = mirror_root
        .join(HOST)
        .join(NAMESPACE)
        .join(type_name)
        .join(version)
        .join(converge_plugin::terraform::discovery::current_os_arch());
    let home = platform_dir.join(".home");
    std::fs::create_dir_all(&home)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", home.display()));
    let executable = platform_dir.join(format!("terraform-provider-{type_name}_v{version}"));
    let script = wrapper(provider, version, &home);
    std::fs::write(&executable, script)
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", executable.display()));
    std::fs::set_permissions(&executable, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("cannot make {} executable: {e}", executable.display()));
    executable
}

/// The wrapper script's text.
fn wrapper(provider: TestProvider, version: &str, home: &Path) -> Vec<u8> {
    let type_name = provider.type_name();
    let fallback = match tf_python() {
        Some(python) => [b"python=".as_slice(), &quote(python.as_bytes())].concat(),
        None => format!(
            "echo 'terraform-provider-{type_name}: set {TF_PYTHON_ENV} to the Python that has PyPI'\\''s tf (scripts/test sets it)' >&2; exit 1"
        )
        .into_bytes(),
    };
    let mut out = Vec::new();
    out.extend_from_slice(
        format!(
            "#!/bin/sh\n\
             # terraform-provider-{type_name} {version}: Converge's test provider, installed by\n\
             # converge-testkit's terraform_mirror.rs. Runs its Python file with PyPI's tf.\n\
             python=${{{TF_PYTHON_ENV}:-}}\n\
             [ -n \"$python\" ] || "
        )
        .as_bytes(),
    );
    out.extend_from_slice(&fallback);
    out.extend_from_slice(format!("\nexport {VERSION_ENV}={version}\n").as_bytes());
    // No __pycache__ written into the source tree.
    out.extend_from_slice(b"export PYTHONDONTWRITEBYTECODE=1\n");
    out.extend_from_slice(b"# tf caches its TLS key under ~/.cache.\nexport HOME=");
    out.extend_from_slice(&quote(home.as_os_str().as_bytes()));
    out.extend_from_slice(b"\nexec \"$python\" ");
    out.extend_from_slice(&quote(provider.source().as_os_str().as_bytes()));
    out.extend_from_slice(b" \"$@\"\n");
    out
}

/// `text` as one single-quoted shell word.
fn quote(text: &[u8]) -> Vec<u8> {
    let mut out = vec![b'\''];
    for &byte in text {
        if byte == b'\'' {
            out.extend_from_slice(b"'\\''");
        } else {
            out.push(byte);
        }
    }
    out.push(b'\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use converge_plugin::terraform::discovery::{installed, DiscoveryOptions};

    #[test]
    fn discovery_finds_what_install_wrote() {
        let mirror = tempfile::tempdir().unwrap();
        let v1 = install(mirror.path(), TestProvider::Store, "1.0.0");
        let v2 = install(mirror.path(), TestProvider::Store, "2.0.0");
        let breaker = install(mirror.path(), TestProvider::Breaker, "1.0.0");
        let options = DiscoveryOptions {
            dirs: vec![mirror.path().to_path_buf()],
            os_arch: converge_plugin::terraform::discovery::current_os_arch(),
        };
        let found = installed("store", &options);
        let versions: Vec<String> = found.iter().map(|f| f.version.to_string()).collect();
        assert_eq!(versions, ["2.0.0", "1.0.0"]);
        assert_eq!(found[0].executable, v2);
        assert_eq!(found[1].executable, v1);
        assert_eq!(found[0].host, HOST);
        assert_eq!(found[0].namespace, NAMESPACE);
        assert_eq!(installed("breaker", &options)[0].executable, breaker);
        assert!(v2.ends_with(format!(
            "registry.opentofu.org/converge-test/store/2.0.0/{}/terraform-provider-store_v2.0.0",
            converge_plugin::terraform::discovery::current_os_arch()
        )));
    }

    #[test]
    fn the_wrapper_selects_the_version_and_runs_the_provider_file() {
        let mirror = tempfile::tempdir().unwrap();
        let exe = install(mirror.path(), TestProvider::Store, "1.0.0");
        let text = String::from_utf8(std::fs::read(&exe).unwrap()).unwrap();
        assert!(text.starts_with("#!/bin/sh\n"), "{text}");
        assert!(
            text.contains("export CONVERGE_TEST_PROVIDER_VERSION=1.0.0\n"),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "exec \"$python\" '{}' \"$@\"",
                TestProvider::Store.source().display()
            )),
            "{text}"
        );
        assert!(TestProvider::Store.source().is_file());
        assert!(TestProvider::Breaker.source().is_file());
        let mode = std::fs::metadata(&exe).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "executable");
    }

    #[test]
    fn quoting_survives_single_quotes() {
        assert_eq!(quote(b"/a b/it's"), b"'/a b/it'\\''s'".to_vec());
    }

    #[test]
    #[should_panic(expected = "has no version 3.0.0; it has 1.0.0, 2.0.0")]
    fn an_unknown_version_is_refused() {
        let mirror = tempfile::tempdir().unwrap();
        install(mirror.path(), TestProvider::Store, "3.0.0");
    }
}

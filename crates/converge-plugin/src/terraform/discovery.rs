//! Where Terraform providers are found: OpenTofu's unpacked local layout,
//! `DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION`
//! (or `terraform-provider-TYPE`), under `TF_PLUGIN_CACHE_DIR`,
//! `~/.terraform.d/plugins` and `$XDG_DATA_HOME/terraform/plugins`
//! (`~/.local/share/terraform/plugins`). A provider is picked by TYPE, the
//! current OS_ARCH and the newest version (or the one asked for).

use std::path::{Path, PathBuf};

/// A provider executable found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundProvider {
    pub executable: PathBuf,
    pub host: String,
    pub namespace: String,
    pub type_name: String,
    pub version: semver::Version,
}

/// Where and for which platform to look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveryOptions {
    /// Searched in order; at equal versions the earlier directory wins.
    pub dirs: Vec<PathBuf>,
    /// `linux_amd64`, `darwin_arm64`, ...
    pub os_arch: String,
}

impl DiscoveryOptions {
    /// The directories OpenTofu reads, from the environment, for this
    /// platform.
    pub fn from_environment() -> DiscoveryOptions {
        let mut dirs = Vec::new();
        if let Some(cache) = std::env::var_os("TF_PLUGIN_CACHE_DIR").filter(|v| !v.is_empty()) {
            dirs.push(PathBuf::from(cache));
        }
        if let Some(home) = dirs::home_dir() {
            dirs.push(home.join(".terraform.d").join("plugins"));
        }
        if let Some(data) = dirs::data_dir() {
            dirs.push(data.join("terraform").join("plugins"));
        }
        DiscoveryOptions {
            dirs,
            os_arch: current_os_arch(),
        }
    }
}

/// Terraform's name for this platform: Go's GOOS_GOARCH.
pub fn current_os_arch() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "arm" => "arm",
        other => other,
    };
    format!("{os}_{arch}")
}

/// Why no provider was picked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    #[error("no Terraform provider {type_name:?} for {os_arch} in {}; install it as HOST/NAMESPACE/{type_name}/VERSION/{os_arch}/terraform-provider-{type_name}_vVERSION under one of them", list(.searched))]
    NotFound {
        type_name: String,
        os_arch: String,
        searched: Vec<PathBuf>,
    },
    #[error("Terraform provider {type_name:?} version {requested} is not installed for {os_arch}; found {}", .available.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    VersionNotFound {
        type_name: String,
        os_arch: String,
        requested: semver::Version,
        available: Vec<semver::Version>,
    },
}

fn list(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "no directory (no home directory and no TF_PLUGIN_CACHE_DIR)".to_owned();
    }
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every installed provider of `type_name` for the platform, newest first
/// (at equal versions, in directory order).
pub fn installed(type_name: &str, options: &DiscoveryOptions) -> Vec<FoundProvider> {
    let mut found = Vec::new();
    for dir in &options.dirs {
        for (host, host_dir) in subdirs(dir) {
            for (namespace, ns_dir) in subdirs(&host_dir) {
                let type_dir = ns_dir.join(type_name);
                for (version_text, version_dir) in subdirs(&type_dir) {
                    let Ok(version) = semver::Version::parse(
                        version_text.strip_prefix('v').unwrap_or(&version_text),
                    ) else {
                        continue;
                    };
                    let platform_dir = version_dir.join(&options.os_arch);
                    let candidates = [
                        format!("terraform-provider-{type_name}_v{version_text}"),
                        format!("terraform-provider-{type_name}_v{version}"),
                        format!("terraform-provider-{type_name}"),
                    ];
                    if let Some(executable) = candidates
                        .iter()
                        .map(|name| platform_dir.join(name))
                        .find(|path| path.is_file())
                    {
                        found.push(FoundProvider {
                            executable,
                            host: host.clone(),
                            namespace: namespace.clone(),
                            type_name: type_name.to_owned(),
                            version,
                        });
                    }
                }
            }
        }
    }
    // Stable: equal versions keep directory order.
    found.sort_by(|a, b| b.version.cmp(&a.version));
    found
}

/// Every installed provider of every TYPE for the platform, by TYPE, then
/// newest first (what `converge plugin ls` shows).
pub fn all_installed(options: &DiscoveryOptions) -> Vec<FoundProvider> {
    let mut types: Vec<String> = options
        .dirs
        .iter()
        .flat_map(|dir| subdirs(dir))
        .flat_map(|(_, host_dir)| subdirs(&host_dir))
        .flat_map(|(_, ns_dir)| subdirs(&ns_dir))
        .map(|(type_name, _)| type_name)
        .collect();
    types.sort();
    types.dedup();
    types.iter().flat_map(|t| installed(t, options)).collect()
}

/// The provider of `type_name` to run: the requested version, or the newest.
pub fn find(
    type_name: &str,
    version: Option<&semver::Version>,
    options: &DiscoveryOptions,
) -> Result<FoundProvider, DiscoveryError> {
    let found = installed(type_name, options);
    if found.is_empty() {
        return Err(DiscoveryError::NotFound {
            type_name: type_name.to_owned(),
            os_arch: options.os_arch.clone(),
            searched: options.dirs.clone(),
        });
    }
    match version {
        None => Ok(found.into_iter().next().expect("not empty")),
        Some(requested) => {
            let available: Vec<semver::Version> = found.iter().map(|f| f.version.clone()).collect();
            found
                .into_iter()
                .find(|f| &f.version == requested)
                .ok_or_else(|| DiscoveryError::VersionNotFound {
                    type_name: type_name.to_owned(),
                    os_arch: options.os_arch.clone(),
                    requested: requested.clone(),
                    available,
                })
        }
    }
}

/// The subdirectories of `dir` with UTF-8 names, sorted by name; none if
/// `dir` is missing or unreadable.
fn subdirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| Some((e.file_name().into_string().ok()?, e.path())))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install(root: &Path, ns: &str, type_name: &str, version: &str, os_arch: &str, file: &str) {
        let dir = root
            .join("registry.opentofu.org")
            .join(ns)
            .join(type_name)
            .join(version)
            .join(os_arch);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(file), "#!/bin/sh\n").unwrap();
    }

    fn options(dirs: &[&Path]) -> DiscoveryOptions {
        DiscoveryOptions {
            dirs: dirs.iter().map(|d| d.to_path_buf()).collect(),
            os_arch: "linux_amd64".to_owned(),
        }
    }

    fn v(text: &str) -> semver::Version {
        semver::Version::parse(text).unwrap()
    }

    #[test]
    fn the_newest_version_for_the_platform_wins() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        install(
            a.path(),
            "hashicorp",
            "random",
            "3.5.0",
            "linux_amd64",
            "terraform-provider-random_v3.5.0",
        );
        install(
            b.path(),
            "hashicorp",
            "random",
            "3.10.0",
            "linux_amd64",
            "terraform-provider-random",
        );
        install(
            b.path(),
            "hashicorp",
            "random",
            "4.0.0",
            "darwin_arm64",
            "terraform-provider-random_v4.0.0",
        );
        install(
            b.path(),
            "hashicorp",
            "null",
            "9.0.0",
            "linux_amd64",
            "terraform-provider-null_v9.0.0",
        );
        install(
            a.path(),
            "hashicorp",
            "random",
            "not-a-version",
            "linux_amd64",
            "terraform-provider-random",
        );
        let found = find("random", None, &options(&[a.path(), b.path()])).unwrap();
        assert_eq!(found.version, v("3.10.0"));
        assert_eq!(found.host, "registry.opentofu.org");
        assert_eq!(found.namespace, "hashicorp");
        assert!(found
            .executable
            .ends_with("3.10.0/linux_amd64/terraform-provider-random"));
        let all: Vec<_> = installed("random", &options(&[a.path(), b.path()]))
            .into_iter()
            .map(|f| f.version.to_string())
            .collect();
        assert_eq!(all, ["3.10.0", "3.5.0"]);
        let every: Vec<_> = all_installed(&options(&[a.path(), b.path()]))
            .into_iter()
            .map(|f| format!("{}@{}", f.type_name, f.version))
            .collect();
        assert_eq!(every, ["null@9.0.0", "random@3.10.0", "random@3.5.0"]);
    }

    #[test]
    fn a_requested_version_and_ties_in_directory_order() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        install(
            a.path(),
            "first",
            "hello",
            "1.0.0",
            "linux_amd64",
            "terraform-provider-hello_v1.0.0",
        );
        install(
            b.path(),
            "second",
            "hello",
            "1.0.0",
            "linux_amd64",
            "terraform-provider-hello_v1.0.0",
        );
        install(
            b.path(),
            "second",
            "hello",
            "2.0.0",
            "linux_amd64",
            "terraform-provider-hello_v2.0.0",
        );
        let opts = options(&[a.path(), b.path()]);
        let one = find("hello", Some(&v("1.0.0")), &opts).unwrap();
        assert_eq!(one.namespace, "first");
        assert_eq!(find("hello", None, &opts).unwrap().version, v("2.0.0"));
        let err = find("hello", Some(&v("3.0.0")), &opts).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Terraform provider \"hello\" version 3.0.0 is not installed for linux_amd64; found 2.0.0, 1.0.0, 1.0.0"
        );
    }

    #[test]
    fn nothing_installed_names_the_directories_and_the_layout() {
        let a = tempfile::tempdir().unwrap();
        install(
            a.path(),
            "x",
            "hello",
            "1.0.0",
            "linux_amd64",
            "not-the-provider",
        );
        let err = find(
            "hello",
            None,
            &options(&[a.path(), Path::new("/nonexistent")]),
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("/nonexistent"), "{text}");
        assert!(
            text.contains(
                "HOST/NAMESPACE/hello/VERSION/linux_amd64/terraform-provider-hello_vVERSION"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_platform_is_named_as_go_does() {
        let os_arch = current_os_arch();
        assert!(
            !os_arch.contains("x86_64") && !os_arch.contains("macos"),
            "{os_arch}"
        );
    }
}

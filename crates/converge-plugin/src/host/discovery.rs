//! Where provider plugins are installed, and which one serves a request.
//!
//! Two places, as Pulumi (PROTOCOL.md, "Provider plugins"):
//!
//! - the **plugin directory** (`$PULUMI_HOME/plugins`, else
//!   `~/.pulumi/plugins`): `resource-<pkg>-v<semver>/pulumi-resource-<pkg>`.
//!   A directory with a `resource-<pkg>-v<semver>.partial` marker beside it
//!   is an unfinished install and is skipped;
//! - **ambient** plugins: an executable `pulumi-resource-<pkg>` on `PATH`.
//!   Its version is unknown until it is asked (`GetPluginInfo`), so only the
//!   loader, which can launch it, decides about it (see
//!   [`super::PluginLoader`]). `PULUMI_IGNORE_AMBIENT_PLUGINS=1|true`
//!   turns the `PATH` search off, as in Pulumi.
//!
//! Selection (seed 001): the newest installed version [`is_compatible`]
//! with the requested one (Cargo's caret rule); with no request, the newest.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use semver::{Comparator, Op, Version};

/// The executable name of the resource plugin of `package`.
pub fn executable_name(package: &str) -> String {
    format!("pulumi-resource-{package}")
}

/// The directory name of an installed `package` at `version`.
pub fn install_dir_name(package: &str, version: &Version) -> String {
    format!("resource-{package}-v{version}")
}

/// Whether an installed `available` version satisfies a request for
/// `requested`: Cargo's caret rule (`^requested`). Same major version and
/// not older; below 1.0.0 the same minor (below 0.1.0 the same patch). A
/// pre-release is only chosen for a request naming a pre-release of the same
/// `major.minor.patch`. The same rule as the testkit's mock loader.
pub fn is_compatible(available: &Version, requested: &Version) -> bool {
    Comparator {
        op: Op::Caret,
        major: requested.major,
        minor: Some(requested.minor),
        patch: Some(requested.patch),
        pre: requested.pre.clone(),
    }
    .matches(available)
}

/// The newest of `versions` that serves `requested` (any, if `None`).
pub fn select_version<'a>(
    versions: impl IntoIterator<Item = &'a Version>,
    requested: Option<&Version>,
) -> Option<&'a Version> {
    versions
        .into_iter()
        .filter(|v| requested.is_none_or(|r| is_compatible(v, r)))
        .max()
}

/// One plugin in the plugin directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledPlugin {
    pub package: String,
    pub version: Version,
    /// The executable.
    pub path: PathBuf,
}

/// No installed plugin serves a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    pub package: String,
    pub requested: Option<Version>,
    /// What is installed (plugin directory only), oldest first.
    pub installed: Vec<Version>,
    /// The plugin directory searched, if there is one.
    pub directory: Option<PathBuf>,
}

impl LookupError {
    /// The request and what is installed, for [`crate::RegistryError::NotFound`]'s
    /// version field: `^3.0.0; installed: 1.0.0, 2.1.0`.
    pub fn version_text(&self) -> Option<String> {
        let installed = if self.installed.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = self.installed.iter().map(ToString::to_string).collect();
            format!("installed: {}", list.join(", "))
        };
        match (&self.requested, installed.is_empty()) {
            (None, true) => None,
            (None, false) => Some(format!("(any; {installed})")),
            (Some(r), true) => Some(format!("^{r}")),
            (Some(r), false) => Some(format!("^{r}; {installed}")),
        }
    }
}

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no {} plugin", self.package)?;
        if let Some(r) = &self.requested {
            write!(f, " compatible with version {r} (^{r})")?;
        }
        write!(f, " is installed")?;
        if let Some(dir) = &self.directory {
            write!(f, " in {}", dir.display())?;
        }
        if !self.installed.is_empty() {
            let list: Vec<String> = self.installed.iter().map(ToString::to_string).collect();
            write!(f, " (installed versions: {})", list.join(", "))?;
        }
        write!(f, " or on PATH")
    }
}

impl std::error::Error for LookupError {}

/// Where plugins are looked for: a plugin directory and (for ambient
/// plugins) a search path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDirectory {
    dir: Option<PathBuf>,
    /// `PATH` to search; `None` reads the environment at lookup time.
    search_path: Option<OsString>,
    ambient: bool,
}

impl Default for PluginDirectory {
    fn default() -> Self {
        PluginDirectory::from_env()
    }
}

impl PluginDirectory {
    /// Pulumi's plugin directory: `$PULUMI_HOME/plugins`, else
    /// `~/.pulumi/plugins`.
    pub fn default_dir() -> Option<PathBuf> {
        match std::env::var_os("PULUMI_HOME") {
            Some(home) if !home.is_empty() => Some(PathBuf::from(home).join("plugins")),
            _ => dirs::home_dir().map(|h| h.join(".pulumi").join("plugins")),
        }
    }

    /// The default plugin directory and `PATH`, ambient plugins unless
    /// `PULUMI_IGNORE_AMBIENT_PLUGINS` is set.
    pub fn from_env() -> Self {
        PluginDirectory {
            dir: Self::default_dir(),
            search_path: None,
            ambient: !ignore_ambient_from_env(),
        }
    }

    /// `dir` as the plugin directory; `PATH` and ambient plugins as in
    /// [`PluginDirectory::from_env`].
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        PluginDirectory {
            dir: Some(dir.into()),
            ..PluginDirectory::from_env()
        }
    }

    /// No plugin directory at all (ambient plugins only).
    pub fn without_dir(mut self) -> Self {
        self.dir = None;
        self
    }

    /// Searches `path` (a `PATH`-style list) instead of the environment's.
    pub fn with_search_path(mut self, path: impl Into<OsString>) -> Self {
        self.search_path = Some(path.into());
        self
    }

    /// Whether ambient (`PATH`) plugins are considered.
    pub fn with_ambient(mut self, ambient: bool) -> Self {
        self.ambient = ambient;
        self
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    pub fn ambient_enabled(&self) -> bool {
        self.ambient
    }

    /// The installed versions of `package` in the plugin directory, oldest
    /// first. Missing or unreadable directories hold nothing.
    pub fn installed(&self, package: &str) -> Vec<InstalledPlugin> {
        let Some(dir) = &self.dir else {
            return Vec::new();
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let prefix = format!("resource-{package}-v");
        let mut found: Vec<InstalledPlugin> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let version = Version::parse(name.strip_prefix(&prefix)?).ok()?;
                if dir.join(format!("{name}.partial")).exists() {
                    return None;
                }
                let path = entry.path().join(executable_name(package));
                is_executable(&path).then(|| InstalledPlugin {
                    package: package.to_owned(),
                    version,
                    path,
                })
            })
            .collect();
        found.sort_by(|a, b| a.version.cmp(&b.version));
        found
    }

    /// The newest installed plugin of `package` compatible with
    /// `requested` (the newest, if `None`), from the plugin directory.
    pub fn select(
        &self,
        package: &str,
        requested: Option<&Version>,
    ) -> Result<InstalledPlugin, LookupError> {
        let installed = self.installed(package);
        let chosen = select_version(installed.iter().map(|p| &p.version), requested).cloned();
        match chosen {
            Some(v) => Ok(installed
                .into_iter()
                .rfind(|p| p.version == v)
                .unwrap_or_else(|| {
                    unreachable!("a selected version is one of the installed ones")
                })),
            None => Err(LookupError {
                package: package.to_owned(),
                requested: requested.cloned(),
                installed: installed.into_iter().map(|p| p.version).collect(),
                directory: self.dir.clone(),
            }),
        }
    }

    /// The first `pulumi-resource-<package>` executable on the search path,
    /// if ambient plugins are enabled.
    pub fn ambient(&self, package: &str) -> Option<PathBuf> {
        if !self.ambient {
            return None;
        }
        let path = match &self.search_path {
            Some(p) => p.clone(),
            None => std::env::var_os("PATH")?,
        };
        let name = executable_name(package);
        std::env::split_paths(&path)
            .filter(|dir| !dir.as_os_str().is_empty())
            .map(|dir| dir.join(&name))
            .find(|candidate| is_executable(candidate))
    }
}

fn ignore_ambient_from_env() -> bool {
    std::env::var("PULUMI_IGNORE_AMBIENT_PLUGINS")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn caret_selection() {
        let all = [v("1.0.0"), v("1.4.2"), v("2.1.0"), v("0.3.1"), v("0.3.4")];
        assert_eq!(select_version(&all, None), Some(&v("2.1.0")));
        assert_eq!(select_version(&all, Some(&v("1.0.0"))), Some(&v("1.4.2")));
        assert_eq!(select_version(&all, Some(&v("1.5.0"))), None);
        assert_eq!(select_version(&all, Some(&v("2.0.0"))), Some(&v("2.1.0")));
        assert_eq!(select_version(&all, Some(&v("0.3.0"))), Some(&v("0.3.4")));
        assert_eq!(select_version(&all, Some(&v("3.0.0"))), None);
    }

    #[test]
    fn lookup_error_names_what_is_installed() {
        let e = LookupError {
            package: "aws".into(),
            requested: Some(v("3.0.0")),
            installed: vec![v("1.0.0"), v("2.1.0")],
            directory: Some(PathBuf::from("/p")),
        };
        assert_eq!(
            e.to_string(),
            "no aws plugin compatible with version 3.0.0 (^3.0.0) is installed in /p \
             (installed versions: 1.0.0, 2.1.0) or on PATH"
        );
        assert_eq!(e.version_text().unwrap(), "^3.0.0; installed: 1.0.0, 2.1.0");
    }
}

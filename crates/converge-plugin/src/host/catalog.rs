//! Everything in a plugin directory, of every kind, with the metadata
//! `converge plugin ls` shows — as Pulumi's plugin cache lists it.
//!
//! Layout (PROTOCOL.md, "Provider plugins"): one directory per plugin,
//! `<kind>-<name>-v<semver>`, holding `pulumi-<kind>-<name>`. Beside it,
//! `<dir>.lock` (the install lock) and, while an install is unfinished,
//! `<dir>.partial`; a directory with a `.partial` is not installed.
//! Directories ending in `.tmp<digits>` are installs in progress (or
//! left by a crash) and are never plugins.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use semver::Version;

/// The plugin kinds Pulumi knows.
pub const PLUGIN_KINDS: [&str; 5] = ["analyzer", "language", "resource", "converter", "tool"];

/// One plugin directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogEntry {
    pub kind: String,
    pub name: String,
    pub version: Version,
    /// The plugin's directory.
    pub dir: PathBuf,
}

/// [`CatalogEntry`] with its size and times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogMetadata {
    /// Bytes of every file under the plugin's directory.
    pub size: u64,
    /// When the directory last changed (its ctime; Pulumi's install time).
    pub installed: Option<SystemTime>,
    /// When the directory was last accessed.
    pub last_used: Option<SystemTime>,
}

/// The directory name of a plugin: `<kind>-<name>-v<version>`.
pub fn plugin_dir_name(kind: &str, name: &str, version: &Version) -> String {
    format!("{kind}-{name}-v{version}")
}

/// Whether `name` is a plugin name Pulumi accepts: letters, digits and
/// `-`, `_`, `.` inside, starting with a letter, digit or `-` and ending
/// with a letter or digit.
pub fn is_valid_plugin_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    (first.is_ascii_alphanumeric() || *first == b'-')
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A temporary directory of an install (`….tmp<digits>`).
pub fn is_temp_dir_name(name: &str) -> bool {
    name.rsplit_once(".tmp")
        .is_some_and(|(_, digits)| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Parses `<kind>-<name>-v<version>`; the name is everything up to the
/// last `-v`, as Pulumi's greedy pattern reads it.
pub fn parse_plugin_dir_name(dir_name: &str) -> Option<(String, String, Version)> {
    if is_temp_dir_name(dir_name) {
        return None;
    }
    let (kind, rest) = dir_name.split_once('-')?;
    if kind.is_empty() || !kind.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    let (name, version) = rest.rsplit_once("-v")?;
    if !is_valid_plugin_name(name) {
        return None;
    }
    let version = Version::parse(version).ok()?;
    Some((kind.to_owned(), name.to_owned(), version))
}

/// Every installed plugin in `plugins_dir`, sorted by name, then kind,
/// then newest version first. Unfinished installs are left out; a
/// missing directory holds nothing.
pub fn list(plugins_dir: &Path) -> std::io::Result<Vec<CatalogEntry>> {
    let entries = match std::fs::read_dir(plugins_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let Ok(file_name) = entry.file_name().into_string() else {
            continue;
        };
        let Some((kind, name, version)) = parse_plugin_dir_name(&file_name) else {
            continue;
        };
        if plugins_dir.join(format!("{file_name}.partial")).exists() {
            continue;
        }
        found.push(CatalogEntry {
            kind,
            name,
            version,
            dir: entry.path(),
        });
    }
    found.sort_by(|a, b| {
        (&a.name, &a.kind)
            .cmp(&(&b.name, &b.kind))
            .then_with(|| b.version.cmp(&a.version))
    });
    Ok(found)
}

impl CatalogEntry {
    /// The entry's size and times (walks the whole directory).
    pub fn metadata(&self) -> std::io::Result<CatalogMetadata> {
        let meta = std::fs::metadata(&self.dir)?;
        Ok(CatalogMetadata {
            size: dir_size(&self.dir)?,
            installed: change_time(&meta),
            last_used: meta.accessed().ok(),
        })
    }

    /// The plugin's executable, `pulumi-<kind>-<name>`.
    pub fn executable(&self) -> PathBuf {
        self.dir.join(format!("pulumi-{}-{}", self.kind, self.name))
    }
}

fn dir_size(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            total += dir_size(&entry.path())?;
        } else if kind.is_file() {
            total += entry.metadata()?.len();
        }
    }
    Ok(total)
}

#[cfg(unix)]
fn change_time(meta: &std::fs::Metadata) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let secs = u64::try_from(meta.ctime()).ok()?;
    let nanos = u32::try_from(meta.ctime_nsec()).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

#[cfg(not(unix))]
fn change_time(meta: &std::fs::Metadata) -> Option<SystemTime> {
    meta.modified().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_names_parse_as_pulumi_reads_them() {
        let (k, n, v) = parse_plugin_dir_name("resource-aws-native-v1.2.3").unwrap();
        assert_eq!(
            (k.as_str(), n.as_str(), v.to_string()),
            ("resource", "aws-native", "1.2.3".into())
        );
        let (_, n, v) = parse_plugin_dir_name("resource-x-v1-v2.0.0-beta.1").unwrap();
        assert_eq!((n.as_str(), v.to_string()), ("x-v1", "2.0.0-beta.1".into()));
        assert!(parse_plugin_dir_name("resource-aws-v1.2.3.tmp123").is_none());
        assert!(parse_plugin_dir_name("resource-aws-v1.2").is_none());
        assert!(parse_plugin_dir_name("Resource-aws-v1.2.3").is_none());
        assert!(parse_plugin_dir_name("resource--v1.2.3").is_none());
        assert!(is_valid_plugin_name("my_plugin.x-1"));
        assert!(!is_valid_plugin_name("a/b"));
        assert!(!is_valid_plugin_name("a-"));
        assert!(!is_valid_plugin_name(".."));
    }

    #[test]
    fn lists_installed_plugins_only() {
        let d = tempfile::tempdir().unwrap();
        for name in [
            "resource-b-v1.0.0",
            "resource-b-v2.0.0",
            "language-a-v0.1.0",
            "resource-c-v1.0.0",
            "resource-d-v1.0.0.tmp42",
        ] {
            std::fs::create_dir(d.path().join(name)).unwrap();
        }
        std::fs::write(
            d.path().join("resource-b-v2.0.0/pulumi-resource-b"),
            "12345",
        )
        .unwrap();
        std::fs::write(d.path().join("resource-c-v1.0.0.partial"), "").unwrap();
        std::fs::write(d.path().join("resource-b-v1.0.0.lock"), "").unwrap();
        let all = list(d.path()).unwrap();
        let names: Vec<String> = all
            .iter()
            .map(|e| format!("{}/{}@{}", e.kind, e.name, e.version))
            .collect();
        assert_eq!(
            names,
            ["language/a@0.1.0", "resource/b@2.0.0", "resource/b@1.0.0"]
        );
        assert_eq!(all[1].metadata().unwrap().size, 5);
        assert!(all[1]
            .executable()
            .ends_with("resource-b-v2.0.0/pulumi-resource-b"));
        assert!(list(&d.path().join("missing")).unwrap().is_empty());
    }
}

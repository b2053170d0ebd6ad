//! Installing plugins into, and removing them from, a plugin directory,
//! in Pulumi's layout ([`super::catalog`]) and with its conventions: the
//! `<dir>.lock` file is locked for the whole change, and `<dir>.partial`
//! marks a directory that is not (or no longer) fully installed.
//!
//! The plugin comes from a `.tar.gz`, a directory, or its executable
//! alone, as Pulumi's `plugin install --file` takes them.
//!
//! **Atomic.** The plugin is unpacked into a temporary sibling
//! (`<dir>.tmp<digits>`, a name Pulumi ignores and cleans up) and checked
//! — a resource, language, analyzer or converter plugin must hold its
//! `pulumi-<kind>-<name>` executable at the top — before anything else
//! changes. Then `.partial` is written, any previous directory of the
//! same version is moved away, the new one renamed into place, and
//! `.partial` removed. A failure at any point leaves no directory that
//! a reader would take for installed: at worst a `.partial` beside an
//! unfinished one, which every reader skips and the next install
//! replaces. Removal renames the directory to a temporary name first, so
//! no reader ever sees half a plugin.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use semver::Version;

use super::catalog::{is_valid_plugin_name, plugin_dir_name, CatalogEntry, PLUGIN_KINDS};

/// What to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginSpec {
    pub kind: String,
    pub name: String,
    pub version: Version,
}

/// Where the plugin's files come from.
#[derive(Debug, Clone, Copy)]
pub enum PluginSource<'a> {
    /// A `.tar.gz` (or `.tgz`) archive whose top level is the plugin's
    /// directory content.
    Archive(&'a Path),
    /// A directory holding the plugin's files.
    Directory(&'a Path),
    /// The plugin's executable alone (installed as `pulumi-<kind>-<name>`).
    Binary(&'a Path),
}

impl<'a> PluginSource<'a> {
    /// A directory if `path` is one, an archive if it starts as gzip
    /// does, else a lone executable — as Pulumi's `--file` takes them.
    pub fn at(path: &'a Path) -> PluginSource<'a> {
        if path.is_dir() {
            return PluginSource::Directory(path);
        }
        let mut magic = [0u8; 2];
        let gzip = File::open(path)
            .and_then(|mut f| f.read_exact(&mut magic))
            .is_ok()
            && magic == [0x1f, 0x8b];
        if gzip {
            PluginSource::Archive(path)
        } else {
            PluginSource::Binary(path)
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct InstallOptions {
    /// Replace an installed plugin of the same version.
    pub reinstall: bool,
}

/// What an install did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallOutcome {
    Installed(PathBuf),
    /// The version was installed already (and `reinstall` was not asked).
    AlreadyInstalled(PathBuf),
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("unknown plugin kind {0:?}: expected one of {kinds}", kinds = PLUGIN_KINDS.join(", "))]
    UnknownKind(String),
    #[error("invalid plugin name {0:?}: use letters, digits, '-', '_' and '.', ending in a letter or digit")]
    InvalidName(String),
    #[error("cannot read {}: {source}", path.display())]
    Source {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not a gzip-compressed tar archive, or is damaged: {source}", path.display())]
    BadArchive {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} holds no `{executable}` at its top level, so it is not the {kind} plugin {name}; nothing was installed", source_path.display())]
    MissingExecutable {
        source_path: PathBuf,
        executable: String,
        kind: String,
        name: String,
    },
    #[error("cannot {action} in the plugin directory {}: {source}", dir.display())]
    Io {
        action: &'static str,
        dir: PathBuf,
        source: std::io::Error,
    },
}

/// Installs `spec` from `source` into `plugins_dir` (created if missing).
pub fn install(
    plugins_dir: &Path,
    spec: &PluginSpec,
    source: PluginSource<'_>,
    options: InstallOptions,
) -> Result<InstallOutcome, InstallError> {
    check_spec(&spec.kind, &spec.name)?;
    let io = |action: &'static str| {
        move |source: std::io::Error| InstallError::Io {
            action,
            dir: plugins_dir.to_path_buf(),
            source,
        }
    };
    std::fs::create_dir_all(plugins_dir).map_err(io("create the directory"))?;
    let dir_name = plugin_dir_name(&spec.kind, &spec.name, &spec.version);
    let final_dir = plugins_dir.join(&dir_name);
    let partial = plugins_dir.join(format!("{dir_name}.partial"));
    let _lock = lock(plugins_dir, &dir_name).map_err(io("lock the plugin"))?;

    if final_dir.is_dir() && !partial.exists() && !options.reinstall {
        return Ok(InstallOutcome::AlreadyInstalled(final_dir));
    }
    let staging = temp_sibling(plugins_dir, &dir_name);
    let staged = stage(&staging, spec, source);
    if let Err(e) = staged {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(e);
    }
    let result = (|| {
        std::fs::write(&partial, b"").map_err(io("mark the install as unfinished"))?;
        if final_dir.exists() {
            let old = temp_sibling(plugins_dir, &dir_name);
            std::fs::rename(&final_dir, &old).map_err(io("move the previous install away"))?;
            let _ = std::fs::remove_dir_all(&old);
        }
        std::fs::rename(&staging, &final_dir).map_err(io("move the plugin into place"))?;
        sync_dir(plugins_dir).map_err(io("sync"))?;
        std::fs::remove_file(&partial).map_err(io("mark the install as finished"))?;
        sync_dir(plugins_dir).map_err(io("sync"))
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&staging);
        if !final_dir.exists() {
            let _ = std::fs::remove_file(&partial);
        }
        return Err(e);
    }
    Ok(InstallOutcome::Installed(final_dir))
}

/// Removes an installed plugin (its directory, `.partial` and `.lock`).
pub fn remove(plugins_dir: &Path, entry: &CatalogEntry) -> Result<(), InstallError> {
    let io = |action: &'static str| {
        move |source: std::io::Error| InstallError::Io {
            action,
            dir: plugins_dir.to_path_buf(),
            source,
        }
    };
    let dir_name = plugin_dir_name(&entry.kind, &entry.name, &entry.version);
    let lock_file = plugins_dir.join(format!("{dir_name}.lock"));
    {
        let _lock = lock(plugins_dir, &dir_name).map_err(io("lock the plugin"))?;
        let doomed = temp_sibling(plugins_dir, &dir_name);
        std::fs::rename(&entry.dir, &doomed).map_err(io("remove the plugin"))?;
        let _ = std::fs::remove_file(plugins_dir.join(format!("{dir_name}.partial")));
        sync_dir(plugins_dir).map_err(io("sync"))?;
        std::fs::remove_dir_all(&doomed).map_err(io("delete the plugin's files"))?;
    }
    let _ = std::fs::remove_file(lock_file);
    Ok(())
}

fn check_spec(kind: &str, name: &str) -> Result<(), InstallError> {
    if !PLUGIN_KINDS.contains(&kind) {
        return Err(InstallError::UnknownKind(kind.to_owned()));
    }
    if !is_valid_plugin_name(name) {
        return Err(InstallError::InvalidName(name.to_owned()));
    }
    Ok(())
}

/// Holds `<dir>.lock` locked (an advisory lock, as Pulumi's file mutex)
/// until dropped.
fn lock(plugins_dir: &Path, dir_name: &str) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(plugins_dir.join(format!("{dir_name}.lock")))?;
    file.lock()?;
    Ok(file)
}

/// A fresh `<dir_name>.tmp<digits>` path beside the plugin's directory.
fn temp_sibling(plugins_dir: &Path, dir_name: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let mut n = u64::from(std::process::id()) * 1_000_000_000 + u64::from(nanos);
    loop {
        let candidate = plugins_dir.join(format!("{dir_name}.tmp{n}"));
        if !candidate.exists() {
            return candidate;
        }
        n += 1;
    }
}

/// Unpacks or copies the plugin into `staging` and checks it.
fn stage(staging: &Path, spec: &PluginSpec, source: PluginSource<'_>) -> Result<(), InstallError> {
    let staging_io = |source: std::io::Error| InstallError::Io {
        action: "write the plugin's files",
        dir: staging.to_path_buf(),
        source,
    };
    std::fs::create_dir(staging).map_err(staging_io)?;
    let source_path = match source {
        PluginSource::Archive(path) => {
            let file = File::open(path).map_err(|e| InstallError::Source {
                path: path.to_path_buf(),
                source: e,
            })?;
            let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
            archive.set_preserve_permissions(true);
            archive.set_overwrite(true);
            archive
                .unpack(staging)
                .map_err(|e| InstallError::BadArchive {
                    path: path.to_path_buf(),
                    source: e,
                })?;
            path
        }
        PluginSource::Directory(path) => {
            copy_tree(path, staging).map_err(|e| InstallError::Source {
                path: path.to_path_buf(),
                source: e,
            })?;
            path
        }
        PluginSource::Binary(path) => {
            let target = staging.join(format!("pulumi-{}-{}", spec.kind, spec.name));
            std::fs::copy(path, &target).map_err(|e| InstallError::Source {
                path: path.to_path_buf(),
                source: e,
            })?;
            make_executable(&target).map_err(staging_io)?;
            path
        }
    };
    // Tools and some plugins carry other entry points; the kinds the
    // engine launches by name must have theirs.
    if spec.kind != "tool" {
        let executable = format!("pulumi-{}-{}", spec.kind, spec.name);
        if !staging.join(&executable).is_file() {
            return Err(InstallError::MissingExecutable {
                source_path: source_path.to_path_buf(),
                executable,
                kind: spec.kind.clone(),
                name: spec.name.clone(),
            });
        }
    }
    Ok(())
}

/// Copies the files under `from` into the existing directory `to`,
/// permissions kept, symlinks followed.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let meta = std::fs::metadata(entry.path())?;
        if meta.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut permissions = std::fs::metadata(path)?.permissions();
    permissions.set_mode(permissions.mode() | 0o755);
    std::fs::set_permissions(path, permissions)
}

#[cfg(not(unix))]
fn make_executable(_: &Path) -> std::io::Result<()> {
    Ok(())
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::catalog::list;

    fn spec(version: &str) -> PluginSpec {
        PluginSpec {
            kind: "resource".into(),
            name: "demo".into(),
            version: Version::parse(version).unwrap(),
        }
    }

    fn plugin_source(root: &Path) -> PathBuf {
        let src = root.join("src");
        std::fs::create_dir_all(src.join("lib")).unwrap();
        std::fs::write(src.join("pulumi-resource-demo"), "#!/bin/sh\n").unwrap();
        std::fs::write(src.join("lib/data"), "x").unwrap();
        src
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_directory_installs_then_is_found_then_removed() {
        let d = tempfile::tempdir().unwrap();
        let src = plugin_source(d.path());
        let plugins = d.path().join("plugins");
        let out = install(
            &plugins,
            &spec("1.2.3"),
            PluginSource::at(&src),
            InstallOptions::default(),
        )
        .unwrap();
        assert_eq!(
            out,
            InstallOutcome::Installed(plugins.join("resource-demo-v1.2.3"))
        );
        assert_eq!(
            names(&plugins),
            ["resource-demo-v1.2.3", "resource-demo-v1.2.3.lock"]
        );
        assert!(plugins.join("resource-demo-v1.2.3/lib/data").is_file());
        let again = install(
            &plugins,
            &spec("1.2.3"),
            PluginSource::at(&src),
            InstallOptions::default(),
        )
        .unwrap();
        assert!(matches!(again, InstallOutcome::AlreadyInstalled(_)));
        let entries = list(&plugins).unwrap();
        assert_eq!(entries.len(), 1);
        remove(&plugins, &entries[0]).unwrap();
        assert!(names(&plugins).is_empty());
    }

    #[test]
    fn a_lone_executable_is_installed_under_the_plugins_name() {
        let d = tempfile::tempdir().unwrap();
        let binary = d.path().join("my-build");
        std::fs::write(&binary, "#!/bin/sh\n").unwrap();
        let plugins = d.path().join("plugins");
        install(
            &plugins,
            &spec("0.1.0"),
            PluginSource::at(&binary),
            InstallOptions::default(),
        )
        .unwrap();
        let exe = plugins.join("resource-demo-v0.1.0/pulumi-resource-demo");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&exe).unwrap().permissions().mode() & 0o111,
                0o111
            );
        }
        assert_eq!(std::fs::read_to_string(exe).unwrap(), "#!/bin/sh\n");
    }

    #[test]
    fn a_failed_install_leaves_nothing_and_keeps_the_previous_one() {
        let d = tempfile::tempdir().unwrap();
        let src = plugin_source(d.path());
        let plugins = d.path().join("plugins");
        install(
            &plugins,
            &spec("1.0.0"),
            PluginSource::at(&src),
            InstallOptions::default(),
        )
        .unwrap();
        let bad = d.path().join("bad.tar.gz");
        std::fs::write(&bad, b"\x1f\x8b not really").unwrap();
        let reinstall = InstallOptions { reinstall: true };
        let e = install(&plugins, &spec("1.0.0"), PluginSource::at(&bad), reinstall).unwrap_err();
        assert!(matches!(e, InstallError::BadArchive { .. }), "{e}");
        let empty = d.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let e = install(
            &plugins,
            &spec("2.0.0"),
            PluginSource::at(&empty),
            reinstall,
        )
        .unwrap_err();
        assert!(e.to_string().contains("no `pulumi-resource-demo`"), "{e}");
        assert_eq!(
            names(&plugins),
            [
                "resource-demo-v1.0.0",
                "resource-demo-v1.0.0.lock",
                "resource-demo-v2.0.0.lock"
            ]
        );
        assert!(plugins
            .join("resource-demo-v1.0.0/pulumi-resource-demo")
            .is_file());
        let e = install(
            &plugins,
            &PluginSpec {
                name: "../x".into(),
                ..spec("1.0.0")
            },
            PluginSource::at(&src),
            reinstall,
        )
        .unwrap_err();
        assert!(matches!(e, InstallError::InvalidName(_)));
    }
}

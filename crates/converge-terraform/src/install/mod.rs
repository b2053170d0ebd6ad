//! Provider installation, as OpenTofu users already configure it: the CLI
//! configuration's `provider_installation` methods (`cli_config.rs`) —
//! a filesystem mirror in the unpacked or the packed layout
//! (`HOST/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip`), a
//! network mirror (`index.json`, `VERSION.json` with `archives` and
//! `hashes`), or the provider's registry (`/.well-known/terraform.json` →
//! `providers.v1`, `versions`, `download`, its `shasum`) — in
//! `sources.rs`. Every package is checked before it is unpacked where
//! providers run from: its `zh:` and `h1:` hashes (`hash.rs`) must be among
//! those its source published and, when the project's lock file
//! (`lock.rs`) names the provider, among the locked ones; a mismatch is
//! refused naming both. The package lands in the unpacked layout under
//! `plugin_cache_dir` (else `~/.terraform.d/plugins`), where discovery
//! finds it.
//!
//! Registries are asked over HTTPS, except on a loopback host
//! (`127.0.0.1:PORT`, `localhost:PORT`), asked over HTTP. Deliberately
//! absent: GPG signatures of registry releases (the hashes are checked),
//! credentials for private registries, `host` blocks.

use std::path::{Path, PathBuf};

use reqwest::Url;

pub mod address;
pub mod cli_config;
pub mod constraint;
pub mod hash;
pub mod lock;
mod sources;

pub use address::ProviderAddress;
pub use cli_config::{CliConfig, Method, MethodKind};
pub use constraint::Constraint;
pub use lock::{LockFile, Locked, LOCK_FILE};

/// Why a provider could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{file}: {message}")]
    CliConfig { file: PathBuf, message: String },
    #[error("{file}: {message}")]
    LockFile { file: PathBuf, message: String },
    #[error("not a provider package (.zip): {0}")]
    Archive(String),
    #[error("{url}: {message}")]
    Http { url: String, message: String },
    #[error("{0}")]
    Address(String),
    #[error("no release of {address}{} for {os_arch}: {}", constraint_note(.constraint), .tried.join("; "))]
    NotFound {
        address: String,
        constraint: String,
        os_arch: String,
        tried: Vec<String>,
    },
    #[error("refusing {package} from {source_name}: its hashes {} match none of {} ({}); nothing was installed or run", .got.join(", "), .expected.join(", "), .whose)]
    HashMismatch {
        /// `ADDRESS VERSION`.
        package: String,
        source_name: String,
        got: Vec<String>,
        expected: Vec<String>,
        /// Who expects them: the source, or the lock file.
        whose: String,
    },
}

fn constraint_note(c: &str) -> String {
    if c.is_empty() {
        String::new()
    } else {
        format!(" matching {c:?}")
    }
}

impl InstallError {
    pub(crate) fn io(path: &Path, e: std::io::Error) -> InstallError {
        InstallError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }
}

/// A provider installed (or found installed) in the unpacked layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub address: ProviderAddress,
    pub version: semver::Version,
    /// `…/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH`.
    pub dir: PathBuf,
    pub executable: PathBuf,
    /// The package's hashes to lock: its `h1:`, the archive's `zh:` when
    /// it came as one, and those its source published.
    pub hashes: Vec<String>,
}

/// Installs providers by the CLI configuration's methods.
#[derive(Debug, Clone)]
pub struct Installer {
    pub config: CliConfig,
    pub os_arch: String,
    client: reqwest::Client,
}

impl Installer {
    pub fn new(config: CliConfig, os_arch: String) -> Installer {
        Installer {
            config,
            os_arch,
            client: reqwest::Client::new(),
        }
    }

    /// Where packages are unpacked: `plugin_cache_dir`, else
    /// `~/.terraform.d/plugins`.
    pub fn install_dir(&self) -> Result<PathBuf, InstallError> {
        match &self.config.plugin_cache_dir {
            Some(d) => Ok(d.clone()),
            None => dirs::home_dir()
                .map(|h| h.join(".terraform.d").join("plugins"))
                .ok_or_else(|| {
                    InstallError::Address(
                        "no home directory to install providers in: set plugin_cache_dir"
                            .to_owned(),
                    )
                }),
        }
    }

    /// Installs the newest release of `address` that `constraint` allows
    /// (and, when `locked`, exactly the locked version with one of its
    /// hashes), from the first method that serves the address and has one.
    pub async fn install(
        &self,
        address: &ProviderAddress,
        constraint: &Constraint,
        locked: Option<&Locked>,
    ) -> Result<Installed, InstallError> {
        let mut tried = Vec::new();
        for method in self.config.methods.iter().filter(|m| m.serves(address)) {
            let source = sources::Source::new(method, &self.client, &self.os_arch);
            let versions = source.versions(address).await?;
            let mut fitting: Vec<&semver::Version> = versions
                .iter()
                .filter(|v| constraint.matches(v))
                .filter(|v| locked.is_none_or(|l| l.version == **v))
                .collect();
            fitting.sort();
            let Some(version) = fitting.pop() else {
                tried.push(format!(
                    "{} has {}",
                    source.name(),
                    if versions.is_empty() {
                        "none".to_owned()
                    } else {
                        versions
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ));
                continue;
            };
            let package = source.fetch(address, version).await?;
            return self.unpack(address, version, &source.name(), package, locked);
        }
        if tried.is_empty() {
            tried.push("no installation method of the CLI configuration serves it".to_owned());
        }
        Err(InstallError::NotFound {
            address: address.to_string(),
            constraint: match locked {
                Some(l) => format!("= {} (the lock file's)", l.version),
                None => constraint.to_string(),
            },
            os_arch: self.os_arch.clone(),
            tried,
        })
    }

    /// Checks a fetched package's hashes and unpacks it.
    fn unpack(
        &self,
        address: &ProviderAddress,
        version: &semver::Version,
        source_name: &str,
        package: sources::Package,
        locked: Option<&Locked>,
    ) -> Result<Installed, InstallError> {
        let mut got = Vec::new();
        if let sources::Content::Zip(bytes) = &package.content {
            got.push(hash::zh(bytes));
            got.push(hash::h1_of_zip(bytes)?);
        } else if let sources::Content::Dir(dir) = &package.content {
            got.push(hash::h1_of_dir(dir)?);
        }
        let refuse = |expected: &[String], whose: &str| InstallError::HashMismatch {
            package: format!("{address} {version}"),
            source_name: source_name.to_owned(),
            got: got.clone(),
            expected: expected.to_vec(),
            whose: whose.to_owned(),
        };
        if !package.hashes.is_empty() && !package.hashes.iter().any(|h| got.contains(h)) {
            return Err(refuse(&package.hashes, "published by its source"));
        }
        if let Some(l) = locked {
            if !l.hashes.is_empty() && !l.hashes.iter().any(|h| got.contains(h)) {
                return Err(refuse(&l.hashes, "in the lock file"));
            }
        }
        let root = self.install_dir()?;
        let dir = root
            .join(&address.host)
            .join(&address.namespace)
            .join(&address.type_name)
            .join(version.to_string())
            .join(&self.os_arch);
        let parent = dir.parent().expect("the platform directory has a parent");
        std::fs::create_dir_all(parent).map_err(|e| InstallError::io(parent, e))?;
        let staging = parent.join(format!("{}.tmp{}", self.os_arch, std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        match &package.content {
            sources::Content::Zip(bytes) => extract(bytes, &staging)?,
            sources::Content::Dir(from) => copy_dir(from, &staging)?,
        }
        // What lands is what was checked.
        let h1 = hash::h1_of_dir(&staging)?;
        if !got.contains(&h1) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(refuse(&[h1], "of the unpacked files"));
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&staging, &dir).map_err(|e| InstallError::io(&dir, e))?;
        let executable = find_executable(&dir, &address.type_name)?;
        let mut hashes = got;
        hashes.extend(package.hashes);
        hashes.sort();
        hashes.dedup();
        Ok(Installed {
            address: address.clone(),
            version: version.clone(),
            dir,
            executable,
            hashes,
        })
    }
}

/// The provider executable in an unpacked package.
pub fn find_executable(dir: &Path, type_name: &str) -> Result<PathBuf, InstallError> {
    let prefix = format!("terraform-provider-{type_name}");
    let entries = std::fs::read_dir(dir).map_err(|e| InstallError::io(dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == prefix || name.starts_with(&format!("{prefix}_")) {
            return Ok(entry.path());
        }
    }
    Err(InstallError::Archive(format!(
        "{} holds no {prefix} executable",
        dir.display()
    )))
}

fn extract(bytes: &[u8], to: &Path) -> Result<(), InstallError> {
    let bad = |e: zip::result::ZipError| InstallError::Archive(e.to_string());
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(bad)?;
    std::fs::create_dir_all(to).map_err(|e| InstallError::io(to, e))?;
    for i in 0..zip.len() {
        let mut entry = zip.by_index(i).map_err(bad)?;
        let Some(relative) = entry.enclosed_name() else {
            return Err(InstallError::Archive(format!(
                "entry {:?} escapes the package",
                entry.name()
            )));
        };
        let path = to.join(relative);
        if entry.is_dir() {
            std::fs::create_dir_all(&path).map_err(|e| InstallError::io(&path, e))?;
            continue;
        }
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| InstallError::io(p, e))?;
        }
        let mut out = std::fs::File::create(&path).map_err(|e| InstallError::io(&path, e))?;
        std::io::copy(&mut entry, &mut out).map_err(|e| InstallError::io(&path, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Providers are packed executable; keep the bits the zip says.
            let mode = entry.unix_mode().unwrap_or(0o755) & 0o777;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode | 0o400))
                .map_err(|e| InstallError::io(&path, e))?;
        }
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<(), InstallError> {
    std::fs::create_dir_all(to).map_err(|e| InstallError::io(to, e))?;
    for entry in std::fs::read_dir(from).map_err(|e| InstallError::io(from, e))? {
        let entry = entry.map_err(|e| InstallError::io(from, e))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if src.is_dir() {
            copy_dir(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| InstallError::io(&src, e))?;
        }
    }
    Ok(())
}

/// `relative` resolved against `base` (a URL).
fn join_url(base: &str, relative: &str) -> Result<Url, InstallError> {
    Url::parse(base)
        .and_then(|b| b.join(relative))
        .map_err(|e| InstallError::Http {
            url: format!("{base} + {relative}"),
            message: e.to_string(),
        })
}

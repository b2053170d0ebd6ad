//! Where packages come from: one [`Source`] per installation method.
//!
//! - Filesystem mirror `DIR`: `DIR/HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/`
//!   (unpacked) or `DIR/HOST/NAMESPACE/TYPE/terraform-provider-TYPE_VERSION_OS_ARCH.zip`
//!   (packed). No hashes of its own: the lock file's are checked.
//! - Network mirror `URL`: `URL/HOST/NAMESPACE/TYPE/index.json`
//!   (`{"versions": {"2.0.0": {}}}`), then `…/VERSION.json`
//!   (`{"archives": {"OS_ARCH": {"url": …, "hashes": [...]}}}`, the url
//!   relative to that document).
//! - Registry (`direct`): `/.well-known/terraform.json`'s `providers.v1`,
//!   then `NAMESPACE/TYPE/versions` and
//!   `NAMESPACE/TYPE/VERSION/download/OS/ARCH` (`download_url`, `shasum`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::address::ProviderAddress;
use super::cli_config::{Method, MethodKind};
use super::{join_url, InstallError};

/// A package's files, as fetched.
#[derive(Debug)]
pub(super) enum Content {
    Zip(Vec<u8>),
    Dir(PathBuf),
}

/// A fetched package and the hashes its source published for it.
#[derive(Debug)]
pub(super) struct Package {
    pub content: Content,
    pub hashes: Vec<String>,
}

pub(super) struct Source<'a> {
    method: &'a Method,
    client: &'a reqwest::Client,
    os_arch: &'a str,
}

impl<'a> Source<'a> {
    pub fn new(method: &'a Method, client: &'a reqwest::Client, os_arch: &'a str) -> Self {
        Source {
            method,
            client,
            os_arch,
        }
    }

    pub fn name(&self) -> String {
        match &self.method.kind {
            MethodKind::FilesystemMirror(d) => format!("the filesystem mirror {}", d.display()),
            MethodKind::NetworkMirror(u) => format!("the network mirror {u}"),
            MethodKind::Direct => "its registry".to_owned(),
        }
    }

    fn packed_name(&self, a: &ProviderAddress, version: &str) -> String {
        format!(
            "terraform-provider-{}_{version}_{}.zip",
            a.type_name, self.os_arch
        )
    }

    /// The versions available for this platform.
    pub async fn versions(
        &self,
        a: &ProviderAddress,
    ) -> Result<Vec<semver::Version>, InstallError> {
        let mut out = Vec::new();
        match &self.method.kind {
            MethodKind::FilesystemMirror(dir) => {
                let base = dir.join(&a.host).join(&a.namespace).join(&a.type_name);
                let Ok(entries) = std::fs::read_dir(&base) else {
                    return Ok(out);
                };
                let prefix = format!("terraform-provider-{}_", a.type_name);
                let suffix = format!("_{}.zip", self.os_arch);
                for entry in entries.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let version = if entry.path().join(self.os_arch).is_dir() {
                        Some(name)
                    } else {
                        name.strip_prefix(&prefix)
                            .and_then(|r| r.strip_suffix(&suffix))
                            .map(str::to_owned)
                    };
                    if let Some(v) = version.and_then(|v| semver::Version::parse(&v).ok()) {
                        out.push(v);
                    }
                }
            }
            MethodKind::NetworkMirror(base) => {
                let url = join_url(
                    base,
                    &format!("{}/{}/{}/index.json", a.host, a.namespace, a.type_name),
                )?;
                #[derive(Deserialize)]
                struct Index {
                    versions: BTreeMap<String, serde_json::Value>,
                }
                let Some(index): Option<Index> = self.get_json(url, true).await? else {
                    return Ok(out);
                };
                out.extend(
                    index
                        .versions
                        .keys()
                        .filter_map(|v| semver::Version::parse(v).ok()),
                );
            }
            MethodKind::Direct => {
                let base = self.registry(a).await?;
                let url = join_url(&base, &format!("{}/{}/versions", a.namespace, a.type_name))?;
                #[derive(Deserialize)]
                struct Platform {
                    os: String,
                    arch: String,
                }
                #[derive(Deserialize)]
                struct Release {
                    version: String,
                    #[serde(default)]
                    platforms: Vec<Platform>,
                }
                #[derive(Deserialize)]
                struct Versions {
                    versions: Vec<Release>,
                }
                let Some(list): Option<Versions> = self.get_json(url, true).await? else {
                    return Ok(out);
                };
                for r in list.versions {
                    let here = r.platforms.is_empty()
                        || r.platforms
                            .iter()
                            .any(|p| format!("{}_{}", p.os, p.arch) == self.os_arch);
                    if let (true, Ok(v)) = (here, semver::Version::parse(&r.version)) {
                        out.push(v);
                    }
                }
            }
        }
        Ok(out)
    }

    /// The package of `version` for this platform.
    pub async fn fetch(
        &self,
        a: &ProviderAddress,
        version: &semver::Version,
    ) -> Result<Package, InstallError> {
        match &self.method.kind {
            MethodKind::FilesystemMirror(dir) => {
                let base = dir.join(&a.host).join(&a.namespace).join(&a.type_name);
                let unpacked = base.join(version.to_string()).join(self.os_arch);
                if unpacked.is_dir() {
                    return Ok(Package {
                        content: Content::Dir(unpacked),
                        hashes: Vec::new(),
                    });
                }
                let zip = base.join(self.packed_name(a, &version.to_string()));
                let bytes = std::fs::read(&zip).map_err(|e| InstallError::io(&zip, e))?;
                Ok(Package {
                    content: Content::Zip(bytes),
                    hashes: Vec::new(),
                })
            }
            MethodKind::NetworkMirror(base) => {
                let doc = join_url(
                    base,
                    &format!("{}/{}/{}/{version}.json", a.host, a.namespace, a.type_name),
                )?;
                #[derive(Deserialize)]
                struct Archive {
                    url: String,
                    #[serde(default)]
                    hashes: Vec<String>,
                }
                #[derive(Deserialize)]
                struct Release {
                    archives: BTreeMap<String, Archive>,
                }
                let release: Release = self
                    .get_json(doc.clone(), false)
                    .await?
                    .expect("a required document is never None");
                let archive =
                    release
                        .archives
                        .get(self.os_arch)
                        .ok_or_else(|| InstallError::Http {
                            url: doc.to_string(),
                            message: format!("no archive for {}", self.os_arch),
                        })?;
                let url = join_url(doc.as_str(), &archive.url)?;
                Ok(Package {
                    content: Content::Zip(self.get_bytes(url).await?),
                    hashes: archive.hashes.clone(),
                })
            }
            MethodKind::Direct => {
                let base = self.registry(a).await?;
                let (os, arch) = self.os_arch.split_once('_').unwrap_or((self.os_arch, ""));
                let doc = join_url(
                    &base,
                    &format!(
                        "{}/{}/{version}/download/{os}/{arch}",
                        a.namespace, a.type_name
                    ),
                )?;
                #[derive(Deserialize)]
                struct Download {
                    download_url: String,
                    shasum: String,
                }
                let d: Download = self
                    .get_json(doc.clone(), false)
                    .await?
                    .expect("a required document is never None");
                let url = join_url(doc.as_str(), &d.download_url)?;
                Ok(Package {
                    content: Content::Zip(self.get_bytes(url).await?),
                    hashes: vec![format!("zh:{}", d.shasum.to_lowercase())],
                })
            }
        }
    }

    /// The registry's `providers.v1` base URL (service discovery).
    async fn registry(&self, a: &ProviderAddress) -> Result<String, InstallError> {
        let host = a.host.as_str();
        let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
        let loopback = name == "localhost"
            || name == "[::1]"
            || name
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback());
        let scheme = if loopback { "http" } else { "https" };
        let root = format!("{scheme}://{host}/");
        let url = join_url(&root, ".well-known/terraform.json")?;
        let services: serde_json::Value = self
            .get_json(url.clone(), false)
            .await?
            .expect("a required document is never None");
        let base = services["providers.v1"]
            .as_str()
            .ok_or_else(|| InstallError::Http {
                url: url.to_string(),
                message: format!("{host} offers no provider registry (no providers.v1)"),
            })?;
        let mut base = join_url(url.as_str(), base)?.to_string();
        if !base.ends_with('/') {
            base.push('/');
        }
        Ok(base)
    }

    /// A JSON document; `None` on 404 when `optional`.
    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: reqwest::Url,
        optional: bool,
    ) -> Result<Option<T>, InstallError> {
        let fail = |message: String| InstallError::Http {
            url: url.to_string(),
            message,
        };
        let response = self
            .client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        if optional && response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {}", response.status())));
        }
        let bytes = response.bytes().await.map_err(|e| fail(e.to_string()))?;
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| fail(format!("not the JSON expected: {e}")))
    }

    async fn get_bytes(&self, url: reqwest::Url) -> Result<Vec<u8>, InstallError> {
        let fail = |message: String| InstallError::Http {
            url: url.to_string(),
            message,
        };
        let response = self
            .client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| fail(e.to_string()))?;
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {}", response.status())));
        }
        Ok(response
            .bytes()
            .await
            .map_err(|e| fail(e.to_string()))?
            .to_vec())
    }
}

//! [`TerraformLoader`]: a package with no Pulumi plugin but a Terraform
//! provider of that TYPE in OpenTofu's local layouts runs the Terraform
//! provider. When the project's lock file (`.terraform.lock.hcl`) names a
//! provider of that TYPE, exactly the locked version runs — installed by
//! the CLI configuration's methods if it is missing — and only if its
//! files' `h1:` hash is one the lock file lists.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use converge_plugin::host::PluginLogger;
use converge_plugin::registry::{ProviderLoader, RegistryError};
use converge_plugin::terraform::discovery::{find, DiscoveryOptions, FoundProvider};
use converge_plugin::terraform::process::LaunchOptions;
use converge_plugin::{Provider, ProviderError};

use crate::install::{hash, Constraint, Installer, LockFile};
use crate::provider::{Shared, TerraformProvider};
use crate::session::{ProcessConnector, Session};

/// Where providers are found and how they run.
#[derive(Clone)]
pub struct TerraformLoaderOptions {
    pub discovery: DiscoveryOptions,
    pub launch: LaunchOptions,
    /// Receives the providers' warnings.
    pub logger: Option<PluginLogger>,
    /// How long [`TerraformLoader::shutdown`] waits for a provider to exit.
    pub shutdown_grace: Duration,
    /// The directory of the project's lock file; `None`: no lock file.
    pub lock_dir: Option<PathBuf>,
    /// How missing locked providers are installed; `None`: they are not.
    pub installer: Option<Installer>,
}

impl std::fmt::Debug for TerraformLoaderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerraformLoaderOptions")
            .field("discovery", &self.discovery)
            .field("launch", &self.launch)
            .field("shutdown_grace", &self.shutdown_grace)
            .finish_non_exhaustive()
    }
}

impl Default for TerraformLoaderOptions {
    fn default() -> Self {
        TerraformLoaderOptions {
            discovery: DiscoveryOptions::from_environment(),
            launch: LaunchOptions::default(),
            logger: None,
            shutdown_grace: Duration::from_secs(5),
            lock_dir: None,
            installer: None,
        }
    }
}

/// Finds Terraform providers by package name (= Terraform TYPE).
#[derive(Debug)]
pub struct TerraformLoader {
    options: TerraformLoaderOptions,
    /// Per executable: its unconfigured connection and every session.
    shared: Mutex<HashMap<PathBuf, Shared>>,
}

impl TerraformLoader {
    pub fn new(options: TerraformLoaderOptions) -> Self {
        TerraformLoader {
            options,
            shared: Mutex::new(HashMap::new()),
        }
    }

    /// Asks every provider process started to exit (go-plugin's
    /// `Shutdown`), waits up to the grace period for each, and kills only
    /// those still running then. All at once: one slow provider does not
    /// delay the others' shutdown.
    pub async fn shutdown(&self) {
        // Later loads start afresh.
        let shared = std::mem::take(&mut *self.shared.lock().unwrap_or_else(|p| p.into_inner()));
        let sessions: Vec<Arc<Session>> = shared
            .values()
            .flat_map(|s| {
                std::mem::take(&mut *s.sessions.lock().unwrap_or_else(|p| p.into_inner()))
            })
            .collect();
        let grace = self.options.shutdown_grace;
        let mut tasks = tokio::task::JoinSet::new();
        for s in sessions {
            tasks.spawn(async move { s.shutdown(grace).await });
        }
        while tasks.join_next().await.is_some() {}
    }
}

impl TerraformLoader {
    /// The locked provider of TYPE `package`, installed if missing and
    /// checked against the lock file's hashes; `None` when the lock file
    /// names no provider of that TYPE.
    async fn locked(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Option<FoundProvider>, RegistryError> {
        let Some(dir) = &self.options.lock_dir else {
            return Ok(None);
        };
        let refuse = |message: String| RegistryError::Provider {
            urn: package.to_owned(),
            source: ProviderError::Failed(message),
        };
        let lock = LockFile::read(dir).map_err(|e| refuse(e.to_string()))?;
        let Some((address, locked)) = lock.by_type(package) else {
            return Ok(None);
        };
        if let Some(v) = version.filter(|v| **v != locked.version) {
            return Err(refuse(format!(
                "the program asks for Terraform provider {address} {v}, and the lock file {} locks it at {}: run `converge plugin install terraform {address} {v}` to change the lock",
                dir.join(crate::install::LOCK_FILE).display(),
                locked.version
            )));
        }
        let found = match find(package, Some(&locked.version), &self.options.discovery) {
            Ok(found) => found,
            Err(_) => {
                let Some(installer) = &self.options.installer else {
                    return Err(refuse(format!(
                        "Terraform provider {address} {} (locked) is not installed: run `converge plugin install terraform {address}`",
                        locked.version
                    )));
                };
                let installed = installer
                    .install(address, &Constraint::exactly(&locked.version), Some(locked))
                    .await
                    .map_err(|e| refuse(e.to_string()))?;
                FoundProvider {
                    executable: installed.executable,
                    host: address.host.clone(),
                    namespace: address.namespace.clone(),
                    type_name: address.type_name.clone(),
                    version: installed.version,
                }
            }
        };
        // The files about to run are the locked build, or nothing runs.
        let package_dir = found.executable.parent().unwrap_or(dir);
        let h1 = hash::h1_of_dir(package_dir).map_err(|e| refuse(e.to_string()))?;
        let locked_h1: Vec<&String> = locked
            .hashes
            .iter()
            .filter(|h| h.starts_with("h1:"))
            .collect();
        if !locked_h1.is_empty() && !locked_h1.contains(&&h1) {
            return Err(refuse(format!(
                "refusing Terraform provider {address} {} in {}: its files hash to {h1}, and the lock file locks {}; nothing was run (reinstall it with `converge plugin install terraform {address}`)",
                locked.version,
                package_dir.display(),
                locked_h1.iter().map(|h| h.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        Ok(Some(found))
    }
}

#[async_trait]
impl ProviderLoader for TerraformLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        let found = match self.locked(package, version).await? {
            Some(found) => found,
            None => find(package, version, &self.options.discovery).map_err(|_| {
                RegistryError::NotFound {
                    package: package.to_owned(),
                    version: version.map(ToString::to_string),
                }
            })?,
        };
        let shared = {
            let mut map = self.shared.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(found.executable.clone())
                .or_insert_with(|| Shared {
                    logger: self.options.logger.clone(),
                    version: Some(found.version.clone()),
                    ..Shared::default()
                })
                .clone()
        };
        tracing::debug!(
            package,
            executable = %found.executable.display(),
            version = %found.version,
            "using a Terraform provider"
        );
        let connector = ProcessConnector {
            executable: found.executable,
            options: self.options.launch.clone(),
        };
        Ok(Arc::new(TerraformProvider::new(
            package,
            Arc::new(connector),
            shared,
        )))
    }
}

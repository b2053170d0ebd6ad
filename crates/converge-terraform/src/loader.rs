//! [`TerraformLoader`]: a package with no Pulumi plugin but a Terraform
//! provider of that TYPE in OpenTofu's local layouts runs the Terraform
//! provider.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use converge_plugin::host::PluginLogger;
use converge_plugin::registry::{ProviderLoader, RegistryError};
use converge_plugin::terraform::discovery::{find, DiscoveryOptions};
use converge_plugin::terraform::process::LaunchOptions;
use converge_plugin::Provider;

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

#[async_trait]
impl ProviderLoader for TerraformLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        let found = find(package, version, &self.options.discovery).map_err(|_| {
            RegistryError::NotFound {
                package: package.to_owned(),
                version: version.map(ToString::to_string),
            }
        })?;
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

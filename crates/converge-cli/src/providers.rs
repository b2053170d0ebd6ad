//! Where providers come from: the built-in providers, then installed
//! plugins.

use std::sync::Arc;

use async_trait::async_trait;
use converge_plugin::{Provider, ProviderLoader, RegistryError};

/// The loader every operation uses.
pub fn provider_loader() -> Arc<dyn ProviderLoader> {
    Arc::new(CliLoader)
}

#[derive(Debug)]
struct CliLoader;

#[async_trait]
impl ProviderLoader for CliLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        Err(RegistryError::NotFound {
            package: package.to_owned(),
            version: version.map(ToString::to_string),
        })
    }
}

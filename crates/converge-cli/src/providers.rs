//! Where providers come from: installed plugins (`pulumi-resource-<pkg>`
//! on PATH or in the plugin directory) first, then the built-in providers
//! (random, command, converge's file).

use std::sync::Arc;

use converge_plugin::host::{ChainLoader, PluginLoader};
use converge_plugin::ProviderLoader;

/// The providers of one operation; plugin processes end with it.
#[derive(Debug, Clone)]
pub struct Providers {
    plugins: Arc<PluginLoader>,
    loader: Arc<dyn ProviderLoader>,
}

impl Providers {
    pub fn new() -> Self {
        let plugins = Arc::new(PluginLoader::default());
        let loader: Arc<dyn ProviderLoader> =
            Arc::new(ChainLoader::plugins_then_builtins(plugins.clone()));
        Providers { plugins, loader }
    }

    pub fn loader(&self) -> Arc<dyn ProviderLoader> {
        self.loader.clone()
    }

    /// Asks every plugin process to stop, then ends them.
    pub async fn shutdown(&self) {
        self.plugins.shutdown().await;
    }
}

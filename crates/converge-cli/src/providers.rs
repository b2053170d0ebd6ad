//! Where providers come from: the built-in providers (random, command,
//! converge's file), and — with the plugin host — installed plugins.

use std::sync::Arc;

use converge_plugin::builtin::BuiltinLoader;
use converge_plugin::ProviderLoader;

/// The loader every operation uses.
pub fn provider_loader() -> Arc<dyn ProviderLoader> {
    Arc::new(BuiltinLoader)
}

//! The plugin host: Pulumi provider plugins as [`crate::Provider`]s.
//!
//! - [`PluginDirectory`] (`discovery`): where plugins are installed
//!   (`$PULUMI_HOME/plugins` or `~/.pulumi/plugins`, as
//!   `resource-<pkg>-v<semver>/pulumi-resource-<pkg>`, and `PATH`) and
//!   seed 001's choice among them: the newest version compatible (caret)
//!   with the request, or the newest.
//! - [`PluginLoader`]: a [`crate::ProviderLoader`] that finds a plugin,
//!   starts it with the engine address as its first argument, reads its
//!   port from the first line of stdout, connects over gRPC (400 MiB
//!   messages) and hands out [`GrpcProvider`]s. Plugin stdout/stderr lines
//!   go to `tracing` and an optional [`PluginLogger`].
//! - [`GrpcProvider`]: every [`crate::Provider`] method over
//!   `pulumirpc.ResourceProvider`, marshalled as the plugin accepts
//!   (`construct`: `Construct` and `Call`, whose plugins register
//!   resources with the monitor named in the request).
//! - [`DynamicProviders`] (`dynamic`): the program's dynamic providers
//!   (`pulumi-python`, `pulumi-nodejs`), served by the SDK's own provider
//!   server run with the program's interpreter.
//! - [`catalog`] and [`install`]: every plugin of the plugin directory
//!   with its size and times, and installing (from an archive or a
//!   directory, atomically, under Pulumi's `.lock`/`.partial`
//!   conventions) and removing one — `converge plugin ls|install|rm`.
//! - [`ChainLoader`]: loaders in order; [`ChainLoader::plugins_then_builtins`]
//!   lets an installed plugin win over the built-in provider of its package.
//!
//! **The engine address.** Real plugins need a live one: Pulumi's Go SDK
//! refuses to start without an argument (older versions) or waits to be
//! attached (newer), and health-checks the address every five minutes,
//! exiting if it does not answer. Give the real engine's address in
//! [`PluginLoaderOptions::engine_address`] when there is one; otherwise the
//! loader serves a minimal `pulumirpc.Engine` of its own on 127.0.0.1
//! (`Log` → logger, everything else `Unimplemented`, which the health check
//! accepts).
//!
//! **Invariants.** A plugin process never outlives the loader that started
//! it or the provider that owns it (kill on drop); every wait on a plugin
//! (start, connect, first answers, shutdown) is bounded; resource
//! operations themselves are not timed out here (providers apply their own
//! timeouts).

pub mod catalog;
mod client;
mod construct;
mod convert;
mod discovery;
mod dynamic;
pub(crate) mod engine;
pub mod install;
mod loader;
mod process;

use std::sync::Arc;

pub use client::GrpcProvider;
pub use converge_proto::pulumirpc::LogSeverity;
pub use discovery::{
    executable_name, install_dir_name, is_compatible, select_version, InstalledPlugin, LookupError,
    PluginDirectory,
};
pub use dynamic::{
    DynamicProviders, NodeDynamicProvider, NODEJS_DYNAMIC_PACKAGE, PYTHON_DYNAMIC_PACKAGE,
};
pub use loader::{ChainLoader, PluginLoader, PluginLoaderOptions};
pub use process::{LaunchError, PluginCommand};

/// Where a plugin log line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PluginLogSource {
    /// The plugin's stdout, after the port line.
    Stdout,
    /// The plugin's stderr.
    Stderr,
    /// An `Engine.Log` call to the loader's own engine endpoint.
    Engine(LogSeverity),
}

/// One line a plugin wrote or logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginLogLine {
    /// The plugin's package (`None` for `Engine.Log`, which does not say).
    pub package: Option<String>,
    pub pid: Option<u32>,
    pub source: PluginLogSource,
    pub message: String,
}

/// Receives plugin log lines (called from the tasks that read them).
pub type PluginLogger = Arc<dyn Fn(&PluginLogLine) + Send + Sync>;

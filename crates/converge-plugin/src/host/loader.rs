//! [`PluginLoader`]: finds, starts and caches plugin processes;
//! [`ChainLoader`]: plugins first, then the built-in providers.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use semver::Version;

use super::client::GrpcProvider;
use super::discovery::{executable_name, is_compatible, PluginDirectory};
use super::dynamic::DynamicProviders;
use super::engine::LocalEngine;
use super::process::{LaunchError, LaunchSpec, PluginCommand, PluginProcess};
use super::PluginLogger;
use crate::builtin::BuiltinLoader;
use crate::registry::{ProviderLoader, RegistryError};
use crate::schema::PackageSchema;
use crate::{Provider, ProviderError};

/// How plugins are found and run.
#[derive(Clone)]
pub struct PluginLoaderOptions {
    pub directory: PluginDirectory,
    /// The engine address passed as every plugin's first argument. `None`:
    /// the loader serves a minimal engine endpoint of its own (see
    /// [`super`]'s docs on why a placeholder will not do).
    pub engine_address: Option<String>,
    /// How long a plugin may take to print its port and answer
    /// `GetPluginInfo` / `Handshake`. Default 30 s.
    pub startup_timeout: Duration,
    /// How long [`PluginLoader::shutdown`] waits for `Cancel` before it
    /// kills a plugin. Default 5 s.
    pub shutdown_grace: Duration,
    /// Extra environment variables for plugins (they inherit Converge's).
    pub env: Vec<(OsString, OsString)>,
    /// The plugins' working directory (default: Converge's).
    pub working_dir: Option<PathBuf>,
    /// Receives every line plugins write to stdout (after the port) and
    /// stderr, and `Engine.Log` messages sent to the loader's own endpoint.
    /// Lines always go to `tracing` (target `converge_plugin::host`) too.
    pub logger: Option<PluginLogger>,
    /// How the program's dynamic providers (`pulumi-python`,
    /// `pulumi-nodejs`) are started; packages left `None` are looked up
    /// like any other plugin.
    pub dynamic: DynamicProviders,
}

impl Default for PluginLoaderOptions {
    fn default() -> Self {
        PluginLoaderOptions {
            directory: PluginDirectory::from_env(),
            engine_address: None,
            startup_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(5),
            env: Vec::new(),
            working_dir: None,
            logger: None,
            dynamic: DynamicProviders::default(),
        }
    }
}

impl fmt::Debug for PluginLoaderOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginLoaderOptions")
            .field("directory", &self.directory)
            .field("engine_address", &self.engine_address)
            .field("startup_timeout", &self.startup_timeout)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("env", &self.env)
            .field("working_dir", &self.working_dir)
            .field("logger", &self.logger.is_some())
            .field("dynamic", &self.dynamic)
            .finish()
    }
}

type SpareSlot = Arc<tokio::sync::Mutex<Option<Arc<PluginProcess>>>>;

/// A plugin and the version it reported.
type SchemaKey = (PluginCommand, Option<Version>);

/// State shared by a loader and the providers it handed out.
pub(crate) struct HostShared {
    options: PluginLoaderOptions,
    engine: tokio::sync::OnceCell<LocalEngine>,
    /// One unconfigured process per plugin command (so per package and
    /// resolved version), for calls before `Configure`.
    spares: Mutex<HashMap<PluginCommand, SpareSlot>>,
    /// Every process started, for shutdown.
    launched: Mutex<Vec<Weak<PluginProcess>>>,
    /// Versions ambient plugins reported.
    ambient_versions: Mutex<HashMap<PathBuf, Option<Version>>>,
    /// Plugins that failed to start, with why: asked again, they fail at
    /// once with the same error instead of costing another start and, for
    /// one that never answers, another full timeout.
    failed: Mutex<HashMap<PluginCommand, LaunchError>>,
    /// Package schemas (their tokens) by plugin and the version it
    /// reported: asked once per loader.
    schemas: Mutex<HashMap<SchemaKey, Arc<PackageSchema>>>,
    closed: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl HostShared {
    /// Starts a new process of `plugin`.
    pub(crate) async fn launch(
        &self,
        package: &str,
        plugin: &PluginCommand,
    ) -> Result<Arc<PluginProcess>, LaunchError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(LaunchError::ShutDown);
        }
        let engine_address = match &self.options.engine_address {
            Some(a) => a.clone(),
            None => self
                .engine
                .get_or_try_init(|| LocalEngine::start(self.options.logger.clone()))
                .await
                .map_err(|e| LaunchError::Engine(e.to_string()))?
                .address(),
        };
        let spec = LaunchSpec {
            engine_address,
            startup_timeout: self.options.startup_timeout,
            env: self.options.env.clone(),
            working_dir: self.options.working_dir.clone(),
            logger: self.options.logger.clone(),
        };
        let process = Arc::new(PluginProcess::launch(package, plugin, &spec).await?);
        let mut launched = lock(&self.launched);
        launched.retain(|w| w.strong_count() > 0);
        launched.push(Arc::downgrade(&process));
        drop(launched);
        if self.closed.load(Ordering::SeqCst) {
            process.kill();
            return Err(LaunchError::ShutDown);
        }
        Ok(process)
    }

    /// The unconfigured process of `plugin`, started if there is none (or
    /// it was claimed, or it died).
    async fn spare(
        &self,
        package: &str,
        plugin: &PluginCommand,
    ) -> Result<Arc<PluginProcess>, LaunchError> {
        let slot = lock(&self.spares)
            .entry(plugin.clone())
            .or_default()
            .clone();
        let mut slot = slot.lock().await;
        if let Some(p) = slot.as_ref() {
            if !p.is_claimed() && !p.is_closed() && p.exit_status().is_none() {
                return Ok(p.clone());
            }
        }
        if let Some(e) = lock(&self.failed).get(plugin) {
            return Err(e.clone());
        }
        let process = match self.launch(package, plugin).await {
            Ok(process) => process,
            Err(e) => {
                if !matches!(e, LaunchError::ShutDown) {
                    lock(&self.failed).insert(plugin.clone(), e.clone());
                }
                return Err(e);
            }
        };
        *slot = Some(process.clone());
        Ok(process)
    }

    /// Drops the spare `process` from the cache (it was claimed).
    pub(crate) fn forget_spare(&self, process: &Arc<PluginProcess>) {
        let slot = lock(&self.spares).get(&process.command).cloned();
        if let Some(slot) = slot {
            if let Ok(mut slot) = slot.try_lock() {
                if slot.as_ref().is_some_and(|p| Arc::ptr_eq(p, process)) {
                    *slot = None;
                }
            }
        }
    }

    /// The cached schema of `plugin` at `version`.
    pub(crate) fn cached_schema(
        &self,
        plugin: &PluginCommand,
        version: Option<&Version>,
    ) -> Option<Arc<PackageSchema>> {
        lock(&self.schemas)
            .get(&(plugin.clone(), version.cloned()))
            .cloned()
    }

    /// Remembers the schema of `plugin` at `version`.
    pub(crate) fn cache_schema(
        &self,
        plugin: &PluginCommand,
        version: Option<&Version>,
        schema: Arc<PackageSchema>,
    ) {
        lock(&self.schemas).insert((plugin.clone(), version.cloned()), schema);
    }

    fn live_processes(&self) -> Vec<Arc<PluginProcess>> {
        lock(&self.launched)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }
}

/// Loads provider plugins (a [`ProviderLoader`]).
///
/// **Lookup.** Ambient first, as Pulumi: if `pulumi-resource-<pkg>` is on
/// `PATH` (and ambient plugins are enabled), it is started once and asked
/// its version (`GetPluginInfo`); it serves the request if it reports no
/// version (a development build), or if there is no requested version, or
/// if its version [`is_compatible`] with the request. Otherwise (unlike
/// Pulumi, which would use it anyway) it is skipped, and the plugin
/// directory's newest compatible version serves. Nothing found:
/// [`RegistryError::NotFound`] whose version text lists what is installed.
///
/// **Processes.** One unconfigured process per (package, resolved version)
/// is kept for CheckConfig/DiffConfig; each configured provider owns a
/// process (see [`GrpcProvider`]). Every process gets the engine address
/// as its only argument. A plugin that exits, prints something other than
/// a port, or stays silent past `startup_timeout` fails the load with a
/// message that includes its last stderr lines ([`RegistryError::Provider`]
/// with `urn` set to the executable name and
/// [`ProviderError::Unavailable`]).
///
/// **Shutdown.** [`PluginLoader::shutdown`] sends `Cancel` to every live
/// process, waits at most `shutdown_grace` for it, then kills and reaps
/// it; the loader loads nothing afterwards. Dropping the loader kills
/// every process it started, and dropping a provider kills the process it
/// owns: no plugin outlives Converge.
pub struct PluginLoader {
    shared: Arc<HostShared>,
}

impl fmt::Debug for PluginLoader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginLoader")
            .field("options", &self.shared.options)
            .field("pids", &self.pids())
            .finish()
    }
}

impl Default for PluginLoader {
    fn default() -> Self {
        PluginLoader::new(PluginLoaderOptions::default())
    }
}

impl PluginLoader {
    pub fn new(options: PluginLoaderOptions) -> Self {
        PluginLoader {
            shared: Arc::new(HostShared {
                options,
                engine: tokio::sync::OnceCell::new(),
                spares: Mutex::new(HashMap::new()),
                launched: Mutex::new(Vec::new()),
                ambient_versions: Mutex::new(HashMap::new()),
                failed: Mutex::new(HashMap::new()),
                schemas: Mutex::new(HashMap::new()),
                closed: AtomicBool::new(false),
            }),
        }
    }

    pub fn options(&self) -> &PluginLoaderOptions {
        &self.shared.options
    }

    /// The process ids of the plugins running now.
    pub fn pids(&self) -> Vec<u32> {
        self.shared
            .live_processes()
            .iter()
            .filter(|p| !p.is_closed())
            .filter_map(|p| p.pid)
            .collect()
    }

    /// The executable that serves `package` at `version` (see the lookup
    /// rule above). May start an ambient plugin to learn its version.
    pub async fn resolve(
        &self,
        package: &str,
        version: Option<&Version>,
    ) -> Result<PathBuf, RegistryError> {
        let dir = &self.shared.options.directory;
        if let Some(path) = dir.ambient(package) {
            let known = lock(&self.shared.ambient_versions).get(&path).cloned();
            let reported = match known {
                Some(v) => v,
                None => {
                    let process = self
                        .shared
                        .spare(package, &PluginCommand::executable(&path))
                        .await
                        .map_err(|e| launch_error(package, e))?;
                    let v = process.version.clone();
                    lock(&self.shared.ambient_versions).insert(path.clone(), v.clone());
                    v
                }
            };
            match (version, &reported) {
                (Some(wanted), Some(have)) if !is_compatible(have, wanted) => {
                    tracing::debug!(
                        package,
                        path = %path.display(),
                        %have,
                        %wanted,
                        "ambient plugin is not compatible; looking in the plugin directory"
                    );
                }
                _ => return Ok(path),
            }
        }
        dir.select(package, version)
            .map(|p| p.path)
            .map_err(|e| RegistryError::NotFound {
                package: package.to_owned(),
                version: e.version_text(),
            })
    }

    /// How `package` at `version` is started: the program's dynamic
    /// provider command for `pulumi-python` / `pulumi-nodejs` when
    /// configured, else the executable [`Self::resolve`] finds.
    pub async fn resolve_command(
        &self,
        package: &str,
        version: Option<&Version>,
    ) -> Result<PluginCommand, RegistryError> {
        if let Some(command) = self.shared.options.dynamic.command(package) {
            return Ok(command);
        }
        self.resolve(package, version)
            .await
            .map(PluginCommand::executable)
    }

    /// [`ProviderLoader::load`] with the concrete type.
    pub async fn load_plugin(
        &self,
        package: &str,
        version: Option<&Version>,
    ) -> Result<Arc<GrpcProvider>, RegistryError> {
        let command = self.resolve_command(package, version).await?;
        let process = self
            .shared
            .spare(package, &command)
            .await
            .map_err(|e| launch_error(package, e))?;
        Ok(Arc::new(GrpcProvider::new(self.shared.clone(), process)))
    }

    /// Cancel, then kill, every plugin process; no loads afterwards.
    pub async fn shutdown(&self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        let grace = self.shared.options.shutdown_grace;
        let tasks: Vec<_> = self
            .shared
            .live_processes()
            .into_iter()
            .map(|p| tokio::spawn(async move { p.shutdown(grace).await }))
            .collect();
        for task in tasks {
            let _ = task.await;
        }
        lock(&self.shared.spares).clear();
    }
}

impl Drop for PluginLoader {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        for process in self.shared.live_processes() {
            process.kill();
        }
        lock(&self.shared.spares).clear();
    }
}

fn launch_error(package: &str, e: LaunchError) -> RegistryError {
    RegistryError::Provider {
        urn: executable_name(package),
        source: ProviderError::Unavailable(e.to_string()),
    }
}

#[async_trait]
impl ProviderLoader for PluginLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        let provider: Arc<dyn Provider> = self.load_plugin(package, version).await?;
        Ok(provider)
    }
}

/// Tries loaders in order: the first that finds the package serves it. A
/// loader's [`RegistryError::NotFound`] passes on to the next; any other
/// error (a plugin that is installed but will not start) stops the chain,
/// so a broken plugin is reported rather than silently replaced. When no
/// loader finds it, the first `NotFound` (the most specific) is returned.
#[derive(Debug, Clone)]
pub struct ChainLoader {
    loaders: Vec<Arc<dyn ProviderLoader>>,
}

impl ChainLoader {
    pub fn new(loaders: Vec<Arc<dyn ProviderLoader>>) -> Self {
        ChainLoader { loaders }
    }

    /// Installed plugins first, then the built-in providers: "built-in
    /// providers are used when no external plugin of that package is
    /// installed" (compatible with the requested version).
    pub fn plugins_then_builtins(plugins: Arc<PluginLoader>) -> Self {
        ChainLoader::new(vec![plugins, Arc::new(BuiltinLoader::new())])
    }
}

#[async_trait]
impl ProviderLoader for ChainLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        let mut first_not_found = None;
        for loader in &self.loaders {
            match loader.load(package, version).await {
                Ok(p) => return Ok(p),
                Err(e @ RegistryError::NotFound { .. }) => {
                    first_not_found.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(first_not_found.unwrap_or_else(|| RegistryError::NotFound {
            package: package.to_owned(),
            version: version.map(ToString::to_string),
        }))
    }
}

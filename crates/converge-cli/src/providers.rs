//! Where providers come from: the engine's provider of package `pulumi`
//! (stack references) when the command deploys a stack, installed plugins
//! (`pulumi-resource-<pkg>` on PATH or in the plugin directory) and the
//! program's dynamic providers, then Terraform providers of that TYPE in
//! OpenTofu's local layouts (converge-terraform), then the built-in
//! providers (random, command, converge's file).
//! What plugins write to stderr (and log through the engine) is shown as
//! diagnostics of the running operation.

use std::sync::{Arc, Mutex};

use converge_engine::pulumi_provider::{PulumiLoader, StackReferences};
use converge_engine::{EventSink, Severity};
use converge_plugin::builtin::BuiltinLoader;
use converge_plugin::host::{
    ChainLoader, LogSeverity, PluginLoader, PluginLoaderOptions, PluginLogLine, PluginLogSource,
};
use converge_plugin::terraform::discovery::current_os_arch;
use converge_plugin::ProviderLoader;
use converge_terraform::install::{CliConfig, Installer};
use converge_terraform::{TerraformLoader, TerraformLoaderOptions};

use crate::program::dynamic_providers;
use crate::project::Project;

/// The providers of one command; plugin processes end with it.
#[derive(Debug, Clone)]
pub struct Providers {
    plugins: Arc<PluginLoader>,
    terraform: Arc<TerraformLoader>,
    loader: Arc<dyn ProviderLoader>,
    log: PluginLog,
}

/// Where plugin output goes: the event sink of the operation running now
/// (none between operations: lines are then only traced).
#[derive(Debug, Clone, Default)]
pub struct PluginLog {
    sink: Arc<Mutex<EventSink>>,
}

impl PluginLog {
    /// Sends plugin output to `events` from now on.
    pub fn attach(&self, events: EventSink) {
        *self.sink.lock().unwrap_or_else(|p| p.into_inner()) = events;
    }

    fn line(&self, line: &PluginLogLine) {
        let severity = match line.source {
            // A plugin's stdout after its port line is its own chatter.
            PluginLogSource::Stdout => Severity::Debug,
            PluginLogSource::Stderr => Severity::Info,
            PluginLogSource::Engine(s) => match s {
                LogSeverity::Debug => Severity::Debug,
                LogSeverity::Info => Severity::Info,
                LogSeverity::Warning => Severity::Warning,
                LogSeverity::Error => Severity::Error,
            },
        };
        let message = match &line.package {
            Some(package) => format!("plugin {package}: {}", line.message),
            None => format!("plugin: {}", line.message),
        };
        let sink = self.sink.lock().unwrap_or_else(|p| p.into_inner()).clone();
        sink.diagnostic(severity, None, message);
    }
}

/// `CONVERGE_PLUGIN_TIMEOUT` (a Go duration such as `30s` or `2m`): how
/// long a plugin may take to start and answer its first calls.
fn plugin_timeout() -> Option<std::time::Duration> {
    let text = std::env::var("CONVERGE_PLUGIN_TIMEOUT").ok()?;
    match converge_model::go_duration_seconds(&text).filter(|s| s.is_finite() && *s > 0.0) {
        Some(seconds) => Some(std::time::Duration::from_secs_f64(seconds)),
        None => {
            eprintln!(
                "warning: CONVERGE_PLUGIN_TIMEOUT={text:?} is not a duration (write it as 30s or 2m); \
                 using the default"
            );
            None
        }
    }
}

/// Terraform providers for `project`: its lock file, and the CLI
/// configuration's installation methods and plugin cache directory (a
/// configuration that cannot be read is reported and left out).
fn terraform_options(
    project: &Project,
    logger: converge_plugin::host::PluginLogger,
) -> TerraformLoaderOptions {
    let mut options = TerraformLoaderOptions {
        logger: Some(logger),
        lock_dir: Some(project.dir.clone()),
        ..TerraformLoaderOptions::default()
    };
    match CliConfig::from_environment() {
        Ok(config) => {
            if let Some(cache) = &config.plugin_cache_dir {
                if !options.discovery.dirs.contains(cache) {
                    options.discovery.dirs.insert(0, cache.clone());
                }
            }
            options.installer = Some(Installer::new(config, current_os_arch()));
        }
        Err(e) => eprintln!("warning: the OpenTofu CLI configuration is left out: {e}"),
    }
    options
}

impl Providers {
    /// The providers for `project`'s program.
    pub fn new(project: &Project) -> Self {
        let log = PluginLog::default();
        let route = log.clone();
        let logger: converge_plugin::host::PluginLogger =
            Arc::new(move |line: &PluginLogLine| route.line(line));
        let mut options = PluginLoaderOptions {
            dynamic: dynamic_providers(project),
            logger: Some(logger.clone()),
            ..PluginLoaderOptions::default()
        };
        if let Some(timeout) = plugin_timeout() {
            options.startup_timeout = timeout;
        }
        let plugins = Arc::new(PluginLoader::new(options));
        let terraform = Arc::new(TerraformLoader::new(terraform_options(project, logger)));
        let loader: Arc<dyn ProviderLoader> = Arc::new(ChainLoader::new(vec![
            plugins.clone(),
            terraform.clone(),
            Arc::new(BuiltinLoader::new()),
        ]));
        Providers {
            plugins,
            terraform,
            loader,
            log,
        }
    }

    /// The same providers with the engine's provider of package `pulumi`
    /// (stack references to `stacks`' backend) in front.
    pub fn with_stack_references(mut self, stacks: StackReferences) -> Self {
        self.loader = Arc::new(PulumiLoader::new(self.loader, stacks));
        self
    }

    pub fn loader(&self) -> Arc<dyn ProviderLoader> {
        self.loader.clone()
    }

    /// Where plugin output is shown.
    pub fn log(&self) -> &PluginLog {
        &self.log
    }

    /// Asks every plugin and Terraform provider process to stop, then
    /// ends them.
    pub async fn shutdown(&self) {
        self.plugins.shutdown().await;
        self.terraform.shutdown().await;
        self.log.attach(EventSink::discard());
    }
}

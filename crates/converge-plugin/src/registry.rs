//! The provider instances of one deployment.
//!
//! Provider resources (`pulumi:providers:<pkg>`) have a lifecycle of their
//! own: `CheckConfig` / `DiffConfig` stand in for `Check` / `Diff`, creating
//! one loads and configures an instance, and every resource it manages
//! refers to it as `<urn>::<id>`.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_model::{PropertyMap, PropertyValue, ProviderReference, Urn, UNKNOWN_STRING};

use crate::parameterization::{self, without_internal, PackageDescriptor};
use crate::provider::{
    CheckRequest, CheckResponse, ConfigureRequest, DiffRequest, DiffResponse, ParameterizeRequest,
};
use crate::schema::PackageSchema;
use crate::{Provider, ProviderError};

/// Finds and starts a provider for `(package, version)` (seed 001's lookup:
/// the newest installed version compatible with the request).
#[async_trait]
pub trait ProviderLoader: Send + Sync + fmt::Debug {
    async fn load(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError>;
}

/// The plugin directory a [`RegistryError::NotFound`] names: the one this
/// process searches (`$PULUMI_HOME/plugins` when set).
fn plugin_dir_text() -> String {
    crate::host::PluginDirectory::default_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "~/.pulumi/plugins".to_owned())
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegistryError {
    #[error("no provider plugin found for package {package}{} (looked for a Pulumi plugin pulumi-resource-{package} on PATH and in {}, a Terraform provider of type {package} in ~/.terraform.d/plugins, $TF_PLUGIN_CACHE_DIR and ~/.local/share/terraform/plugins, and the built-in providers)", version.as_ref().map(|v| format!(" version {v}")).unwrap_or_default(), plugin_dir_text())]
    NotFound {
        package: String,
        version: Option<String>,
    },
    #[error("provider {urn}: invalid version {version:?}: {reason}")]
    BadVersion {
        urn: String,
        version: String,
        reason: String,
    },
    #[error("{urn} is not a provider resource (its type must start with pulumi:providers:)")]
    NotAProvider { urn: String },
    #[error("unknown provider {0}: it was not registered in this deployment")]
    UnknownProvider(String),
    #[error("provider {urn}: its recorded parameterization cannot be read: {source}")]
    BadParameterization {
        urn: String,
        #[source]
        source: parameterization::RecordError,
    },
    #[error("provider {urn}: plugin {plugin} was asked to become package {package} but answered {answered}; the plugin does not serve that package")]
    ParameterizedAs {
        urn: String,
        plugin: String,
        package: String,
        answered: String,
    },
    #[error("provider {urn}: {source}")]
    Provider {
        urn: String,
        #[source]
        source: ProviderError,
    },
}

/// The package a provider resource serves: the last part of its type.
pub fn provider_package(urn: &Urn) -> Result<&str, RegistryError> {
    converge_model::provider_package(urn.type_token()).ok_or_else(|| RegistryError::NotAProvider {
        urn: urn.to_string(),
    })
}

/// The version of the plugin a provider resource asks for: its `version`
/// input, or for a parameterized package the base plugin's
/// (`__internal.version`).
pub fn provider_version(
    urn: &Urn,
    inputs: &PropertyMap,
) -> Result<Option<semver::Version>, RegistryError> {
    if let Some(p) = recorded_package(urn, inputs)? {
        return Ok(p.plugin_version);
    }
    match inputs.get("version") {
        Some(PropertyValue::String(v)) if !v.is_empty() => semver::Version::parse(v)
            .map(Some)
            .map_err(|e| RegistryError::BadVersion {
                urn: urn.to_string(),
                version: v.clone(),
                reason: e.to_string(),
            }),
        _ => Ok(None),
    }
}

/// The parameterized package a provider resource records, if any.
pub fn recorded_package(
    urn: &Urn,
    inputs: &PropertyMap,
) -> Result<Option<PackageDescriptor>, RegistryError> {
    parameterization::recorded(provider_package(urn)?, inputs).map_err(|source| {
        RegistryError::BadParameterization {
            urn: urn.to_string(),
            source,
        }
    })
}

/// The configured provider instances of one deployment.
#[derive(Debug)]
pub struct ProviderRegistry {
    loader: Arc<dyn ProviderLoader>,
    instances: Mutex<HashMap<String, Arc<dyn Provider>>>,
    /// Configurations of provider resources no step configured, made on
    /// first use: one per reference, however many steps ask at once.
    on_first_use: Mutex<HashMap<String, FirstUse>>,
    /// Parameterized instances loaded for a provider resource's Check,
    /// by URN and package: its Diff and its configuration take the same
    /// one rather than starting and parameterizing the plugin again.
    unconfigured: Mutex<HashMap<(String, PackageDescriptor), Arc<dyn Provider>>>,
}

/// A configuration made once, by the first caller.
type FirstUse = Arc<tokio::sync::OnceCell<Arc<dyn Provider>>>;

impl ProviderRegistry {
    pub fn new(loader: Arc<dyn ProviderLoader>) -> Self {
        ProviderRegistry {
            loader,
            instances: Mutex::new(HashMap::new()),
            on_first_use: Mutex::new(HashMap::new()),
            unconfigured: Mutex::new(HashMap::new()),
        }
    }

    /// The schema tokens of `package` (at `version`) as its provider
    /// answers them (plugins: `GetSchema`, cached by the loader); `None`
    /// when the provider has no schema to give.
    pub async fn schema(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Option<Arc<PackageSchema>>, RegistryError> {
        let provider = self.loader.load(package, version).await?;
        match provider.schema().await {
            Ok(s) => Ok(Some(s)),
            Err(ProviderError::Unimplemented(_)) => Ok(None),
            Err(source) => Err(RegistryError::Provider {
                urn: package.to_owned(),
                source,
            }),
        }
    }

    fn instances(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<dyn Provider>>> {
        self.instances.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The instance for provider resource `urn` with `inputs`: loaded by
    /// package and version; for a parameterized package, its base plugin
    /// loaded and parameterized (or the instance its Check did, which
    /// `keep` leaves for the next call and otherwise takes).
    async fn load_for(
        &self,
        urn: &Urn,
        inputs: &PropertyMap,
        keep: bool,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        let package = provider_package(urn)?;
        let Some(descriptor) = recorded_package(urn, inputs)? else {
            let version = provider_version(urn, inputs)?;
            return self.loader.load(package, version.as_ref()).await;
        };
        let key = (urn.to_string(), descriptor);
        {
            let mut unconfigured = self.unconfigured.lock().unwrap_or_else(|p| p.into_inner());
            let found = if keep {
                unconfigured.get(&key).cloned()
            } else {
                unconfigured.remove(&key)
            };
            if let Some(p) = found {
                return Ok(p);
            }
        }
        let (urn_text, descriptor) = key;
        let provider = self
            .loader
            .load(&descriptor.plugin, descriptor.plugin_version.as_ref())
            .await?;
        let Some(parameters) = descriptor.parameterization.clone() else {
            return Ok(provider);
        };
        let answer = provider
            .parameterize(ParameterizeRequest::Value(parameters))
            .await
            .map_err(|source| RegistryError::Provider {
                urn: urn_text.clone(),
                source,
            })?;
        if answer.name != package {
            return Err(RegistryError::ParameterizedAs {
                urn: urn_text,
                plugin: descriptor.plugin.clone(),
                package: package.to_owned(),
                answered: answer.name,
            });
        }
        if keep {
            self.unconfigured
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert((urn_text, descriptor), provider.clone());
        }
        Ok(provider)
    }

    /// `Check` of a provider resource: its plugin's `CheckConfig`.
    pub async fn check(
        &self,
        urn: &Urn,
        olds: PropertyMap,
        news: PropertyMap,
    ) -> Result<CheckResponse, RegistryError> {
        let provider = self.load_for(urn, &news, true).await?;
        let internal = news.get(parameterization::INTERNAL_KEY).cloned();
        let mut response = provider
            .check_config(CheckRequest {
                urn: urn.clone(),
                olds: without_internal(&olds),
                news: without_internal(&news),
                random_seed: Vec::new(),
            })
            .await
            .map_err(|source| RegistryError::Provider {
                urn: urn.to_string(),
                source,
            })?;
        // The engine's own record goes back with the checked inputs.
        if let Some(internal) = internal {
            response
                .inputs
                .insert(parameterization::INTERNAL_KEY.to_owned(), internal);
        }
        Ok(response)
    }

    /// `Diff` of a provider resource: its plugin's `DiffConfig`.
    pub async fn diff(
        &self,
        urn: &Urn,
        id: &str,
        old_inputs: PropertyMap,
        old_outputs: PropertyMap,
        new_inputs: PropertyMap,
    ) -> Result<DiffResponse, RegistryError> {
        let provider = self.load_for(urn, &new_inputs, true).await?;
        provider
            .diff_config(DiffRequest {
                urn: urn.clone(),
                id: id.to_owned(),
                old_inputs: without_internal(&old_inputs),
                old_outputs: without_internal(&old_outputs),
                new_inputs: without_internal(&new_inputs),
                ignore_changes: Vec::new(),
            })
            .await
            .map_err(|source| RegistryError::Provider {
                urn: urn.to_string(),
                source,
            })
    }

    /// Loads and configures an instance for the provider resource `urn`
    /// and registers it under `<urn>::<id>`. A new provider gets a fresh
    /// ID (`id` is `None`); in a preview of a new provider the ID is
    /// unknown. Returns the ID.
    pub async fn configure(
        &self,
        urn: &Urn,
        id: Option<&str>,
        inputs: &PropertyMap,
        preview: bool,
    ) -> Result<String, RegistryError> {
        let provider = self.load_for(urn, inputs, false).await?;
        provider
            .configure(ConfigureRequest {
                urn: Some(urn.clone()),
                inputs: without_internal(inputs),
                accept_secrets: true,
                accept_resources: true,
            })
            .await
            .map_err(|source| RegistryError::Provider {
                urn: urn.to_string(),
                source,
            })?;
        let id = match id {
            Some(id) => id.to_owned(),
            None if preview => UNKNOWN_STRING.to_owned(),
            None => uuid::Uuid::new_v4().to_string(),
        };
        let reference = ProviderReference {
            urn: urn.clone(),
            id: id.clone(),
        };
        self.instances().insert(reference.to_string(), provider);
        Ok(id)
    }

    /// The configured instance a resource refers to.
    pub fn get(&self, reference: &ProviderReference) -> Result<Arc<dyn Provider>, RegistryError> {
        self.instances()
            .get(&reference.to_string())
            .cloned()
            .ok_or_else(|| RegistryError::UnknownProvider(reference.to_string()))
    }

    /// The configured instance a resource refers to, configured now from
    /// `inputs` (the provider resource's recorded inputs) when no step of
    /// this deployment configured it — a provider resource carried over
    /// unchanged. Concurrent callers share one configuration, so each
    /// provider resource is one instance (one plugin process) per
    /// deployment.
    pub async fn get_or_configure(
        &self,
        reference: &ProviderReference,
        inputs: &PropertyMap,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        if let Ok(p) = self.get(reference) {
            return Ok(p);
        }
        let key = reference.to_string();
        let once = self
            .on_first_use
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key)
            .or_default()
            .clone();
        let provider = once
            .get_or_try_init(|| async {
                self.configure(&reference.urn, Some(&reference.id), inputs, false)
                    .await?;
                self.get(reference)
            })
            .await?;
        Ok(provider.clone())
    }

    /// Forgets a deleted provider's instance.
    pub fn remove(&self, reference: &ProviderReference) {
        let key = reference.to_string();
        self.on_first_use
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        self.instances().remove(&key);
    }

    /// Asks every configured instance to stop its outstanding work
    /// ([`Provider::cancel`]), all at once, each for at most `within`: the
    /// user cancelled the operation. A provider that does not answer is
    /// left to its in-flight calls.
    pub async fn cancel_all(&self, within: std::time::Duration) {
        let mut providers: Vec<Arc<dyn Provider>> = self.instances().values().cloned().collect();
        // Several references may share an instance: ask each once.
        providers.sort_by_key(|p| Arc::as_ptr(p).cast::<()>() as usize);
        providers.dedup_by(|a, b| Arc::ptr_eq(a, b));
        let mut asked = tokio::task::JoinSet::new();
        for provider in providers {
            asked.spawn(async move {
                if let Ok(Err(e)) = tokio::time::timeout(within, provider.cancel()).await {
                    tracing::debug!(package = provider.package(), "Cancel failed: {e}");
                }
            });
        }
        while asked.join_next().await.is_some() {}
    }
}

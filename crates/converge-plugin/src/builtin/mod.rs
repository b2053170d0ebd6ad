//! Built-in providers: used when no plugin of their package is installed.
//!
//! | package    | emulates                      | resources / functions |
//! |------------|-------------------------------|-----------------------|
//! | `random`   | pulumi-random 4.x             | `random:index/random{String,Password,Integer,Pet,Uuid,Uuid4,Uuid7,Id,Shuffle,Bytes}:…` |
//! | `command`  | pulumi-command 1.x (local)    | `command:local:Command`, invoke `command:local:run` |
//! | `converge` | Converge's own (no Pulumi twin) | `converge:index:File` |
//!
//! Type tokens, property names (camelCase, as programs send them), secret
//! outputs, import IDs and replacement rules follow the Pulumi packages, so
//! programs written against `pulumi_random` / `pulumi_command` run
//! unchanged. [`BuiltinLoader`] serves them by `(package, version)`;
//! [`schema`] gives each package's Pulumi schema, [`package_schema`] its
//! canonical tokens (what the providers' `schema()` answers).

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;

use crate::registry::{ProviderLoader, RegistryError};
use crate::schema::PackageSchema;
use crate::{Provider, ProviderError};

pub mod command;
pub mod file;
pub mod random;
mod spec;

/// The version of pulumi-random whose schema the built-in `random` follows.
pub const RANDOM_VERSION: &str = "4.21.4";
/// The version of pulumi-command whose schema the built-in `command` follows.
pub const COMMAND_VERSION: &str = "1.2.1";
/// The version of the `converge` package (this crate's version).
pub const CONVERGE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The packages served by [`BuiltinLoader`].
pub const PACKAGES: [&str; 3] = [random::PACKAGE, command::PACKAGE, file::PACKAGE];

/// The version the built-in provider of `package` reports, if there is one.
pub fn version(package: &str) -> Option<semver::Version> {
    let text = match package {
        random::PACKAGE => RANDOM_VERSION,
        command::PACKAGE => COMMAND_VERSION,
        file::PACKAGE => CONVERGE_VERSION,
        _ => return None,
    };
    semver::Version::parse(text).ok()
}

/// True if the built-in `package` can serve a request for `requested`: any
/// version of the same major version (the built-ins emulate a major line).
pub fn serves(package: &str, requested: Option<&semver::Version>) -> bool {
    match (version(package), requested) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(ours), Some(wanted)) => ours.major == wanted.major,
    }
}

/// A new instance of the built-in provider of `package`.
pub fn provider(package: &str) -> Option<Arc<dyn Provider>> {
    match package {
        random::PACKAGE => Some(Arc::new(random::RandomProvider::new())),
        command::PACKAGE => Some(Arc::new(command::CommandProvider::new())),
        file::PACKAGE => Some(Arc::new(file::FileProvider::new())),
        _ => None,
    }
}

/// The Pulumi package schema (JSON) of a built-in package.
pub fn schema(package: &str) -> Option<serde_json::Value> {
    match package {
        random::PACKAGE => Some(random::schema()),
        command::PACKAGE => Some(command::schema()),
        file::PACKAGE => Some(file::schema()),
        _ => None,
    }
}

/// The canonical tokens of a built-in package's schema, read once per
/// process.
pub fn package_schema(package: &str) -> Option<Arc<PackageSchema>> {
    static SCHEMAS: OnceLock<Vec<(&'static str, Arc<PackageSchema>)>> = OnceLock::new();
    let all = SCHEMAS.get_or_init(|| {
        PACKAGES
            .iter()
            .filter_map(|&p| {
                let json = schema(p)?;
                let parsed = PackageSchema::from_json(&json).ok()?;
                Some((p, Arc::new(parsed)))
            })
            .collect()
    });
    all.iter()
        .find(|(p, _)| *p == package)
        .map(|(_, s)| s.clone())
}

/// [`package_schema`] as a provider answers it.
pub(crate) fn provider_schema(package: &str) -> Result<Arc<PackageSchema>, ProviderError> {
    package_schema(package).ok_or(ProviderError::Unimplemented("GetSchema"))
}

/// The failure for a resource type the built-in `package` does not serve,
/// naming the closest types it does (a misspelled token in a program).
pub(crate) fn unknown_type(package: &str, token: &str) -> ProviderError {
    let hint = package_schema(package)
        .and_then(|schema| {
            schema
                .resolve(crate::MemberKind::Resource, token)
                .err()
                .map(|e| e.to_string())
        })
        .unwrap_or_else(|| format!("package {package} has no resource type '{token}'"));
    ProviderError::failed(format!("unknown resource type: {hint}"))
}

/// Loads the built-in providers; any other package is not found. Compose
/// it after the plugin loader so that an installed plugin wins.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinLoader;

impl BuiltinLoader {
    pub fn new() -> Self {
        BuiltinLoader
    }
}

#[async_trait]
impl ProviderLoader for BuiltinLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&semver::Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        let not_found = || RegistryError::NotFound {
            package: package.to_owned(),
            version: version.map(ToString::to_string),
        };
        if !serves(package, version) {
            return Err(not_found());
        }
        provider(package).ok_or_else(not_found)
    }
}

//! A provider loader over a fixed list of `(package, version, factory)`.

use std::fmt;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use converge_plugin::{Provider, ProviderLoader, RegistryError};
use semver::{Comparator, Op, Version};

use crate::provider::MockProvider;

/// Makes a provider instance.
pub type ProviderFactory = Arc<dyn Fn() -> Arc<dyn Provider> + Send + Sync>;

struct Entry {
    package: String,
    version: Version,
    factory: ProviderFactory,
}

/// A [`ProviderLoader`] for tests, choosing as seed 001's lookup does: of
/// the factories for the package whose version [`is_compatible`] with the
/// request (any version if the request names none), the newest; the first
/// registered wins a tie. No such factory: [`RegistryError::NotFound`].
#[derive(Default)]
pub struct MockLoader {
    entries: Vec<Entry>,
    loads: Mutex<Vec<(String, Option<Version>)>>,
}

impl fmt::Debug for MockLoader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries: Vec<String> = self
            .entries
            .iter()
            .map(|e| format!("{}@{}", e.package, e.version))
            .collect();
        f.debug_struct("MockLoader")
            .field("entries", &entries)
            .finish_non_exhaustive()
    }
}

/// Whether an installed `available` version satisfies a request for
/// `requested`: Cargo's caret rule (`^requested`). The same major version
/// and not older; below 1.0.0 the same minor version (and below 0.1.0 the
/// same patch), since there a minor bump may break. A pre-release is only
/// chosen for a request naming a pre-release of the same
/// `major.minor.patch`.
///
/// Seed 001 says only "compatible with semver"; this is semver's own
/// definition of compatible, so a program that pins `5.2.0` runs with
/// `5.9.1` but never with `6.0.0` or `5.1.0`.
pub fn is_compatible(available: &Version, requested: &Version) -> bool {
    Comparator {
        op: Op::Caret,
        major: requested.major,
        minor: Some(requested.minor),
        patch: Some(requested.patch),
        pre: requested.pre.clone(),
    }
    .matches(available)
}

impl MockLoader {
    pub fn new() -> Self {
        MockLoader::default()
    }

    /// A loader that serves exactly this provider instance (shared: every
    /// load returns it), at its package and version.
    pub fn single(provider: impl Into<Arc<MockProvider>>) -> Self {
        MockLoader::new().with_provider(provider)
    }

    /// Adds a factory for `package` at `version`.
    pub fn with_factory(
        mut self,
        package: impl Into<String>,
        version: Version,
        factory: impl Fn() -> Arc<dyn Provider> + Send + Sync + 'static,
    ) -> Self {
        self.entries.push(Entry {
            package: package.into(),
            version,
            factory: Arc::new(factory),
        });
        self
    }

    /// Adds a provider instance that every load choosing it shares, at its
    /// package and version.
    pub fn with_provider(self, provider: impl Into<Arc<MockProvider>>) -> Self {
        let provider: Arc<MockProvider> = provider.into();
        let package = provider.package().to_owned();
        let version = provider.version().clone();
        self.with_factory(package, version, move || {
            Arc::clone(&provider) as Arc<dyn Provider>
        })
    }

    /// Every `(package, version)` asked for so far, in order, found or not.
    pub fn loads(&self) -> Vec<(String, Option<Version>)> {
        self.loads.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The version a load of `(package, version)` would choose.
    pub fn select(&self, package: &str, version: Option<&Version>) -> Option<&Version> {
        self.choose(package, version).map(|e| &e.version)
    }

    fn choose(&self, package: &str, version: Option<&Version>) -> Option<&Entry> {
        let mut best: Option<&Entry> = None;
        for entry in &self.entries {
            let fits = entry.package == package
                && version.is_none_or(|v| is_compatible(&entry.version, v));
            if fits && best.is_none_or(|b| entry.version > b.version) {
                best = Some(entry);
            }
        }
        best
    }
}

#[async_trait]
impl ProviderLoader for MockLoader {
    async fn load(
        &self,
        package: &str,
        version: Option<&Version>,
    ) -> Result<Arc<dyn Provider>, RegistryError> {
        self.loads
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((package.to_owned(), version.cloned()));
        match self.choose(package, version) {
            Some(entry) => Ok((entry.factory)()),
            None => Err(RegistryError::NotFound {
                package: package.to_owned(),
                version: version.map(Version::to_string),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use converge_model::{PropertyMap, PropertyValue, ProviderReference, Urn};
    use converge_plugin::{CreateRequest, ProviderRegistry};

    use super::*;
    use crate::{MockCloud, Rpc};

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    /// A loader with mock providers for `pkg` at each version.
    fn loader(versions: &[&str]) -> MockLoader {
        versions.iter().fold(MockLoader::new(), |l, ver| {
            let ver = v(ver);
            let made = ver.clone();
            l.with_factory("pkg", ver, move || {
                Arc::new(MockProvider::new("pkg").with_version(made.clone()))
            })
        })
    }

    /// The version the loaded provider reports, or the error.
    async fn load(
        l: &MockLoader,
        package: &str,
        version: Option<&str>,
    ) -> Result<String, RegistryError> {
        let requested = version.map(v);
        let p = l.load(package, requested.as_ref()).await?;
        let info = p.plugin_info().await.unwrap();
        Ok(info.version.unwrap().to_string())
    }

    #[test]
    fn compatibility_is_the_caret_rule() {
        let yes = [
            ("1.2.3", "1.2.3"),
            ("1.9.0", "1.2.3"),
            ("1.2.4", "1.2.3"),
            ("0.3.5", "0.3.1"),
            ("1.2.3", "1.2.3-beta.1"),
            ("1.2.3-beta.2", "1.2.3-beta.1"),
        ];
        let no = [
            ("2.0.0", "1.2.3"),
            ("1.2.2", "1.2.3"),
            ("0.4.0", "0.3.1"),
            ("0.0.2", "0.0.1"),
            ("1.3.0-beta.1", "1.2.3"),
            ("1.2.3-beta.1", "1.2.3"),
        ];
        for (available, requested) in yes {
            assert!(
                is_compatible(&v(available), &v(requested)),
                "{available} for {requested}"
            );
        }
        for (available, requested) in no {
            assert!(
                !is_compatible(&v(available), &v(requested)),
                "{available} for {requested}"
            );
        }
    }

    #[tokio::test]
    async fn the_newest_compatible_version_wins() {
        let l = loader(&["1.0.0", "2.1.0", "1.5.0", "2.0.0", "3.0.0-alpha.1"]);
        assert_eq!(load(&l, "pkg", Some("1.2.0")).await.unwrap(), "1.5.0");
        assert_eq!(load(&l, "pkg", Some("2.0.0")).await.unwrap(), "2.1.0");
        assert_eq!(load(&l, "pkg", Some("1.0.0")).await.unwrap(), "1.5.0");
        assert_eq!(load(&l, "pkg", None).await.unwrap(), "3.0.0-alpha.1");
        assert_eq!(l.select("pkg", Some(&v("2.0.5"))), Some(&v("2.1.0")));
    }

    #[tokio::test]
    async fn nothing_compatible_is_not_found() {
        let l = loader(&["1.0.0", "2.0.0"]);
        let err = load(&l, "pkg", Some("2.1.0")).await.unwrap_err();
        let expected = RegistryError::NotFound {
            package: "pkg".to_owned(),
            version: Some("2.1.0".to_owned()),
        };
        assert_eq!(err, expected);
        assert!(err.to_string().contains("version 2.1.0"), "{err}");
        let err = load(&l, "other", None).await.unwrap_err();
        assert!(matches!(err, RegistryError::NotFound { version: None, .. }));
        let err = load(&MockLoader::new(), "pkg", None).await.unwrap_err();
        assert!(matches!(err, RegistryError::NotFound { .. }));
        let requested = [
            ("pkg".to_owned(), Some(v("2.1.0"))),
            ("other".to_owned(), None),
        ];
        assert_eq!(l.loads(), requested);
    }

    #[tokio::test]
    async fn ties_go_to_the_first_registered() {
        let l = MockLoader::new()
            .with_provider(MockProvider::new("pkg").replace_on_changes(["first"]))
            .with_provider(MockProvider::new("pkg"));
        let p = l.load("pkg", None).await.unwrap();
        assert!(format!("{p:?}").contains("pkg"));
        let chosen = l.choose("pkg", None).unwrap();
        assert!(Arc::ptr_eq(&chosen.factory, &l.entries[0].factory));
    }

    #[tokio::test]
    async fn factories_make_fresh_instances() {
        let l = loader(&["1.0.0"]);
        let a = l.load("pkg", None).await.unwrap();
        let b = l.load("pkg", None).await.unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
    }

    #[tokio::test]
    async fn single_shares_one_instance_and_its_cloud() {
        let cloud = MockCloud::new();
        let provider = Arc::new(MockProvider::new("pkg").with_cloud(cloud.clone()));
        let l = MockLoader::single(provider.clone());
        let loaded = l.load("pkg", Some(&v("1.0.0"))).await.unwrap();
        let urn = Urn::parse("urn:pulumi:s::p::pkg:m:T::a").unwrap();
        let req = CreateRequest {
            urn,
            properties: PropertyMap::new(),
            timeout: None,
            preview: false,
            planned: None,
        };
        loaded.create(req).await.unwrap();
        assert_eq!(provider.calls(), [Rpc::Create]);
        assert_eq!(cloud.ids(), ["id-1"]);
        assert!(l.load("pkg", Some(&v("2.0.0"))).await.is_err());
        assert!(format!("{l:?}").contains("pkg@1.0.0"));
    }

    #[tokio::test]
    async fn the_registry_loads_and_configures_through_it() {
        let provider = Arc::new(MockProvider::new("pkg").with_version(v("1.4.0")));
        let registry = ProviderRegistry::new(Arc::new(MockLoader::single(provider.clone())));
        let urn = Urn::parse("urn:pulumi:s::p::pulumi:providers:pkg::default").unwrap();
        let inputs = PropertyMap::from([("version".to_owned(), PropertyValue::string("1.2.0"))]);
        let id = registry
            .configure(&urn, Some("prov-1"), &inputs, false)
            .await
            .unwrap();
        assert_eq!(id, "prov-1");
        assert_eq!(provider.configured_with(), Some(inputs));
        let reference = ProviderReference { urn, id };
        assert!(registry.get(&reference).is_ok());
    }
}

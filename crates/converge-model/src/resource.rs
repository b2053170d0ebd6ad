//! One resource as the checkpoint records it.

use std::collections::BTreeMap;
use std::fmt;

use crate::urn::provider_package;
use crate::{CustomTimeouts, PropertyMap, PropertyValue, Urn, UrnError};

/// A resource's state: every field of the checkpoint's resource record.
///
/// Optional references are `None` when absent; `id` is `None` for component
/// resources (an empty ID in a file reads as `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceState {
    pub urn: Urn,
    pub custom: bool,
    /// Marked for deletion at the end of the operation (replaced resources).
    pub delete: bool,
    pub id: Option<String>,
    pub type_token: String,
    pub inputs: PropertyMap,
    pub outputs: PropertyMap,
    pub parent: Option<Urn>,
    pub protect: bool,
    /// Read, not managed: Converge never creates or deletes it.
    pub external: bool,
    pub dependencies: Vec<Urn>,
    pub init_errors: Vec<String>,
    pub provider: Option<ProviderReference>,
    pub property_dependencies: BTreeMap<String, Vec<Urn>>,
    /// Deleted by a delete-before-replace, its replacement not created yet.
    pub pending_replacement: bool,
    pub additional_secret_outputs: Vec<String>,
    pub aliases: Vec<Urn>,
    pub custom_timeouts: Option<Box<CustomTimeouts>>,
    pub import_id: Option<String>,
    pub retain_on_delete: bool,
    pub deleted_with: Option<Urn>,
    /// RFC 3339 timestamps, kept as written so that files round-trip.
    pub created: Option<String>,
    pub modified: Option<String>,
    pub source_position: Option<String>,
    pub ignore_changes: Vec<String>,
    pub replace_on_changes: Vec<String>,
    pub refresh_before_update: bool,
    pub view_of: Option<Urn>,
    /// Marked by `converge state taint`: the next update replaces it.
    pub taint: bool,
    /// Property paths whose changes the display does not show
    /// (`hideDiffs`; `hideDiff` in the checkpoint).
    pub hide_diff: Vec<String>,
    /// Replace this resource whenever one of these is replaced
    /// (`replaceWith`).
    pub replace_with: Vec<Urn>,
    /// A value whose change replaces the resource (`replacementTrigger`).
    pub replacement_trigger: Option<PropertyValue>,
    /// The names of the program's resource hooks attached to this
    /// resource, by kind (`before-create`, …, `after-delete`, `on-error`;
    /// `resourceHooks` in the checkpoint): a resource the program no
    /// longer declares still runs its delete hooks by these names.
    pub resource_hooks: BTreeMap<String, Vec<String>>,
    /// Fields this version does not know, kept verbatim (raw JSON text) so
    /// that state written by a newer tool survives a round trip.
    pub unknown_fields: BTreeMap<String, String>,
}

impl ResourceState {
    /// A resource state with the given URN, type and custom flag; every other
    /// field empty.
    pub fn new(urn: Urn, custom: bool) -> Self {
        let type_token = urn.type_token().to_owned();
        ResourceState {
            urn,
            custom,
            delete: false,
            id: None,
            type_token,
            inputs: PropertyMap::new(),
            outputs: PropertyMap::new(),
            parent: None,
            protect: false,
            external: false,
            dependencies: Vec::new(),
            init_errors: Vec::new(),
            provider: None,
            property_dependencies: BTreeMap::new(),
            pending_replacement: false,
            additional_secret_outputs: Vec::new(),
            aliases: Vec::new(),
            custom_timeouts: None,
            import_id: None,
            retain_on_delete: false,
            deleted_with: None,
            created: None,
            modified: None,
            source_position: None,
            ignore_changes: Vec::new(),
            replace_on_changes: Vec::new(),
            refresh_before_update: false,
            view_of: None,
            taint: false,
            hide_diff: Vec::new(),
            replace_with: Vec::new(),
            replacement_trigger: None,
            resource_hooks: BTreeMap::new(),
            unknown_fields: BTreeMap::new(),
        }
    }

    /// True for provider resources (`pulumi:providers:<pkg>`).
    pub fn is_provider(&self) -> bool {
        provider_package(&self.type_token).is_some()
    }

    /// Every URN this resource depends on in any way: parent, provider,
    /// dependencies, property dependencies and deletedWith.
    pub fn all_dependencies(&self) -> impl Iterator<Item = (DependencyKind, &Urn)> {
        let parent = self.parent.iter().map(|u| (DependencyKind::Parent, u));
        let provider = self
            .provider
            .iter()
            .map(|p| (DependencyKind::Provider, &p.urn));
        let deps = self
            .dependencies
            .iter()
            .map(|u| (DependencyKind::Dependency, u));
        let prop = self
            .property_dependencies
            .values()
            .flatten()
            .map(|u| (DependencyKind::PropertyDependency, u));
        let with = self
            .deleted_with
            .iter()
            .map(|u| (DependencyKind::DeletedWith, u));
        parent.chain(provider).chain(deps).chain(prop).chain(with)
    }
}

/// The ways one resource can depend on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DependencyKind {
    Parent,
    Provider,
    Dependency,
    PropertyDependency,
    DeletedWith,
}

impl fmt::Display for DependencyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DependencyKind::Parent => "parent",
            DependencyKind::Provider => "provider",
            DependencyKind::Dependency => "dependency",
            DependencyKind::PropertyDependency => "property dependency",
            DependencyKind::DeletedWith => "deletedWith",
        })
    }
}

/// A reference to a provider resource: `<urn>::<id>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProviderReference {
    pub urn: Urn,
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderReferenceError {
    #[error("invalid provider reference {0:?}: expected <urn>::<id>")]
    Malformed(String),
    #[error("invalid provider reference: {0}")]
    Urn(#[from] UrnError),
    #[error("invalid provider reference {0:?}: {1:?} is not a provider type (pulumi:providers:<package>)")]
    NotAProvider(String, String),
}

impl ProviderReference {
    /// Parses `<urn>::<id>`; the ID is everything after the last `::`.
    pub fn parse(s: &str) -> Result<Self, ProviderReferenceError> {
        let (urn, id) = s
            .rsplit_once("::")
            .ok_or_else(|| ProviderReferenceError::Malformed(s.to_owned()))?;
        let urn = Urn::parse(urn)?;
        if provider_package(urn.type_token()).is_none() {
            return Err(ProviderReferenceError::NotAProvider(
                s.to_owned(),
                urn.type_token().to_owned(),
            ));
        }
        Ok(ProviderReference {
            urn,
            id: id.to_owned(),
        })
    }
}

impl fmt::Display for ProviderReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}::{}", self.urn, self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_reference_round_trips() {
        let s = "urn:pulumi:dev::p::pulumi:providers:aws::default_6_0_0::04da6b54-80e4-46f7-96ec-b56ff0331ba9";
        let r = ProviderReference::parse(s).unwrap();
        assert_eq!(r.urn.name(), "default_6_0_0");
        assert_eq!(r.id, "04da6b54-80e4-46f7-96ec-b56ff0331ba9");
        assert_eq!(r.to_string(), s);
    }

    #[test]
    fn provider_reference_must_name_a_provider() {
        let err = ProviderReference::parse("urn:pulumi:dev::p::aws:s3:Bucket::b::id").unwrap_err();
        assert!(err.to_string().contains("not a provider type"), "{err}");
        assert!(ProviderReference::parse("nonsense").is_err());
    }
}

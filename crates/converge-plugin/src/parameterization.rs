//! Parameterized packages: a package served by a base plugin that was told,
//! through `Parameterize`, which package to become (a Terraform bridge
//! asked for one Terraform provider, a plugin that generates its resources
//! from a value).
//!
//! How such a provider is recorded in a provider resource's inputs is
//! Pulumi's checkpoint shape, so that states move between the two:
//!
//! - `version`: the *package*'s version (the parameterized one);
//! - `__internal`: an object with `name` (the base plugin), `version` (the
//!   base plugin's version, when known) and `parameterization` (the value,
//!   base64).
//!
//! The package's name is the provider type's last part
//! (`pulumi:providers:<name>`). `__internal` is the engine's: it is never
//! sent to a plugin (`CheckConfig`, `DiffConfig`, `Configure`) and not
//! part of a provider resource's outputs.

use base64::Engine as _;
use converge_model::{PropertyMap, PropertyValue};

/// The inputs key under which the engine keeps what it needs to load a
/// provider.
pub const INTERNAL_KEY: &str = "__internal";

/// A parameterized package: its own name and version, and the value its
/// base plugin understands.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Parameterization {
    pub name: String,
    pub version: semver::Version,
    pub value: Vec<u8>,
}

/// A package a program registered (`RegisterPackage`): the plugin that
/// serves it, at which version, and, for a parameterized package, the
/// parameterization that plugin is given.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PackageDescriptor {
    /// The base plugin's name.
    pub plugin: String,
    /// The base plugin's version.
    pub plugin_version: Option<semver::Version>,
    pub parameterization: Option<Parameterization>,
}

impl PackageDescriptor {
    /// The package's name: the parameterized one, else the plugin's.
    pub fn package(&self) -> &str {
        self.parameterization
            .as_ref()
            .map_or(&self.plugin, |p| &p.name)
    }

    /// The package's version: the parameterized one, else the plugin's.
    pub fn package_version(&self) -> Option<&semver::Version> {
        match &self.parameterization {
            Some(p) => Some(&p.version),
            None => self.plugin_version.as_ref(),
        }
    }

    /// Writes this package into a provider resource's inputs, as Pulumi
    /// records it: the package's version as `version`; for a
    /// parameterized package, the plugin and the value under
    /// `__internal`.
    pub fn record(&self, inputs: &mut PropertyMap) {
        if let Some(v) = self.package_version() {
            inputs.insert("version".to_owned(), v.to_string().into());
        }
        let Some(p) = &self.parameterization else {
            return;
        };
        let mut internal = PropertyMap::new();
        internal.insert("name".to_owned(), self.plugin.clone().into());
        if let Some(v) = &self.plugin_version {
            internal.insert("version".to_owned(), v.to_string().into());
        }
        let value = base64::engine::general_purpose::STANDARD.encode(&p.value);
        internal.insert("parameterization".to_owned(), value.into());
        inputs.insert(INTERNAL_KEY.to_owned(), PropertyValue::Object(internal));
    }
}

/// Why a provider resource's recorded parameterization cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("`{INTERNAL_KEY}` must be an object")]
    NotAnObject,
    #[error("`{INTERNAL_KEY}.{0}` must be a string")]
    NotAString(&'static str),
    #[error("`{INTERNAL_KEY}.name` must not be empty")]
    EmptyName,
    #[error("`{INTERNAL_KEY}.parameterization` is not base64: {0}")]
    NotBase64(String),
    #[error("a parameterized provider must record its package version as `version`")]
    NoVersion,
    #[error("invalid version {version:?}: {reason}")]
    BadVersion { version: String, reason: String },
}

fn string<'a>(map: &'a PropertyMap, key: &'static str) -> Result<Option<&'a str>, RecordError> {
    match map.get(key) {
        None | Some(PropertyValue::Null) => Ok(None),
        Some(PropertyValue::String(s)) => Ok(Some(s)),
        Some(_) => Err(RecordError::NotAString(key)),
    }
}

fn version(text: &str) -> Result<semver::Version, RecordError> {
    semver::Version::parse(text).map_err(|e| RecordError::BadVersion {
        version: text.to_owned(),
        reason: e.to_string(),
    })
}

/// The parameterized package a provider resource of `package` records in
/// its `inputs`, if any (`__internal.parameterization`).
pub fn recorded(
    package: &str,
    inputs: &PropertyMap,
) -> Result<Option<PackageDescriptor>, RecordError> {
    let internal = match inputs.get(INTERNAL_KEY) {
        None | Some(PropertyValue::Null) => return Ok(None),
        Some(PropertyValue::Object(m)) => m,
        Some(_) => return Err(RecordError::NotAnObject),
    };
    let Some(value) = string(internal, "parameterization")? else {
        return Ok(None);
    };
    let value = base64::engine::general_purpose::STANDARD
        .decode(value)
        .map_err(|e| RecordError::NotBase64(e.to_string()))?;
    let plugin = match string(internal, "name")? {
        Some("") => return Err(RecordError::EmptyName),
        Some(name) => name.to_owned(),
        None => package.to_owned(),
    };
    let plugin_version = string(internal, "version")?.map(version).transpose()?;
    let package_version = match inputs.get("version") {
        Some(PropertyValue::String(v)) => version(v)?,
        _ => return Err(RecordError::NoVersion),
    };
    Ok(Some(PackageDescriptor {
        plugin,
        plugin_version,
        parameterization: Some(Parameterization {
            name: package.to_owned(),
            version: package_version,
            value,
        }),
    }))
}

/// `inputs` without the engine's `__internal` key: what a plugin is given.
pub fn without_internal(inputs: &PropertyMap) -> PropertyMap {
    let mut out = inputs.clone();
    out.remove(INTERNAL_KEY);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor() -> PackageDescriptor {
        PackageDescriptor {
            plugin: "terraform-provider".to_owned(),
            plugin_version: Some(semver::Version::new(0, 8, 0)),
            parameterization: Some(Parameterization {
                name: "netbox".to_owned(),
                version: semver::Version::new(3, 1, 0),
                value: b"{\"remote\":\"netbox\"}".to_vec(),
            }),
        }
    }

    #[test]
    fn a_recorded_parameterization_reads_back() {
        let mut inputs = PropertyMap::new();
        inputs.insert("endpoint".to_owned(), "http://x".into());
        descriptor().record(&mut inputs);
        assert_eq!(inputs.get("version"), Some(&"3.1.0".into()));
        let PropertyValue::Object(internal) = &inputs[INTERNAL_KEY] else {
            panic!("{inputs:?}")
        };
        assert_eq!(internal.get("name"), Some(&"terraform-provider".into()));
        assert_eq!(internal.get("version"), Some(&"0.8.0".into()));
        assert_eq!(
            internal.get("parameterization"),
            Some(&"eyJyZW1vdGUiOiJuZXRib3gifQ==".into())
        );
        assert_eq!(recorded("netbox", &inputs), Ok(Some(descriptor())));
        let plain = without_internal(&inputs);
        assert!(!plain.contains_key(INTERNAL_KEY));
        assert_eq!(plain.get("endpoint"), Some(&"http://x".into()));
    }

    #[test]
    fn inputs_without_a_parameterization_have_none() {
        let mut inputs = PropertyMap::new();
        assert_eq!(recorded("aws", &inputs), Ok(None));
        inputs.insert(
            INTERNAL_KEY.to_owned(),
            PropertyValue::Object(PropertyMap::new()),
        );
        assert_eq!(recorded("aws", &inputs), Ok(None));
    }

    #[test]
    fn malformed_records_are_refused_naming_the_key() {
        let mut inputs = PropertyMap::new();
        descriptor().record(&mut inputs);
        let mut no_version = inputs.clone();
        no_version.remove("version");
        assert_eq!(recorded("netbox", &no_version), Err(RecordError::NoVersion));
        let mut not_base64 = inputs.clone();
        if let Some(PropertyValue::Object(m)) = not_base64.get_mut(INTERNAL_KEY) {
            m.insert("parameterization".to_owned(), "%%%".into());
        }
        let e = recorded("netbox", &not_base64).unwrap_err();
        assert!(e.to_string().contains("not base64"), "{e}");
        let mut not_object = inputs;
        not_object.insert(INTERNAL_KEY.to_owned(), "x".into());
        assert_eq!(
            recorded("netbox", &not_object),
            Err(RecordError::NotAnObject)
        );
    }
}

//! `RegisterPackage`: the packages a program registers — what the SDK of a
//! parameterized package does before its first resource — and the
//! references (`packageRef`) its later requests carry. The package goes to
//! the [`Monitor`], whose default and explicit providers of that name then
//! serve it; a reference is only checked here.
//!
//! [`Monitor`]: crate::Monitor

use std::sync::Mutex;

use converge_plugin::parameterization::{PackageDescriptor, Parameterization};
use converge_proto::pulumirpc::RegisterPackageRequest;
use tonic::Status;

use super::lock;
use crate::monitor::Monitor;

/// The references handed out, with their packages.
#[derive(Debug, Default)]
pub(crate) struct Packages {
    refs: Mutex<Vec<(String, PackageDescriptor)>>,
}

fn version(what: &str, text: &str) -> Result<semver::Version, Status> {
    semver::Version::parse(text).map_err(|e| {
        Status::invalid_argument(format!(
            "RegisterPackage: {what} {text:?} is not a semantic version: {e}"
        ))
    })
}

/// The package a request describes.
fn descriptor(req: RegisterPackageRequest) -> Result<PackageDescriptor, Status> {
    if req.name.is_empty() {
        return Err(Status::invalid_argument(
            "RegisterPackage: the package name is empty",
        ));
    }
    if req.extension.is_some() {
        return Err(Status::unimplemented(format!(
            "RegisterPackage {}: extension parameterizations are not supported by Converge yet",
            req.name
        )));
    }
    let plugin_version = match req.version.as_str() {
        "" => None,
        v => Some(version("the plugin version", v)?),
    };
    let parameterization = match req.parameterization {
        None => None,
        Some(p) if p.name.is_empty() => {
            return Err(Status::invalid_argument(format!(
                "RegisterPackage {}: the parameterized package has no name",
                req.name
            )))
        }
        Some(p) => Some(Parameterization {
            version: version("the package version", &p.version)?,
            name: p.name,
            value: p.value,
        }),
    };
    Ok(PackageDescriptor {
        plugin: req.name,
        plugin_version,
        parameterization,
    })
}

impl Packages {
    /// Registers the package with the monitor and answers its reference:
    /// the same package always gets the same one.
    pub fn register(
        &self,
        monitor: &Monitor,
        req: RegisterPackageRequest,
    ) -> Result<String, Status> {
        let package = descriptor(req)?;
        monitor
            .register_package(package.clone())
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let mut refs = lock(&self.refs);
        if let Some((r, _)) = refs.iter().find(|(_, p)| *p == package) {
            return Ok(r.clone());
        }
        let reference = uuid::Uuid::new_v4().to_string();
        refs.push((reference.clone(), package));
        Ok(reference)
    }

    /// Checks a request's `packageRef` (empty: none): it must be one this
    /// monitor handed out, and the request's token must be of its package.
    pub fn check(&self, what: &str, token_package: &str, reference: &str) -> Result<(), Status> {
        if reference.is_empty() {
            return Ok(());
        }
        let refs = lock(&self.refs);
        let Some((_, package)) = refs.iter().find(|(r, _)| r == reference) else {
            return Err(Status::invalid_argument(format!(
                "{what}: unknown package reference {reference:?}: it was not returned by RegisterPackage in this deployment"
            )));
        };
        if package.package() != token_package {
            return Err(Status::invalid_argument(format!(
                "{what}: its package reference is to package {}, not {token_package}",
                package.package()
            )));
        }
        Ok(())
    }
}

//! The lock file beside the project, in OpenTofu's `.terraform.lock.hcl`
//! format: one `provider "HOST/NAMESPACE/TYPE"` block per provider with
//! the chosen `version`, the `constraints` it was chosen under, and the
//! `hashes` (`h1:`, `zh:`) of its packages. A run uses exactly the locked
//! version and refuses a package whose hash is not listed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::address::ProviderAddress;
use super::InstallError;

/// The lock file's name.
pub const LOCK_FILE: &str = ".terraform.lock.hcl";

/// One provider's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked {
    pub version: semver::Version,
    pub constraints: Option<String>,
    /// Sorted, without duplicates.
    pub hashes: Vec<String>,
}

/// A project's lock file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LockFile {
    pub providers: BTreeMap<ProviderAddress, Locked>,
}

impl LockFile {
    /// The lock file in `dir`, or an empty one if there is none.
    pub fn read(dir: &Path) -> Result<LockFile, InstallError> {
        let path = dir.join(LOCK_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockFile::default()),
            Err(e) => return Err(InstallError::io(&path, e)),
        };
        LockFile::parse(&text, &path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<LockFile, InstallError> {
        let bad = |message: String| InstallError::LockFile {
            file: path.to_path_buf(),
            message,
        };
        let body = hcl::parse(text).map_err(|e| bad(e.to_string()))?;
        let mut lock = LockFile::default();
        for block in body
            .blocks()
            .filter(|b| b.identifier.as_str() == "provider")
        {
            let label = block
                .labels
                .first()
                .map(|l| l.as_str().to_owned())
                .ok_or_else(|| bad("a provider block without its address".to_owned()))?;
            let address = ProviderAddress::parse(&label).map_err(bad)?;
            let attr = |name: &str| {
                block
                    .body
                    .attributes()
                    .find(|a| a.key.as_str() == name)
                    .map(|a| &a.expr)
            };
            let text_of = |e: &hcl::Expression| match e {
                hcl::Expression::String(s) => Some(s.clone()),
                _ => None,
            };
            let version = attr("version")
                .and_then(text_of)
                .ok_or_else(|| bad(format!("provider {label:?} has no version")))?;
            let version = semver::Version::parse(&version)
                .map_err(|e| bad(format!("provider {label:?}: version {version:?}: {e}")))?;
            let constraints = attr("constraints").and_then(text_of);
            let mut hashes: Vec<String> = match attr("hashes") {
                Some(hcl::Expression::Array(items)) => items.iter().filter_map(text_of).collect(),
                None => Vec::new(),
                Some(_) => {
                    return Err(bad(format!(
                        "provider {label:?}: hashes must be a list of strings"
                    )))
                }
            };
            hashes.sort();
            hashes.dedup();
            lock.providers.insert(
                address,
                Locked {
                    version,
                    constraints,
                    hashes,
                },
            );
        }
        Ok(lock)
    }

    /// The entry for a provider of TYPE `type_name` (the first address in
    /// order, when several hosts lock one).
    pub fn by_type(&self, type_name: &str) -> Option<(&ProviderAddress, &Locked)> {
        self.providers
            .iter()
            .find(|(a, _)| a.type_name == type_name)
    }

    /// The file's text, as OpenTofu lays it out.
    pub fn render(&self) -> String {
        let mut out = String::from(
            "# This file is maintained automatically by \"converge plugin install\" and\n\
             # \"tofu init\" alike. Manual edits may be lost in future updates.\n",
        );
        for (address, locked) in &self.providers {
            out.push_str(&format!("\nprovider \"{address}\" {{\n"));
            out.push_str(&format!("  version     = \"{}\"\n", locked.version));
            if let Some(c) = &locked.constraints {
                out.push_str(&format!("  constraints = {}\n", quoted(c)));
            }
            out.push_str("  hashes = [\n");
            for h in &locked.hashes {
                out.push_str(&format!("    {},\n", quoted(h)));
            }
            out.push_str("  ]\n}\n");
        }
        out
    }

    /// Writes the file into `dir` (atomically: a temporary file renamed).
    pub fn write(&self, dir: &Path) -> Result<PathBuf, InstallError> {
        let path = dir.join(LOCK_FILE);
        let tmp = dir.join(format!("{LOCK_FILE}.tmp{}", std::process::id()));
        std::fs::write(&tmp, self.render()).map_err(|e| InstallError::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| InstallError::io(&path, e))?;
        Ok(path)
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_round_trips() {
        let mut lock = LockFile::default();
        lock.providers.insert(
            ProviderAddress::parse("example.com/acme/thing").unwrap(),
            Locked {
                version: semver::Version::new(2, 0, 0),
                constraints: Some("~> 2.0".into()),
                hashes: vec!["h1:abc=".into(), "zh:00ff".into()],
            },
        );
        let text = lock.render();
        assert!(text.contains("provider \"example.com/acme/thing\" {\n  version     = \"2.0.0\"\n  constraints = \"~> 2.0\"\n  hashes = [\n    \"h1:abc=\",\n    \"zh:00ff\",\n  ]\n}\n"), "{text}");
        assert_eq!(LockFile::parse(&text, Path::new("l")).unwrap(), lock);
        assert_eq!(
            lock.by_type("thing").unwrap().1.version.to_string(),
            "2.0.0"
        );
        let e = LockFile::parse("provider \"x/y/z\" {}\n", Path::new("l")).unwrap_err();
        assert!(e.to_string().contains("has no version"), "{e}");
    }
}

//! The OpenTofu/Terraform CLI configuration as it concerns providers:
//! `plugin_cache_dir` and the `provider_installation` block
//! (`filesystem_mirror { path }`, `network_mirror { url }`, `direct {}`,
//! each with `include` and `exclude` patterns). Read from
//! `TF_CLI_CONFIG_FILE`, else `~/.tofurc`, else `~/.terraformrc`.
//! Without a `provider_installation` block, providers come from their
//! registry (`direct`).

use std::path::{Path, PathBuf};

use super::address::ProviderAddress;
use super::InstallError;

/// Where providers may be installed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MethodKind {
    /// A directory in the unpacked or packed layout.
    FilesystemMirror(PathBuf),
    /// The base URL of a network mirror (ends with `/`).
    NetworkMirror(String),
    /// The provider's own registry.
    Direct,
}

/// One installation method and the providers it serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Method {
    pub kind: MethodKind,
    /// Patterns (`HOST/NAMESPACE/TYPE`, each part may be `*`); none: all.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Method {
    /// Whether this method serves `address`.
    pub fn serves(&self, address: &ProviderAddress) -> bool {
        let matching = |p: &String| address.matches(p);
        (self.include.is_empty() || self.include.iter().any(matching))
            && !self.exclude.iter().any(matching)
    }
}

/// The CLI configuration's provider settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliConfig {
    /// Where this file came from, for messages.
    pub file: Option<PathBuf>,
    pub plugin_cache_dir: Option<PathBuf>,
    pub methods: Vec<Method>,
}

impl Default for CliConfig {
    fn default() -> Self {
        CliConfig {
            file: None,
            plugin_cache_dir: None,
            methods: vec![Method {
                kind: MethodKind::Direct,
                include: Vec::new(),
                exclude: Vec::new(),
            }],
        }
    }
}

impl CliConfig {
    /// The configuration OpenTofu would read in this environment.
    pub fn from_environment() -> Result<CliConfig, InstallError> {
        // A named file that does not exist is no configuration, as for
        // OpenTofu.
        let file = match std::env::var_os("TF_CLI_CONFIG_FILE").filter(|v| !v.is_empty()) {
            Some(f) => Some(PathBuf::from(f)).filter(|f| f.exists()),
            None => dirs::home_dir().and_then(|h| {
                [".tofurc", ".terraformrc"]
                    .iter()
                    .map(|n| h.join(n))
                    .find(|p| p.is_file())
            }),
        };
        let mut config = match file {
            Some(f) => CliConfig::read(&f)?,
            None => CliConfig::default(),
        };
        if config.plugin_cache_dir.is_none() {
            config.plugin_cache_dir = std::env::var_os("TF_PLUGIN_CACHE_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from);
        }
        Ok(config)
    }

    /// Reads `file`.
    pub fn read(file: &Path) -> Result<CliConfig, InstallError> {
        let text = std::fs::read_to_string(file).map_err(|e| InstallError::io(file, e))?;
        CliConfig::parse(&text, file)
    }

    /// Parses the text of `file`.
    pub fn parse(text: &str, file: &Path) -> Result<CliConfig, InstallError> {
        let bad = |message: String| InstallError::CliConfig {
            file: file.to_path_buf(),
            message,
        };
        let body = hcl::parse(text).map_err(|e| bad(e.to_string()))?;
        let mut config = CliConfig {
            file: Some(file.to_path_buf()),
            ..CliConfig::default()
        };
        let mut methods = None;
        for structure in body.into_iter() {
            match structure {
                hcl::Structure::Attribute(a) if a.key.as_str() == "plugin_cache_dir" => {
                    config.plugin_cache_dir =
                        Some(PathBuf::from(string(&a.expr).ok_or_else(|| {
                            bad("plugin_cache_dir must be a string".to_owned())
                        })?));
                }
                hcl::Structure::Block(b) if b.identifier.as_str() == "provider_installation" => {
                    let mut list = Vec::new();
                    for inner in b.body.into_iter() {
                        let hcl::Structure::Block(m) = inner else {
                            continue;
                        };
                        let attr = |name: &str| {
                            m.body
                                .attributes()
                                .find(|a| a.key.as_str() == name)
                                .map(|a| &a.expr)
                        };
                        let patterns = |name: &str| -> Result<Vec<String>, InstallError> {
                            match attr(name) {
                                None => Ok(Vec::new()),
                                Some(hcl::Expression::Array(items)) => items
                                    .iter()
                                    .map(|i| {
                                        string(i).ok_or_else(|| {
                                            bad(format!("{name} must be a list of strings"))
                                        })
                                    })
                                    .collect(),
                                Some(_) => Err(bad(format!("{name} must be a list of strings"))),
                            }
                        };
                        let kind = match m.identifier.as_str() {
                            "filesystem_mirror" => MethodKind::FilesystemMirror(PathBuf::from(
                                attr("path").and_then(string).ok_or_else(|| {
                                    bad("filesystem_mirror needs path = \"DIR\"".to_owned())
                                })?,
                            )),
                            "network_mirror" => {
                                let mut url = attr("url").and_then(string).ok_or_else(|| {
                                    bad("network_mirror needs url = \"https://…/\"".to_owned())
                                })?;
                                if !url.ends_with('/') {
                                    url.push('/');
                                }
                                MethodKind::NetworkMirror(url)
                            }
                            "direct" => MethodKind::Direct,
                            other => {
                                return Err(bad(format!(
                                    "unknown installation method {other:?}: expected filesystem_mirror, network_mirror or direct"
                                )))
                            }
                        };
                        list.push(Method {
                            kind,
                            include: patterns("include")?,
                            exclude: patterns("exclude")?,
                        });
                    }
                    methods = Some(list);
                }
                _ => {}
            }
        }
        if let Some(m) = methods {
            config.methods = m;
        }
        Ok(config)
    }
}

fn string(e: &hcl::Expression) -> Option<String> {
    match e {
        hcl::Expression::String(s) => Some(s.clone()),
        hcl::Expression::TemplateExpr(t) => Some(t.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_patterns_and_the_cache_dir_are_read() {
        let text = r#"
plugin_cache_dir = "/var/cache/tf"
provider_installation {
  filesystem_mirror {
    path    = "/mirror"
    include = ["example.com/*/*"]
  }
  network_mirror {
    url = "http://127.0.0.1:8080/providers"
  }
  direct {
    exclude = ["example.com/*/*"]
  }
}
"#;
        let c = CliConfig::parse(text, Path::new("x.tfrc")).unwrap();
        assert_eq!(c.plugin_cache_dir, Some(PathBuf::from("/var/cache/tf")));
        assert_eq!(c.methods.len(), 3);
        assert_eq!(
            c.methods[0].kind,
            MethodKind::FilesystemMirror("/mirror".into())
        );
        assert_eq!(
            c.methods[1].kind,
            MethodKind::NetworkMirror("http://127.0.0.1:8080/providers/".into())
        );
        let ours = ProviderAddress::parse("example.com/acme/thing").unwrap();
        let theirs = ProviderAddress::parse("hashicorp/random").unwrap();
        assert!(c.methods[0].serves(&ours));
        assert!(!c.methods[0].serves(&theirs));
        assert!(c.methods[1].serves(&ours));
        assert!(!c.methods[2].serves(&ours));
        assert!(c.methods[2].serves(&theirs));
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let e = CliConfig::parse("provider_installation {\n  ftp {}\n}\n", Path::new("c"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown installation method \"ftp\""), "{e}");
        let e = CliConfig::parse("provider_installation {", Path::new("c"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("c: "), "{e}");
        assert_eq!(
            CliConfig::parse("", Path::new("c")).unwrap().methods,
            CliConfig::default().methods
        );
    }
}

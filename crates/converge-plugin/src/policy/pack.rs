//! A policy pack's directory: its `PulumiPolicy.yaml` (runtime and its
//! options, version, description) and the command that runs it.
//!
//! - `runtime: python`: `python -u <dir>` (the pack's `__main__.py`) with
//!   the interpreter of `runtime.options.virtualenv` (relative to the
//!   pack), else `python3`;
//! - `runtime: nodejs`: `node <runner> <engine> <dir>` in the pack's
//!   directory, the runner being `@pulumi/pulumi/cmd/run-policy-pack` from
//!   the nearest `node_modules` that holds it, as Node resolves packages;
//!   a pack with TypeScript is compiled as it loads by the `ts-node` the
//!   SDK ships;
//! - any other runtime: the pack's executable `PulumiPolicy.yaml`'s
//!   `main` names (default `pulumi-analyzer-policy`), with the engine
//!   address and the pack's directory.
//!
//! Each prints the port its `pulumirpc.Analyzer` listens on, as the SDKs'
//! `PolicyPack` does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The file that makes a directory a policy pack.
pub const MANIFEST: &str = "PulumiPolicy.yaml";

/// Where `@pulumi/pulumi`'s pack runner lives inside `node_modules`.
const NODE_RUNNER: [&str; 5] = ["@pulumi", "pulumi", "cmd", "run-policy-pack", "index.js"];

/// Why a pack cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    #[error("policy pack {dir}: no such directory")]
    Missing { dir: PathBuf },
    #[error("policy pack {dir}: no {MANIFEST} in it (is this a policy pack directory? `converge policy new` makes one)")]
    NoManifest { dir: PathBuf },
    #[error("policy pack {dir}: {MANIFEST} could not be read: {message}")]
    BadManifest { dir: PathBuf, message: String },
    #[error("policy pack {dir}: {message}")]
    Runtime { dir: PathBuf, message: String },
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
enum RuntimeField {
    Name(String),
    Full {
        name: String,
        #[serde(default)]
        options: serde_json::Map<String, serde_json::Value>,
    },
}

#[derive(Debug, Clone, serde::Deserialize)]
struct Manifest {
    runtime: RuntimeField,
    #[serde(default)]
    version: Option<serde_json::Value>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    main: Option<String>,
}

/// The keys of `PulumiPolicy.yaml` (Pulumi's policy pack project).
pub const MANIFEST_KEYS: &[&str] = &[
    "runtime",
    "version",
    "description",
    "main",
    "name",
    "author",
    "website",
    "license",
];
/// The keys of `runtime:` written as a mapping.
pub const RUNTIME_KEYS: &[&str] = &["name", "options"];
/// The options of the Python runtime.
pub const PYTHON_OPTIONS: &[&str] = &["virtualenv", "toolchain", "typechecker"];
/// The options of the Node.js runtime.
pub const NODEJS_OPTIONS: &[&str] = &["typescript", "nodeargs", "packagemanager"];

/// A key of `PulumiPolicy.yaml` that Converge does not read, where it is
/// and the keys it could have meant, for the caller to warn about or
/// refuse (a misspelled `options:` would run the pack without them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// `PulumiPolicy.yaml`, `runtime` or `runtime.options`.
    pub place: &'static str,
    pub key: String,
    pub known: &'static [&'static str],
}

/// A policy pack's directory and what its manifest says.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyPackDir {
    /// The pack's directory, absolute.
    pub dir: PathBuf,
    /// `python`, `nodejs`, or another runtime.
    pub runtime: String,
    pub options: serde_json::Map<String, serde_json::Value>,
    /// The manifest's version, if any (a Python pack's version comes from
    /// here: its SDK reports none of its own).
    pub version: Option<String>,
    pub description: Option<String>,
    pub main: Option<String>,
    /// The manifest's keys Converge does not read.
    pub unknown_keys: Vec<UnknownKey>,
}

impl PolicyPackDir {
    /// Reads the pack in `dir`: a missing directory, a missing or broken
    /// `PulumiPolicy.yaml` is an error naming the pack.
    pub fn load(dir: &Path) -> Result<PolicyPackDir, PackError> {
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        if !dir.is_dir() {
            return Err(PackError::Missing { dir });
        }
        let path = dir.join(MANIFEST);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(PackError::NoManifest { dir })
            }
            Err(e) => {
                return Err(PackError::BadManifest {
                    dir,
                    message: e.to_string(),
                })
            }
        };
        let manifest: Manifest =
            serde_norway::from_str(&text).map_err(|e| PackError::BadManifest {
                dir: dir.clone(),
                message: e.to_string(),
            })?;
        let (runtime, options) = match manifest.runtime {
            RuntimeField::Name(name) => (name, serde_json::Map::new()),
            RuntimeField::Full { name, options } => (name, options),
        };
        let version = match manifest.version {
            None => None,
            Some(serde_json::Value::String(s)) => Some(s),
            Some(n @ serde_json::Value::Number(_)) => Some(n.to_string()),
            Some(other) => {
                return Err(PackError::BadManifest {
                    dir,
                    message: format!("`version` must be a string such as 1.2.3, not {other}"),
                })
            }
        };
        let document: serde_json::Value = serde_norway::from_str(&text).unwrap_or_default();
        let unknown_keys = unknown_keys(&document, &runtime);
        Ok(PolicyPackDir {
            dir,
            runtime,
            options,
            version,
            description: manifest.description,
            main: manifest.main,
            unknown_keys,
        })
    }

    fn option(&self, key: &str) -> Option<&str> {
        self.options.get(key).and_then(serde_json::Value::as_str)
    }

    /// The program, its arguments before the engine address and pack
    /// directory, and the environment that runs this pack.
    pub(crate) fn command(&self, engine_address: &str) -> Result<PackCommand, PackError> {
        let dir_arg = OsString::from(self.dir.as_os_str());
        match self.runtime.as_str() {
            "python" => {
                let python = match self.option("virtualenv") {
                    Some(venv) => {
                        let venv = self.dir.join(venv);
                        let python = venv.join("bin").join("python");
                        if !python.exists() {
                            return Err(PackError::Runtime {
                                dir: self.dir.clone(),
                                message: format!(
                                    "its virtualenv {} has no bin/python: create it and install \
                                     the pack's requirements (python3 -m venv {0}; {0}/bin/pip \
                                     install -r requirements.txt)",
                                    venv.display()
                                ),
                            });
                        }
                        python
                    }
                    None => PathBuf::from("python3"),
                };
                Ok(PackCommand {
                    program: python,
                    args: vec!["-u".into(), dir_arg],
                    env: Vec::new(),
                })
            }
            "nodejs" => {
                let runner = self.dir.ancestors().find_map(|d| {
                    let mut runner = d.join("node_modules");
                    NODE_RUNNER.iter().for_each(|p| runner.push(p));
                    runner.is_file().then_some(runner)
                });
                let Some(runner) = runner else {
                    return Err(PackError::Runtime {
                        dir: self.dir.clone(),
                        message: "cannot find the Pulumi Node.js SDK (@pulumi/pulumi) in the \
                                  node_modules of the pack or its parents: run `npm install` in \
                                  the pack"
                            .to_owned(),
                    });
                };
                let typescript = self.option("typescript") != Some("false")
                    && (self.dir.join("tsconfig.json").is_file()
                        || self.dir.join("index.ts").is_file());
                Ok(PackCommand {
                    program: PathBuf::from("node"),
                    args: vec![runner.into_os_string(), engine_address.into(), dir_arg],
                    env: vec![(
                        "PULUMI_NODEJS_TYPESCRIPT".into(),
                        typescript.to_string().into(),
                    )],
                })
            }
            _ => {
                let main = self.main.as_deref().unwrap_or("pulumi-analyzer-policy");
                let program = self.dir.join(main);
                if !program.is_file() {
                    return Err(PackError::Runtime {
                        dir: self.dir.clone(),
                        message: format!(
                            "runtime {:?} is neither python nor nodejs, and the pack has no \
                             executable {} to run",
                            self.runtime,
                            program.display()
                        ),
                    });
                }
                Ok(PackCommand {
                    program,
                    args: vec![engine_address.into(), dir_arg],
                    env: Vec::new(),
                })
            }
        }
    }
}

/// How a pack is started.
#[derive(Debug, Clone)]
pub(crate) struct PackCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
}

/// The keys of a manifest (parsed as `document`) Converge does not read.
fn unknown_keys(document: &serde_json::Value, runtime: &str) -> Vec<UnknownKey> {
    let mut found = Vec::new();
    let mut look = |object: Option<&serde_json::Value>, place, known: &'static [&'static str]| {
        let keys = object.and_then(|o| o.as_object()).into_iter().flatten();
        for (key, _) in keys.filter(|(k, _)| !known.contains(&k.as_str())) {
            found.push(UnknownKey {
                place,
                key: key.clone(),
                known,
            });
        }
    };
    look(Some(document), MANIFEST, MANIFEST_KEYS);
    let runtime_map = document.get("runtime");
    look(runtime_map, "runtime", RUNTIME_KEYS);
    let options = runtime_map.and_then(|r| r.get("options"));
    match runtime {
        "python" => look(options, "runtime.options", PYTHON_OPTIONS),
        "nodejs" => look(options, "runtime.options", NODEJS_OPTIONS),
        _ => {}
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_are_found_where_they_are_and_a_list_version_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(MANIFEST),
            "runtime:\n  name: python\n  option: {}\n  options:\n    virtualEnv: venv\n\
             descripton: d\n",
        )
        .unwrap();
        let pack = PolicyPackDir::load(dir.path()).unwrap();
        let found: Vec<(&str, &str)> = pack
            .unknown_keys
            .iter()
            .map(|u| (u.place, u.key.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                (MANIFEST, "descripton"),
                ("runtime", "option"),
                ("runtime.options", "virtualEnv")
            ]
        );
        std::fs::write(dir.path().join(MANIFEST), "runtime: python\nversion: [1]\n").unwrap();
        let e = PolicyPackDir::load(dir.path()).unwrap_err();
        assert!(e.to_string().contains("`version` must be a string"), "{e}");
    }

    #[test]
    fn manifests_name_their_runtime_and_version() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(MANIFEST),
            "runtime:\n  name: python\n  options:\n    virtualenv: venv\nversion: 1.2.3\ndescription: d\n",
        )
        .unwrap();
        let pack = PolicyPackDir::load(dir.path()).unwrap();
        assert_eq!(pack.runtime, "python");
        assert_eq!(pack.version.as_deref(), Some("1.2.3"));
        assert_eq!(pack.option("virtualenv"), Some("venv"));
        let e = pack.command("127.0.0.1:1").unwrap_err();
        assert!(e.to_string().contains("has no bin/python"), "{e}");
    }

    #[test]
    fn a_missing_or_broken_pack_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        assert!(matches!(
            PolicyPackDir::load(&missing),
            Err(PackError::Missing { .. })
        ));
        assert!(matches!(
            PolicyPackDir::load(dir.path()),
            Err(PackError::NoManifest { .. })
        ));
        std::fs::write(dir.path().join(MANIFEST), "runtime: [\n").unwrap();
        let e = PolicyPackDir::load(dir.path()).unwrap_err();
        assert!(matches!(e, PackError::BadManifest { .. }), "{e}");
    }
}

//! The provider version of an import that names neither a provider nor a
//! version: the version of the package's SDK the project's program has
//! installed. Pulumi's importer does the same (it asks the language host
//! for the program's required packages), so the default provider the
//! import records — `default_4_21_4` — is the one the program `--out`
//! writes registers, and the program previews with no changes. Without
//! an installed SDK the import keeps the versionless default provider.
//!
//! Python only: the SDK module's `pulumi-plugin.json` (`name`,
//! `version`), found by the project's interpreter.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use converge_engine::import::ImportSpec;
use converge_language::python::PythonProgram;
use converge_model::package_of;

use super::codegen;
use crate::project::Project;

/// Where the interpreter finds each module given (one line each; empty
/// when it has none).
const FIND_MODULES: &str = "import importlib.util, sys
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        spec = None
    paths = list(spec.submodule_search_locations or []) if spec else []
    print(paths[0] if paths else '')
";

/// Gives each import without a provider or a version the version of its
/// package's installed SDK, where the project has one.
pub fn fill(project: &Project, specs: &mut [ImportSpec]) {
    let wanted = |s: &ImportSpec| !s.component && s.provider.is_none() && s.version.is_none();
    let packages: Vec<&str> = specs
        .iter()
        .filter(|s| wanted(s))
        .map(|s| package_of(&s.type_token))
        .collect();
    if packages.is_empty() || project.runtime() != Some("python") {
        return;
    }
    let versions = python_versions(project, &packages);
    for spec in specs.iter_mut().filter(|s| wanted(s)) {
        spec.version = versions.get(package_of(&spec.type_token)).cloned();
    }
}

/// Which of `packages` have an SDK module the project's Python can import.
pub fn installed_sdks(project: &Project, packages: &[&str]) -> BTreeSet<String> {
    module_dirs(project, packages)
        .into_iter()
        .map(|(package, _)| package)
        .collect()
}

/// The directory of each of `packages`' SDK module the project's Python
/// can import, by package (packages without one are left out).
fn module_dirs(project: &Project, packages: &[&str]) -> Vec<(String, PathBuf)> {
    let modules: Vec<(String, String)> = packages
        .iter()
        .filter_map(|p| Some((p.to_string(), codegen::python_sdk_module(p)?)))
        .collect();
    let Ok(program) = PythonProgram::new(&project.dir) else {
        return Vec::new();
    };
    let output = Command::new(program.interpreter())
        .arg("-c")
        .arg(FIND_MODULES)
        .args(modules.iter().map(|(_, m)| m))
        .current_dir(&project.dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let Ok(output) = output.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()) else {
        return Vec::new();
    };
    modules
        .into_iter()
        .zip(output.lines())
        .filter(|(_, dir)| !dir.is_empty())
        .map(|((package, _), dir)| (package, PathBuf::from(dir)))
        .collect()
}

/// The installed SDK versions of `packages`, by package.
fn python_versions(project: &Project, packages: &[&str]) -> BTreeMap<String, String> {
    module_dirs(project, packages)
        .into_iter()
        .filter_map(|(package, dir)| {
            let path = dir.join("pulumi-plugin.json");
            let text = std::fs::read_to_string(path).ok()?;
            let plugin: serde_json::Value = serde_json::from_str(&text).ok()?;
            let named = plugin.get("name").and_then(|n| n.as_str());
            if named.is_some_and(|n| n != package) {
                return None;
            }
            let version = plugin.get("version")?.as_str()?;
            semver::Version::parse(version.trim_start_matches('v')).ok()?;
            Some((package, version.trim_start_matches('v').to_owned()))
        })
        .collect()
}

//! Program text for the imported resources (`--out`, or printed), in the
//! project's language — Pulumi YAML (`yaml.rs`), Python with the
//! package's SDK (`python.rs`), or TypeScript or JavaScript with it
//! (`nodejs.rs`). Each resource is written with the inputs the stack now
//! records for it, so the program previews with no changes; protect,
//! parent and provider become resource options; IDs are not written.

mod literal;
mod nodejs;
mod python;
mod yaml;

use std::path::Path;

use anyhow::{bail, Result};
use converge_engine::import::{ImportProgram, ImportSpec};
use converge_model::{package_of, PropertyMap, Urn};
use converge_state::Snapshot;

use super::spec::Imports;
use crate::project::Project;

/// One imported resource as code sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its name in the code (a variable, a YAML key).
    pub code_name: String,
    /// Its name in the stack (the URN's).
    pub name: String,
    pub type_token: String,
    pub custom: bool,
    pub inputs: PropertyMap,
    pub protect: bool,
    /// The code name of its parent, unless that is the stack.
    pub parent: Option<String>,
    /// The code name of its explicit provider.
    pub provider: Option<String>,
}

/// The languages code is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Yaml,
    Python,
    NodeJs(nodejs::Flavor),
}

impl Language {
    /// The project's language: for Node.js, TypeScript unless the
    /// project is JavaScript (its `main` or `index.js`, and no
    /// `tsconfig.json`) — or as `out`'s extension says.
    fn of_project(project: &Project, out: Option<&Path>) -> Result<Language> {
        match project.runtime() {
            Some("yaml") => Ok(Language::Yaml),
            Some("python") => Ok(Language::Python),
            Some("nodejs") => {
                let named = out.and_then(Language::of_file);
                if let Some(l @ Language::NodeJs(_)) = named {
                    return Ok(l);
                }
                let javascript = !project.dir.join("tsconfig.json").exists()
                    && (project.main().is_some_and(|m| m.ends_with(".js"))
                        || project.dir.join("index.js").exists());
                Ok(Language::NodeJs(if javascript {
                    nodejs::Flavor::JavaScript
                } else {
                    nodejs::Flavor::TypeScript
                }))
            }
            other => bail!(
                "code is written in Pulumi YAML, Python, TypeScript or JavaScript, in the \
                 project's language; this project's runtime is {}",
                other.unwrap_or("(none)")
            ),
        }
    }

    /// The language a file's extension names, if it names one.
    fn of_file(path: &Path) -> Option<Language> {
        match path.extension()?.to_str()? {
            "py" => Some(Language::Python),
            "yaml" | "yml" => Some(Language::Yaml),
            "ts" => Some(Language::NodeJs(nodejs::Flavor::TypeScript)),
            "js" | "cjs" => Some(Language::NodeJs(nodejs::Flavor::JavaScript)),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Language::Yaml => "Pulumi YAML",
            Language::Python => "Python",
            Language::NodeJs(nodejs::Flavor::TypeScript) => "TypeScript",
            Language::NodeJs(nodejs::Flavor::JavaScript) => "JavaScript",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Language::Yaml => ".yaml",
            Language::Python => ".py",
            Language::NodeJs(nodejs::Flavor::TypeScript) => ".ts",
            Language::NodeJs(nodejs::Flavor::JavaScript) => ".js",
        }
    }
}

/// A language's SDK module of a package, and why there is none.
type SdkOf = (fn(&str) -> Option<String>, fn(&str) -> String);

/// Whether `--out path` can be written for `specs` in `project`, asked
/// before anything is imported: the project's language is one `--out`
/// writes, the file's extension does not name another one, and in Python
/// every package imported from has an SDK.
pub fn check(project: &Project, path: &Path, specs: &[ImportSpec]) -> Result<()> {
    let language = Language::of_project(project, Some(path))?;
    if let Some(named) = Language::of_file(path).filter(|&l| l != language) {
        bail!(
            "--out {}: the file's extension says {}, but this project's runtime is {}, and \
             --out writes the project's language; name a file that ends in {}",
            path.display(),
            named.name(),
            language.name(),
            language.extension()
        );
    }
    let sdk: Option<SdkOf> = match language {
        Language::Python => Some((python::sdk_module, python::no_sdk)),
        Language::NodeJs(_) => Some((nodejs::sdk_module, nodejs::no_sdk)),
        Language::Yaml => None,
    };
    if let Some((sdk_module, no_sdk)) = sdk {
        let without = specs
            .iter()
            .filter(|s| !s.component)
            .find(|s| sdk_module(package_of(&s.type_token)).is_none());
        if let Some(spec) = without {
            bail!(
                "--out {}: cannot write {} ({}): {}; import without --out, or with --out in a \
                 Pulumi YAML project",
                path.display(),
                spec.name,
                spec.type_token,
                no_sdk(package_of(&spec.type_token))
            );
        }
    }
    if language == Language::Python {
        // The generated code imports the SDK: say so when the project's
        // Python cannot import it (it may be installed later; a Terraform
        // provider's package has none unless one is generated).
        let packages: Vec<&str> = specs
            .iter()
            .filter(|s| !s.component)
            .map(|s| package_of(&s.type_token))
            .collect();
        let installed = super::sdk_version::installed_sdks(project, &packages);
        let mut missing: Vec<&str> = packages
            .into_iter()
            .filter(|p| !installed.contains(*p))
            .collect();
        missing.dedup();
        for package in missing {
            eprintln!(
                "warning: --out {}: the project's Python cannot import {} (the SDK of package \
                 {package}); the generated code runs once it is installed",
                path.display(),
                python::sdk_module(package).unwrap_or_default()
            );
        }
    }
    Ok(())
}

/// The Python module of `package`'s SDK, if it has one.
pub fn python_sdk_module(package: &str) -> Option<String> {
    python::sdk_module(package)
}

/// The imported resources of `snapshot` in import order, as code for the
/// project's runtime.
pub fn generate(
    project: &Project,
    out: Option<&Path>,
    program: &ImportProgram,
    imports: &Imports,
    snapshot: &Snapshot,
) -> Result<String> {
    let resources = resources(program, imports, snapshot)?;
    match Language::of_project(project, out)? {
        Language::Yaml => yaml::render(&resources),
        Language::Python => python::render(&resources),
        Language::NodeJs(flavor) => nodejs::render(&resources, flavor),
    }
}

fn resources(
    program: &ImportProgram,
    imports: &Imports,
    snapshot: &Snapshot,
) -> Result<Vec<Resource>> {
    let code_name_of = |urn: &Urn| -> Option<String> {
        program
            .urns()
            .iter()
            .position(|u| u == urn)
            .map(|i| imports.code_names[i].clone())
            .or_else(|| imports.existing_names.get(urn).cloned())
    };
    let mut out = Vec::new();
    let chosen = imports.specs.iter().map(|s| s.properties.as_ref());
    for ((urn, code_name), chosen) in program.urns().iter().zip(&imports.code_names).zip(chosen) {
        let Some(state) = snapshot
            .resources
            .iter()
            .find(|r| &r.urn == urn && !r.delete)
        else {
            bail!("{urn} is not in the stack's state after the import");
        };
        let parent = state
            .parent
            .as_ref()
            .filter(|p| !p.is_stack())
            .map(|p| code_name_of(p).unwrap_or_else(|| p.name().to_owned()));
        let provider = state
            .provider
            .as_ref()
            .filter(|p| !p.urn.name().starts_with("default"))
            .map(|p| code_name_of(&p.urn).unwrap_or_else(|| p.urn.name().to_owned()));
        out.push(Resource {
            code_name: code_name.clone(),
            name: urn.name().to_owned(),
            type_token: state.type_token.clone(),
            custom: state.custom,
            // `--properties`: only those are written; the provider's
            // Check fills in the rest as it did for the import.
            inputs: state
                .inputs
                .iter()
                .filter(|(k, _)| chosen.is_none_or(|c| c.contains(*k)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            protect: state.protect,
            parent,
            provider,
        });
    }
    Ok(out)
}

/// A resource type token's parts as the SDKs name its class: the package,
/// the module path (`index` dropped, and a last segment that only repeats
/// the type's name), the type's name.
fn class_path(token: &str) -> Result<(&str, Vec<&str>, &str)> {
    let parts: Vec<&str> = token.split(':').collect();
    let [package, module, name] = parts.as_slice() else {
        bail!("{token} is not a resource type token (package:module:Name)");
    };
    let mut path: Vec<&str> = module.split('/').collect();
    let last = path.last().copied().unwrap_or_default();
    if path.len() > 1 && last.eq_ignore_ascii_case(name) {
        path.pop();
    }
    path.retain(|s| *s != "index");
    Ok((package, path, name))
}

/// What an asset is made from, as the SDKs' constructors take it.
enum AssetSource<'a> {
    Text(&'a str),
    Path(&'a str),
    Uri(&'a str),
}

fn asset_source<'a>(a: &'a converge_model::Asset, owner: &str) -> Result<AssetSource<'a>> {
    if let Some(text) = &a.text {
        return Ok(AssetSource::Text(text));
    }
    if let Some(path) = &a.path {
        return Ok(AssetSource::Path(path));
    }
    if let Some(uri) = &a.uri {
        return Ok(AssetSource::Uri(uri));
    }
    bail!("{owner}: an asset has no text, path or URI")
}

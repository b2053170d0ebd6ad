//! `--out`: program text for the imported resources, in the project's
//! language — Pulumi YAML (`yaml.rs`) or Python with the package's SDK
//! (`python.rs`). Each resource is written with the inputs the stack now
//! records for it, so the program previews with no changes; protect,
//! parent and provider become resource options; IDs are not written.

mod python;
mod yaml;

use anyhow::{bail, Result};
use converge_engine::import::ImportProgram;
use converge_model::{PropertyMap, Urn};
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

/// The imported resources of `snapshot` in import order, as code for the
/// project's runtime.
pub fn generate(
    project: &Project,
    program: &ImportProgram,
    imports: &Imports,
    snapshot: &Snapshot,
) -> Result<String> {
    let resources = resources(program, imports, snapshot)?;
    match project.runtime() {
        Some("yaml") => yaml::render(&resources),
        Some("python") => python::render(&resources),
        other => bail!(
            "--out writes Pulumi YAML or Python; this project's runtime is {}",
            other.unwrap_or("(none)")
        ),
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

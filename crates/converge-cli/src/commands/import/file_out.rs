//! `converge preview --import-file FILE`: Pulumi's bulk import file for
//! the resources the program would create, each with an empty `id` for
//! the user to fill in (as Pulumi writes it); parents the stack already
//! has go in the `nameTable`, parents created too are named by their
//! entry.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use converge_engine::{OperationResult, StepOp};
use converge_model::Urn;

use super::spec::{ImportFile, ImportFileResource};
use crate::atomic_write::{Dash, Output};

/// Writes the import file of a preview's creates.
pub fn write(path: &Path, preview: &OperationResult) -> Result<usize> {
    let file = import_file(preview);
    let text = serde_json::to_string_pretty(&file)?;
    Output::named(path, Path::new(""), Dash::Refused, "--import-file")?.write(text.as_bytes())?;
    Ok(file.resources.len())
}

fn import_file(preview: &OperationResult) -> ImportFile {
    let created: Vec<&str> = preview
        .plan
        .steps
        .iter()
        .filter(|s| s.op == StepOp::Create)
        .map(|s| s.urn.as_str())
        .collect();
    let mut names: BTreeMap<Urn, String> = BTreeMap::new();
    let mut file = ImportFile::default();
    for r in &preview.snapshot.resources {
        let wanted = created.contains(&r.urn.as_str()) && !r.is_provider() && !r.urn.is_stack();
        if !wanted {
            continue;
        }
        let name = unique(&names, r.urn.name());
        let parent = r.parent.as_ref().filter(|p| !p.is_stack()).map(|p| {
            names.get(p).cloned().unwrap_or_else(|| {
                let key = unique(&names, p.name());
                file.name_table.insert(key.clone(), p.to_string());
                key
            })
        });
        file.resources.push(ImportFileResource {
            type_token: r.type_token.clone(),
            logical_name: (name != r.urn.name()).then(|| r.urn.name().to_owned()),
            name: name.clone(),
            id: String::new(),
            parent,
            component: !r.custom,
            ..ImportFileResource::default()
        });
        names.insert(r.urn.clone(), name);
    }
    file
}

/// `base`, or `base2`, `base3`… if a resource already has it.
fn unique(names: &BTreeMap<Urn, String>, base: &str) -> String {
    let taken = |n: &str| names.values().any(|v| v == n);
    if !taken(base) {
        return base.to_owned();
    }
    (2..)
        .map(|i| format!("{base}{i}"))
        .find(|n| !taken(n))
        .unwrap_or_default()
}

//! What to import: one resource from the command line, or Pulumi's bulk
//! import file (`nameTable`, `resources`), resolved to the engine's
//! [`ImportSpec`]s — names of parents and providers to URNs — plus the
//! names `--out`'s code refers to them by.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context as _, Result};
use converge_engine::import::ImportSpec;
use converge_model::{ProviderReference, ResourceState, Urn};
use converge_state::Snapshot;
use serde::{Deserialize, Serialize};

use crate::args::ImportArgs;

/// Pulumi's bulk import file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportFile {
    /// Names of existing resources (parents, providers) → their URNs
    /// (`null`, as the Automation API writes an absent table, is none).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub name_table: BTreeMap<String, String>,
    pub resources: Vec<ImportFileResource>,
}

/// One resource of an import file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportFileResource {
    #[serde(rename = "type")]
    pub type_token: String,
    /// Its name in the generated code (and in the stack, unless
    /// `logicalName` says otherwise).
    pub name: String,
    /// The object's ID (Pulumi writes `""` for the user to fill in).
    #[serde(default)]
    pub id: String,
    /// A `nameTable` key, or the name of another resource of the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// A `nameTable` key naming a provider resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub component: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub remote: bool,
    #[serde(
        default,
        rename = "pluginDownloadURL",
        alias = "pluginDownloadUrl",
        skip_serializing_if = "Option::is_none"
    )]
    pub plugin_download_url: Option<String>,
}

/// The imports, and the names code refers to resources by.
#[derive(Debug, Clone, Default)]
pub struct Imports {
    pub specs: Vec<ImportSpec>,
    /// Each import's name in the code (same order as `specs`).
    pub code_names: Vec<String>,
    /// Names of existing resources the imports refer to, by URN.
    pub existing_names: BTreeMap<Urn, String>,
}

/// The single import of the command line.
pub fn from_args(args: &ImportArgs, base: &Snapshot) -> Result<Imports> {
    let (Some(type_token), Some(name), Some(id)) = (&args.type_token, &args.name, &args.id) else {
        bail!("give the resource to import as TYPE NAME ID, or a bulk import file with --file");
    };
    let mut existing_names = BTreeMap::new();
    let parent = match &args.parent {
        None => None,
        Some(text) => {
            let (code_name, urn) = named_urn(text, "--parent")?;
            require_live(base, &urn, "--parent")?;
            existing_names.insert(urn.clone(), code_name.unwrap_or_else(|| var_of(&urn)));
            Some(urn)
        }
    };
    let provider = match &args.provider {
        None => None,
        Some(text) => {
            let (code_name, urn) = provider_urn(text, base)?;
            existing_names.insert(urn.clone(), code_name.unwrap_or_else(|| var_of(&urn)));
            Some(urn)
        }
    };
    let properties = (!args.properties.is_empty()).then(|| args.properties.clone());
    Ok(Imports {
        specs: vec![ImportSpec {
            type_token: type_token.clone(),
            name: name.clone(),
            id: id.clone(),
            parent,
            provider,
            properties,
            protect: args.protect,
            ..ImportSpec::default()
        }],
        code_names: vec![name.clone()],
        existing_names,
    })
}

/// `URN` or `NAME=URN`.
fn named_urn(text: &str, flag: &str) -> Result<(Option<String>, Urn)> {
    let (name, urn) = match text.split_once('=') {
        Some((n, u)) if !n.starts_with("urn:") => (Some(n.to_owned()), u),
        _ => (None, text),
    };
    let urn = Urn::parse(urn).with_context(|| format!("{flag} {text}"))?;
    Ok((name, urn))
}

/// `URN::ID` (a provider reference, as `stack export` records it),
/// `URN` or `NAME=URN` (the URN either form): a provider resource of the
/// stack. A reference's ID must be the one the stack records.
fn provider_urn(text: &str, base: &Snapshot) -> Result<(Option<String>, Urn)> {
    let (code_name, rest) = match text.split_once('=') {
        Some((n, u)) if !n.starts_with("urn:") => (Some(n.to_owned()), u),
        _ => (None, text),
    };
    // A URN's name may itself hold `::`, so a reference also parses as a
    // URN: the stack says which one it is.
    let whole = Urn::parse(rest).ok().filter(|u| live(base, u).is_some());
    let urn = match whole {
        Some(urn) => urn,
        None => match ProviderReference::parse(rest) {
            Ok(reference) => {
                let Some(recorded) = live(base, &reference.urn) else {
                    bail!("--provider {text}: no such resource in the stack");
                };
                if recorded.id.as_deref() != Some(reference.id.as_str()) {
                    bail!(
                        "--provider {text}: the stack's provider {} has ID {}, not {}",
                        reference.urn,
                        recorded.id.as_deref().unwrap_or("(none)"),
                        reference.id
                    );
                }
                reference.urn
            }
            Err(_) => {
                let urn = Urn::parse(rest).with_context(|| format!("--provider {text}"))?;
                require_live(base, &urn, "--provider")?;
                urn
            }
        },
    };
    let is_provider = live(base, &urn).is_some_and(|r| r.is_provider());
    if !is_provider {
        bail!("--provider {text}: {urn} is not a provider resource (pulumi:providers:PACKAGE)");
    }
    Ok((code_name, urn))
}

/// The stack's live resource `urn`.
fn live<'a>(base: &'a Snapshot, urn: &Urn) -> Option<&'a ResourceState> {
    base.resources.iter().find(|r| &r.urn == urn && !r.delete)
}

fn require_live(base: &Snapshot, urn: &Urn, flag: &str) -> Result<()> {
    if live(base, urn).is_none() {
        bail!("{flag} {urn}: no such resource in the stack");
    }
    Ok(())
}

/// A code name for an existing resource: its name.
fn var_of(urn: &Urn) -> String {
    urn.name().to_owned()
}

/// The imports of a bulk import file, each after the resources of the
/// file it hangs from. `protect` applies to all.
pub fn from_file(
    path: &Path,
    base: &Snapshot,
    stack: &str,
    project: &str,
    protect: bool,
) -> Result<Imports> {
    let bytes = crate::input_file::read_file(path, "the import file")?;
    let file: ImportFile = converge_state::json_limits::from_slice(&bytes)
        .with_context(|| format!("{} is not a valid import file", path.display()))?;
    resolve(file, base, stack, project, protect)
        .with_context(|| format!("import file {}", path.display()))
}

fn resolve(
    file: ImportFile,
    base: &Snapshot,
    stack: &str,
    project: &str,
    protect: bool,
) -> Result<Imports> {
    if file.resources.is_empty() {
        bail!("it lists no resources");
    }
    let mut table = BTreeMap::new();
    let mut existing_names = BTreeMap::new();
    for (name, text) in &file.name_table {
        let urn = Urn::parse(text).with_context(|| format!("nameTable {name}"))?;
        require_live(base, &urn, &format!("nameTable {name}"))?;
        existing_names.insert(urn.clone(), name.clone());
        table.insert(name.clone(), urn);
    }
    let root = base
        .resources
        .iter()
        .find(|r| r.urn.is_stack() && r.parent.is_none() && !r.delete)
        .map(|r| r.urn.clone());
    let by_name: BTreeMap<&str, usize> = file
        .resources
        .iter()
        .enumerate()
        .map(|(i, r)| (r.name.as_str(), i))
        .collect();
    let order = order(&file, &by_name, &table)?;
    let mut urns: BTreeMap<usize, Urn> = BTreeMap::new();
    let mut imports = Imports {
        existing_names,
        ..Imports::default()
    };
    for i in order {
        let r = &file.resources[i];
        let parent = r.parent.as_ref().map(|p| match table.get(p) {
            Some(urn) => urn.clone(),
            None => urns[&by_name[p.as_str()]].clone(),
        });
        let provider = match &r.provider {
            None => None,
            Some(p) => Some(table.get(p).cloned().ok_or_else(|| {
                anyhow!("resource {}: provider {p} is not in the nameTable", r.name)
            })?),
        };
        if !r.component && r.id.is_empty() {
            bail!(
                "resource {} ({}) has no id: fill in the ID of the object to import",
                r.name,
                r.type_token
            );
        }
        let spec = ImportSpec {
            type_token: r.type_token.clone(),
            name: r.logical_name.clone().unwrap_or_else(|| r.name.clone()),
            id: r.id.clone(),
            parent,
            provider,
            version: r.version.clone(),
            properties: r.properties.clone(),
            component: r.component || r.remote,
            protect,
        };
        let root = root
            .clone()
            .map_or_else(|| stack_root(stack, project), Ok)?;
        urns.insert(i, spec.urn(stack, project, Some(&root))?);
        imports.specs.push(spec);
        imports.code_names.push(r.name.clone());
    }
    Ok(imports)
}

fn stack_root(stack: &str, project: &str) -> Result<Urn> {
    Ok(Urn::new(
        stack,
        project,
        None,
        converge_model::STACK_TYPE,
        &format!("{project}-{stack}"),
    )?)
}

/// The file's resources, each after the one of the file it names as its
/// parent; a name that is neither in the table nor in the file, or a
/// cycle, is an error.
fn order(
    file: &ImportFile,
    by_name: &BTreeMap<&str, usize>,
    table: &BTreeMap<String, Urn>,
) -> Result<Vec<usize>> {
    if by_name.len() != file.resources.len() {
        let mut seen = std::collections::BTreeSet::new();
        let dup = file
            .resources
            .iter()
            .find(|r| !seen.insert(r.name.as_str()))
            .map(|r| r.name.clone())
            .unwrap_or_default();
        bail!("two resources are named {dup}: names must be unique in the file");
    }
    let mut out = Vec::new();
    let mut state = vec![0u8; file.resources.len()];
    fn visit(
        i: usize,
        file: &ImportFile,
        by_name: &BTreeMap<&str, usize>,
        table: &BTreeMap<String, Urn>,
        state: &mut [u8],
        out: &mut Vec<usize>,
    ) -> Result<()> {
        match state[i] {
            2 => return Ok(()),
            1 => bail!("resource {} is its own ancestor", file.resources[i].name),
            _ => {}
        }
        state[i] = 1;
        if let Some(p) = &file.resources[i].parent {
            if !table.contains_key(p) {
                let &j = by_name.get(p.as_str()).ok_or_else(|| {
                    anyhow!(
                        "resource {}: parent {p} is neither in the nameTable nor a resource of the file",
                        file.resources[i].name
                    )
                })?;
                visit(j, file, by_name, table, state, out)?;
            }
        }
        state[i] = 2;
        out.push(i);
        Ok(())
    }
    for i in 0..file.resources.len() {
        visit(i, file, by_name, table, &mut state, &mut out)?;
    }
    Ok(out)
}

/// A map that may be written as `null`.
fn null_as_empty<'de, D>(d: D) -> Result<BTreeMap<String, String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    use serde::Deserialize as _;
    Ok(Option::<BTreeMap<String, String>>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(json: &str) -> ImportFile {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn children_come_after_parents_of_the_file_and_names_resolve() {
        let f = file(
            r#"{"resources": [
                {"type": "pkg:index:Thing", "name": "kid", "id": "k", "parent": "grp"},
                {"type": "my:app:Group", "name": "grp", "component": true, "logicalName": "group"}
            ]}"#,
        );
        let imports = resolve(f, &Snapshot::empty("t"), "dev", "proj", true).unwrap();
        assert_eq!(imports.code_names, ["grp", "kid"]);
        assert_eq!(imports.specs[0].name, "group");
        assert_eq!(
            imports.specs[1].parent.as_ref().unwrap().as_str(),
            "urn:pulumi:dev::proj::my:app:Group::group"
        );
        assert!(imports.specs.iter().all(|s| s.protect));
    }

    #[test]
    fn bad_files_are_refused_with_what_is_wrong() {
        let cases = [
            (r#"{"resources": []}"#, "lists no resources"),
            (
                r#"{"resources": [{"type": "t:i:T", "name": "a", "id": ""}]}"#,
                "has no id",
            ),
            (
                r#"{"resources": [{"type": "t:i:T", "name": "a", "id": "1", "parent": "zz"}]}"#,
                "parent zz is neither",
            ),
            (
                r#"{"resources": [{"type": "t:i:T", "name": "a", "id": "1", "provider": "p"}]}"#,
                "provider p is not in the nameTable",
            ),
            (
                r#"{"nameTable": {"p": "urn:pulumi:dev::proj::pulumi:providers:t::x"}, "resources": [{"type": "t:i:T", "name": "a", "id": "1"}]}"#,
                "no such resource in the stack",
            ),
        ];
        for (json, expected) in cases {
            let err = resolve(file(json), &Snapshot::empty("t"), "dev", "proj", true).unwrap_err();
            assert!(format!("{err:#}").contains(expected), "{json}: {err:#}");
        }
        let unknown = serde_json::from_str::<ImportFile>(r#"{"resources": [], "extra": 1}"#);
        assert!(unknown.is_err());
        // The Automation API writes an absent name table as null.
        let sdk = serde_json::from_str::<ImportFile>(r#"{"resources": [], "nameTable": null}"#);
        assert!(sdk.unwrap().name_table.is_empty());
    }
}

//! `converge policy new TEMPLATE`: a policy pack from one of Converge's
//! built-in templates, written for the published SDKs (PyPI's
//! `pulumi-policy`, npm's `@pulumi/policy`) and tied to no provider: a
//! resource policy forbidding the resource types its configuration lists
//! and a stack policy capping the number of resources. Nothing is
//! downloaded but the dependencies, installed as for a program (a
//! virtualenv for Python, npm for TypeScript) unless `--generate-only`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::Args;

use crate::commands::new::install;

#[derive(Debug, Args)]
pub struct PolicyNewArgs {
    /// The template: `python` or `typescript`.
    #[arg(value_name = "TEMPLATE")]
    pub template: Option<String>,
    /// Where to create the pack (default: the current directory; created
    /// if missing). Its name is the pack's.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write the pack's files even over existing ones.
    #[arg(short, long)]
    pub force: bool,
    /// Only write the pack's files: install no dependencies.
    #[arg(short, long)]
    pub generate_only: bool,
    /// Accepted for Pulumi's flags: the templates are built in.
    #[arg(short, long)]
    pub offline: bool,
}

/// A built-in template: its files, `__NAME__` and `__DESCRIPTION__`
/// replaced when written.
struct Template {
    name: &'static str,
    files: &'static [(&'static str, &'static str)],
}

const TEMPLATES: &[Template] = &[
    Template {
        name: "python",
        files: &[
            (
                "PulumiPolicy.yaml",
                include_str!("templates/python/PulumiPolicy.yaml"),
            ),
            ("__main__.py", include_str!("templates/python/__main__.py")),
            (
                "requirements.txt",
                include_str!("templates/python/requirements.txt"),
            ),
            (".gitignore", include_str!("templates/python/.gitignore")),
        ],
    },
    Template {
        name: "typescript",
        files: &[
            (
                "PulumiPolicy.yaml",
                include_str!("templates/typescript/PulumiPolicy.yaml"),
            ),
            ("index.ts", include_str!("templates/typescript/index.ts")),
            (
                "package.json",
                include_str!("templates/typescript/package.json"),
            ),
            (
                "tsconfig.json",
                include_str!("templates/typescript/tsconfig.json"),
            ),
            (
                ".gitignore",
                include_str!("templates/typescript/.gitignore"),
            ),
        ],
    },
];

fn template_names() -> String {
    TEMPLATES
        .iter()
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A pack name from a directory name, as the SDKs accept them (letters,
/// digits, `-`, `_`, `.`; at most 100).
fn pack_name(dir: &Path) -> String {
    let raw = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(100)
        .collect();
    let name = name.trim_matches('.').to_owned();
    if name.is_empty() {
        "policy-pack".to_owned()
    } else {
        name
    }
}

pub fn run(args: PolicyNewArgs) -> Result<()> {
    let Some(wanted) = args.template.as_deref() else {
        bail!(
            "name a template: `converge policy new TEMPLATE`, one of {}",
            template_names()
        );
    };
    let Some(template) = TEMPLATES.iter().find(|t| t.name == wanted) else {
        bail!(
            "no policy pack template named {wanted:?}: Converge's are {} (provider-neutral; \
             Pulumi's provider templates such as aws-python are not built in)",
            template_names()
        );
    };
    let dir = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("the current directory cannot be read")?,
    };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the pack's directory {}", dir.display()))?;
    if !args.force {
        let existing: Vec<&str> = template
            .files
            .iter()
            .map(|(file, _)| *file)
            .filter(|file| dir.join(file).exists())
            .collect();
        if !existing.is_empty() {
            bail!(
                "{} already holds {}: choose an empty directory (--dir), or pass --force to overwrite",
                dir.display(),
                existing.join(", ")
            );
        }
    }
    let name = pack_name(&dir);
    let description = format!("The {name} policy pack.");
    for (file, text) in template.files {
        let text = text
            .replace("__NAME__", &name)
            .replace("__DESCRIPTION__", &description);
        let path = dir.join(file);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!(
        "Created policy pack {name} ({}) in {}.",
        template.name,
        dir.display()
    );
    if args.generate_only {
        println!("Dependencies not installed (--generate-only).");
    } else {
        match template.name {
            "python" => install::python(&dir, Some("venv"))?,
            _ => install::nodejs(&dir, None)?,
        }
    }
    println!(
        "Run it from a project's directory: converge preview --policy-pack {}",
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_is_named_after_its_directory_as_the_sdks_allow() {
        assert_eq!(pack_name(Path::new("/x/my-pack")), "my-pack");
        assert_eq!(pack_name(Path::new("/x/my pack!")), "my-pack-");
        assert_eq!(pack_name(Path::new("/")), "policy-pack");
    }
}

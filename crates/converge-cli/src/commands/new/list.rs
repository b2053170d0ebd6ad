//! `converge new --list-templates`: the templates `converge new` can use
//! without a path — the built-in ones and those in
//! `$PULUMI_HOME/templates` — or, given a local directory of templates
//! (as Pulumi's templates repository is laid out), those in it; each with
//! its description, as Pulumi lists them.

use std::path::Path;

use anyhow::{bail, Result};

use super::{source, template};

/// One listed template.
struct Listed {
    name: String,
    description: String,
}

/// Prints the templates: those in `dir` (a directory of templates, or
/// one template) when given, else the built-in ones and Pulumi's
/// template directory's.
pub fn print(dir: Option<&Path>) -> Result<()> {
    let listed = match dir {
        Some(dir) => {
            if !dir.is_dir() {
                bail!(
                    "--list-templates {}: not a directory; name a local directory of templates",
                    dir.display()
                );
            }
            in_directory(dir)?
        }
        None => {
            let mut listed: Vec<Listed> = template::builtin_names()
                .into_iter()
                .filter_map(template::builtin)
                .map(|t| Listed {
                    name: t.name,
                    description: t.description,
                })
                .collect();
            if let Some(home) = source::templates_dir().filter(|d| d.is_dir()) {
                for t in in_directory(&home)? {
                    if !listed.iter().any(|l| l.name == t.name) {
                        listed.push(t);
                    }
                }
            }
            listed
        }
    };
    if listed.is_empty() {
        bail!("no templates found");
    }
    println!("Available templates:");
    let width = listed.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for l in &listed {
        println!("    {:<width$}  {}", l.name, l.description);
    }
    Ok(())
}

/// The templates directly under `dir` (or `dir` itself, when it is one),
/// by directory name; a subdirectory that is not a template is skipped,
/// one that cannot be read is named.
fn in_directory(dir: &Path) -> Result<Vec<Listed>> {
    let mut out = Vec::new();
    for sub in source::template_dirs(dir)? {
        let name = sub
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| sub.display().to_string());
        match template::load_dir(&sub) {
            Ok(t) => out.push(Listed {
                name,
                description: t.description,
            }),
            Err(e) => eprintln!("warning: template {name} cannot be read: {e:#}"),
        }
    }
    Ok(out)
}

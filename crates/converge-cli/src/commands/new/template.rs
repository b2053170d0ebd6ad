//! Project templates in Pulumi's format: a directory whose `Pulumi.yaml`
//! has a `template:` section (`description`, `config` — each key's
//! `description`, `default`, `secret` — and `important`), and whose files
//! say `${PROJECT}` and `${DESCRIPTION}` where the new project's name and
//! description go. The built-in templates (`yaml`, `python`,
//! `typescript`) are embedded in the binary.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use serde_norway::{Mapping, Value};

/// One file of a template: its path relative to the template's root.
#[derive(Debug, Clone)]
pub struct TemplateFile {
    pub path: PathBuf,
    pub content: Vec<u8>,
    /// Unix permission bits (`None`: the default).
    pub mode: Option<u32>,
}

/// A config key the template asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateConfig {
    pub key: String,
    pub description: Option<String>,
    pub default: Option<String>,
    pub secret: bool,
}

#[derive(Debug, Clone)]
pub struct Template {
    /// `yaml`, or the local directory's path.
    pub name: String,
    pub description: String,
    pub config: Vec<TemplateConfig>,
    pub important: bool,
    pub files: Vec<TemplateFile>,
}

/// The built-in templates: name, then each file's path and content.
const BUILTIN: [(&str, &[(&str, &str)]); 3] = [
    (
        "yaml",
        &[(
            "Pulumi.yaml",
            include_str!("../../../templates/yaml/Pulumi.yaml"),
        )],
    ),
    (
        "python",
        &[
            (
                "Pulumi.yaml",
                include_str!("../../../templates/python/Pulumi.yaml"),
            ),
            (
                "__main__.py",
                include_str!("../../../templates/python/__main__.py"),
            ),
            (
                "requirements.txt",
                include_str!("../../../templates/python/requirements.txt"),
            ),
            (
                ".gitignore",
                include_str!("../../../templates/python/.gitignore"),
            ),
        ],
    ),
    (
        "typescript",
        &[
            (
                "Pulumi.yaml",
                include_str!("../../../templates/typescript/Pulumi.yaml"),
            ),
            (
                "index.ts",
                include_str!("../../../templates/typescript/index.ts"),
            ),
            (
                "package.json",
                include_str!("../../../templates/typescript/package.json"),
            ),
            (
                "tsconfig.json",
                include_str!("../../../templates/typescript/tsconfig.json"),
            ),
            (
                ".gitignore",
                include_str!("../../../templates/typescript/.gitignore"),
            ),
        ],
    ),
];

/// The built-in templates' names.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTIN.iter().map(|(name, _)| *name).collect()
}

/// The template `arg` names: a local directory if one exists at that
/// path (relative to `cwd`), else a built-in template.
pub fn load(arg: &str, cwd: &Path) -> Result<Template> {
    let local = cwd.join(arg);
    if local.is_dir() {
        return load_dir(&local);
    }
    if let Some((name, files)) = BUILTIN.iter().find(|(name, _)| *name == arg) {
        let files = files
            .iter()
            .map(|(path, content)| TemplateFile {
                path: PathBuf::from(path),
                content: content.as_bytes().to_vec(),
                mode: None,
            })
            .collect();
        return from_files((*name).to_owned(), files);
    }
    if local.exists() {
        bail!("template {arg}: {} is not a directory", local.display());
    }
    bail!(
        "no template named {arg:?}: use one of the built-in templates ({}) or the path of a local \
         template directory (Converge downloads no templates)",
        builtin_names().join(", ")
    )
}

fn load_dir(dir: &Path) -> Result<Template> {
    let mut files = Vec::new();
    collect(dir, Path::new(""), &mut files)
        .with_context(|| format!("cannot read the template {}", dir.display()))?;
    from_files(dir.display().to_string(), files)
}

fn collect(root: &Path, rel: &Path, out: &mut Vec<TemplateFile>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(root.join(rel))?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        if rel.as_os_str().is_empty() && name == ".git" {
            continue;
        }
        let path = rel.join(&name);
        let meta = std::fs::metadata(entry.path())?;
        if meta.is_dir() {
            collect(root, &path, out)?;
        } else {
            #[cfg(unix)]
            let mode = {
                use std::os::unix::fs::PermissionsExt;
                Some(meta.permissions().mode())
            };
            #[cfg(not(unix))]
            let mode = None;
            out.push(TemplateFile {
                path,
                content: std::fs::read(entry.path())?,
                mode,
            });
        }
    }
    Ok(())
}

fn from_files(name: String, files: Vec<TemplateFile>) -> Result<Template> {
    let project_file = files
        .iter()
        .find(|f| f.path == Path::new("Pulumi.yaml") || f.path == Path::new("Pulumi.yml"))
        .with_context(|| format!("template {name} has no Pulumi.yaml"))?;
    let text = std::str::from_utf8(&project_file.content)
        .with_context(|| format!("template {name}: Pulumi.yaml is not UTF-8"))?;
    // The placeholders are not YAML the parser needs to understand.
    let parsed: Value = converge_yaml::from_str(
        &format!("template {name}: Pulumi.yaml"),
        &render_text(text, "project", "description"),
    )?;
    let section = parsed.get("template").cloned().unwrap_or(Value::Null);
    let section = match section {
        Value::Null => Mapping::new(),
        Value::Mapping(m) => m,
        _ => bail!("template {name}: `template` in Pulumi.yaml must be a mapping"),
    };
    let description = section
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let important = section
        .get("important")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut config = Vec::new();
    if let Some(c) = section.get("config") {
        let Some(map) = c.as_mapping() else {
            bail!("template {name}: `template.config` must be a mapping of keys");
        };
        for (key, spec) in map {
            let key = key
                .as_str()
                .with_context(|| format!("template {name}: a config key is not a string"))?;
            let text = |k: &str| match spec.get(k) {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Bool(b)) => Some(b.to_string()),
                Some(Value::Number(n)) => Some(n.to_string()),
                Some(other) => serde_norway::to_string(other)
                    .ok()
                    .map(|s| s.trim().to_owned()),
            };
            config.push(TemplateConfig {
                key: key.to_owned(),
                description: text("description"),
                default: text("default"),
                secret: spec.get("secret").and_then(Value::as_bool).unwrap_or(false),
            });
        }
    }
    Ok(Template {
        name,
        description,
        config,
        important,
        files,
    })
}

/// `${PROJECT}` and `${DESCRIPTION}` replaced.
pub fn render_text(text: &str, project: &str, description: &str) -> String {
    text.replace("${PROJECT}", project)
        .replace("${DESCRIPTION}", description)
}

/// The project file without its top-level `template:` section (the rest
/// kept as written).
pub fn strip_template_section(text: &str) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.split_inclusive('\n') {
        let top_level = !line.starts_with([' ', '\t', '#', '\n', '\r']) && !line.is_empty();
        if top_level {
            skipping = line.starts_with("template:");
        }
        if !skipping {
            out.push_str(line);
        }
    }
    out
}

/// A file's content for the new project: text rendered, binary as is.
pub fn render_file(file: &TemplateFile, project: &str, description: &str) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(&file.content) else {
        return file.content.clone();
    };
    let is_project_file =
        file.path == Path::new("Pulumi.yaml") || file.path == Path::new("Pulumi.yml");
    let text = if is_project_file {
        strip_template_section(text)
    } else {
        text.to_owned()
    };
    render_text(&text, project, description).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_section_is_read_then_dropped() {
        let t = load("python", Path::new("/")).unwrap();
        assert!(t.description.contains("Python"));
        let project = t
            .files
            .iter()
            .find(|f| f.path == Path::new("Pulumi.yaml"))
            .unwrap();
        let text = String::from_utf8(render_file(project, "demo", "My demo")).unwrap();
        assert!(
            text.starts_with("name: demo\ndescription: My demo\n"),
            "{text}"
        );
        assert!(!text.contains("template:"), "{text}");
        assert!(text.contains("virtualenv: venv"), "{text}");
        let yaml = strip_template_section(
            "name: x\ntemplate:\n  description: d\n  config:\n    a: {}\n\n# c\nresources:\n  r: {}\n",
        );
        assert_eq!(yaml, "name: x\nresources:\n  r: {}\n");
    }

    #[test]
    fn a_local_template_has_config_and_important() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("Pulumi.yaml"),
            "name: ${PROJECT}\nruntime: yaml\ntemplate:\n  description: Local\n  important: true\n  config:\n    greeting:\n      description: What to say\n      default: hello\n    token:\n      secret: true\n",
        )
        .unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/readme.md"), "# ${PROJECT}").unwrap();
        let t = load(d.path().to_str().unwrap(), Path::new("/")).unwrap();
        assert_eq!(t.description, "Local");
        assert!(t.important);
        assert_eq!(
            t.config,
            [
                TemplateConfig {
                    key: "greeting".into(),
                    description: Some("What to say".into()),
                    default: Some("hello".into()),
                    secret: false
                },
                TemplateConfig {
                    key: "token".into(),
                    description: None,
                    default: None,
                    secret: true
                }
            ]
        );
        assert_eq!(t.files.len(), 2);
        let e = load("nope", Path::new("/")).unwrap_err().to_string();
        assert!(
            e.contains("python, typescript") || e.contains("yaml, python"),
            "{e}"
        );
    }
}

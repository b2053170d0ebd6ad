//! `Pulumi.yaml`: the project file, read in Pulumi's format and kept intact.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_norway::{Mapping, Value};

use crate::project_config::{ParseOptions, ProjectConfig};

pub const PROJECT_FILE_NAMES: [&str; 2] = ["Pulumi.yaml", "Pulumi.yml"];

/// The keys of the project file a [`Project`] keeps and reads after loading.
const KEPT_KEYS: [&str; 8] = [
    "name",
    "runtime",
    "main",
    "description",
    "backend",
    "options",
    "stackConfigDir",
    "config",
];

/// The top-level keys of Pulumi's project schema, and of a YAML program's
/// body: any other key is warned about (`unknown_keys`), not refused, as
/// Pulumi accepts it.
const KNOWN_KEYS: [&str; 20] = [
    "name",
    "runtime",
    "description",
    "main",
    "stackConfigDir",
    "config",
    "backend",
    "options",
    "template",
    "plugins",
    "author",
    "website",
    "license",
    "packages",
    "requiredPulumiVersion",
    "resources",
    "variables",
    "outputs",
    "configuration",
    "pulumi",
];

/// The project file's top level as loaded: only the [`KEPT_KEYS`], and the
/// names of the keys not in [`KNOWN_KEYS`]. A YAML
/// program's body (`resources:` and the rest, most of a large program's
/// text) is the program's, parsed by it; here it is read past, not built
/// into values.
enum KeptDoc {
    Mapping(Mapping, Vec<String>),
    Null,
    Other,
}

impl<'de> serde::Deserialize<'de> for KeptDoc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(KeptDocVisitor)
    }
}

struct KeptDocVisitor;

impl<'de> serde::de::Visitor<'de> for KeptDocVisitor {
    type Value = KeptDoc;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML mapping")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<KeptDoc, A::Error> {
        let mut kept = Mapping::new();
        let mut unknown = Vec::new();
        while let Some(key) = map.next_key::<Value>()? {
            if key.as_str().is_some_and(|k| KEPT_KEYS.contains(&k)) {
                let value = map.next_value::<Value>()?;
                kept.insert(key, value);
            } else {
                match key.as_str() {
                    Some(k) if KNOWN_KEYS.contains(&k) => {}
                    Some(k) => unknown.push(k.to_owned()),
                    None => unknown.push(
                        serde_norway::to_string(&key)
                            .map(|t| t.trim_end().to_owned())
                            .unwrap_or_default(),
                    ),
                }
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(KeptDoc::Mapping(kept, unknown))
    }

    fn visit_unit<E>(self) -> std::result::Result<KeptDoc, E> {
        Ok(KeptDoc::Null)
    }

    fn visit_none<E>(self) -> std::result::Result<KeptDoc, E> {
        Ok(KeptDoc::Null)
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<KeptDoc, E> {
        Ok(KeptDoc::Other)
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<KeptDoc, E> {
        Ok(KeptDoc::Other)
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<KeptDoc, E> {
        Ok(KeptDoc::Other)
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<KeptDoc, E> {
        Ok(KeptDoc::Other)
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<KeptDoc, E> {
        Ok(KeptDoc::Other)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<KeptDoc, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(KeptDoc::Other)
    }
}

/// A loaded project: its directory and its file's content.
#[derive(Debug, Clone)]
pub struct Project {
    pub dir: PathBuf,
    pub name: String,
    /// The project-level configuration (`config:`).
    pub config: ProjectConfig,
    doc: Mapping,
    /// `--config-file`: the stack configuration file of every stack.
    stack_config_override: Option<PathBuf>,
}

impl Project {
    /// Finds the project file in `start` or the nearest directory above it.
    pub fn find(start: &Path) -> Result<Option<Project>> {
        match Project::locate(start) {
            Some(file) => Project::load(&file).map(Some),
            None => Ok(None),
        }
    }

    /// The project file [`Project::find`] would load, without loading it.
    pub fn locate(start: &Path) -> Option<PathBuf> {
        let mut dir = Some(start);
        while let Some(d) = dir {
            for name in PROJECT_FILE_NAMES {
                let file = d.join(name);
                if file.is_file() {
                    return Some(file);
                }
            }
            dir = d.parent();
        }
        None
    }

    /// Like [`Project::find`], but a missing project is an error that says
    /// what to do.
    pub fn require(start: &Path) -> Result<Project> {
        Project::find(start)?.with_context(|| {
            format!(
                "no Pulumi.yaml project file found in {} or any parent directory; \
                 run in a project directory or pass --cwd",
                start.display()
            )
        })
    }

    pub fn load(file: &Path) -> Result<Project> {
        // Bounded: size, nesting and aliases (an alias bomb is refused here).
        let value: KeptDoc = converge_yaml::load(file)?;
        let (doc, unknown) = match value {
            KeptDoc::Mapping(m, unknown) => (m, unknown),
            KeptDoc::Null => bail!(
                "{} is empty: it needs at least `name` and `runtime`",
                file.display()
            ),
            _ => bail!(
                "{} must be a YAML mapping with `name` and `runtime`",
                file.display()
            ),
        };
        let name = match doc.get("name") {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(_) => bail!("{}: `name` must be a non-empty string", file.display()),
            None => bail!(
                "{}: the project has no `name`{}",
                file.display(),
                missing_hint("name", &unknown)
            ),
        };
        converge_backend::validate_project_name(&name)
            .with_context(|| format!("{}: invalid project name", file.display()))?;
        if doc.get("runtime").is_none() {
            bail!(
                "{}: the project has no `runtime`{}",
                file.display(),
                missing_hint("runtime", &unknown)
            );
        }
        // A YAML program's parser refuses unknown keys itself, naming the
        // closest; other runtimes ignore them.
        if runtime_name(&doc) != Some("yaml") {
            crate::unknown_keys::warn(file, &unknown, &KNOWN_KEYS);
            // `runtime: {name, options}`: a misspelled `options` would
            // otherwise drop them silently (a virtualenv not used).
            if let Some(Value::Mapping(runtime)) = doc.get("runtime") {
                let strays: Vec<String> = runtime
                    .keys()
                    .filter_map(|k| k.as_str())
                    .filter(|k| !matches!(*k, "name" | "options"))
                    .map(|k| format!("runtime.{k}"))
                    .collect();
                crate::unknown_keys::warn(file, &strays, &["runtime.name", "runtime.options"]);
                if let (Some(known), Some(Value::Mapping(options))) = (
                    runtime_name(&doc).and_then(runtime_options),
                    runtime.get("options"),
                ) {
                    let strays: Vec<String> = options
                        .keys()
                        .filter_map(|k| k.as_str())
                        .filter(|k| !known.contains(k))
                        .map(|k| format!("runtime.options.{k}"))
                        .collect();
                    let known: Vec<String> = known
                        .iter()
                        .map(|k| format!("runtime.options.{k}"))
                        .collect();
                    let known: Vec<&str> = known.iter().map(String::as_str).collect();
                    crate::unknown_keys::warn(file, &strays, &known);
                }
            }
        }
        let opts = ParseOptions {
            project: &name,
            yaml_runtime: runtime_name(&doc) == Some("yaml"),
        };
        let config = match doc.get("config") {
            None | Some(Value::Null) => ProjectConfig::parse(&Mapping::new(), opts)?,
            // The older meaning of `config`: the stack config directory.
            Some(Value::String(_)) if doc.contains_key("stackConfigDir") => bail!(
                "{}: should not use both `config` and `stackConfigDir` to define the stack \
                 config directory; use only `stackConfigDir`",
                file.display()
            ),
            Some(Value::String(_)) => ProjectConfig::parse(&Mapping::new(), opts)?,
            Some(Value::Mapping(section)) => match ProjectConfig::parse(section, opts) {
                Ok(config) => config,
                // A misspelled runtime reads YAML's config types as
                // unknown: the runtime is the slip to name.
                Err(e) => match runtime_name(&doc).filter(|r| !crate::program::runs(r)) {
                    Some(r) => bail!("{}", crate::program::unsupported_runtime(file, r)),
                    None => {
                        return Err(e)
                            .with_context(|| format!("{}: invalid project config", file.display()))
                    }
                },
            },
            Some(_) => bail!(
                "{}: `config` must be a mapping of configuration keys",
                file.display()
            ),
        };
        let dir = file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        Ok(Project {
            dir,
            name,
            config,
            doc,
            stack_config_override: None,
        })
    }

    /// The project file (`Pulumi.yaml`, or `Pulumi.yml` where that is
    /// the one there).
    pub fn file(&self) -> PathBuf {
        PROJECT_FILE_NAMES
            .iter()
            .map(|n| self.dir.join(n))
            .find(|p| p.is_file())
            .unwrap_or_else(|| self.dir.join(PROJECT_FILE_NAMES[0]))
    }

    /// The runtime's name (`runtime: python` or `runtime: {name: python}`).
    pub fn runtime(&self) -> Option<&str> {
        runtime_name(&self.doc)
    }

    /// `main`: where the program is, relative to the project directory
    /// (checked by `converge_language::entry_point::resolve`).
    pub fn main(&self) -> Option<&str> {
        self.doc.get("main")?.as_str()
    }

    /// `description`, if the project has one.
    pub fn description(&self) -> Option<&str> {
        self.doc.get("description")?.as_str()
    }

    /// `backend.url`, if the project pins a backend.
    pub fn backend_url(&self) -> Option<&str> {
        self.doc.get("backend")?.as_mapping()?.get("url")?.as_str()
    }

    /// `options.refresh: always`: refresh before every preview, update and
    /// destroy, as if `--refresh` were passed.
    pub fn refresh_always(&self) -> bool {
        self.doc
            .get("options")
            .and_then(Value::as_mapping)
            .and_then(|o| o.get("refresh"))
            .and_then(Value::as_str)
            == Some("always")
    }

    /// Where the stack configuration files live (`stackConfigDir`, or a
    /// `config` that is a path as older projects write it, else the project
    /// directory).
    pub fn stack_config_dir(&self) -> PathBuf {
        let dir = self
            .doc
            .get("stackConfigDir")
            .or_else(|| self.doc.get("config"))
            .and_then(Value::as_str);
        match dir {
            Some(d) => self.dir.join(d),
            None => self.dir.clone(),
        }
    }

    /// The path of `Pulumi.<stack>.yaml`.
    pub fn stack_config_file(&self, stack: &str) -> PathBuf {
        match &self.stack_config_override {
            Some(path) => path.clone(),
            None => self.stack_config_dir().join(format!("Pulumi.{stack}.yaml")),
        }
    }

    /// The project with `path` as its stacks' configuration file
    /// (`--config-file`), relative to `cwd`.
    pub fn with_stack_config_file(mut self, cwd: &Path, path: &Path) -> Project {
        self.stack_config_override = Some(cwd.join(path));
        self
    }
}

/// The runtime's name (`runtime: python` or `runtime: {name: python}`).
fn runtime_name(doc: &Mapping) -> Option<&str> {
    match doc.get("runtime")? {
        Value::String(s) => Some(s),
        Value::Mapping(m) => m.get("name")?.as_str(),
        _ => None,
    }
}

/// The options Pulumi's language host of `runtime` takes under
/// `runtime.options` (for the runtimes Converge runs besides YAML).
fn runtime_options(runtime: &str) -> Option<&'static [&'static str]> {
    match runtime {
        "python" => Some(&["toolchain", "virtualenv", "typechecker"]),
        "nodejs" => Some(&["typescript", "tsconfig", "nodeargs", "packagemanager"]),
        _ => None,
    }
}

/// `"; did you mean `runtime`? found `runtme`"` when an unknown key is
/// close to the missing `key`, else nothing.
fn missing_hint(key: &str, unknown: &[String]) -> String {
    unknown
        .iter()
        .find(|u| crate::unknown_keys::closest(u, [key]).is_some())
        .map(|u| format!("; did you mean `{key}`? found `{u}`"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let f = dir.join("Pulumi.yaml");
        std::fs::write(&f, text).unwrap();
        f
    }

    #[test]
    fn reads_name_runtime_and_backend() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "name: web\nruntime:\n  name: python\n  options:\n    virtualenv: venv\nbackend:\n  url: file://./state\n",
        );
        let sub = d.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        let p = Project::require(&sub).unwrap();
        assert_eq!(p.name, "web");
        assert_eq!(p.runtime(), Some("python"));
        assert_eq!(p.backend_url(), Some("file://./state"));
        assert_eq!(p.stack_config_file("dev"), d.path().join("Pulumi.dev.yaml"));
        assert!(!p.refresh_always());
        write(
            d.path(),
            "name: web\nruntime: yaml\noptions:\n  refresh: always\n",
        );
        assert!(Project::require(d.path()).unwrap().refresh_always());
    }

    #[test]
    fn bad_project_files_say_what_is_wrong() {
        let d = tempfile::tempdir().unwrap();
        let f = write(d.path(), "runtime: yaml\n");
        assert!(format!("{:#}", Project::load(&f).unwrap_err()).contains("no `name`"));
        let f = write(d.path(), "name: a/b\nruntime: yaml\n");
        assert!(format!("{:#}", Project::load(&f).unwrap_err()).contains("invalid project name"));
        let f = write(d.path(), "name: [\n");
        assert!(format!("{:#}", Project::load(&f).unwrap_err()).contains("invalid YAML"));
        let f = write(
            d.path(),
            "name: a\nruntime: yaml\nconfig:\n  aws:region: {default: x}\n",
        );
        let e = format!("{:#}", Project::load(&f).unwrap_err());
        assert!(
            e.contains("invalid project config") && e.contains("'value'"),
            "{e}"
        );
        let f = write(
            d.path(),
            "name: a\nruntime: yaml\nconfig: cfg\nstackConfigDir: x\n",
        );
        assert!(format!("{:#}", Project::load(&f).unwrap_err()).contains("stackConfigDir"));
        for empty in ["", "# nothing yet\n", "---\n"] {
            let f = write(d.path(), empty);
            let e = format!("{:#}", Project::load(&f).unwrap_err());
            assert!(e.contains("is empty"), "{empty:?}: {e}");
        }
        for other in ["- name: a\n", "just text\n", "3\n"] {
            let f = write(d.path(), other);
            let e = format!("{:#}", Project::load(&f).unwrap_err());
            assert!(e.contains("must be a YAML mapping"), "{other:?}: {e}");
        }
        // The program's body is read past, but must still be YAML.
        let f = write(d.path(), "name: a\nruntime: yaml\nresources: {r: [\n");
        assert!(format!("{:#}", Project::load(&f).unwrap_err()).contains("invalid YAML"));
    }

    #[test]
    fn a_yaml_programs_body_is_not_kept() {
        let d = tempfile::tempdir().unwrap();
        let f = write(
            d.path(),
            "name: a\nruntime: yaml\ndescription: d\nresources:\n  r:\n    type: random:RandomPet\noutputs:\n  o: ${r.id}\n",
        );
        let p = Project::load(&f).unwrap();
        let keys: Vec<&str> = p.doc.keys().filter_map(Value::as_str).collect();
        assert_eq!(keys, ["name", "runtime", "description"]);
        let f = write(d.path(), "name: a\nruntime: yaml\nmain: prog/\n");
        assert_eq!(Project::load(&f).unwrap().main(), Some("prog/"));
        assert_eq!(p.description(), Some("d"));
    }

    #[test]
    fn config_declarations_and_the_older_config_directory() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "name: web\nruntime: python\nconfig:\n  n: {type: integer, default: 2}\n",
        );
        let p = Project::require(d.path()).unwrap();
        assert_eq!(p.config.declarations()[0].key, "web:n");
        write(d.path(), "name: web\nruntime: python\nconfig: settings\n");
        let p = Project::require(d.path()).unwrap();
        assert!(p.config.declarations().is_empty());
        assert_eq!(
            p.stack_config_file("dev"),
            d.path().join("settings/Pulumi.dev.yaml")
        );
    }
}

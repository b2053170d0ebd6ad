//! Pulumi YAML programs (`runtime: yaml`), evaluated in-process.
//!
//! [`YamlProgram::load`] reads the program (the template keys of
//! `Pulumi.yaml`, or `Main.yaml` when present, or what the runtime option
//! `compiler` writes), parses it into a positioned
//! AST and checks it without running anything: unknown keys and options,
//! missing types, function shapes, references to undefined names (with a
//! suggestion when one is close) and dependency cycles. Every problem is a
//! [`YamlError`] `file:line:column: message`.
//!
//! A loaded program is a [`converge_engine::Program`]: it registers the
//! stack, then every resource as soon as everything it references is done
//! (independent resources at once), then the stack's outputs.
//!
//! Module map: `syntax` (YAML text → positioned nodes), `expr`
//! (expressions, interpolations), `builtins` (which `fn::` key names
//! which function, in any case, and the calls' shapes), `ast` (the
//! template: config, variables, resources, outputs), `config` (typed
//! configuration), `validate` (references, cycles, the dependency graph),
//! `eval` and `functions` (values), `tokens` (type and function tokens
//! through the package schemas, once per run), `typecheck` (property
//! names and references through the same schemas), `run` (the program
//! against the monitor).

mod aliases;
mod ast;
mod builtins;
mod compiler;
mod config;
mod eval;
mod expr;
mod functions;
mod run;
mod syntax;
mod tokens;
mod typecheck;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use converge_model::PropertyValue;

use self::ast::Template;
use self::syntax::{Node, NodeKind};
use self::validate::Graph;

/// A position in a file: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

/// A problem in a program, where it is. Displays as
/// `Pulumi.yaml:12:7: message` (just `Pulumi.yaml: message` when the
/// problem has no position, e.g. the file cannot be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl YamlError {
    pub(crate) fn at(file: &str, pos: Pos, message: impl Into<String>) -> Self {
        YamlError {
            file: file.to_owned(),
            line: pos.line,
            column: pos.column,
            message: message.into(),
        }
    }

    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.column, self.message
            )
        }
    }
}

impl std::error::Error for YamlError {}

/// Every problem [`YamlProgram::load`] found, in file order; never empty.
/// Displays one error per line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlErrors(pub Vec<YamlError>);

impl YamlErrors {
    /// The first problem.
    pub fn first(&self) -> Option<&YamlError> {
        self.0.first()
    }

    /// Every problem, in file order.
    pub fn errors(&self) -> &[YamlError] {
        &self.0
    }
}

impl fmt::Display for YamlErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for YamlErrors {}

/// One configuration value of the stack, as `Pulumi.<stack>.yaml` holds
/// it: text (JSON for lists and objects), and whether it is secret.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConfigValue {
    pub value: String,
    pub secret: bool,
}

impl ConfigValue {
    pub fn plain(value: impl Into<String>) -> Self {
        ConfigValue {
            value: value.into(),
            secret: false,
        }
    }

    pub fn secret(value: impl Into<String>) -> Self {
        ConfigValue {
            value: value.into(),
            secret: true,
        }
    }
}

/// What a program is loaded with.
#[derive(Clone)]
pub struct YamlOptions {
    /// The project name (the namespace of unqualified config keys).
    pub project: String,
    pub stack: String,
    /// The stack's organization (`pulumi.organization`): the state
    /// service's, or `organization` on a self-managed backend, as Pulumi's.
    pub organization: String,
    /// The stack's configuration, by key: `project:key` (or bare `key`),
    /// or `package:key` for other namespaces.
    pub config: BTreeMap<String, ConfigValue>,
}

impl Default for YamlOptions {
    fn default() -> Self {
        YamlOptions {
            project: String::new(),
            stack: String::new(),
            organization: "organization".to_owned(),
            config: BTreeMap::new(),
        }
    }
}

impl fmt::Debug for YamlOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&String> = self.config.keys().collect();
        f.debug_struct("YamlOptions")
            .field("project", &self.project)
            .field("stack", &self.stack)
            .field("organization", &self.organization)
            .field("config_keys", &keys)
            .finish()
    }
}

/// A checked Pulumi YAML program, ready to run (any number of times).
#[derive(Clone)]
pub struct YamlProgram {
    inner: Arc<Loaded>,
}

impl fmt::Debug for YamlProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("YamlProgram")
            .field("file", &self.inner.template.file)
            .field("resources", &self.resource_names())
            .finish_non_exhaustive()
    }
}

/// Everything a run needs, shared by its tasks.
pub(crate) struct Loaded {
    pub template: Template,
    pub graph: Graph,
    pub config: BTreeMap<String, PropertyValue>,
    pub project_dir: PathBuf,
    /// The directory `main:` names (the project directory without one):
    /// the program's working directory, as Pulumi runs it.
    pub work_dir: PathBuf,
    pub organization: String,
}

const PROJECT_FILE: &str = "Pulumi.yaml";
const MAIN_FILE: &str = "Main.yaml";

/// The program file a project's `main:` names, relative to the project:
/// the `Main.yaml` of the directory it names, or that file itself. A
/// `main:` that names anything else is an error, never a program without
/// resources (which would delete every resource of the stack).
fn main_program(main: &str, entry: &Path) -> Result<PathBuf, YamlErrors> {
    if entry.is_dir() {
        if entry.join(MAIN_FILE).is_file() {
            return Ok(Path::new(main).join(MAIN_FILE));
        }
        return Err(single(
            PROJECT_FILE,
            format!(
                "`main: {main}` names a directory without a {MAIN_FILE}: put the program in \
                 {main}/{MAIN_FILE}, or correct `main:` (remove it to run the program in \
                 {PROJECT_FILE})"
            ),
        ));
    }
    if entry.file_name().and_then(|n| n.to_str()) == Some(MAIN_FILE) {
        return Ok(PathBuf::from(main));
    }
    Err(single(
        PROJECT_FILE,
        format!(
            "`main: {main}` names a file that is not a {MAIN_FILE}: for a YAML program, \
             `main:` names the directory that holds {MAIN_FILE} (or that {MAIN_FILE} itself)"
        ),
    ))
}

/// A program read and parsed, not yet checked against a stack's
/// configuration: the part of [`YamlProgram::load`] that needs only the
/// project directory, so that a caller can do it while it opens the stack
/// (the CLI parses a 10,000-resource program beside reading the
/// checkpoint and deriving the passphrase key).
pub struct ParsedYaml {
    template: ast::Template,
    /// What parsing found wrong, reported by [`ParsedYaml::check`] together
    /// with what checking finds.
    errors: Vec<YamlError>,
    project_dir: PathBuf,
    work_dir: PathBuf,
}

impl fmt::Debug for ParsedYaml {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParsedYaml")
            .field("file", &self.template.file)
            .field("project_dir", &self.project_dir)
            .finish_non_exhaustive()
    }
}

impl ParsedYaml {
    /// Reads and parses the program of the project in `project_dir`. Fails
    /// at once on unreadable files, invalid YAML and a runtime other than
    /// yaml; every other problem waits for [`ParsedYaml::check`].
    pub fn read(project_dir: &Path) -> Result<ParsedYaml, YamlErrors> {
        let project_path = project_dir.join(PROJECT_FILE);
        let project_text = converge_yaml::read_named(&project_path, PROJECT_FILE)
            .map_err(|e| unread(e, "the project file"))?;
        let project = syntax::parse(PROJECT_FILE, &project_text).map_err(sorted)?;
        if project.as_map().is_none() {
            return Err(single(PROJECT_FILE, "the project file must be a mapping"));
        }
        check_runtime(&project)?;
        let main = ast::lookup(&project, "main").and_then(Node::as_str);
        let entry = crate::entry_point::resolve(project_dir, main)
            .map_err(|e| single(PROJECT_FILE, e.to_string()))?;
        // As Pulumi: a `main` that names a file runs in its directory.
        let work_dir = if entry.is_dir() {
            entry.clone()
        } else {
            entry
                .parent()
                .map_or_else(|| project_dir.to_path_buf(), Path::to_path_buf)
        };
        let main_rel = match main.filter(|m| !m.is_empty()) {
            None => PathBuf::from(MAIN_FILE),
            Some(main) => main_program(main, &entry)?,
        };
        let main_path = project_dir.join(&main_rel);
        let mut errors = Vec::new();
        let (mut template, project_config) = if let Some(command) = compiler::command(&project) {
            let (file, text) = compiler::run(command, &work_dir)?;
            let root = syntax::parse(&file, &text).map_err(sorted)?;
            let project_config = config::declarations(PROJECT_FILE, &project, &mut errors);
            (ast::template(&file, &root, &mut errors), project_config)
        } else if main_path.is_file() {
            let file = main_rel.to_string_lossy().into_owned();
            let text = converge_yaml::read_named(&main_path, &file)
                .map_err(|e| unread(e, "the program"))?;
            let root = syntax::parse(&file, &text).map_err(sorted)?;
            // The project file's own config declarations still count.
            let project_config = config::declarations(PROJECT_FILE, &project, &mut errors);
            (ast::template(&file, &root, &mut errors), project_config)
        } else {
            (
                ast::template(PROJECT_FILE, &project, &mut errors),
                Vec::new(),
            )
        };
        template.warnings = sorted(std::mem::take(&mut template.warnings)).0;
        let mut decls = project_config;
        decls.append(&mut template.config);
        template.config = decls;
        Ok(ParsedYaml {
            template,
            errors,
            project_dir: project_dir.to_path_buf(),
            work_dir,
        })
    }

    /// The project directory the program was read from.
    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// Resolves the program's configuration from `options` and checks the
    /// program (references, cycles, function shapes): the program ready to
    /// run, or every problem found since [`ParsedYaml::read`], in file
    /// order.
    pub fn check(self, options: YamlOptions) -> Result<YamlProgram, YamlErrors> {
        let ParsedYaml {
            template,
            mut errors,
            project_dir,
            work_dir,
        } = self;
        let config = config::resolve(&template.config, &options, &mut errors);
        let graph = validate::check(&template, &config, &mut errors);
        if !errors.is_empty() {
            return Err(sorted(errors));
        }
        let config = config.into_iter().map(|(k, c)| (k, c.value)).collect();
        Ok(YamlProgram {
            inner: Arc::new(Loaded {
                template,
                graph,
                config,
                project_dir,
                work_dir,
                organization: options.organization,
            }),
        })
    }
}

impl YamlProgram {
    /// Reads and checks the program of the project in `project_dir`:
    /// [`ParsedYaml::read`], then [`ParsedYaml::check`].
    pub fn load(project_dir: &Path, options: YamlOptions) -> Result<YamlProgram, YamlErrors> {
        ParsedYaml::read(project_dir)?.check(options)
    }

    /// The file the program was read from, relative to the project
    /// directory (`Pulumi.yaml` or `Main.yaml`).
    pub fn file(&self) -> &str {
        &self.inner.template.file
    }

    /// The program's resources, by their keys in the file, in file order.
    pub fn resource_names(&self) -> Vec<&str> {
        self.inner
            .template
            .resources
            .iter()
            .map(|r| r.key.name.as_str())
            .collect()
    }

    /// What the program writes other than as documented but Pulumi YAML
    /// accepts (e.g. `Fn::Secret` for `fn::secret`), in file order; each
    /// run reports them as warnings.
    pub fn warnings(&self) -> &[YamlError] {
        &self.inner.template.warnings
    }

    /// The resolved configuration, by the name the program uses.
    pub fn config(&self) -> &BTreeMap<String, PropertyValue> {
        &self.inner.config
    }
}

/// A file `converge_yaml` did not read (`what` it is, for the message).
fn unread(e: converge_yaml::YamlError, what: &str) -> YamlErrors {
    let message = match e.kind {
        converge_yaml::YamlErrorKind::Read(source) => format!("cannot read {what}: {source}"),
        kind => kind.to_string(),
    };
    YamlErrors(vec![YamlError::at(
        &e.file,
        Pos {
            line: e.line,
            column: e.column,
        },
        message,
    )])
}

fn single(file: &str, message: impl Into<String>) -> YamlErrors {
    YamlErrors(vec![YamlError::at(file, Pos::default(), message)])
}

fn sorted(mut errors: Vec<YamlError>) -> YamlErrors {
    errors.sort_by(|a, b| (a.file.as_str(), a.pos()).cmp(&(b.file.as_str(), b.pos())));
    errors.dedup();
    YamlErrors(errors)
}

/// `runtime: yaml` or `runtime: {name: yaml}`.
fn check_runtime(project: &Node) -> Result<(), YamlErrors> {
    let Some(runtime) = ast::lookup(project, "runtime") else {
        return Ok(());
    };
    let name = match &runtime.kind {
        NodeKind::Map(_) => ast::lookup(runtime, "name").and_then(Node::as_str),
        _ => runtime.as_str(),
    };
    match name {
        Some("yaml") => Ok(()),
        Some(other) => Err(YamlErrors(vec![YamlError::at(
            PROJECT_FILE,
            runtime.pos,
            format!("the runtime is '{other}', not yaml"),
        )])),
        None => Err(YamlErrors(vec![YamlError::at(
            PROJECT_FILE,
            runtime.pos,
            "runtime must be a string or a mapping with a name",
        )])),
    }
}

/// The closest of `candidates` to `name`, if close enough to be a likely
/// typo.
pub(crate) fn suggest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = if c.eq_ignore_ascii_case(name) {
            0
        } else {
            distance(name, c)
        };
        let limit = (name.chars().count().max(c.chars().count()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// `"; did you mean 'x'?"` or nothing.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    suggest(name, candidates)
        .map(|s| format!("; did you mean '{s}'?"))
        .unwrap_or_default()
}

/// Edit distance over characters, a swap of two neighbours counting as
/// one edit (optimal string alignment).
fn distance(a: &str, b: &str) -> usize {
    strsim::osa_distance(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_close_names_only() {
        let names = ["bucket", "bucketPolicy", "role"];
        assert_eq!(suggest("bukcet", names), Some("bucket"));
        assert_eq!(suggest("Role", names), Some("role"));
        assert_eq!(suggest("network", names), None);
        assert_eq!(suggest("tpye", ["type", "default"]), Some("type"));
        assert_eq!(distance("kitten", "sitting"), 3);
    }
}

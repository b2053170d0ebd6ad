//! Which program runs for a project: the language host of its runtime.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use anyhow::{bail, Context as _, Result};
use converge_engine::Program;
use converge_language::entry_point;
use converge_language::nodejs::NodeProgram;
use converge_language::process::RunOptions;
use converge_language::python::{PythonAhead, PythonProgram};
use converge_language::yaml::{ConfigValue, ParsedYaml, YamlErrors, YamlOptions};
use converge_plugin::host::{DynamicProviders, NodeDynamicProvider};
use converge_state::secrets::Crypter;

use crate::config_value::{contains_secure, secure_ciphertext, to_json};
use crate::project::Project;
use crate::stack_settings::StackSettings;

/// Fails early (before the stack is locked) for a program this version
/// cannot run: an unknown runtime, or a `main` that does not name
/// something inside the project directory (a YAML program that is not
/// there would otherwise run as an empty one and delete every resource).
pub fn check_runtime(project: &Project) -> Result<()> {
    match project.runtime() {
        Some(runtime) if runs(runtime) => {}
        Some(other) => bail!("{}", unsupported_runtime(&project.file(), other)),
        None => bail!("{}: the project has no runtime", project.dir.display()),
    }
    entry_point::resolve(&project.dir, project.main())?;
    Ok(())
}

/// The runtimes Converge runs programs of.
const RUNTIMES: [&str; 3] = ["yaml", "python", "nodejs"];

/// Whether Converge runs programs of `runtime`.
pub(crate) fn runs(runtime: &str) -> bool {
    RUNTIMES.contains(&runtime)
}

/// Why `runtime` cannot run: another of Pulumi's runtimes Converge does
/// not run, or a name that is no runtime (with the one meant, if close).
pub(crate) fn unsupported_runtime(file: &Path, runtime: &str) -> String {
    let known = "Converge runs `yaml`, `python` and `nodejs` programs";
    if ["go", "dotnet", "java", "bun"].contains(&runtime) {
        return format!(
            "{}: runtime `{runtime}` is not supported by Converge: {known}",
            file.display()
        );
    }
    let hint = match crate::unknown_keys::closest(runtime, RUNTIMES) {
        Some(meant) => format!("; did you mean `{meant}`?"),
        None => String::new(),
    };
    format!(
        "{}: unknown runtime `{runtime}`{hint} ({known})",
        file.display()
    )
}

/// The stack's configuration as programs see it: `project:key` → value,
/// the project's defaults (`Pulumi.yaml`'s `config:`) for the keys the
/// stack does not set, secure values decrypted and marked secret (as are
/// the keys the project declares secret). The stack's own values are
/// first checked against the project's declarations, as Pulumi does
/// before any operation: a value of the wrong type, a plaintext value of
/// a secret key or a missing required key fails here, before anything
/// runs.
pub fn program_config(
    project: &Project,
    stack: &str,
    settings: &StackSettings,
    crypter: &dyn Crypter,
) -> Result<BTreeMap<String, ConfigValue>> {
    let stack_config = settings.config();
    crate::config_value::check_secure_values(
        &settings.path,
        &project.name,
        &stack_config,
        crypter,
    )?;
    project
        .config
        .check(stack, &stack_config, crypter)
        .context("validating stack config")?;
    for warning in project.config.slips(&stack_config) {
        eprintln!("{warning}");
    }
    let mut out = BTreeMap::new();
    for (key, value) in project.config.apply(&stack_config) {
        let Some(key) = key.as_str() else { continue };
        let declared_secret = project.config.declared_secret(key);
        let v = match (&value, secure_ciphertext(&value)) {
            (_, Some(ciphertext)) => ConfigValue::secret(crypter.decrypt(ciphertext)?),
            (serde_norway::Value::String(s), None) if declared_secret => {
                ConfigValue::secret(s.clone())
            }
            (serde_norway::Value::String(s), None) => ConfigValue::plain(s.clone()),
            // Objects and arrays reach programs as JSON, with their secure
            // values decrypted; one secure value makes the whole key secret.
            (other, None) if contains_secure(other) || declared_secret => {
                ConfigValue::secret(to_json(other, Some(crypter))?.to_string())
            }
            (other, None) => ConfigValue::plain(to_json(other, None)?.to_string()),
        };
        out.insert(key.to_owned(), v);
    }
    Ok(out)
}

/// What of a program starts while the stack is opened: a YAML program's
/// parse ([`ProgramAhead::start`]) and a Python program's interpreter
/// ([`ProgramAhead::with_project`]).
#[derive(Default)]
pub struct ProgramAhead {
    yaml: Option<YamlAhead>,
    python: Option<PythonAhead>,
}

/// A YAML program being read and parsed on a thread of its own.
struct YamlAhead {
    dir: PathBuf,
    thread: JoinHandle<Result<ParsedYaml, YamlErrors>>,
}

impl ProgramAhead {
    /// Starts parsing the program of the project found from `cwd`, before
    /// the project file itself is loaded: a 10,000-resource program takes
    /// about as long to parse as the project file, the checkpoint and the
    /// passphrase key, which it now overlaps on the second core. Whether
    /// the runtime is yaml is not known yet; for another runtime the
    /// (small) project file is parsed for nothing and the result dropped.
    /// [`load_program`] takes the result for the same directory, and
    /// reports its errors exactly as if it had parsed the program itself.
    pub fn start(cwd: &Path) -> ProgramAhead {
        let yaml = Project::locate(cwd).and_then(|file| {
            let dir = file.parent()?.to_path_buf();
            let for_thread = dir.clone();
            let thread = std::thread::Builder::new()
                .name("program-ahead".into())
                .spawn(move || ParsedYaml::read(&for_thread))
                .ok()?;
            Some(YamlAhead { dir, thread })
        });
        ProgramAhead { yaml, python: None }
    }

    /// Once the project is loaded: a Python program's interpreter starts
    /// and imports the SDK while the stack is opened
    /// ([`PythonProgram::start_ahead`]).
    pub fn with_project(mut self, project: &Project) -> ProgramAhead {
        if project.runtime() == Some("python") {
            self.python = PythonProgram::new(&project.dir)
                .ok()
                .and_then(|p| p.start_ahead());
        }
        self
    }

    /// The parse for `dir`, if this one was started for it and finished.
    fn take_yaml(&mut self, dir: &Path) -> Option<Result<ParsedYaml, YamlErrors>> {
        let yaml = self.yaml.take()?;
        if yaml.dir != dir {
            return None;
        }
        yaml.thread.join().ok()
    }
}

/// The stack a program runs for: its name and organization.
#[derive(Debug, Clone, Copy)]
pub struct StackInfo<'a> {
    pub name: &'a str,
    /// The state service's organization, or `organization` on a
    /// self-managed backend (`pulumi.organization`, `getOrganization()`).
    pub organization: &'a str,
    /// Forward the program's debug-level log messages (`--debug`).
    pub debug: bool,
}

/// The program of `project` for `stack`, run by the host of its runtime;
/// what `ahead` started for this project is used: a YAML program's
/// parse, a Python program's interpreter.
pub fn load_program(
    project: &Project,
    stack: &StackInfo<'_>,
    config: BTreeMap<String, ConfigValue>,
    mut ahead: ProgramAhead,
) -> Result<Box<dyn Program>> {
    check_runtime(project)?;
    match project.runtime() {
        Some("python") => {
            let mut p = PythonProgram::new(&project.dir)?.with_options(run_options(
                stack.organization,
                &config,
                stack.debug,
            ));
            if let Some(python) = ahead.python.take() {
                p = p.with_ahead(python);
            }
            return Ok(Box::new(p));
        }
        Some("nodejs") => {
            let p = NodeProgram::new(&project.dir)?.with_options(run_options(
                stack.organization,
                &config,
                stack.debug,
            ));
            return Ok(Box::new(p));
        }
        _ => {}
    }
    let options = YamlOptions {
        project: project.name.clone(),
        stack: stack.name.to_owned(),
        organization: stack.organization.to_owned(),
        config,
    };
    let parsed = ahead
        .take_yaml(&project.dir)
        .unwrap_or_else(|| ParsedYaml::read(&project.dir));
    match parsed.and_then(|parsed| parsed.check(options)) {
        Ok(p) => Ok(Box::new(p)),
        Err(errors) => bail!("the program has errors:\n{errors}"),
    }
}

/// The inline program an Automation API SDK serves at `address`
/// (`--client`), run with the stack's configuration.
pub fn load_client_program(
    project: &Project,
    address: &str,
    organization: &str,
    config: &BTreeMap<String, ConfigValue>,
    debug: bool,
) -> Result<Box<dyn Program>> {
    let program = converge_language::client::ClientProgram::new(address, &project.dir)?
        .with_options(run_options(organization, config, debug));
    Ok(Box::new(program))
}

/// How the program's dynamic providers run: with the interpreter that
/// runs the program (Python: the project's virtualenv or `python3`;
/// Node.js: `node` and the SDK in the project's `node_modules`), in the
/// program's directory.
pub fn dynamic_providers(project: &Project) -> DynamicProviders {
    match project.runtime() {
        Some("python") => match PythonProgram::new(&project.dir) {
            Ok(p) => DynamicProviders {
                python: Some(p.interpreter()),
                nodejs: None,
                working_dir: Some(p.project().working_dir()),
            },
            Err(_) => DynamicProviders::default(),
        },
        Some("nodejs") => match NodeProgram::new(&project.dir) {
            Ok(p) => DynamicProviders {
                python: None,
                nodejs: p
                    .node_modules()
                    .and_then(|modules| NodeDynamicProvider::in_node_modules(p.node(), modules)),
                working_dir: Some(p.project().working_dir()),
            },
            Err(_) => DynamicProviders::default(),
        },
        _ => DynamicProviders::default(),
    }
}

/// Configuration for a language host: plaintext values, and which keys
/// are secret; `debug` forwards the program's debug-level messages.
fn run_options(
    organization: &str,
    config: &BTreeMap<String, ConfigValue>,
    debug: bool,
) -> RunOptions {
    RunOptions {
        organization: organization.to_owned(),
        config: config
            .iter()
            .map(|(k, v)| (k.clone(), v.value.clone()))
            .collect(),
        config_secret_keys: config
            .iter()
            .filter(|(_, v)| v.secret)
            .map(|(k, _)| k.clone())
            .collect(),
        verbose: debug,
    }
}

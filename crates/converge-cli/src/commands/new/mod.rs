//! `converge new TEMPLATE`: a new project from a template in Pulumi's
//! format (found as `source.rs` says: a local directory, a directory of
//! templates, a `.zip` URL, `$PULUMI_HOME/templates`, or a built-in one)
//! in an empty directory (or any, with `--force`); the runtime options it
//! lacks asked for as Pulumi's language hosts ask (`runtime_options.rs`)
//! and written into `Pulumi.yaml`; then, as Pulumi does, its stack is
//! created and selected, the template's config set on it, and its
//! dependencies installed with the runtime's own tools into the project's
//! own environment, so `converge up` runs at once.
//! With `--yes` or `--non-interactive` nothing is asked: names and values
//! come from the flags and the defaults.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use converge_backend::{Backend, StackRef};
use converge_engine::StackState;
use converge_state::secrets::Crypter;

use crate::context::Context;
use crate::passphrase::passphrase_crypter;
use crate::project::Project;
use crate::stack_settings::StackSettings;

pub(crate) mod install;
mod list;
mod runtime_options;
mod source;
mod template;

/// The stack `converge new` creates unless told otherwise, as Pulumi's.
const DEFAULT_STACK: &str = "dev";

#[derive(Debug, Args)]
pub struct NewArgs {
    /// A template: the path of a local template directory (or of a
    /// directory of templates, as Pulumi's templates repository is laid
    /// out), the URL of a .zip archive of one, the name of one in
    /// $PULUMI_HOME/templates, or a built-in one (`yaml`, `python`,
    /// `typescript`).
    #[arg(value_name = "TEMPLATE")]
    pub template: Option<String>,
    /// Download nothing: use local templates only.
    #[arg(long)]
    pub offline: bool,
    /// The project's name (default: the directory's name).
    #[arg(short, long, value_name = "NAME")]
    pub name: Option<String>,
    /// The project's description (default: the template's).
    #[arg(short, long, value_name = "TEXT")]
    pub description: Option<String>,
    /// The stack to create and select (default: dev).
    #[arg(short, long, value_name = "STACK")]
    pub stack: Option<String>,
    /// Where to create the project (default: the current directory;
    /// created if missing).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Write into a directory that is not empty, replacing files.
    #[arg(short, long)]
    pub force: bool,
    /// Ask nothing: use the flags and the defaults.
    #[arg(short, long)]
    pub yes: bool,
    /// Config values for the stack (`KEY=VALUE`, repeatable).
    #[arg(short, long = "config", value_name = "KEY=VALUE")]
    pub config: Vec<String>,
    /// Only write the project's files: create no stack and install
    /// nothing.
    #[arg(short, long)]
    pub generate_only: bool,
    /// List the templates — the built-in ones and those in
    /// $PULUMI_HOME/templates, or those in the TEMPLATE directory — and
    /// create nothing.
    #[arg(short, long)]
    pub list_templates: bool,
}

pub async fn run(ctx: &Context, args: NewArgs) -> Result<()> {
    if args.list_templates {
        let dir = args.template.as_deref().map(|t| ctx.cwd.join(t));
        return list::print(dir.as_deref());
    }
    let interactive = !args.yes && !ctx.non_interactive && std::io::stdin().is_terminal();
    let Some(template_arg) = args.template.clone() else {
        bail!(
            "which template? run `converge new TEMPLATE`: a built-in template ({}) or the path \
             of a local template directory (`converge new --list-templates` lists them)",
            template::builtin_names().join(", ")
        );
    };
    let source_options = source::SourceOptions {
        interactive,
        offline: args.offline,
    };
    let mut template = source::resolve(&template_arg, &ctx.cwd, &source_options).await?;
    let dir = match &args.dir {
        Some(d) => ctx.cwd.join(d),
        None => ctx.cwd.clone(),
    };
    check_target(&dir, args.force)?;

    let default_name = default_project_name(&dir);
    let name = match &args.name {
        Some(n) => n.clone(),
        None if interactive => ask("Project name", &default_name)?,
        None => default_name,
    };
    converge_backend::validate_project_name(&name)
        .with_context(|| format!("{name:?} cannot be a project name (pass --name)"))?;
    let description = match &args.description {
        Some(d) => d.clone(),
        None if interactive => ask("Project description", &template.description)?,
        None => template.description.clone(),
    };
    if description.contains('\n') {
        bail!("the project description must be one line");
    }
    let stack_name = match &args.stack {
        Some(s) => s.clone(),
        None if interactive => ask("Stack name", DEFAULT_STACK)?,
        None => DEFAULT_STACK.to_owned(),
    };
    let stack = StackRef::parse(&stack_name, &name)?;
    if stack.project != name {
        bail!(
            "provided project name {:?} doesn't match Pulumi.yaml (the new project is {name:?}): \
             pass --stack {} (or --name {})",
            stack.project,
            stack.stack,
            stack.project
        );
    }
    let given_config = parse_config_flags(&args.config)?;
    let runtime_options =
        complete_runtime_options(&mut template, &name, &description, interactive)?;

    // The stack must not exist yet: found out before anything is written.
    let backend = if args.generate_only {
        None
    } else {
        let url = ctx.backend_url(None)?;
        let backend: Arc<dyn Backend> = Arc::from(crate::context::open_backend(&url, &ctx.cwd)?);
        if backend.stack_exists(&stack).await? {
            bail!(
                "stack {} of project {name} already exists in {}: choose another with --stack",
                stack.stack,
                backend.url()
            );
        }
        Some(backend)
    };

    write_files(&template, &dir, &name, &description)?;
    let project = Project::require(&dir)
        .with_context(|| format!("the template {} made an invalid project", template.name))?;
    println!("Created project '{name}' in {}", dir.display());
    for (key, value) in &runtime_options {
        println!("Runtime option {key}: {value} (in Pulumi.yaml)");
    }
    if template.important {
        println!("note: this template is marked important: read its files before deploying");
    }
    let Some(backend) = backend else {
        return Ok(());
    };

    // A relative `file://` backend in the project file resolves against
    // the project.
    let backend: Arc<dyn Backend> = match project.backend_url() {
        Some(url) => Arc::from(crate::context::open_backend(url, &dir)?),
        None => backend,
    };
    StackState::new(backend.clone(), stack.clone())
        .create()
        .await?;
    ctx.home
        .select_stack(&project.name, &project.dir, Some(&stack.stack))?;
    println!("Created stack '{}'", stack.stack);
    set_config(ctx, &project, &stack, &template, given_config, interactive)?;

    install::install_dependencies(&project)?;
    println!();
    println!("Your new project is ready to go!");
    let cd = if args.dir.is_some() {
        format!("`cd {}`, then ", dir.display())
    } else {
        String::new()
    };
    println!("To perform an initial deployment, run {cd}`converge up`");
    Ok(())
}

/// The template's project file, rendered for the new project, with the
/// runtime options it lacks asked for (or defaulted) and written in; an
/// option Converge cannot honour is refused before anything is written.
fn complete_runtime_options(
    template: &mut template::Template,
    name: &str,
    description: &str,
    interactive: bool,
) -> Result<Vec<(String, String)>> {
    let Some(file) = template
        .files
        .iter_mut()
        .find(|f| f.path == Path::new("Pulumi.yaml") || f.path == Path::new("Pulumi.yml"))
    else {
        return Ok(Vec::new());
    };
    let rendered = template::render_file(file, name, description);
    let text = String::from_utf8(rendered)
        .with_context(|| format!("template {}: Pulumi.yaml is not UTF-8", template.name))?;
    let completed = runtime_options::complete(
        &text,
        &format!("template {}: Pulumi.yaml", template.name),
        interactive,
    )?;
    if let Some(text) = completed.text {
        file.content = text.into_bytes();
    }
    Ok(completed.added)
}

/// Refuses a directory holding anything (but `.git`) without `--force`.
fn check_target(dir: &Path, force: bool) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!("{} exists and is not a directory", dir.display());
    }
    if force || !dir.exists() {
        return Ok(());
    }
    let occupied = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(Result::ok)
        .any(|e| e.file_name() != ".git");
    if occupied {
        bail!(
            "{} is not empty; run in an empty directory, pass an empty or new one with --dir, \
             or pass --force to write into it (replacing files of the same names)",
            dir.display()
        );
    }
    Ok(())
}

/// The directory's name as a valid project name.
fn default_project_name(dir: &Path) -> String {
    let base = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if converge_backend::validate_project_name(&cleaned).is_ok() {
        cleaned
    } else {
        "project".to_owned()
    }
}

fn ask(question: &str, default: &str) -> Result<String> {
    let line = crate::prompt::ask(&format!("{question} ({default}): "))?;
    let answer = line.trim();
    Ok(if answer.is_empty() {
        default.to_owned()
    } else {
        answer.to_owned()
    })
}

fn parse_config_flags(flags: &[String]) -> Result<Vec<(String, String)>> {
    flags
        .iter()
        .map(|f| {
            let (k, v) = f
                .split_once('=')
                .with_context(|| format!("--config {f:?}: expected KEY=VALUE"))?;
            Ok((k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// Writes the template's files into `dir`, rendered for the project; a
/// file that cannot be written stops everything.
fn write_files(
    template: &template::Template,
    dir: &Path,
    name: &str,
    description: &str,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for file in &template.files {
        let target = dir.join(&file.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let content = template::render_file(file, name, description);
        std::fs::write(&target, content)
            .with_context(|| format!("cannot write {}", target.display()))?;
        #[cfg(unix)]
        if let Some(mode) = file.mode {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))
                .with_context(|| format!("cannot set the permissions of {}", target.display()))?;
        }
    }
    Ok(())
}

/// The stack's config: `--config` values, then the template's keys (a
/// value asked for at a terminal, else its default; a key with neither is
/// left unset and named). Keys without a namespace are the project's.
/// Secrets are encrypted with the stack's passphrase (set up now, as
/// `stack init` does when a passphrase is at hand).
fn set_config(
    ctx: &Context,
    project: &Project,
    stack: &StackRef,
    template: &template::Template,
    given: Vec<(String, String)>,
    interactive: bool,
) -> Result<()> {
    let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
    let has_passphrase = crate::passphrase::in_environment()
        || crate::passphrase::can_prompt(ctx.passphrase_options());
    let any_secret = template.config.iter().any(|c| c.secret);
    let crypter: Option<Box<dyn Crypter>> = if has_passphrase || any_secret {
        Some(Box::new(passphrase_crypter(
            &mut settings,
            None,
            ctx.passphrase_options(),
            true,
        )?))
    } else {
        None
    };
    let qualify = |key: &str| {
        if key.contains(':') {
            key.to_owned()
        } else {
            format!("{}:{key}", project.name)
        }
    };
    let mut values: Vec<(String, String, bool)> = given
        .into_iter()
        .map(|(k, v)| {
            let secret = template
                .config
                .iter()
                .any(|c| c.secret && qualify(&c.key) == qualify(&k));
            (qualify(&k), v, secret)
        })
        .collect();
    let mut unset = Vec::new();
    for c in &template.config {
        let key = qualify(&c.key);
        if values.iter().any(|(k, _, _)| *k == key) {
            continue;
        }
        let value = if interactive {
            let question = c.description.clone().unwrap_or_else(|| key.clone());
            Some(ask(
                &format!("{question} [{key}]"),
                c.default.as_deref().unwrap_or(""),
            )?)
            .filter(|v| !v.is_empty())
        } else {
            c.default.clone()
        };
        match value {
            Some(v) => values.push((key, v, c.secret)),
            None => unset.push((key, c.secret)),
        }
    }
    if !values.is_empty() || crypter.is_some() {
        let mut config = settings.config();
        for (key, value, secret) in values {
            let v = if secret {
                let crypter = crypter
                    .as_ref()
                    .context("a secret config value needs the stack's passphrase")?;
                crate::config_value::secure(crypter.encrypt(&value)?)
            } else {
                serde_norway::Value::String(value)
            };
            config.insert(key.into(), v);
        }
        settings.set_config(config);
        settings.save()?;
    }
    for (key, secret) in unset {
        let flag = if secret { "--secret " } else { "" };
        println!(
            "note: config {key} has no default; set it with `converge config set {flag}{key} VALUE`"
        );
    }
    Ok(())
}

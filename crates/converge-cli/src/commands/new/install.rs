//! A new project's dependencies, installed with its runtime's own tools,
//! as Pulumi does after `pulumi new`: Python — a virtualenv
//! (`runtime.options.virtualenv`, made with `python3 -m venv`; the
//! interpreter is `PULUMI_PYTHON_CMD` if set) and `pip install -r
//! requirements.txt` in it, never in the shared interpreter; Node.js — `npm install` (or the
//! `packagemanager` option's `yarn`/`pnpm`); YAML needs nothing.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context as _, Result};
use converge_language::process::ProjectSettings;

use crate::project::Project;

/// Installs what `project` needs to run.
pub fn install_dependencies(project: &Project) -> Result<()> {
    let dir = project.dir.as_path();
    let settings = ProjectSettings::load(dir)?;
    match project.runtime() {
        Some("python") => python(dir, settings.runtime_option("virtualenv")),
        Some("nodejs") => nodejs(dir, settings.runtime_option("packagemanager")),
        _ => Ok(()),
    }
}

/// A Python project's (or policy pack's) virtualenv `virtualenv`
/// (relative to `dir`), with `requirements.txt` installed in it.
pub(crate) fn python(dir: &Path, virtualenv: Option<&str>) -> Result<()> {
    let requirements = dir.join("requirements.txt");
    let python3 = std::env::var("PULUMI_PYTHON_CMD")
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| "python3".to_owned());
    let interpreter = match virtualenv {
        Some(venv) => {
            let venv_dir = dir.join(venv);
            println!("Creating virtual environment in {}...", venv_dir.display());
            run(
                Command::new(&python3)
                    .args(["-m", "venv"])
                    .arg(&venv_dir)
                    .current_dir(dir),
                &format!("{python3} -m venv {venv}"),
            )?;
            venv_dir.join("bin").join("python")
        }
        // `converge new` always sets one; a project without is refused
        // rather than installed into the interpreter everyone shares.
        None => bail!(
            "the project names no virtualenv (runtime.options.virtualenv in Pulumi.yaml): \
             Converge installs a project's requirements into its own virtualenv only"
        ),
    };
    if !requirements.is_file() {
        return Ok(());
    }
    println!("Installing dependencies from requirements.txt...");
    run(
        Command::new(&interpreter)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "-r",
                "requirements.txt",
            ])
            .current_dir(dir),
        "pip install -r requirements.txt",
    )
}

/// A Node.js project's (or policy pack's) `package.json` installed with
/// `manager` (default npm).
pub(crate) fn nodejs(dir: &Path, manager: Option<&str>) -> Result<()> {
    if !dir.join("package.json").is_file() {
        return Ok(());
    }
    let manager = manager.unwrap_or("npm");
    let args: &[&str] = match manager {
        "npm" => &["install", "--no-audit", "--no-fund"],
        "yarn" | "pnpm" => &["install"],
        other => bail!(
            "runtime.options.packagemanager {other:?} is not one Converge runs: use npm, yarn or pnpm"
        ),
    };
    println!("Installing dependencies with {manager}...");
    run(
        Command::new(manager).args(args).current_dir(dir),
        &format!("{manager} install"),
    )
}

/// Runs a tool with its output shown; a failure says how to retry.
fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("cannot run `{what}`: is the tool installed and on PATH?"))?;
    if !status.success() {
        bail!(
            "`{what}` failed ({status}); fix the problem and run it again in the project directory"
        );
    }
    Ok(())
}

//! `converge install`, as Pulumi's `pulumi install` and the Automation
//! API's `Workspace.install()` run it: a Python project's virtualenv made
//! in the project and its requirements installed there; a Node.js
//! project's `npm install`; language version tools refused by name.

use std::path::Path;
use std::process::Command;

use crate::common;

use common::Scratch;

/// The published Python SDK's `LocalWorkspace.install()`, with `converge`
/// as `pulumi` on PATH: the project's own virtualenv appears.
#[test]
fn the_automation_apis_install_makes_the_projects_virtualenv() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = Scratch::new(
        "name: installproj\nruntime:\n  name: python\n  options:\n    virtualenv: venv\n",
    );
    // Nothing to download: a requirements file of comments only.
    std::fs::write(scratch.project.join("requirements.txt"), "# nothing yet\n").unwrap();
    let driver = scratch.dir.path().join("install.py");
    std::fs::write(
        &driver,
        r#"
import os, sys
from pulumi import automation as auto

project = sys.argv[1]
ws = auto.LocalWorkspace(work_dir=project)
ws.install(no_plugins=True)
assert os.path.exists(os.path.join(project, "venv", "bin", "python")), os.listdir(project)
try:
    ws.install(use_language_version_tools=True)
    raise AssertionError("language version tools were accepted")
except auto.CommandError as e:
    assert "--use-language-version-tools" in str(e), str(e)
print("install: ok")
"#,
    )
    .unwrap();
    let bin = crate::automation_python::pulumi_on_path(scratch.dir.path());
    let out = Command::new(venv.join("bin").join("python"))
        .arg(&driver)
        .arg(&scratch.project)
        .current_dir(scratch.dir.path())
        .env("PATH", common::path_with(&bin))
        .env("CONVERGE_HOME", &scratch.home)
        .env("PULUMI_PYTHON_CMD", venv.join("bin").join("python"))
        .env_remove("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("install: ok"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Node.js project: `npm install` in the project (a package.json
/// without dependencies needs no registry); `--no-dependencies` installs
/// nothing.
#[test]
fn a_nodejs_projects_dependencies_are_installed_with_npm() {
    if common::nodejs::node_modules().is_none() {
        return;
    }
    let scratch = Scratch::new("name: nodeproj\nruntime: nodejs\n");
    std::fs::write(
        scratch.project.join("package.json"),
        r#"{"name": "nodeproj", "version": "1.0.0", "dependencies": {}}"#,
    )
    .unwrap();
    let lock = scratch.project.join("package-lock.json");
    let run = |args: &[&str]| {
        let mut cmd = scratch.command("pw");
        cmd.args(args).output().unwrap()
    };
    let out = run(&["install", "--no-dependencies"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!lock.exists(), "--no-dependencies ran npm");
    let out = run(&["install"]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(lock.exists(), "npm install did not run in the project");
    assert!(Path::new(&scratch.project).join("package.json").exists());
}

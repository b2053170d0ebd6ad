//! The user guide's example programs (`docs/examples/`, included in the
//! guide's pages) deploy as the guide says: each is copied into a scratch
//! project and taken through `stack init`, `up`, a `preview` that expects
//! no changes, `stack output` and `destroy` with the real binary. YAML
//! programs always run; Python ones through the test venv
//! (CONVERGE_TEST_PYTHON), linked in as the project's `venv`.

use std::path::{Path, PathBuf};

use crate::common::{python, Scratch};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples")
}

/// The example directories whose `Pulumi.yaml` names `runtime`.
fn examples_of(runtime: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|dir| {
            let project = std::fs::read_to_string(dir.join("Pulumi.yaml")).unwrap_or_default();
            project.contains(&format!("runtime: {runtime}\n"))
                || project.contains(&format!("  name: {runtime}\n"))
        })
        .collect();
    found.sort();
    found
}

/// A scratch world whose project is a copy of `example`.
fn world_of(example: &Path) -> Scratch {
    let scratch = Scratch::new("");
    for entry in std::fs::read_dir(example).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, scratch.project.join(path.file_name().unwrap())).unwrap();
        }
    }
    scratch
}

fn run(scratch: &Scratch, args: &[&str]) -> String {
    crate::common::stdout_of(scratch.command("pw"), args)
}

/// The guide's life of a stack: create, deploy, nothing left to change,
/// outputs, tear down.
fn deploy_and_destroy(example: &Path, scratch: &Scratch) {
    let name = example.file_name().unwrap().to_string_lossy().into_owned();
    run(scratch, &["stack", "init", "dev"]);
    let up = run(scratch, &["up", "--yes"]);
    assert!(up.contains("created"), "{name}: {up}");
    run(scratch, &["preview", "--expect-no-changes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(scratch, &["stack", "output", "--json"])).unwrap();
    assert!(
        outputs.get("petName").and_then(|v| v.as_str()).is_some(),
        "{name}: {outputs}"
    );
    let destroy = run(scratch, &["destroy", "--yes"]);
    assert!(destroy.contains("deleted"), "{name}: {destroy}");
}

#[test]
fn the_guides_yaml_examples_deploy() {
    let examples = examples_of("yaml");
    assert!(!examples.is_empty(), "no YAML example in docs/examples");
    for example in examples {
        let scratch = world_of(&example);
        deploy_and_destroy(&example, &scratch);
    }
}

#[test]
fn the_guides_python_examples_deploy() {
    let examples = examples_of("python");
    assert!(!examples.is_empty(), "no Python example in docs/examples");
    let Some(venv) = python::venv() else { return };
    for example in examples {
        let scratch = world_of(&example);
        std::os::unix::fs::symlink(&venv, scratch.project.join("venv")).unwrap();
        deploy_and_destroy(&example, &scratch);
    }
}

//! The documentation's example programs deploy as the documents say: the
//! guide's example projects (`docs/examples/`, included in its pages) and
//! every whole YAML program written out in README.md or a guide page (a
//! `yaml` code block with `runtime: yaml`) are each put in a scratch
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

/// The whole YAML programs written out in README.md and the guide's pages:
/// (where, text).
fn inline_yaml_programs() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut documents = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    documents.extend(pages);
    let mut programs = Vec::new();
    for doc in documents {
        let text = std::fs::read_to_string(&doc).unwrap();
        let mut block: Option<(usize, String)> = None;
        for (i, line) in text.lines().enumerate() {
            match block.as_mut() {
                None if line.trim_start().starts_with("```yaml") => {
                    block = Some((i + 1, String::new()));
                }
                Some(_) if line.trim_start().starts_with("```") => {
                    let (start, body) = block.take().unwrap();
                    if body.lines().any(|l| l == "runtime: yaml") {
                        let name = doc.file_name().unwrap().to_string_lossy();
                        programs.push((format!("{name}:{start}"), body));
                    }
                }
                Some((_, body)) => {
                    body.push_str(line);
                    body.push('\n');
                }
                None => {}
            }
        }
    }
    programs
}

fn run(scratch: &Scratch, args: &[&str]) -> String {
    crate::common::stdout_of(scratch.command("pw"), args)
}

/// The guide's life of a stack: create, deploy, nothing left to change,
/// outputs, tear down.
fn deploy_and_destroy(name: &str, scratch: &Scratch) {
    run(scratch, &["stack", "init", "dev"]);
    let up = run(scratch, &["up", "--yes"]);
    assert!(up.contains("created"), "{name}: {up}");
    run(scratch, &["preview", "--expect-no-changes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(scratch, &["stack", "output", "--json"])).unwrap();
    assert!(
        outputs.as_object().is_some_and(|o| !o.is_empty()),
        "{name}: no outputs: {outputs}"
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
        deploy_and_destroy(&example.display().to_string(), &scratch);
    }
}

#[test]
fn the_yaml_programs_written_out_in_the_documents_deploy() {
    let programs = inline_yaml_programs();
    // README.md's tour and the YAML page each write one out.
    assert!(programs.len() >= 2, "found only {programs:?}");
    for (place, program) in programs {
        let scratch = Scratch::new(&program);
        deploy_and_destroy(&place, &scratch);
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
        deploy_and_destroy(&example.display().to_string(), &scratch);
    }
}

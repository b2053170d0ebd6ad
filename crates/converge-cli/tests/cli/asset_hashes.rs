//! The hashes of file assets and archives, where the user meets them: a
//! file whose contents changed shows as a change on the next preview, and
//! a file that is not there fails the registration, naming it, with the
//! state unchanged. Python (the published SDK) and YAML programs.

use crate::common;

use common::python::{venv, PythonWorld};
use common::{failure_of, stdout_of, Scratch};

const PYTHON: &str = r#"
import pulumi
cmd = pulumi.CustomResource("command:local:Command", "site", {
    "create": "true",
    "triggers": [
        pulumi.FileArchive("./site"),
        pulumi.FileAsset("index.html"),
        pulumi.AssetArchive({"extra.txt": pulumi.FileAsset("index.html")}),
    ],
    "stdout": None,
})
"#;

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn python_file_assets_and_archives_are_hashed_and_their_changes_shown() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, PYTHON);
    let dir = &w.scratch.project;
    std::fs::create_dir_all(dir.join("site/css")).unwrap();
    std::fs::write(dir.join("site/css/main.css"), "body {}").unwrap();
    std::fs::write(dir.join("site/app.js"), "let a = 1;").unwrap();
    std::fs::write(dir.join("index.html"), "<h1>v1</h1>").unwrap();

    w.run(&["up", "--yes"]);
    let state = w.state();
    assert!(
        state.contains(&sha256_hex(b"<h1>v1</h1>")),
        "the file asset's hash is in the state:\n{state}"
    );
    assert!(!state.contains(r#""hash": """#), "no empty hash:\n{state}");
    let same = w.run(&["preview", "--expect-no-changes"]);
    assert!(same.contains("unchanged"), "{same}");

    // A file inside the directory archive changes: the trigger changes.
    std::fs::write(dir.join("site/css/main.css"), "body { margin: 0 }").unwrap();
    let changed = w.run(&["preview"]);
    assert!(changed.contains("1 to replace"), "{changed}");
    w.run(&["up", "--yes"]);
    assert!(w.run(&["preview"]).contains("unchanged"));

    // The file goes away: the registration fails naming it, and the state
    // is what it was.
    std::fs::remove_file(dir.join("index.html")).unwrap();
    let before = w.state();
    let failed = w.fails(&["up", "--yes"]);
    assert!(failed.contains("'index.html'"), "{failed}");
    assert!(failed.contains("No such file"), "{failed}");
    assert_eq!(w.state(), before, "a failed registration changed the state");
}

const YAML: &str = "name: assets
runtime: yaml
resources:
  site:
    type: command:local:Command
    properties:
      create: 'true'
      triggers:
        - fn::fileArchive: ./site
        - fn::fileAsset: ./index.html
        - fn::assetArchive:
            nested:
              fn::fileArchive: ./site
";

#[test]
fn yaml_file_archives_are_hashed_and_a_missing_file_is_an_error_at_its_place() {
    let scratch = Scratch::new(YAML);
    let dir = &scratch.project;
    std::fs::create_dir_all(dir.join("site")).unwrap();
    std::fs::write(dir.join("site/a.txt"), "one").unwrap();
    std::fs::write(dir.join("index.html"), "<p>").unwrap();
    let run = |args: &[&str]| stdout_of(scratch.command("pw"), args);
    run(&["stack", "init", "dev"]);
    run(&["up", "--yes"]);
    let outputs = run(&["stack", "export"]);
    assert!(!outputs.contains(r#""hash": """#), "{outputs}");
    assert!(run(&["preview"]).contains("unchanged"));

    std::fs::write(dir.join("site/a.txt"), "two").unwrap();
    let changed = run(&["preview"]);
    assert!(changed.contains("1 to replace"), "{changed}");

    std::fs::remove_dir_all(dir.join("site")).unwrap();
    let failed = failure_of(scratch.command("pw"), &["preview"]);
    assert!(
        failed.contains("Pulumi.yaml:9:11") && failed.contains("'./site'"),
        "{failed}"
    );
}

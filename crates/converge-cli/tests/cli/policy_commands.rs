//! `converge policy new` and `converge policy analyze` through the
//! `converge` binary, with the published SDKs: packs made from the
//! built-in templates judge a YAML program; packs judge a stack's state
//! without its program.

use std::path::{Path, PathBuf};

use crate::common;
use crate::policy_packs::yaml_world;

use common::Scratch;

const ONE_STRING: &str = "  word:
    type: random:index/randomString:RandomString
    properties:
      length: 10
";

/// `converge policy new TEMPLATE --dir DIR --generate-only` in `scratch`.
fn new_pack(scratch: &Scratch, template: &str, name: &str) -> PathBuf {
    let dir = scratch.dir.path().join(name);
    let out = common::stdout_of(
        scratch.command("pw"),
        &[
            "policy",
            "new",
            template,
            "--dir",
            &dir.display().to_string(),
            "--generate-only",
        ],
    );
    assert!(
        out.contains(&format!("Created policy pack {name}")),
        "{out}"
    );
    dir
}

fn config(scratch: &Scratch, name: &str, text: &str) -> String {
    let path = scratch.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A template's pack, its dependencies linked in, judges a program: its
/// resource policy fires on the type the config forbids, its stack
/// policy warns past the configured limit, and alone it passes.
fn template_pack_fires(scratch: &Scratch, pack: &Path, label: &str) {
    let pack = pack.display().to_string();
    let forbid = config(
        scratch,
        "forbid.json",
        r#"{"forbidden-types": {"types": ["random:index/randomString:RandomString"]}}"#,
    );
    let e = common::failure_of(
        scratch.command("pw"),
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &forbid,
        ],
    );
    assert!(e.contains(&format!("{label}: failed")), "{e}");
    assert!(
        e.contains("[mandatory]  forbidden-types  (random:index/randomString:RandomString word)"),
        "{e}"
    );
    assert!(
        e.contains("resources of type random:index/randomString:RandomString are not allowed"),
        "{e}"
    );
    let small = config(scratch, "small.json", r#"{"max-resources": {"max": 1}}"#);
    let out = common::stdout_of(
        scratch.command("pw"),
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &small,
        ],
    );
    assert!(
        out.contains(&format!("{label}: passed with warnings")),
        "{out}"
    );
    assert!(out.contains("[advisory]  max-resources"), "{out}");
    // AnalyzeStack sees every resource of the stack: the stack itself,
    // the default provider and the string.
    assert!(
        out.contains("the stack has 3 resources; the limit is 1"),
        "{out}"
    );
    let out = common::stdout_of(scratch.command("pw"), &["preview", "--policy-pack", &pack]);
    assert!(out.contains(&format!("{label}: passed")), "{out}");
}

#[test]
fn the_python_template_makes_a_pack_that_fires() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = yaml_world(ONE_STRING);
    let pack = new_pack(&scratch, "python", "guard-py");
    let manifest = std::fs::read_to_string(pack.join("PulumiPolicy.yaml")).unwrap();
    assert!(manifest.contains("virtualenv: venv"), "{manifest}");
    let requirements = std::fs::read_to_string(pack.join("requirements.txt")).unwrap();
    assert!(requirements.contains("pulumi-policy"), "{requirements}");
    // The test virtualenv holds the published pulumi-policy.
    std::os::unix::fs::symlink(&venv, pack.join("venv")).unwrap();
    template_pack_fires(&scratch, &pack, "guard-py@v0.1.0");
}

#[test]
fn the_typescript_template_makes_a_pack_that_fires() {
    let Some(modules) = common::nodejs::node_modules() else {
        return;
    };
    let scratch = yaml_world(ONE_STRING);
    let pack = new_pack(&scratch, "typescript", "guard-ts");
    let package = std::fs::read_to_string(pack.join("package.json")).unwrap();
    assert!(package.contains("\"@pulumi/policy\""), "{package}");
    assert!(pack.join("tsconfig.json").is_file() && pack.join("index.ts").is_file());
    std::os::unix::fs::symlink(&modules, pack.join("node_modules")).unwrap();
    template_pack_fires(&scratch, &pack, "guard-ts@v0.1.0");
}

#[test]
fn policy_new_refuses_unknown_templates_and_existing_files() {
    let scratch = yaml_world(ONE_STRING);
    let e = common::failure_of(scratch.command("pw"), &["policy", "new", "aws-python"]);
    assert!(
        e.contains("aws-python") && e.contains("python, typescript"),
        "{e}"
    );
    let e = common::failure_of(scratch.command("pw"), &["policy", "new"]);
    assert!(e.contains("name a template"), "{e}");
    let pack = new_pack(&scratch, "python", "twice");
    std::fs::write(pack.join("__main__.py"), "# mine\n").unwrap();
    let dir = pack.display().to_string();
    let e = common::failure_of(
        scratch.command("pw"),
        &["policy", "new", "python", "--dir", &dir, "-g"],
    );
    assert!(e.contains("already holds") && e.contains("--force"), "{e}");
    assert_eq!(
        std::fs::read_to_string(pack.join("__main__.py")).unwrap(),
        "# mine\n",
        "an existing file was overwritten"
    );
    common::stdout_of(
        scratch.command("pw"),
        &["policy", "new", "python", "--dir", &dir, "-g", "--force"],
    );
    assert!(std::fs::read_to_string(pack.join("__main__.py"))
        .unwrap()
        .contains("PolicyPack("));
}

/// Judges `ok` (advisory: no digits) and `short` (mandatory: too short)
/// and, with `max-strings` set to 1, the stack.
fn judged(out: &str) {
    assert!(out.contains("strings@v1.2.0: failed"), "{out}");
    assert!(
        out.contains(
            "[mandatory, high severity]  min-length  (random:index/randomString:RandomString short)"
        ),
        "{out}"
    );
    assert!(out.contains("length 4 is below 8"), "{out}");
    assert!(
        out.contains("[advisory]  prefer-numeric  (random:index/randomString:RandomString ok)"),
        "{out}"
    );
    assert!(out.contains("[mandatory]  max-strings"), "{out}");
    assert!(out.contains("2 strings, at most 1"), "{out}");
}

#[test]
fn policy_analyze_judges_a_stacks_state_or_an_export_without_the_program() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = yaml_world(crate::policy_packs::OK_AND_SHORT);
    // Deployed without packs: the state holds what a pack forbids.
    common::stdout_of(scratch.command("pw"), &["up", "--yes"]);
    let before = crate::policy_packs::state_of(&scratch, "yamlproj").unwrap();
    // The program now declares nothing: what is judged is the state.
    std::fs::write(
        scratch.project.join("Pulumi.yaml"),
        "name: yamlproj\nruntime: yaml\n",
    )
    .unwrap();
    let pack = crate::policy_packs::python_pack(scratch.dir.path(), &venv)
        .display()
        .to_string();
    let max_one = config(&scratch, "max-one.json", r#"{"max-strings": {"max": 1}}"#);
    let flags = ["--policy-pack", &pack, "--policy-pack-config", &max_one];
    // From the stack.
    let e = common::failure_of(
        scratch.command("pw"),
        &[&["policy", "analyze", "--stack", "dev"][..], &flags].concat(),
    );
    judged(&e);
    assert!(e.contains("mandatory policy violation"), "{e}");
    assert_eq!(
        crate::policy_packs::state_of(&scratch, "yamlproj").unwrap(),
        before,
        "analyze changed the state"
    );
    // From an export, with the program's directory out of the way.
    let export = scratch.dir.path().join("export.json");
    common::stdout_of(
        scratch.command("pw"),
        &["stack", "export", "--file", &export.display().to_string()],
    );
    let elsewhere = scratch.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut cmd = scratch.command("pw");
    cmd.current_dir(&elsewhere);
    let e = common::failure_of(
        cmd,
        &[
            &["policy", "analyze", "--file", &export.display().to_string()][..],
            &flags,
        ]
        .concat(),
    );
    judged(&e);
    // JSON: each pack's result and violations.
    let mut cmd = scratch.command("pw");
    cmd.current_dir(&elsewhere);
    let out = cmd
        .args(["policy", "analyze", "--json", "--file"])
        .arg(&export)
        .args(flags)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pack0 = &json["policyPacks"][0];
    assert_eq!(pack0["name"], "strings");
    assert_eq!(pack0["version"], "1.2.0");
    assert_eq!(pack0["result"], "failed");
    let violations = pack0["violations"].as_array().unwrap();
    let min = violations
        .iter()
        .find(|v| v["policy"] == "min-length")
        .unwrap();
    assert_eq!(min["enforcementLevel"], "mandatory");
    assert!(min["urn"].as_str().unwrap().ends_with("::short"), "{min}");
    let stack = violations
        .iter()
        .find(|v| v["policy"] == "max-strings")
        .unwrap();
    // A stack policy's violation that names no resource is the root
    // stack's, as Pulumi reports it.
    assert!(
        stack["urn"]
            .as_str()
            .unwrap()
            .contains("::pulumi:pulumi:Stack::"),
        "{stack}"
    );
    // Within the limits and with no mandatory policy broken, it passes.
    let lenient = config(
        &scratch,
        "lenient.json",
        r#"{"min-length": {"minLength": 1}, "max-strings": {"max": 5}}"#,
    );
    let out = common::stdout_of(
        scratch.command("pw"),
        &[
            "policy",
            "analyze",
            "--file",
            &export.display().to_string(),
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &lenient,
        ],
    );
    assert!(
        out.contains("strings@v1.2.0: passed with warnings"),
        "{out}"
    );
    // A missing pack is refused before the state is read.
    let e = common::failure_of(
        scratch.command("pw"),
        &["policy", "analyze", "--policy-pack", "./no-such-pack"],
    );
    assert!(e.contains("no such directory"), "{e}");
}

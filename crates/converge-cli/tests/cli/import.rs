//! `converge import` through the binary: single imports against a
//! built-in provider (random, whose import ID is the value) and a real
//! plugin process (convergetest, whose objects live in a JSON cloud file),
//! the bulk `--file`, `--out` in YAML (then a preview shows no changes)
//! and Python, `--protect=false`, `--preview-only`, a missing ID. After
//! each, the next command verifies the stack's integrity (every command
//! that locks a stack does).

use crate::common;

use serde_json::Value;

const RANDOM_STRING: &str = "random:index/randomString:RandomString";
const THING: &str = "convergetest:index:Thing";

struct World {
    scratch: common::Scratch,
    bin: std::path::PathBuf,
}

impl World {
    fn new(pulumi_yaml: &str) -> World {
        let scratch = common::Scratch::new(pulumi_yaml);
        let bin = common::convergetest_bin_dir(scratch.dir.path());
        let w = World { scratch, bin };
        w.run(&["stack", "init", "dev"]);
        w
    }

    fn yaml() -> World {
        World::new("name: imp\nruntime: yaml\n")
    }

    /// A Python project on the test virtualenv (with pulumi_random), or
    /// `None` when there is none.
    fn python() -> Option<World> {
        let venv = common::python::venv()?;
        Some(World::new(&format!(
            "name: pyimp\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
            venv.display()
        )))
    }

    fn cloud_file(&self) -> std::path::PathBuf {
        self.scratch.dir.path().join("cloud.json")
    }

    /// An object made outside Converge.
    fn thing_outside(&self, id: &str, value: &str) {
        let cloud = serde_json::json!({
            "next": 100,
            "objects": {id: {"urn": "made-by-hand",
                             "properties": {"value": value, "size": "small"}}},
            "log": [],
        });
        std::fs::write(self.cloud_file(), cloud.to_string()).unwrap();
    }

    fn cloud_log(&self) -> Vec<String> {
        let cloud: Value =
            serde_json::from_str(&std::fs::read_to_string(self.cloud_file()).unwrap()).unwrap();
        cloud["log"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    fn command(&self) -> std::process::Command {
        self.scratch.with_test_plugin(&self.bin)
    }

    fn converge(&self, args: &[&str]) -> std::process::Output {
        self.command().args(args).output().unwrap()
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.command(), args)
    }

    fn fails(&self, args: &[&str]) -> String {
        common::failure_of(self.command(), args)
    }

    /// The standard error of a command that must fail.
    fn fails_stderr(&self, args: &[&str]) -> String {
        let out = self.converge(args);
        assert!(!out.status.success(), "converge {args:?} succeeded");
        String::from_utf8(out.stderr).unwrap()
    }

    /// The stack's resources (`stack export`).
    fn resources(&self) -> Vec<Value> {
        let export: Value = serde_json::from_str(&self.run(&["stack", "export"])).unwrap();
        export["deployment"]["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn resource(&self, name: &str) -> Option<Value> {
        self.resources()
            .into_iter()
            .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
    }

    /// Adds `--out`'s YAML to the project's program.
    fn append_program(&self, text: &str) {
        let path = self.scratch.project.join("Pulumi.yaml");
        let mut program = std::fs::read_to_string(&path).unwrap();
        program.push_str(text);
        std::fs::write(path, program).unwrap();
    }
}

#[test]
fn a_builtin_random_string_is_imported_and_its_yaml_previews_no_changes() {
    let w = World::yaml();
    let out = w.scratch.dir.path().join("out.yaml");
    let shown = w.run(&[
        "import",
        RANDOM_STRING,
        "token",
        "s3cretValue",
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(shown.contains("import"), "{shown}");
    let token = w.resource("token").expect("imported");
    assert_eq!(token["id"], "s3cretValue");
    assert_eq!(token["importID"], "s3cretValue");
    assert_eq!(token["protect"], true, "protected by default");
    assert_eq!(token["outputs"]["result"], "s3cretValue");
    assert_eq!(token["inputs"]["length"], 11);
    assert!(token["parent"]
        .as_str()
        .unwrap()
        .contains("pulumi:pulumi:Stack"));

    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(yaml.starts_with("resources:\n  token:\n"), "{yaml}");
    assert!(yaml.contains(&format!("type: {RANDOM_STRING}")), "{yaml}");
    assert!(
        yaml.contains("length: 11") && yaml.contains("protect: true"),
        "{yaml}"
    );
    assert!(!yaml.contains("s3cretValue"), "no ID or outputs: {yaml}");
    w.append_program(&yaml);
    let preview = w.run(&["preview", "--expect-no-changes"]);
    assert!(!preview.contains("import"), "{preview}");
    // And an update changes nothing either.
    w.run(&["up", "--yes", "--expect-no-changes"]);
}

#[test]
fn a_plugin_object_is_imported_unprotected_and_its_yaml_previews_no_changes() {
    let w = World::yaml();
    w.thing_outside("thing-7", "hello");
    let out = w.scratch.dir.path().join("out.yaml");
    w.run(&[
        "import",
        THING,
        "adopted",
        "thing-7",
        "--protect=false",
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    let adopted = w.resource("adopted").expect("imported");
    assert_eq!(adopted["id"], "thing-7");
    assert!(
        adopted.get("protect").is_none_or(|p| p == false),
        "{adopted}"
    );
    assert_eq!(adopted["inputs"]["value"], "hello");
    let log = w.cloud_log();
    assert!(
        log.iter()
            .all(|l| !l.starts_with("create") && !l.starts_with("update")),
        "{log:?}"
    );
    let yaml = std::fs::read_to_string(&out).unwrap();
    assert!(
        yaml.contains("value: hello") && !yaml.contains("protect"),
        "{yaml}"
    );
    w.append_program(&yaml);
    w.run(&["preview", "--expect-no-changes"]);
    // Unprotected: the stack can be destroyed, and the object goes.
    w.run(&["destroy", "--yes"]);
    assert!(
        w.cloud_log().iter().any(|l| l == "delete thing-7"),
        "{:?}",
        w.cloud_log()
    );
}

#[test]
fn a_bulk_file_imports_each_resource_under_its_parent() {
    let w = World::yaml();
    w.thing_outside("thing-3", "from-file");
    w.run(&["import", RANDOM_STRING, "first", "abc", "--yes"]);
    let first = w.resource("first").unwrap();
    let file = serde_json::json!({
        "nameTable": {"existing": first["urn"]},
        "resources": [
            {"type": THING, "name": "kid", "id": "thing-3", "parent": "group",
             "properties": ["value"]},
            {"type": "my:app:Group", "name": "group", "component": true},
            {"type": RANDOM_STRING, "name": "code", "logicalName": "second", "id": "xyz12",
             "parent": "existing"},
        ],
    });
    let path = w.scratch.dir.path().join("import.json");
    std::fs::write(&path, file.to_string()).unwrap();
    w.run(&["import", "--file", path.to_str().unwrap(), "--yes"]);

    let group = w.resource("group").unwrap();
    assert_eq!(group["type"], "my:app:Group");
    assert!(
        group.get("id").is_none() && group["custom"] == false,
        "{group}"
    );
    let kid = w.resource("kid").unwrap();
    assert_eq!(
        kid["urn"],
        "urn:pulumi:dev::imp::my:app:Group$convergetest:index:Thing::kid"
    );
    assert_eq!(kid["parent"], group["urn"]);
    assert_eq!(kid["inputs"]["value"], "from-file");
    let second = w.resource("second").unwrap();
    assert_eq!(second["parent"], first["urn"]);
    assert_eq!(second["id"], "xyz12");
    // The earlier import is untouched.
    assert_eq!(w.resource("first").unwrap(), first);
    // The state still verifies (every locking command checks it).
    w.run(&["refresh", "--preview-only"]);

    // A file naming an unknown parent is refused before anything runs.
    let before = w.resources();
    let bad = serde_json::json!({"resources": [
        {"type": RANDOM_STRING, "name": "x", "id": "q", "parent": "nowhere"}]});
    std::fs::write(&path, bad.to_string()).unwrap();
    let err = w.fails(&["import", "--file", path.to_str().unwrap(), "--yes"]);
    assert!(
        err.contains("parent nowhere is neither in the nameTable"),
        "{err}"
    );
    assert_eq!(w.resources(), before);
}

#[test]
fn preview_only_changes_nothing_and_a_missing_id_fails_with_the_state_unchanged() {
    let w = World::yaml();
    w.thing_outside("thing-1", "v");
    w.run(&["import", RANDOM_STRING, "kept", "kept1", "--yes"]);
    let before = w.resources();

    let shown = w.run(&["import", THING, "t", "thing-1", "--preview-only"]);
    assert!(shown.contains("import"), "{shown}");
    assert_eq!(w.resources(), before, "--preview-only changed the state");

    let err = w.fails(&["import", THING, "t", "thing-99", "--yes"]);
    assert!(
        err.contains("no object with ID thing-99 exists")
            && err.contains("urn:pulumi:dev::imp::convergetest:index:Thing::t"),
        "{err}"
    );
    assert_eq!(w.resources(), before, "a failed import changed the state");
    // Importing a name the stack already has is refused up front.
    let err = w.fails(&["import", RANDOM_STRING, "kept", "other", "--yes"]);
    assert!(err.contains("already a resource of the stack"), "{err}");
    // Without --yes, non-interactively: refused, nothing changes.
    let err = w.fails(&["import", THING, "t", "thing-1"]);
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(w.resources(), before);
    let log = w.cloud_log();
    assert!(log.iter().all(|l| !l.starts_with("create")), "{log:?}");
    w.run(&["refresh", "--preview-only"]);
}

#[test]
fn python_out_uses_the_sdks_constructors() {
    let w = World::new("name: pyimp\nruntime: python\n");
    let out = w.scratch.dir.path().join("out.py");
    w.run(&[
        "import",
        RANDOM_STRING,
        "my-token",
        "abcDEF123",
        "--properties",
        "length,special",
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    let py = std::fs::read_to_string(&out).unwrap();
    assert!(
        py.starts_with("import pulumi\nimport pulumi_random as random\n"),
        "{py}"
    );
    assert!(
        py.contains("my_token = random.RandomString(\"my-token\",\n    length=9,\n    special=True,\n    opts=pulumi.ResourceOptions(protect=True))"),
        "{py}"
    );
    assert!(
        !py.contains("min_lower"),
        "only --properties are written: {py}"
    );
    // The provider's Check filled in the rest, as it will for the program.
    let token = w.resource("my-token").unwrap();
    assert_eq!(token["inputs"]["length"], 9);
    assert_eq!(token["inputs"]["minLower"], 0);
}

/// The Python program `--out` writes previews with no changes through the
/// published SDK (pulumi_random is in the test venv).
#[test]
fn python_out_previews_no_changes_with_the_published_sdk() {
    let Some(w) = World::python() else {
        return;
    };
    let out = w.scratch.project.join("__main__.py");
    // The SDK asks for its own version's default provider: the import
    // names that version (the bulk file's `version`), so the program's
    // provider is the one the import used.
    let file = serde_json::json!({"resources": [
        {"type": RANDOM_STRING, "name": "token", "id": "Zyx987wvu", "version": "4.21.4"}]});
    let path = w.scratch.dir.path().join("import.json");
    std::fs::write(&path, file.to_string()).unwrap();
    w.run(&[
        "import",
        "--file",
        path.to_str().unwrap(),
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    let py = std::fs::read_to_string(&out).unwrap();
    assert!(py.contains("random.RandomString(\"token\""), "{py}");
    let preview = w.run(&["preview", "--expect-no-changes"]);
    assert!(!preview.contains("create"), "{preview}");
}

/// `preview --import-file` writes the bulk file for what the program
/// would create; with the IDs filled in, `import --file` adopts the
/// objects and the program then previews with no changes.
#[test]
fn preview_writes_an_import_file_that_import_reads() {
    let w = World::yaml();
    w.thing_outside("thing-5", "hi");
    w.append_program(
        "resources:\n  adopted:\n    type: convergetest:index:Thing\n    properties:\n      value: hi\n",
    );
    let path = w.scratch.dir.path().join("import.json");
    w.run(&["preview", "--import-file", path.to_str().unwrap()]);
    let mut file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        file,
        serde_json::json!({"resources": [{"type": THING, "name": "adopted", "id": ""}]})
    );
    assert!(w.resources().is_empty(), "a preview changes nothing");
    file["resources"][0]["id"] = "thing-5".into();
    std::fs::write(&path, file.to_string()).unwrap();
    w.run(&[
        "import",
        "--file",
        path.to_str().unwrap(),
        "--protect=false",
        "--yes",
    ]);
    w.run(&["preview", "--expect-no-changes"]);
    let err = w.fails(&["up", "--import-file", path.to_str().unwrap(), "--yes"]);
    assert!(err.contains("no --import-file flag"), "{err}");
}

/// `--provider URN::ID`, the form `stack export` records in a resource's
/// `provider` field, names the provider the import uses: an explicit
/// provider resource, and the default provider; an ID the stack does not
/// record for it is refused with the state unchanged.
#[test]
fn provider_given_as_urn_and_id_is_the_one_the_import_uses() {
    let w = World::yaml();
    w.append_program("resources:\n  mine:\n    type: pulumi:providers:random\n");
    w.run(&["up", "--yes"]);
    let mine = w.resource("mine").unwrap();
    let reference = format!(
        "{}::{}",
        mine["urn"].as_str().unwrap(),
        mine["id"].as_str().unwrap()
    );
    w.run(&[
        "import",
        RANDOM_STRING,
        "explicit",
        "abc123",
        "--provider",
        &reference,
        "--yes",
    ]);
    assert_eq!(
        w.resource("explicit").unwrap()["provider"],
        reference.as_str()
    );

    // The default provider, copied from the first import's `provider`.
    w.run(&["import", RANDOM_STRING, "first", "def456", "--yes"]);
    let default = w.resource("first").unwrap()["provider"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        default.contains("::pulumi:providers:random::default"),
        "{default}"
    );
    w.run(&[
        "import",
        RANDOM_STRING,
        "second",
        "ghi789",
        "--provider",
        &default,
        "--yes",
    ]);
    assert_eq!(w.resource("second").unwrap()["provider"], default.as_str());

    let before = w.resources();
    let wrong = format!("{reference}0");
    let err = w.fails(&[
        "import",
        RANDOM_STRING,
        "third",
        "jkl012",
        "--provider",
        &wrong,
        "--yes",
    ]);
    assert!(
        err.contains(&format!(
            "the stack's provider {} has ID {}, not {}0",
            mine["urn"].as_str().unwrap(),
            mine["id"].as_str().unwrap(),
            mine["id"].as_str().unwrap()
        )),
        "{err}"
    );
    // A resource that is not a provider is refused too.
    let first = w.resource("first").unwrap();
    let err = w.fails(&[
        "import",
        RANDOM_STRING,
        "third",
        "jkl012",
        "--provider",
        first["urn"].as_str().unwrap(),
        "--yes",
    ]);
    assert!(err.contains("is not a provider resource"), "{err}");
    assert_eq!(w.resources(), before);
}

/// A provider's error reaches the user once: the step error says what the
/// provider said, and the printer does not repeat it as the step error's
/// cause. The same for a failed create in `up`.
#[test]
fn a_provider_error_is_printed_once() {
    let w = World::yaml();
    let cases = [
        (
            "command:local:Command",
            "c",
            "anything",
            "import of urn:pulumi:dev::imp::command:local:Command::c failed: \
             command:local:Command cannot be imported",
        ),
        (
            "random:index/randomPet:RandomPet",
            "pet",
            "a-pet",
            "import of urn:pulumi:dev::imp::random:index/randomPet:RandomPet::pet failed: \
             random:index/randomPet:RandomPet cannot be imported",
        ),
        (
            "random:index/nope:Nope",
            "n",
            "x",
            "import of urn:pulumi:dev::imp::random:index/nope:Nope::n failed: \
             unknown resource type: package random has no resource type \
             'random:index/nope:Nope'",
        ),
        (
            "random:index/randomStrin:RandomString",
            "t",
            "x",
            "import of urn:pulumi:dev::imp::random:index/randomStrin:RandomString::t failed: \
             unknown resource type: package random has no resource type \
             'random:index/randomStrin:RandomString'; did you mean \
             'random:index/randomString:RandomString'?",
        ),
        (
            "random:index/randomUuid:RandomUuid",
            "u",
            "not-a-uuid",
            "import of urn:pulumi:dev::imp::random:index/randomUuid:RandomUuid::u failed: \
             cannot import random:index/randomUuid:RandomUuid with ID \"not-a-uuid\": \
             expected a UUID (8-4-4-4-12 hex digits)",
        ),
    ];
    for (type_token, name, id, message) in cases {
        let stderr = w.fails_stderr(&["import", type_token, name, id, "--yes"]);
        assert_eq!(
            stderr,
            format!("error: a provider failed: {message}\n"),
            "{type_token}"
        );
    }
    assert!(w
        .resources()
        .iter()
        .all(|r| r["type"] != "command:local:Command"));

    w.append_program(
        "resources:\n  c:\n    type: command:local:Command\n    properties:\n      \
         create: \"echo boom >&2; exit 3\"\n",
    );
    let stderr = w.fails_stderr(&["up", "--yes"]);
    assert_eq!(
        stderr,
        "error: a provider failed: create of urn:pulumi:dev::imp::command:local:Command::c \
         failed: exit status 3: running \"echo boom >&2; exit 3\":\nboom\n",
        "{stderr}"
    );
}

/// Python `--out` for a package without a Python SDK (Converge's own
/// `converge:index:File`) is refused before anything is imported, naming
/// the package; the same import without `--out`, or with YAML `--out` in
/// a YAML project, adopts the file.
#[test]
fn python_out_for_a_package_without_an_sdk_is_refused_before_importing() {
    let w = World::new("name: pyimp\nruntime: python\n");
    let file = w.scratch.dir.path().join("notes.txt");
    std::fs::write(&file, "hello").unwrap();
    let out = w.scratch.dir.path().join("prog.py");
    let stderr = w.fails_stderr(&[
        "import",
        "converge:index:File",
        "notes",
        file.to_str().unwrap(),
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        stderr,
        format!(
            "error: --out {}: cannot write notes (converge:index:File): the package converge \
             has no Python SDK, so a Python program cannot declare its resources (a Pulumi \
             YAML program can); import without --out, or with --out in a Pulumi YAML project\n",
            out.display()
        )
    );
    assert!(w.resources().is_empty(), "nothing was imported");
    assert!(!out.exists());
    // Without --out the import goes on, and says why it prints no code.
    let done = w.converge(&[
        "import",
        "converge:index:File",
        "notes",
        file.to_str().unwrap(),
        "--yes",
    ]);
    assert!(done.status.success());
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        stderr.contains(
            "warning: no code for the imported resources: the package converge has no Python \
             SDK, so a Python program cannot declare its resources (a Pulumi YAML program can)\n"
        ),
        "{stderr}"
    );
    assert_eq!(w.resource("notes").unwrap()["inputs"]["content"], "hello");

    let y = World::yaml();
    let yaml_out = y.scratch.dir.path().join("prog.yaml");
    y.run(&[
        "import",
        "converge:index:File",
        "notes",
        file.to_str().unwrap(),
        "--yes",
        "--out",
        yaml_out.to_str().unwrap(),
    ]);
    let yaml = std::fs::read_to_string(&yaml_out).unwrap();
    assert!(yaml.contains("type: converge:index:File"), "{yaml}");
}

/// `--out` writes the project's language: a file whose extension names
/// another language is refused before anything is imported, naming both.
#[test]
fn out_in_another_language_than_the_projects_is_refused_before_importing() {
    let w = World::yaml();
    let out = w.scratch.dir.path().join("bulk.py");
    let err = w.fails_stderr(&[
        "import",
        RANDOM_STRING,
        "token",
        "abc",
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        err,
        format!(
            "error: --out {}: the file's extension says Python, but this project's runtime is \
             Pulumi YAML, and --out writes the project's language; name a file that ends in \
             .yaml\n",
            out.display()
        )
    );
    assert!(w.resources().is_empty() && !out.exists());

    let p = World::new("name: pyimp\nruntime: python\n");
    let out = p.scratch.dir.path().join("prog.yml");
    let err = p.fails_stderr(&[
        "import",
        RANDOM_STRING,
        "token",
        "abc",
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        err.contains("the file's extension says Pulumi YAML, but this project's runtime is Python")
            && err.contains("ends in .py"),
        "{err}"
    );
    assert!(p.resources().is_empty() && !out.exists());
}

/// A single import naming no version uses the version of the package's
/// SDK the project has installed (as Pulumi's importer does), so its
/// default provider is the one the SDK registers (`default_4_21_4` for
/// pulumi_random 4.21.4) and the program `--out` writes previews with no
/// changes — no provider create and delete.
#[test]
fn an_import_without_a_version_uses_the_installed_sdks_default_provider() {
    let Some(w) = World::python() else {
        return;
    };
    let out = w.scratch.project.join("__main__.py");
    w.run(&[
        "import",
        RANDOM_STRING,
        "token",
        "Zyx987wvu",
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    let token = w.resource("token").unwrap();
    assert!(
        token["provider"]
            .as_str()
            .unwrap()
            .contains("::pulumi:providers:random::default_4_21_4::"),
        "{token}"
    );
    let preview = w.run(&["preview", "--expect-no-changes"]);
    assert!(
        !preview.contains("create") && !preview.contains("delete"),
        "{preview}"
    );
}

/// Without `--out`, the code is printed for the user to copy, as Pulumi
/// prints it; in a JavaScript project it is JavaScript with the published
/// `@pulumi/random` (installed by scripts/test), and the program made of
/// it previews with no changes.
#[test]
fn node_code_is_printed_and_previews_no_changes_with_the_published_sdk() {
    let Some(modules) = common::nodejs::node_modules() else {
        return;
    };
    let w = common::nodejs::NodeWorld::new(&modules, "");
    // The SDK asks for its own version's default provider.
    let file = serde_json::json!({"resources": [
        {"type": RANDOM_STRING, "name": "my-token", "id": "Zyx987wvu", "version": "4.21.2"}]});
    let path = w.scratch.dir.path().join("import.json");
    std::fs::write(&path, file.to_string()).unwrap();
    let out = w.run(&["import", "--file", path.to_str().unwrap(), "--yes"]);
    let code = &out[out.find("Add this code to the program").expect(&out)..];
    let code = &code[code.find('\n').unwrap() + 1..];
    assert!(
        code.starts_with(
            "\nconst pulumi = require(\"@pulumi/pulumi\");\nconst random = require(\"@pulumi/random\");\n"
        ),
        "{out}"
    );
    assert!(
        code.contains("const myToken = new random.RandomString(\"my-token\", {\n    length: 9,\n"),
        "{out}"
    );
    assert!(code.contains("}, {\n    protect: true,\n});"), "{out}");
    w.write_program(code);
    let preview = w.run(&["preview", "--expect-no-changes"]);
    assert!(!preview.contains("create"), "{preview}");

    // `--generate-code=false` prints none.
    let w2 = common::nodejs::NodeWorld::new(&modules, "");
    let out = w2.run(&[
        "import",
        RANDOM_STRING,
        "other",
        "abc",
        "--yes",
        "--generate-code=false",
    ]);
    assert!(!out.contains("Add this code"), "{out}");
}

/// A TypeScript project gets TypeScript (`--out index.ts` too).
#[test]
fn typescript_out_imports_the_sdk_modules() {
    let w = World::new("name: tsimp\nruntime: nodejs\n");
    std::fs::write(w.scratch.project.join("tsconfig.json"), "{}").unwrap();
    let out = w.scratch.dir.path().join("imported.ts");
    w.run(&[
        "import",
        RANDOM_STRING,
        "token",
        "abcDEF123",
        "--yes",
        "--out",
        out.to_str().unwrap(),
    ]);
    let ts = std::fs::read_to_string(&out).unwrap();
    assert!(
        ts.starts_with(
            "import * as pulumi from \"@pulumi/pulumi\";\nimport * as random from \"@pulumi/random\";\n"
        ),
        "{ts}"
    );
    assert!(
        ts.contains("const token = new random.RandomString(\"token\", {"),
        "{ts}"
    );
    // A file named for another language is refused before anything runs.
    let e = w.fails(&[
        "import",
        RANDOM_STRING,
        "t2",
        "abc",
        "--yes",
        "--out",
        "x.py",
    ]);
    assert!(e.contains("name a file that ends in .ts"), "{e}");
}

//! Policy packs through the `converge` binary: real packs written with
//! PyPI's `pulumi-policy` (`policy/strings_pack.py`, run in the test
//! virtualenv) and npm's `@pulumi/policy` (`policy/strings_pack.js`, with
//! the test `node_modules`), against YAML, Python and Node.js programs
//! and the built-in `random` provider.
//!
//! Both packs hold the same four policies over
//! `random:index/randomString:RandomString`: `min-length` (mandatory;
//! setting `minLength`, default 8), `prefer-numeric` (advisory: `numeric:
//! false`), `no-special` (remediate: sets `special: false`) and the stack
//! policy `max-strings` (mandatory; setting `max`, default 3).

use std::path::{Path, PathBuf};

use crate::common;

use common::Scratch;

const PY_PACK: &str = include_str!("policy/strings_pack.py");
const NODE_PACK: &str = include_str!("policy/strings_pack.js");

/// The Python pack in `dir`, run in `venv`.
pub(crate) fn python_pack(dir: &Path, venv: &Path) -> PathBuf {
    let pack = dir.join("py-policies");
    std::fs::create_dir_all(&pack).unwrap();
    std::fs::write(
        pack.join("PulumiPolicy.yaml"),
        format!(
            "runtime:\n  name: python\n  options:\n    virtualenv: {}\nversion: 1.2.0\ndescription: Rules for random strings.\n",
            venv.display()
        ),
    )
    .unwrap();
    std::fs::write(pack.join("__main__.py"), PY_PACK).unwrap();
    pack
}

/// The Node.js pack in `dir`, with `modules` as its `node_modules`.
pub(crate) fn node_pack(dir: &Path, modules: &Path) -> PathBuf {
    let pack = dir.join("node-policies");
    std::fs::create_dir_all(&pack).unwrap();
    std::fs::write(pack.join("PulumiPolicy.yaml"), "runtime: nodejs\n").unwrap();
    std::fs::write(
        pack.join("package.json"),
        r#"{"name": "node-strings", "version": "0.3.0", "main": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(pack.join("index.js"), NODE_PACK).unwrap();
    std::os::unix::fs::symlink(modules, pack.join("node_modules")).unwrap();
    pack
}

/// A YAML project `yamlproj` with these resources (YAML text), stack `dev`.
pub(crate) fn yaml_world(resources: &str) -> Scratch {
    let scratch = Scratch::new(&format!(
        "name: yamlproj\nruntime: yaml\nresources:\n{resources}"
    ));
    common::stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    scratch
}

pub(crate) const OK_AND_SHORT: &str = "  ok:
    type: random:index/randomString:RandomString
    properties:
      length: 12
      numeric: false
  short:
    type: random:index/randomString:RandomString
    properties:
      length: 4
";

const OK_ONLY: &str = "  ok:
    type: random:index/randomString:RandomString
    properties:
      length: 12
";

pub(crate) fn state_of(scratch: &Scratch, project: &str) -> Option<String> {
    std::fs::read_to_string(
        scratch
            .backend
            .join(format!(".pulumi/stacks/{project}/dev.json")),
    )
    .ok()
}

fn run(scratch: &Scratch, args: &[&str]) -> String {
    common::stdout_of(scratch.command("pw"), args)
}

fn fails(scratch: &Scratch, args: &[&str]) -> String {
    common::failure_of(scratch.command("pw"), args)
}

fn pack_arg(pack: &Path) -> String {
    pack.display().to_string()
}

/// The resource `name`'s state in the checkpoint.
fn resource(state: &str, name: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(state).unwrap();
    v["checkpoint"]["latest"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
        .cloned()
        .unwrap_or(serde_json::Value::Null)
}

/// What every pack does to `ok` and `short` in a program of any language:
/// mandatory, advisory and remediation policies.
fn judges_ok_and_short(scratch: &Scratch, project: &str, pack: &Path, label: &str) {
    let pack = pack_arg(pack);
    let before = state_of(scratch, project);
    // A preview reports the mandatory violation, naming pack, policy and
    // resource, and fails; the advisory one is a warning.
    let preview = fails(scratch, &["preview", "--policy-pack", &pack]);
    assert!(preview.contains("Policies:"), "{preview}");
    assert!(preview.contains(&format!("{label}: failed")), "{preview}");
    assert!(
        preview.contains(
            "[mandatory, high severity]  min-length  (random:index/randomString:RandomString short)"
        ),
        "{preview}"
    );
    assert!(preview.contains("length 4 is below 8"), "{preview}");
    assert!(
        preview.contains("[advisory]  prefer-numeric  (random:index/randomString:RandomString ok)"),
        "{preview}"
    );
    assert!(
        preview.contains(&format!("{label} min-length (urn:pulumi:dev::{project}::random:index/randomString:RandomString::short)")),
        "the error names pack, policy and resource: {preview}"
    );
    // --show-policy-remediations: under each remediation, what it changed.
    let detailed = fails(
        scratch,
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--show-policy-remediations",
        ],
    );
    let remediated = detailed
        .lines()
        .skip_while(|l| !l.contains("[remediated]"))
        .nth(1)
        .unwrap_or_default();
    assert!(
        remediated.contains("special") && remediated.contains("=> false"),
        "{detailed}"
    );
    assert!(!preview.contains("=> false"), "{preview}");
    // `up` stops at its preview: nothing changes.
    let up = fails(scratch, &["up", "--yes", "--policy-pack", &pack]);
    assert!(up.contains("min-length"), "{up}");
    assert_eq!(
        state_of(scratch, project),
        before,
        "a failed up changed the state"
    );
    // Without the preview, the update stops before the violating resource:
    // the rest is created, the advisory one included, remediated.
    let up = fails(
        scratch,
        &["up", "--yes", "--skip-preview", "--policy-pack", &pack],
    );
    assert!(up.contains("min-length"), "{up}");
    let state = state_of(scratch, project).unwrap();
    assert!(
        resource(&state, "short").is_null(),
        "the violating resource was created"
    );
    let ok = resource(&state, "ok");
    assert_eq!(ok["inputs"]["special"], false, "{ok}");
    assert_eq!(ok["outputs"]["special"], false, "{ok}");
    let result = ok["outputs"]["result"].as_str().unwrap();
    assert_eq!(result.len(), 12);
    assert!(
        result.chars().all(|c| c.is_ascii_alphabetic()),
        "the provider did not get the remediated inputs: {result}"
    );
}

#[test]
fn a_python_pack_judges_a_yaml_program() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = yaml_world(OK_AND_SHORT);
    let pack = python_pack(scratch.dir.path(), &venv);
    judges_ok_and_short(&scratch, "yamlproj", &pack, "strings@v1.2.0");
}

#[test]
fn a_node_pack_judges_a_yaml_program() {
    let Some(modules) = common::nodejs::node_modules() else {
        return;
    };
    let scratch = yaml_world(OK_AND_SHORT);
    let pack = node_pack(scratch.dir.path(), &modules);
    judges_ok_and_short(&scratch, "yamlproj", &pack, "node-strings@v0.3.0");
}

#[test]
fn a_python_pack_judges_a_python_program() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let w = common::python::PythonWorld::new(
        &venv,
        r#"
import pulumi
ok = pulumi.CustomResource("random:index/randomString:RandomString", "ok",
                           {"length": 12, "numeric": False, "result": None})
short = pulumi.CustomResource("random:index/randomString:RandomString", "short",
                              {"length": 4, "result": None})
"#,
    );
    let pack = python_pack(w.scratch.dir.path(), &venv);
    judges_ok_and_short(&w.scratch, "pyproj", &pack, "strings@v1.2.0");
}

#[test]
fn a_node_pack_judges_a_node_program() {
    let Some(modules) = common::nodejs::node_modules() else {
        return;
    };
    let w = common::nodejs::NodeWorld::new(
        &modules,
        r#"
const pulumi = require("@pulumi/pulumi");
new pulumi.CustomResource("random:index/randomString:RandomString", "ok",
    { length: 12, numeric: false, result: undefined });
new pulumi.CustomResource("random:index/randomString:RandomString", "short",
    { length: 4, result: undefined });
"#,
    );
    let pack = node_pack(w.scratch.dir.path(), &modules);
    judges_ok_and_short(&w.scratch, "nodeproj", &pack, "node-strings@v0.3.0");
}

#[test]
fn a_mandatory_stack_policy_fails_the_update_after_it_ran() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = yaml_world(
        "  a:
    type: random:index/randomString:RandomString
    properties:
      length: 10
  b:
    type: random:index/randomString:RandomString
    properties:
      length: 10
outputs:
  size: ${a.length}
",
    );
    let pack = pack_arg(&python_pack(scratch.dir.path(), &venv));
    let config = scratch.dir.path().join("max-one.json");
    std::fs::write(&config, r#"{"max-strings": {"max": 1}}"#).unwrap();
    let config = config.display().to_string();
    let flags = ["--policy-pack", &pack, "--policy-pack-config", &config];
    let preview = fails(&scratch, &[&["preview"][..], &flags].concat());
    assert!(
        preview.contains("[mandatory]  max-strings  (pulumi:pulumi:Stack yamlproj-dev)")
            && preview.contains("2 strings, at most 1"),
        "{preview}"
    );
    // The program ran to its end: its outputs' changes are shown.
    assert!(
        preview.contains("\nOutputs:\n") && preview.contains("+ size: 10"),
        "{preview}"
    );
    let up = fails(
        &scratch,
        &[&["up", "--yes", "--skip-preview"][..], &flags].concat(),
    );
    assert!(up.contains("max-strings"), "{up}");
    // As Pulumi does: the update ran, then the stack's policy failed it.
    let state = state_of(&scratch, "yamlproj").unwrap();
    assert!(!resource(&state, "a").is_null() && !resource(&state, "b").is_null());
    // Within the limit, the same stack passes.
    let passed = run(&scratch, &["preview", "--policy-pack", &pack]);
    assert!(passed.contains("strings@v1.2.0: passed"), "{passed}");
}

#[test]
fn the_config_file_sets_settings_and_levels_checked_against_each_schema() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = yaml_world(OK_ONLY);
    let pack = pack_arg(&python_pack(scratch.dir.path(), &venv));
    run(&scratch, &["up", "--yes", "--policy-pack", &pack]);
    let before = state_of(&scratch, "yamlproj").unwrap();
    let with_config = |name: &str, text: &str| {
        let path = scratch.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    // A setting from the file: 12 is now too short.
    let longer = with_config("longer.json", r#"{"min-length": {"minLength": 20}}"#);
    let e = fails(
        &scratch,
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &longer,
        ],
    );
    assert!(e.contains("length 12 is below 20"), "{e}");
    // A setting that breaks the policy's schema: refused before anything
    // runs, the state untouched.
    let bad = with_config("bad.json", r#"{"min-length": {"minLength": "long"}}"#);
    let e = fails(
        &scratch,
        &[
            "up",
            "--yes",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &bad,
        ],
    );
    assert!(
        e.contains("min-length") && e.contains("does not fit its schema"),
        "{e}"
    );
    assert!(!e.contains("Previewing") && !e.contains("Updating"), "{e}");
    assert_eq!(state_of(&scratch, "yamlproj").unwrap(), before);
    // A policy the file disables is not evaluated.
    let disabled = with_config(
        "disabled.json",
        r#"{"min-length": {"enforcementLevel": "disabled", "minLength": 20}}"#,
    );
    let events = scratch.dir.path().join("disabled-events.jsonl");
    let out = run(
        &scratch,
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &disabled,
            "--event-log",
            &events.display().to_string(),
        ],
    );
    assert!(out.contains("strings@v1.2.0: passed"), "{out}");
    // The resource's verdict lists the policies evaluated: not the one
    // the file disabled.
    let log = std::fs::read_to_string(&events).unwrap();
    let passed: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| e.get("policyAnalyzeSummaryEvent").cloned())
        // The string's (the stack resource and the default provider are
        // judged too).
        .filter(|e| {
            e.get("resourceUrn")
                .and_then(|u| u.as_str())
                .is_some_and(|u| u.contains("RandomString"))
        })
        .map(|e| e["passed"].clone())
        .collect();
    assert_eq!(passed.len(), 1, "{log}");
    let passed: Vec<&str> = passed[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        passed.contains(&"prefer-numeric") && !passed.contains(&"min-length"),
        "{passed:?}"
    );
    // A level that is not one, and a policy the pack does not have.
    let loud = with_config("loud.json", r#"{"min-length": "loud"}"#);
    let e = fails(
        &scratch,
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &loud,
        ],
    );
    assert!(e.contains("not an enforcement level"), "{e}");
    let unknown = with_config("unknown.json", r#"{"no-such-policy": "advisory"}"#);
    let e = fails(
        &scratch,
        &[
            "preview",
            "--policy-pack",
            &pack,
            "--policy-pack-config",
            &unknown,
        ],
    );
    assert!(e.contains("no-such-policy"), "{e}");
}

#[test]
fn a_missing_or_broken_pack_is_refused_before_anything_runs() {
    let scratch = yaml_world(OK_ONLY);
    let before = state_of(&scratch, "yamlproj");
    let e = fails(&scratch, &["preview", "--policy-pack", "./no-such-pack"]);
    assert!(
        e.contains("no-such-pack") && e.contains("no such directory"),
        "{e}"
    );
    let empty = scratch.dir.path().join("empty-pack");
    std::fs::create_dir_all(&empty).unwrap();
    let e = fails(
        &scratch,
        &["up", "--yes", "--policy-pack", &pack_arg(&empty)],
    );
    assert!(e.contains("no PulumiPolicy.yaml"), "{e}");
    assert_eq!(state_of(&scratch, "yamlproj"), before, "the up ran");
    assert!(!e.contains("Updating"), "{e}");
    // A pack whose program fails before printing its port.
    let broken = scratch.dir.path().join("broken-pack");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("PulumiPolicy.yaml"), "runtime: python\n").unwrap();
    std::fs::write(
        broken.join("__main__.py"),
        "raise SystemExit('no policies here')\n",
    )
    .unwrap();
    let e = fails(&scratch, &["preview", "--policy-pack", &pack_arg(&broken)]);
    assert!(
        e.contains("exited before printing its port") && e.contains("no policies here"),
        "{e}"
    );
}

/// `pack`, made a Python pack (version 1.0.0) run with `venv`; its
/// `__main__.py` is the caller's to write.
fn python_pack_dir(pack: &Path, venv: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(pack).unwrap();
    std::fs::write(
        pack.join("PulumiPolicy.yaml"),
        format!(
            "runtime:\n  name: python\n  options:\n    virtualenv: {}\nversion: 1.0.0\n",
            venv.display()
        ),
    )
    .unwrap();
    pack.to_path_buf()
}

/// A pack that says it started (`<name>.started` in `dir`) and waits for
/// `other` to have started too before it serves: two such packs start
/// only if they start at once.
fn waiting_pack(dir: &Path, venv: &Path, name: &str, other: &str) -> String {
    let pack = python_pack_dir(&dir.join(name), venv);
    let markers = dir.display();
    std::fs::write(
        pack.join("__main__.py"),
        format!(
            r#"import os, time
from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy
open(os.path.join("{markers}", "{name}.started"), "w").close()
# A hang guard, not a timing check: the other pack starts at once or never.
for _ in range(600):
    if os.path.exists(os.path.join("{markers}", "{other}.started")):
        break
    time.sleep(0.1)
else:
    raise SystemExit("{other} did not start while {name} was starting")

def check(args, report_violation):
    if args.props.get("length") == 4:
        report_violation("{name} saw length 4")

PolicyPack(name="{name}", enforcement_level=EnforcementLevel.ADVISORY, policies=[
    ResourceValidationPolicy(name="{name}-length", description="d", validate=check),
])
"#
        ),
    )
    .unwrap();
    pack.display().to_string()
}

#[test]
fn packs_start_at_once_and_report_in_the_order_given() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = yaml_world(OK_AND_SHORT);
    let first = waiting_pack(scratch.dir.path(), &venv, "first", "second");
    let second = waiting_pack(scratch.dir.path(), &venv, "second", "first");
    let out = run(
        &scratch,
        &["preview", "--policy-pack", &second, "--policy-pack", &first],
    );
    let (a, b) = (
        out.find("second@v1.0.0: passed with warnings"),
        out.find("first@v1.0.0: passed with warnings"),
    );
    assert!(a.is_some() && b.is_some() && a < b, "{out}");
    assert!(
        out.contains("second saw length 4") && out.contains("first saw length 4"),
        "{out}"
    );
}

/// Packs are told the stack's tags (`ConfigureStack`): a policy reads one
/// the user set with `stack tag set` and reports it.
#[test]
fn packs_see_the_stacks_tags() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = yaml_world(OK_AND_SHORT);
    let pack = python_pack_dir(&scratch.dir.path().join("tags-pack"), &venv);
    std::fs::write(
        pack.join("__main__.py"),
        r#"from pulumi_policy import EnforcementLevel, PolicyPack, StackValidationPolicy

def team(args, report_violation):
    report_violation(f"team is {args.stack_tags.get('team')}")

PolicyPack(name="tags", enforcement_level=EnforcementLevel.ADVISORY, policies=[
    StackValidationPolicy(name="who", description="d", validate=team),
])
"#,
    )
    .unwrap();
    run(&scratch, &["stack", "tag", "set", "team", "platform"]);
    let out = run(
        &scratch,
        &["preview", "--policy-pack", pack.to_str().unwrap()],
    );
    assert!(out.contains("team is platform"), "{out}");
}

/// Every registration is judged, as Pulumi judges it: a component, the
/// provider (its configuration) and the stack, not only custom resources.
/// A mandatory policy on a component type stops the update there, so a
/// program cannot slip a forbidden component past its packs.
#[test]
fn components_providers_and_the_stack_are_judged_too() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let w = common::python::PythonWorld::new(
        &venv,
        r#"
import pulumi

class Box(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("app:index:Box", name, {"size": "large"}, opts)
        pulumi.CustomResource("random:index/randomString:RandomString", f"{name}-s",
                              {"length": 12, "result": None},
                              pulumi.ResourceOptions(parent=self))
        self.register_outputs({})

Box("box")
"#,
    );
    let pack = python_pack_dir(&w.scratch.dir.path().join("kinds-pack"), &venv);
    std::fs::write(
        pack.join("__main__.py"),
        r#"from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy

def seen(args, report_violation):
    if not args.resource_type.startswith("random:"):
        report_violation(f"saw {args.resource_type} {args.name}")

def no_large_boxes(args, report_violation):
    if args.resource_type == "app:index:Box" and args.props.get("size") == "large":
        report_violation("large boxes are forbidden")

PolicyPack(name="kinds", policies=[
    ResourceValidationPolicy(name="seen", description="d", validate=seen,
                             enforcement_level=EnforcementLevel.ADVISORY),
    ResourceValidationPolicy(name="no-large-boxes", description="d", validate=no_large_boxes,
                             enforcement_level=EnforcementLevel.MANDATORY),
])
"#,
    )
    .unwrap();
    let pack = pack.display().to_string();
    let preview = fails(&w.scratch, &["preview", "--policy-pack", &pack]);
    for line in [
        "saw pulumi:pulumi:Stack pyproj-dev",
        "saw app:index:Box box",
        "saw pulumi:providers:random default",
        "[mandatory]  no-large-boxes  (app:index:Box box)",
        "large boxes are forbidden",
    ] {
        assert!(preview.contains(line), "no {line:?} in\n{preview}");
    }
    // Without the preview, the update stops at the component: nothing
    // inside it is created.
    let up = fails(
        &w.scratch,
        &["up", "--yes", "--skip-preview", "--policy-pack", &pack],
    );
    assert!(up.contains("no-large-boxes"), "{up}");
    let state = state_of(&w.scratch, "pyproj").unwrap_or_default();
    assert!(!state.contains("box-s"), "{state}");
}

/// A pack whose policy code raises fails the command with what it raised,
/// and the Policies section does not list it as passed; the state is left
/// as it was.
#[test]
fn a_pack_whose_policy_raises_is_not_listed_as_passed() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let scratch = yaml_world(OK_ONLY);
    let before = state_of(&scratch, "yamlproj");
    let pack = python_pack_dir(&scratch.dir.path().join("raising-pack"), &venv);
    std::fs::write(
        pack.join("__main__.py"),
        r#"from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy

def check(args, report_violation):
    if args.resource_type.startswith("random:"):
        raise ValueError("the policy tripped over its own feet")

PolicyPack(name="raising", enforcement_level=EnforcementLevel.MANDATORY, policies=[
    ResourceValidationPolicy(name="trips", description="d", validate=check),
])
"#,
    )
    .unwrap();
    let pack = pack_arg(&pack);
    for args in [
        vec!["preview", "--policy-pack", &pack],
        vec!["up", "--yes", "--policy-pack", &pack],
    ] {
        let out = fails(&scratch, &args);
        assert!(
            out.contains("raising@v1.0.0: could not run"),
            "{args:?}:\n{out}"
        );
        assert!(!out.contains("raising@v1.0.0: passed"), "{args:?}:\n{out}");
        assert!(
            out.contains("the policy tripped over its own feet"),
            "{args:?}:\n{out}"
        );
        assert_eq!(state_of(&scratch, "yamlproj"), before, "{args:?}");
    }
}

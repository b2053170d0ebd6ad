//! The `converge` binary running real Python programs with the published
//! `pulumi` SDK (installed by scripts/test; CONVERGE_TEST_PYTHON names the
//! venv's interpreter) and the built-in providers.

use crate::common;

use std::path::Path;

use common::python::{venv, PythonWorld as World};

const PROGRAM: &str = r#"
import pulumi

config = pulumi.Config()
pet = pulumi.CustomResource("random:index/randomPet:RandomPet", "pet",
                            {"length": config.get_int("length") or 2, "id": None})
pw = pulumi.CustomResource("random:index/randomPassword:RandomPassword", "pw",
                           {"length": 16, "result": None})

class Group(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("app:index:Group", name, None, opts)
        self.member = pulumi.CustomResource("random:index/randomString:RandomString", f"{name}-member",
                                            {"length": 8, "result": None},
                                            pulumi.ResourceOptions(parent=self, depends_on=[pet]))
        self.register_outputs({"member": self.member.result})

group = Group("group")
pulumi.export("pet", pet.id)
pulumi.export("password", pw.result)
pulumi.export("member", group.member.result)
pulumi.export("values", {"n": 42, "f": 1.5, "b": True, "list": [1, "two"], "none": None})
pulumi.export("token", pulumi.Output.secret(config.require_secret("token")))
"#;

#[test]
fn a_python_program_deploys_updates_and_destroys() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PROGRAM);
    w.run(&["config", "set", "--secret", "token", "s3cr3t-token"]);
    let preview = w.run(&["preview"]);
    assert!(preview.contains("+ 5 to create"), "{preview}");
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 5 created"), "{up}");
    assert!(
        up.contains("password: [secret]") && up.contains("token   : [secret]"),
        "{up}"
    );
    let state = w.state();
    assert!(
        !state.contains("s3cr3t-token"),
        "a secret in plaintext in the state"
    );
    let password = w.run(&["stack", "output", "password", "--show-secrets"]);
    assert_eq!(password.trim().len(), 16);
    assert!(!state.contains(password.trim()));
    let outputs: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["values"]["n"], 42);
    assert_eq!(outputs["values"]["list"][1], "two");
    assert_eq!(outputs["token"], "[secret]");
    assert!(state.contains("app:index:Group$random:index/randomString:RandomString::group-member"));

    let again = w.run(&["up", "--yes"]);
    assert!(again.contains("5 unchanged"), "{again}");
    w.run(&["config", "set", "length", "3"]);
    let replaced = w.run(&["up", "--yes"]);
    assert!(replaced.contains("+-1 replaced"), "{replaced}");
    let refreshed = w.run(&["refresh", "--yes"]);
    assert!(!refreshed.contains("error"), "{refreshed}");
    let destroyed = w.run(&["destroy", "--yes"]);
    assert!(destroyed.contains("- 5 deleted"), "{destroyed}");
}

#[test]
fn a_python_program_that_raises_shows_its_error_and_keeps_what_completed() {
    let Some(venv) = venv() else { return };
    let program = r#"
import pulumi
pet = pulumi.CustomResource("random:index/randomPet:RandomPet", "pet", {"length": 2, "id": None})
def boom(v):
    raise ValueError("the program broke on purpose")
pet.id.apply(boom)
"#;
    let w = World::new(&venv, program);
    let all = w.fails(&["up", "--yes"]);
    assert!(all.contains("the program broke on purpose"), "{all}");
    assert!(all.contains("ValueError"), "{all}");
    assert!(
        w.state().contains("randomPet:RandomPet::pet"),
        "what completed is kept"
    );
}

/// A virtualenv without the `pulumi` SDK: the error says so once (no
/// traceback through Converge's runner as `info:` lines before it), and
/// no traceback names a temporary runner file.
#[test]
fn a_virtualenv_without_the_sdk_is_one_error() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, "import pulumi\n");
    let bare = w.scratch.dir.path().join("bare-venv");
    let made = std::process::Command::new(venv.join("bin/python"))
        .args(["-m", "venv", "--without-pip"])
        .arg(&bare)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(
        w.scratch.project.join("Pulumi.yaml"),
        format!(
            "name: pyproj\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
            bare.display()
        ),
    )
    .unwrap();
    let all = w.fails(&["preview"]);
    assert_eq!(
        all.matches("the Pulumi SDK is not installed for").count(),
        1,
        "{all}"
    );
    assert!(
        all.contains(&format!("{}/bin/python", bare.display())),
        "{all}"
    );
    assert!(all.contains("pip install pulumi"), "{all}");
    assert!(
        !all.contains("Traceback") && !all.contains("info:"),
        "{all}"
    );

    // A program's own failure to import still shows its traceback, and the
    // runner is no temporary file.
    std::fs::write(
        w.scratch.project.join("Pulumi.yaml"),
        format!(
            "name: pyproj\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
            venv.display()
        ),
    )
    .unwrap();
    std::fs::write(
        w.scratch.project.join("__main__.py"),
        "import pulumi\nimport no_such_module\n",
    )
    .unwrap();
    let all = w.fails(&["preview"]);
    assert!(all.contains("No module named 'no_such_module'"), "{all}");
    assert!(!all.contains("converge-python-"), "{all}");
}

/// The published pulumi_random and pulumi_command SDKs drive the built-in
/// providers: create, update, keepers replacement, refresh, destroy.
#[test]
fn the_random_and_command_sdks_use_the_built_in_providers() {
    let Some(venv) = venv() else { return };
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/python-random/__main__.py");
    let w = World::new(&venv, &std::fs::read_to_string(example).unwrap());
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 4 created"), "{up}");
    assert!(up.contains("greeting: \"hello "), "{up}");
    let pet = w.run(&["stack", "output", "pet"]);
    let password = w.run(&["stack", "output", "password", "--show-secrets"]);
    assert_eq!(password.trim().len(), 24);
    assert!(
        !w.state().contains(password.trim()),
        "the password is in plaintext in the state"
    );

    // keepers force a replacement of the password, and only of it.
    w.run(&["config", "set", "rotation", "2"]);
    let up = w.run(&["up", "--yes"]);
    assert!(
        up.contains("+-1 replaced") && up.contains("3 unchanged"),
        "{up}"
    );
    assert_ne!(
        w.run(&["stack", "output", "password", "--show-secrets"]),
        password
    );
    assert_eq!(w.run(&["stack", "output", "pet"]), pet);

    // A new pet length replaces the pet, and the command that uses its name
    // is updated in place.
    w.run(&["config", "set", "length", "3"]);
    let up = w.run(&["up", "--yes"]);
    assert!(
        up.contains("~ 1 updated") && up.contains("+-1 replaced"),
        "{up}"
    );
    let greeting = w.run(&["stack", "output", "greeting"]);
    assert_eq!(
        greeting.trim(),
        format!("hello {}", w.run(&["stack", "output", "pet"]).trim())
    );

    let refresh = w.run(&["refresh", "--yes"]);
    assert!(refresh.contains("unchanged"), "{refresh}");
    let destroy = w.run(&["destroy", "--yes"]);
    assert!(destroy.contains("- 4 deleted"), "{destroy}");
    // As Pulumi says: the stack itself is kept.
    assert!(destroy.contains("run `converge stack rm dev`"), "{destroy}");
}

/// An explicit provider resource, and a preview whose planned inputs hold
/// values that are unknown until an earlier resource exists.
#[test]
fn explicit_providers_and_unknowns_in_preview() {
    let Some(venv) = venv() else { return };
    let program = r#"
import pulumi
explicit = pulumi.ProviderResource("random", "explicit", {})
pet = pulumi.CustomResource("random:index/randomPet:RandomPet", "pet", {"length": 2, "id": None},
                            pulumi.ResourceOptions(provider=explicit))
tagged = pulumi.CustomResource("random:index/randomString:RandomString", "tagged",
                               {"length": 4, "keepers": {"pet": pet.id}, "result": None},
                               pulumi.ResourceOptions(provider=explicit))
pulumi.export("tagged", tagged.result)
"#;
    let w = World::new(&venv, program);
    let plan: serde_json::Value = serde_json::from_str(&w.run(&["preview", "--json"])).unwrap();
    let steps = plan["steps"].as_array().unwrap();
    let tagged = steps
        .iter()
        .find(|s| s["urn"].as_str().unwrap().ends_with("::tagged"))
        .unwrap();
    assert_eq!(
        tagged["newState"]["inputs"]["keepers"]["pet"], "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "{tagged}"
    );
    assert!(
        !steps.iter().any(|s| s["urn"]
            .as_str()
            .unwrap()
            .contains("pulumi:providers:random::default")),
        "a default provider was used: {steps:?}"
    );
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 4 created"), "{up}");
    let state = w.state();
    assert!(
        state.contains("pulumi:providers:random::explicit::"),
        "{state}"
    );
    assert!(
        !state.contains("pulumi:providers:random::default"),
        "{state}"
    );
    assert!(w.run(&["destroy", "--yes"]).contains("- 4 deleted"));
}

/// A remote component: the Python program's `ComponentResource` with
/// `remote=True` is built by the `convergetest` plugin's Construct (a
/// separate process that registers the component and its child through
/// the engine's monitor), and a method of it runs through Call.
#[test]
fn remote_components_and_calls_run_in_the_plugin() {
    let Some(venv) = venv() else { return };
    let program = r#"
import pulumi

class Remote(pulumi.ComponentResource):
    def __init__(self, name, value, opts=None):
        props = {"value": value, "childId": None, "childLength": None}
        super().__init__("convergetest:index:Component", name, props, opts, remote=True)

    def describe(self, greeting):
        return pulumi.runtime.call("convergetest:index:Component/describe",
                                   {"__self__": self, "greeting": greeting}, self)

config = pulumi.Config()
comp = Remote("comp", config.get("value") or "hello")
pulumi.export("childId", comp.childId)
pulumi.export("childLength", comp.childLength)
pulumi.export("description", comp.describe("Hi").apply(lambda r: r["description"]))
"#;
    let w = World::new(&venv, program);
    let convergetest = common::ConvergetestCloud::new(&w.scratch);
    let run = |args: &[&str]| convergetest.run(&w.scratch, args);
    let cloud = || convergetest.state();
    let comp_urn = "urn:pulumi:dev::pyproj::convergetest:index:Component::comp";
    let child_urn =
        "urn:pulumi:dev::pyproj::convergetest:index:Component$convergetest:index:Thing::comp-child";

    let preview = run(&["preview"]);
    assert!(preview.contains("+ 3 to create"), "{preview}");
    assert!(!convergetest.file.exists() || cloud()["objects"].as_object().unwrap().is_empty());

    let up = run(&["up", "--yes"]);
    assert!(up.contains("+ 3 created"), "{up}");
    let state: serde_json::Value = serde_json::from_str(&w.state()).unwrap();
    let resources = state["checkpoint"]["latest"]["resources"]
        .as_array()
        .unwrap();
    let find = |urn: &str| {
        resources
            .iter()
            .find(|r| r["urn"] == urn)
            .unwrap_or_else(|| panic!("no {urn} in {resources:#?}"))
            .clone()
    };
    let comp = find(comp_urn);
    assert_eq!(comp["custom"], false);
    assert_eq!(comp["outputs"]["value"], "hello");
    let child = find(child_urn);
    assert_eq!(child["parent"], comp_urn);
    assert_eq!(child["inputs"]["value"], "hello");
    let child_id = child["id"].as_str().unwrap().to_owned();
    assert_eq!(cloud()["objects"][&child_id]["urn"], child_urn);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["childId"], child_id.as_str());
    assert_eq!(outputs["childLength"], 5);
    assert_eq!(outputs["description"], "Hi, comp!");

    run(&["config", "set", "value", "goodbye"]);
    let up = run(&["up", "--yes"]);
    assert!(up.contains("~ 2 updated"), "{up}");
    let objects = cloud()["objects"].clone();
    assert_eq!(objects.as_object().unwrap().len(), 1, "{objects}");
    assert_eq!(objects[&child_id]["properties"]["value"], "goodbye");
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["childLength"], 7);

    let destroyed = run(&["destroy", "--yes"]);
    assert!(destroyed.contains("- 3 deleted"), "{destroyed}");
    assert!(cloud()["objects"].as_object().unwrap().is_empty());
}

/// Another command sees a running program's components: `stack export`,
/// while `up` waits in a program that registered only a component, shows
/// it (the journal's held entries are written within a moment, not at the
/// program's next custom resource or its end).
#[test]
fn a_running_programs_components_show_in_stack_export() {
    use std::time::{Duration, Instant};

    let Some(venv) = venv() else { return };
    let release_dir = tempfile::tempdir().unwrap();
    let release = release_dir.path().join("release");
    let program = format!(
        r#"import os, time
import pulumi

class Group(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("app:index:Group", name, None, opts)

def hold(urn):
    # Registered and answered: wait (blocking the program) for the test.
    start = time.time()
    while not os.path.exists({release:?}):
        if time.time() - start > 120:
            raise Exception("never released")
        time.sleep(0.05)
    return urn

Group("group").urn.apply(hold)
"#
    );
    let w = World::new(&venv, &program);
    let mut up = w.spawn_up();
    let shows_group = || {
        let out = w.cmd(&["stack", "export"]);
        let export: serde_json::Value = match serde_json::from_slice(&out.stdout) {
            Ok(export) => export,
            Err(_) => return false,
        };
        export["deployment"]["resources"]
            .as_array()
            .is_some_and(|rs| rs.iter().any(|r| r["type"] == "app:index:Group"))
    };
    let start = Instant::now();
    let mut seen = false;
    while start.elapsed() < Duration::from_secs(120) {
        if shows_group() {
            seen = true;
            break;
        }
        if let Some(status) = up.try_wait().unwrap() {
            panic!("converge up ended ({status}) while its program waited");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&release, b"").unwrap();
    let status = up.wait().unwrap();
    assert!(
        seen,
        "stack export never showed the running program's component"
    );
    assert!(status.success(), "converge up: {status}");
    assert!(shows_group());
}

/// A component's `retain_on_delete` and `deleted_with` reach its children,
/// which the SDK does not pass down (Pulumi's engine does): a retained
/// component's child is not deleted, nor one deleted with a resource that
/// is deleted too. Each command logs its create and delete to `log`.
#[test]
fn a_components_retain_on_delete_and_deleted_with_reach_its_children() {
    let Some(venv) = venv() else { return };
    let w = World::new(
        &venv,
        r#"
import pulumi

def command(name, opts=None):
    return pulumi.CustomResource("command:local:Command", name, {
        "create": f"echo create-{name} >> log",
        "delete": f"echo delete-{name} >> log",
    }, opts)

class Group(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("app:index:Group", name, None, opts)
        command(f"{name}-child", pulumi.ResourceOptions(parent=self))
        self.register_outputs({})

anchor = command("anchor")
Group("kept", pulumi.ResourceOptions(retain_on_delete=True))
Group("with", pulumi.ResourceOptions(deleted_with=anchor))
"#,
    );
    w.run(&["up", "--yes"]);
    let log = w.scratch.project.join("log");
    std::fs::write(&log, "").unwrap();
    w.run(&["destroy", "--yes"]);
    let deleted = std::fs::read_to_string(&log).unwrap();
    assert_eq!(deleted.trim(), "delete-anchor", "{deleted}");
}

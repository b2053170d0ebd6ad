//! Dynamic providers through the `converge` binary: a provider written in
//! the Python program (`pulumi.dynamic`), served by the SDK's own provider
//! server run with the program's interpreter, creating real files.

use crate::common;

use common::python::{venv, PythonWorld};

const PROGRAM: &str = r#"
import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

class FileProvider(ResourceProvider):
    def create(self, props):
        import os
        path = os.path.join(props["dir"], props["name"])
        with open(path, "w") as f:
            f.write(props["content"])
        return CreateResult(id_=path, outs={**props, "size": len(props["content"])})

    def diff(self, id, olds, news):
        replaces = [k for k in ("dir", "name") if olds.get(k) != news.get(k)]
        changed = bool(replaces) or olds.get("content") != news.get("content")
        return DiffResult(changes=changed, replaces=replaces, delete_before_replace=True)

    def update(self, id, olds, news):
        with open(id, "w") as f:
            f.write(news["content"])
        return UpdateResult(outs={**news, "size": len(news["content"])})

    def read(self, id, props):
        import os
        if not os.path.exists(id):
            return ReadResult(id_=None, outs={})
        with open(id) as f:
            content = f.read()
        return ReadResult(id_=id, outs={**props, "content": content, "size": len(content)})

    def delete(self, id, props):
        import os
        os.remove(id)

class File(Resource):
    size: pulumi.Output[int]

    def __init__(self, name, args, opts=None):
        super().__init__(FileProvider(), name, {**args, "size": None}, opts)

config = pulumi.Config()
f = File("note", {"dir": config.require("dir"), "name": config.require("name"),
                  "content": config.require("content")})
pulumi.export("path", f.id)
pulumi.export("size", f.size)
"#;

#[test]
fn a_python_dynamic_provider_creates_updates_replaces_and_deletes() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, PROGRAM);
    let files = w.scratch.dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    let dir = files.to_str().unwrap();
    w.run(&["config", "set", "dir", dir]);
    w.run(&["config", "set", "name", "a.txt"]);
    w.run(&["config", "set", "content", "hello"]);

    let preview = w.run(&["preview"]);
    assert!(preview.contains("+ 2 to create"), "{preview}");
    assert!(!files.join("a.txt").exists(), "a preview created the file");

    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 2 created"), "{up}");
    assert_eq!(
        std::fs::read_to_string(files.join("a.txt")).unwrap(),
        "hello"
    );
    assert_eq!(w.run(&["stack", "output", "size"]).trim(), "5");
    let state = w.state();
    assert!(
        state.contains("pulumi:providers:pulumi-python::default"),
        "{state}"
    );
    // The serialized provider is secret: its ciphertext is in the state.
    let created = note(&w);
    assert_eq!(created["type"], "pulumi-python:dynamic:Resource");
    assert!(
        created["inputs"]["__provider"]["ciphertext"].is_string(),
        "{created}"
    );

    let again = w.run(&["up", "--yes"]);
    assert!(again.contains("2 unchanged"), "{again}");

    w.run(&["config", "set", "content", "hello, world"]);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("~ 1 updated"), "{up}");
    assert_eq!(
        std::fs::read_to_string(files.join("a.txt")).unwrap(),
        "hello, world"
    );
    assert_eq!(w.run(&["stack", "output", "size"]).trim(), "12");

    // Drift: refresh reads the file back through the provider's read.
    std::fs::write(files.join("a.txt"), "changed by hand").unwrap();
    w.run(&["refresh", "--yes"]);
    assert_eq!(note(&w)["outputs"]["content"], "changed by hand");
    assert_eq!(note(&w)["outputs"]["size"], 15);

    w.run(&["config", "set", "name", "b.txt"]);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+-1 replaced"), "{up}");
    assert!(
        !files.join("a.txt").exists(),
        "the replaced file is still there"
    );
    assert_eq!(
        std::fs::read_to_string(files.join("b.txt")).unwrap(),
        "hello, world"
    );

    let destroy = w.run(&["destroy", "--yes"]);
    assert!(destroy.contains("- 2 deleted"), "{destroy}");
    assert!(!files.join("b.txt").exists(), "destroy left the file");
}

/// The dynamic resource `note` in the stack's state.
fn note(w: &PythonWorld) -> serde_json::Value {
    let cp: serde_json::Value = serde_json::from_str(&w.state()).unwrap();
    cp["checkpoint"]["latest"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::note"))
        .cloned()
        .unwrap()
}

/// An error raised by the provider's code reaches the user with the
/// provider's own message, the operation fails, and the state keeps what
/// completed.
#[test]
fn a_failing_python_dynamic_provider_reports_its_error() {
    let Some(venv) = venv() else { return };
    let program = r#"
import pulumi
from pulumi.dynamic import Resource, ResourceProvider

class Broken(ResourceProvider):
    def create(self, props):
        raise RuntimeError("the quota is exhausted (from the dynamic provider)")

class Thing(Resource):
    def __init__(self, name, opts=None):
        super().__init__(Broken(), name, {}, opts)

pet = pulumi.CustomResource("random:index/randomPet:RandomPet", "pet", {"length": 2, "id": None})
Thing("thing", pulumi.ResourceOptions(depends_on=[pet]))
"#;
    let w = PythonWorld::new(&venv, program);
    let all = w.fails(&["up", "--yes"]);
    assert!(
        all.contains("the quota is exhausted (from the dynamic provider)"),
        "{all}"
    );
    assert!(w.state().contains("randomPet:RandomPet::pet"));
    assert!(!w.state().contains("::thing\""));
}

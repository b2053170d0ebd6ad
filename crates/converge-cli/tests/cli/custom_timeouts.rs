//! Custom timeouts through the `converge` binary with the published Python
//! SDK: all four recorded in the state as Pulumi records them (seconds,
//! as numbers, under `customTimeouts`); `read` bounds a refresh's Read of
//! a dynamic provider that never answers in time; a timeout that is not a
//! duration is refused at registration, naming its key, with the last
//! good state unchanged.

use crate::common;

use common::python::{venv, PythonWorld};

const PROGRAM: &str = r#"
import time
import pulumi
from pulumi import CustomTimeouts, ResourceOptions
from pulumi.dynamic import CreateResult, ReadResult, Resource, ResourceProvider

class SlowReads(ResourceProvider):
    def create(self, props):
        return CreateResult(id_="slow-1", outs=props)

    def read(self, id, props):
        time.sleep(3600)
        return ReadResult(id_=id, outs=props)

class Slow(Resource):
    def __init__(self, name, opts=None):
        super().__init__(SlowReads(), name, {"v": "1"}, opts)

timeouts = pulumi.Config().get("timeouts") or "ok"
if timeouts == "ok":
    pet_timeouts = CustomTimeouts(create="5m", update="1h30m", delete="90s", read="30s")
else:
    pet_timeouts = CustomTimeouts(create="5m", read=timeouts)
pulumi.CustomResource("random:index/randomPet:RandomPet", "pet", {"length": 2, "id": None},
                      ResourceOptions(custom_timeouts=pet_timeouts))
Slow("slow", ResourceOptions(custom_timeouts=CustomTimeouts(read="1s")))
"#;

/// The exported `customTimeouts` of the resource named `name`.
fn exported_timeouts(w: &PythonWorld, name: &str) -> serde_json::Value {
    let export: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "export"])).expect("stack export is JSON");
    export["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
        .unwrap_or_else(|| panic!("no {name} in {export:#}"))["customTimeouts"]
        .clone()
}

#[test]
fn python_custom_timeouts_are_recorded_and_honoured() {
    let Some(venv) = venv() else { return };
    let w = PythonWorld::new(&venv, PROGRAM);
    w.run(&["up", "--yes"]);
    assert_eq!(
        exported_timeouts(&w, "pet"),
        serde_json::json!({"create": 300, "update": 5400, "delete": 90, "read": 30})
    );
    assert_eq!(
        exported_timeouts(&w, "slow"),
        serde_json::json!({"read": 1})
    );
    let state = w.state();

    // The refresh reads `slow`, whose provider never answers in time.
    let out = w.fails(&["refresh", "--yes"]);
    assert!(
        out.contains(
            "refresh of urn:pulumi:dev::pyproj::pulumi-python:dynamic:Resource::slow timed out"
        ) && out.contains("customTimeouts.read (1s)"),
        "{out}"
    );
    assert_eq!(w.state(), state, "a failed refresh changed the state");

    // Not a duration: refused at registration, naming the key.
    w.run(&["config", "set", "timeouts", "soon"]);
    let out = w.fails(&["up", "--yes"]);
    assert!(
        out.contains("customTimeouts.read: \"soon\" is not a duration"),
        "{out}"
    );
    assert_eq!(w.state(), state, "a refused registration changed the state");
}

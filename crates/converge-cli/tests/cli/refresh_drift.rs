//! End to end: refresh tells drift from normalisation (seed 004), through
//! `converge` with the test plugin (whose Diff takes `size` without regard
//! to case) and a built-in provider. An object changed outside Converge
//! shows as the refresh step with its keys and, with `--diff`, the desired
//! value → the refreshed one; a cloud answering a normalised form shows no
//! change, though the state records it. `--preview-only` changes nothing.

use crate::common;

use serde_json::Value;

const PROGRAM: &str = "name: demo
runtime: yaml
resources:
  thing:
    type: convergetest:Thing
    properties:
      value: hello
      size: small
  note:
    type: converge:index:File
    properties:
      path: ${pulumi.cwd}/note.txt
      content: hello
";

struct World {
    scratch: common::Scratch,
    bin: std::path::PathBuf,
}

impl World {
    fn deployed() -> World {
        let scratch = common::Scratch::new(PROGRAM);
        let bin = common::convergetest_bin_dir(scratch.dir.path());
        let w = World { scratch, bin };
        w.run(&["stack", "init", "dev"]);
        w.run(&["up", "--yes"]);
        w
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

    fn cloud_file(&self) -> std::path::PathBuf {
        self.scratch.dir.path().join("cloud.json")
    }

    /// Changes the thing's `key` in the cloud, behind Converge's back.
    fn edit_thing(&self, key: &str, value: &str) {
        let mut cloud: Value =
            serde_json::from_str(&std::fs::read_to_string(self.cloud_file()).unwrap()).unwrap();
        for object in cloud["objects"].as_object_mut().unwrap().values_mut() {
            object["properties"][key] = Value::from(value);
        }
        std::fs::write(self.cloud_file(), cloud.to_string()).unwrap();
    }

    fn state(&self) -> String {
        std::fs::read_to_string(self.scratch.backend.join(".pulumi/stacks/demo/dev.json")).unwrap()
    }

    fn thing(&self) -> Value {
        let state: Value = serde_json::from_str(&self.state()).unwrap();
        state["checkpoint"]["latest"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["type"] == "convergetest:index:Thing")
            .unwrap()
            .clone()
    }
}

/// The line of `name`'s finished step (not a "…ing..." progress line).
fn line_of<'a>(out: &'a str, name: &str) -> Option<&'a str> {
    out.lines()
        .find(|l| l.contains(&format!(" {name} ")) && !l.ends_with("..."))
}

#[test]
fn a_normalised_answer_is_no_change_but_is_recorded() {
    let w = World::deployed();
    w.edit_thing("size", "SMALL");
    let before = w.state();
    let p = w.run(&["refresh", "--preview-only", "--expect-no-changes"]);
    assert!(line_of(&p, "thing").is_none(), "{p}");
    assert_eq!(w.state(), before, "--preview-only changed the state");

    let out = w.run(&["refresh", "--yes", "--expect-no-changes"]);
    assert!(
        line_of(&out, "thing").is_some_and(|l| l.ends_with(" thing unchanged")),
        "{out}"
    );
    assert_eq!(w.thing()["outputs"]["size"], "SMALL");
    // And the next update has nothing to do: normalisation is not drift.
    w.run(&["preview", "--expect-no-changes"]);
}

#[test]
fn drift_shows_the_refresh_step_with_its_keys_and_values() {
    let w = World::deployed();
    w.edit_thing("value", "edited");
    std::fs::write(w.scratch.project.join("note.txt"), "changed").unwrap();
    let before = w.state();

    let p = w.run(&["refresh", "--preview-only"]);
    let thing = line_of(&p, "thing").unwrap_or_else(|| panic!("{p}"));
    assert!(thing.contains("[diff: ~value]"), "{p}");
    let note = line_of(&p, "note").unwrap_or_else(|| panic!("{p}"));
    assert!(note.contains("[diff: ~content]"), "{p}");
    let p = w.run(&["refresh", "--preview-only", "--diff"]);
    assert!(p.contains("~ value: \"hello\" => \"edited\""), "{p}");
    assert!(p.contains("~ content: \"hello\" => \"changed\""), "{p}");
    assert_eq!(w.state(), before, "--preview-only changed the state");
    let out = w.converge(&["refresh", "--preview-only", "--expect-no-changes"]);
    assert_eq!(out.status.code(), Some(255));

    let out = w.run(&["refresh", "--yes"]);
    // Drift counts as an update, as Pulumi's refresh summary has it.
    assert!(out.contains("~ 2 updated"), "{out}");
    assert_eq!(w.thing()["outputs"]["value"], "edited");
    // The program still says "hello": the next update puts it back.
    let p = w.run(&["preview"]);
    assert!(
        line_of(&p, "thing").is_some_and(|l| l.contains("update")),
        "{p}"
    );
}

#[test]
fn an_object_gone_from_the_cloud_counts_as_deleted() {
    let w = World::deployed();
    let mut cloud: Value =
        serde_json::from_str(&std::fs::read_to_string(w.cloud_file()).unwrap()).unwrap();
    cloud["objects"].as_object_mut().unwrap().clear();
    std::fs::write(w.cloud_file(), cloud.to_string()).unwrap();

    let preview: Value =
        serde_json::from_str(&w.run(&["refresh", "--preview-only", "--json"])).unwrap();
    assert_eq!(preview["changeSummary"]["delete"], 1, "{preview}");
    let out = w.run(&["refresh", "--yes"]);
    assert!(out.contains("- 1 deleted"), "{out}");
    assert!(
        out.contains(" -  convergetest:index:Thing thing deleted"),
        "{out}"
    );
    let state: Value = serde_json::from_str(&w.state()).unwrap();
    let resources = state["checkpoint"]["latest"]["resources"]
        .as_array()
        .unwrap();
    assert!(
        !resources
            .iter()
            .any(|r| r["type"] == "convergetest:index:Thing"),
        "{state}"
    );
}

//! Every resource option of Pulumi YAML through `converge`, one test
//! each: the option as a YAML program writes it, what the state records,
//! and what it changes in a deployment. The resources are the built-in
//! `command:local:Command`s, whose create, update and delete commands
//! append a line to `log` in the project, so that the test sees which
//! steps ran and in what order.

use crate::common;

use serde_json::Value;

use common::Scratch;

const HEAD: &str = "name: opts\nruntime: yaml\n";
const COMMAND: &str = "command:local:Command";

/// A command resource named `name` whose create and delete each log a
/// line, with `extra` (YAML lines, indented for `properties:`) and
/// `options` (YAML lines, indented for `options:`).
fn logged(name: &str, extra: &str, options: &str) -> String {
    let mut out = format!(
        "  {name}:\n    type: {COMMAND}\n    properties:\n      \
         create: echo create-{name} >> log\n      \
         delete: echo delete-{name} >> log\n"
    );
    for line in extra.lines().filter(|l| !l.is_empty()) {
        out.push_str(&format!("      {line}\n"));
    }
    if !options.is_empty() {
        out.push_str("    options:\n");
        for line in options.lines().filter(|l| !l.is_empty()) {
            out.push_str(&format!("      {line}\n"));
        }
    }
    out
}

fn program(resources: &[String]) -> String {
    format!("{HEAD}resources:\n{}", resources.concat())
}

struct World {
    scratch: Scratch,
}

impl World {
    fn new(text: &str) -> World {
        let w = World {
            scratch: Scratch::new(text),
        };
        w.run(&["stack", "init", "dev"]);
        w
    }

    fn write(&self, text: &str) {
        std::fs::write(self.scratch.project.join("Pulumi.yaml"), text).unwrap();
    }

    /// `converge args…`, which must succeed; its stdout.
    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.scratch.command("pw"), args)
    }

    /// `converge args…`, which must fail; its stdout and stderr.
    fn fails(&self, args: &[&str]) -> String {
        common::failure_of(self.scratch.command("pw"), args)
    }

    /// The lines the commands logged since the last call.
    fn log(&self) -> Vec<String> {
        let path = self.scratch.project.join("log");
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        text.lines().map(str::to_owned).collect()
    }

    fn state_file(&self) -> Vec<u8> {
        std::fs::read(self.scratch.backend.join(".pulumi/stacks/opts/dev.json")).unwrap()
    }

    /// The stack's resources (`stack export`).
    fn resources(&self) -> Vec<Value> {
        let export: Value = serde_json::from_str(&self.run(&["stack", "export"])).unwrap();
        export["deployment"]["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The exported resource named `name` (any type).
    fn resource(&self, name: &str) -> Value {
        self.resources()
            .into_iter()
            .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
            .unwrap_or_else(|| panic!("no resource {name}"))
    }
}

/// The position of `line` in `log`.
fn at(log: &[String], line: &str) -> usize {
    log.iter()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("{line} not in {log:?}"))
}

#[test]
fn additional_secret_outputs_encrypts_the_named_outputs() {
    // The output (42 then the word) is not in the inputs' text.
    let w = World::new(&format!(
        "{HEAD}resources:\n  c:\n    type: {COMMAND}\n    properties:\n      \
         create: echo $((6*7))-answer\n    options:\n      \
         additionalSecretOutputs: [stdout]\n"
    ));
    w.run(&["up", "--yes"]);
    let c = w.resource("c");
    assert_eq!(c["additionalSecretOutputs"], serde_json::json!(["stdout"]));
    assert!(c["outputs"]["stdout"]["ciphertext"].is_string(), "{c}");
    let state = String::from_utf8(w.state_file()).unwrap();
    assert!(!state.contains("42-answer"), "{state}");
}

#[test]
fn aliases_carry_a_renamed_resource_over() {
    let w = World::new(&program(&[logged("old", "", "")]));
    w.run(&["up", "--yes"]);
    assert_eq!(w.log(), ["create-old"]);
    let id = w.resource("old")["id"].clone();
    w.write(&program(&[logged(
        "new",
        "",
        "aliases: [\"urn:pulumi:dev::opts::command:local:Command::old\"]",
    )
    .replace("create-new", "create-old")
    .replace("delete-new", "delete-old")]));
    w.run(&["up", "--yes"]);
    assert!(w.log().is_empty(), "nothing created or deleted");
    let new = w.resource("new");
    assert_eq!(new["id"], id);
    assert!(
        w.resources()
            .iter()
            .all(|r| !r["urn"].as_str().unwrap().ends_with("::old")),
        "the old URN is gone"
    );
    // An alias that is not a URN is refused where it is written.
    w.write(&program(&[logged("new", "", "aliases: [old]")]));
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("Pulumi.yaml:") && e.contains("options.aliases"),
        "{e}"
    );
}

/// The object form Pulumi YAML documents (`- name: old`): a rename, and a
/// move into a component with `noParent`, carried over without a create
/// or a delete; a field it does not know is an error where it is written.
#[test]
fn alias_objects_carry_renames_and_moves_over() {
    let group = logged("group", "", "");
    let w = World::new(&program(&[
        group.clone(),
        logged("old", "", ""),
        logged("loose", "", ""),
    ]));
    w.run(&["up", "--yes"]);
    assert_eq!(w.log().len(), 3);
    let old_id = w.resource("old")["id"].clone();
    let loose_id = w.resource("loose")["id"].clone();
    let text = format!(
        "{HEAD}resources:\n{group}{}{}",
        logged("new", "", "aliases:\n  - name: old")
            .replace("create-new", "create-old")
            .replace("delete-new", "delete-old"),
        logged(
            "loose",
            "",
            "parent: ${group}\naliases:\n  - noParent: true"
        ),
    );
    w.write(&text);
    let up = w.run(&["up", "--yes"]);
    assert!(w.log().is_empty(), "nothing created or deleted: {up}");
    assert_eq!(w.resource("new")["id"], old_id);
    let loose = w.resource("loose");
    assert_eq!(loose["id"], loose_id);
    assert!(
        loose["urn"]
            .as_str()
            .unwrap()
            .contains("command:local:Command$command:local:Command::loose"),
        "{loose}"
    );
    assert!(w.run(&["preview"]).contains("unchanged"));

    w.write(&text.replace("- name: old", "- nmae: old"));
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("Pulumi.yaml:")
            && e.contains("an alias has no field 'nmae' (did you mean 'name'?)"),
        "{e}"
    );
}

#[test]
fn custom_timeouts_are_recorded_and_bad_ones_refused() {
    let w = World::new(&program(&[logged(
        "c",
        "",
        "customTimeouts:\n  create: 5m\n  update: 1h30m\n  delete: 90s",
    )]));
    w.run(&["up", "--yes"]);
    assert_eq!(
        w.resource("c")["customTimeouts"],
        serde_json::json!({"create": 300, "update": 5400, "delete": 90})
    );
    let before = w.state_file();
    w.write(&program(&[logged(
        "c",
        "",
        "customTimeouts:\n  create: soon",
    )]));
    let e = w.fails(&["up", "--yes"]);
    assert!(e.contains("customTimeouts") && e.contains("create"), "{e}");
    assert_eq!(w.state_file(), before);
}

#[test]
fn delete_before_replace_deletes_first() {
    let w = World::new(&program(&[
        logged("dbr", "triggers: [1]", "deleteBeforeReplace: true"),
        logged("cbd", "triggers: [1]", ""),
    ]));
    w.run(&["up", "--yes"]);
    w.log();
    w.write(&program(&[
        logged("dbr", "triggers: [2]", "deleteBeforeReplace: true"),
        logged("cbd", "triggers: [2]", ""),
    ]));
    w.run(&["up", "--yes"]);
    let log = w.log();
    assert!(at(&log, "delete-dbr") < at(&log, "create-dbr"), "{log:?}");
    assert!(at(&log, "create-cbd") < at(&log, "delete-cbd"), "{log:?}");
}

#[test]
fn deleted_with_skips_the_delete_of_a_resource_deleted_with_another() {
    let w = World::new(&program(&[
        logged("owner", "", ""),
        logged("inside", "", "deletedWith: ${owner}"),
    ]));
    w.run(&["up", "--yes"]);
    let owner = w.resource("owner")["urn"].clone();
    assert_eq!(w.resource("inside")["deletedWith"], owner);
    w.log();
    w.run(&["destroy", "--yes"]);
    assert_eq!(w.log(), ["delete-owner"]);
}

#[test]
fn depends_on_orders_and_records_the_dependency() {
    let w = World::new(&program(&[
        logged("second", "", "dependsOn: [\"${first}\"]"),
        logged("first", "", ""),
    ]));
    w.run(&["up", "--yes"]);
    assert_eq!(w.log(), ["create-first", "create-second"]);
    let first = w.resource("first")["urn"].clone();
    assert_eq!(
        w.resource("second")["dependencies"],
        serde_json::json!([first])
    );
    w.run(&["destroy", "--yes"]);
    assert_eq!(w.log(), ["delete-second", "delete-first"]);
}

#[test]
fn hide_diffs_names_the_change_without_its_values() {
    let w = World::new(&program(&[logged(
        "c",
        "environment: {WORD: first-value}",
        "hideDiffs: [environment]",
    )]));
    w.run(&["up", "--yes"]);
    assert_eq!(
        w.resource("c")["hideDiff"],
        serde_json::json!(["environment"])
    );
    w.write(&program(&[logged(
        "c",
        "environment: {WORD: second-value}",
        "hideDiffs: [environment]",
    )]));
    let preview = w.run(&["preview", "--diff"]);
    assert!(preview.contains("environment: (diff hidden)"), "{preview}");
    assert!(
        !preview.contains("first-value") && !preview.contains("second-value"),
        "{preview}"
    );
    // Only the display: the update happens.
    w.run(&["up", "--yes"]);
    assert_eq!(
        w.resource("c")["inputs"]["environment"]["WORD"],
        "second-value"
    );
}

#[test]
fn ignore_changes_keeps_the_recorded_value() {
    let w = World::new(&program(&[logged(
        "c",
        "environment: {WORD: one}",
        "ignoreChanges: [environment]",
    )]));
    w.run(&["up", "--yes"]);
    w.log();
    w.write(&program(&[logged(
        "c",
        "environment: {WORD: two}",
        "ignoreChanges: [environment]",
    )]));
    w.run(&["preview", "--expect-no-changes"]);
    w.run(&["up", "--yes", "--expect-no-changes"]);
    assert!(w.log().is_empty());
    let c = w.resource("c");
    assert_eq!(c["inputs"]["environment"]["WORD"], "one");
    assert_eq!(c["ignoreChanges"], serde_json::json!(["environment"]));
}

#[test]
fn import_adopts_an_existing_object() {
    // The built-in random provider's import ID is the value itself.
    let text = format!(
        "{HEAD}resources:\n  token:\n    type: random:RandomString\n    properties:\n      \
         length: 11\n    options:\n      import: s3cretValue\noutputs:\n  value: ${{token.result}}\n"
    );
    let w = World::new(&text);
    let preview = w.run(&["preview"]);
    assert!(preview.contains("import"), "{preview}");
    w.run(&["up", "--yes"]);
    let token = w.resource("token");
    assert_eq!(token["id"], "s3cretValue");
    assert_eq!(token["importID"], "s3cretValue");
    // Once imported, the option changes nothing.
    w.run(&["up", "--yes", "--expect-no-changes"]);
    // Inputs that differ from the object need a replacement: refused.
    let w = World::new(&text.replace("length: 11", "length: 4"));
    let e = w.fails(&["up", "--yes"]);
    assert!(e.contains("token"), "{e}");
    assert!(
        w.resources()
            .iter()
            .all(|r| r["type"] != "random:index/randomString:RandomString"),
        "nothing imported"
    );
}

#[test]
fn parent_nests_the_urn_and_is_recorded() {
    let w = World::new(&program(&[
        logged("outer", "", ""),
        logged("inner", "", "parent: ${outer}"),
    ]));
    w.run(&["up", "--yes"]);
    let outer = w.resource("outer")["urn"].clone();
    let inner = w.resource("inner");
    assert_eq!(inner["parent"], outer);
    assert_eq!(
        inner["urn"],
        format!("urn:pulumi:dev::opts::{COMMAND}${COMMAND}::inner")
    );
}

#[test]
fn protect_refuses_the_delete_and_keeps_the_state() {
    let w = World::new(&program(&[logged("c", "", "protect: true")]));
    w.run(&["up", "--yes"]);
    assert_eq!(w.resource("c")["protect"], true);
    w.log();
    let before = w.state_file();
    let e = w.fails(&["destroy", "--yes"]);
    assert!(e.contains("is protected"), "{e}");
    assert!(w.log().is_empty());
    assert_eq!(w.state_file(), before);
    // Removing the option and updating lifts it.
    w.write(&program(&[logged("c", "", "")]));
    w.run(&["up", "--yes"]);
    w.run(&["destroy", "--yes"]);
    assert_eq!(w.log(), ["delete-c"]);
}

#[test]
fn provider_and_providers_pick_an_explicit_provider() {
    let prov = "  prov:\n    type: pulumi:providers:command\n";
    let w = World::new(&program(&[
        prov.to_owned(),
        logged("one", "", "provider: ${prov}"),
        logged("two", "", "providers: [\"${prov}\"]"),
        logged("three", "", ""),
    ]));
    w.run(&["up", "--yes"]);
    let prov = w.resource("prov");
    let reference = format!(
        "{}::{}",
        prov["urn"].as_str().unwrap(),
        prov["id"].as_str().unwrap()
    );
    assert_eq!(w.resource("one")["provider"], reference);
    assert_eq!(w.resource("two")["provider"], reference);
    let three = w.resource("three")["provider"].as_str().unwrap().to_owned();
    assert!(
        three.starts_with("urn:pulumi:dev::opts::pulumi:providers:command::default"),
        "{three}"
    );
    // A resource that is not a provider is refused as one.
    w.write(&program(&[
        logged("one", "", ""),
        logged("two", "", "provider: ${one}"),
    ]));
    let e = w.fails(&["preview"]);
    assert!(e.contains("not a provider"), "{e}");
}

#[test]
fn replace_on_changes_replaces_instead_of_updating() {
    let w = World::new(&program(&[
        logged(
            "r",
            "environment: {WORD: one}",
            "replaceOnChanges: [environment]",
        ),
        logged("u", "environment: {WORD: one}", ""),
    ]));
    w.run(&["up", "--yes"]);
    let (r, u) = (w.resource("r")["id"].clone(), w.resource("u")["id"].clone());
    w.log();
    w.write(&program(&[
        logged(
            "r",
            "environment: {WORD: two}",
            "replaceOnChanges: [environment]",
        ),
        logged("u", "environment: {WORD: two}", ""),
    ]));
    w.run(&["up", "--yes"]);
    let log = w.log();
    assert!(at(&log, "create-r") < at(&log, "delete-r"), "{log:?}");
    assert!(!log.contains(&"delete-u".to_owned()), "{log:?}");
    assert_ne!(w.resource("r")["id"], r);
    assert_eq!(w.resource("u")["id"], u);
}

#[test]
fn replace_with_follows_the_named_resource_replacement() {
    let w = World::new(&program(&[
        logged("a", "triggers: [1]", ""),
        logged("b", "", "replaceWith: [\"${a}\"]"),
        logged("c", "", ""),
    ]));
    w.run(&["up", "--yes"]);
    let a = w.resource("a")["urn"].clone();
    assert_eq!(w.resource("b")["replaceWith"], serde_json::json!([a]));
    w.log();
    w.write(&program(&[
        logged("a", "triggers: [2]", ""),
        logged("b", "", "replaceWith: [\"${a}\"]"),
        logged("c", "", ""),
    ]));
    w.run(&["up", "--yes"]);
    let mut log = w.log();
    log.sort();
    assert_eq!(log, ["create-a", "create-b", "delete-a", "delete-b"]);
}

#[test]
fn replacement_trigger_replaces_when_it_changes() {
    let text = |v: &str| {
        format!(
            "{HEAD}config:\n  trigger: {{default: {v}}}\nresources:\n{}",
            logged("t", "", "replacementTrigger: ${trigger}")
        )
    };
    let w = World::new(&text("one"));
    w.run(&["up", "--yes"]);
    assert_eq!(w.resource("t")["replacementTrigger"], "one");
    w.log();
    w.run(&["up", "--yes", "--expect-no-changes"]);
    w.write(&text("two"));
    w.run(&["up", "--yes"]);
    assert_eq!(w.log(), ["create-t", "delete-t"]);
    assert_eq!(w.resource("t")["replacementTrigger"], "two");
}

#[test]
fn retain_on_delete_leaves_the_object() {
    let w = World::new(&program(&[
        logged("kept", "", "retainOnDelete: true"),
        logged("gone", "", ""),
    ]));
    w.run(&["up", "--yes"]);
    assert_eq!(w.resource("kept")["retainOnDelete"], true);
    w.log();
    w.run(&["destroy", "--yes"]);
    assert_eq!(w.log(), ["delete-gone"]);
    assert!(w.resources().is_empty());
}

#[test]
fn version_and_plugin_download_url_are_checked() {
    // The version picks the default provider of that version (the
    // built-in provider answers for any); the URL must be a string.
    let w = World::new(&program(&[logged(
        "c",
        "",
        "version: 1.0.0\npluginDownloadURL: https://example.com/plugins",
    )]));
    w.run(&["up", "--yes"]);
    let provider = w.resource("c")["provider"].as_str().unwrap().to_owned();
    assert!(
        provider.starts_with("urn:pulumi:dev::opts::pulumi:providers:command::default_1_0_0::"),
        "{provider}"
    );
    assert_eq!(w.resource("default_1_0_0")["inputs"]["version"], "1.0.0");
    w.write(&program(&[logged("c", "", "pluginDownloadURL: [1]")]));
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("options.pluginDownloadURL must be a string"),
        "{e}"
    );
    w.write(&program(&[logged("c", "", "version: [1]")]));
    let e = w.fails(&["preview"]);
    assert!(e.contains("options.version must be a string"), "{e}");
    w.write(&program(&[logged("c", "", "protects: true")]));
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("unknown resource option 'protects'; did you mean 'protect'?"),
        "{e}"
    );
}

#[test]
fn get_reads_an_existing_object_without_managing_it() {
    let w = World::new(&format!(
        "{HEAD}resources:\n  token:\n    type: random:RandomString\n    get:\n      \
         id: s3cretValue\noutputs:\n  value: ${{token.result}}\n"
    ));
    w.run(&["up", "--yes"]);
    let token = w.resource("token");
    assert_eq!(token["external"], true, "{token}");
    assert_eq!(token["id"], "s3cretValue");
    let out: Value = serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(out["value"], "s3cretValue");
    // Reading is not owning: destroy forgets it.
    w.run(&["destroy", "--yes"]);
    assert!(w.resources().is_empty());
}

/// An update that fails after a replacement leaves the original to
/// delete; the next preview shows that deletion and the next update makes
/// it, counts it and records it in the history, as Pulumi's pending
/// deletes are: never a deletion nobody was shown.
#[test]
fn an_original_left_by_a_failed_update_is_shown_counted_and_recorded_when_deleted() {
    let text = |trigger: &str, check: &str| {
        program(&[
            logged("r", &format!("triggers: [\"{trigger}\"]"), ""),
            format!(
                "  after:\n    type: {COMMAND}\n    properties:\n      \
                 create: {check} ${{r.stdout}}\n"
            ),
        ])
    };
    let w = World::new(&text("1", "true"));
    w.run(&["up", "--yes"]);
    assert_eq!(w.log(), ["create-r"]);
    w.write(&text("2", "false"));
    w.fails(&["up", "--yes"]);
    assert_eq!(w.log(), ["create-r"], "the replacement, then the failure");
    w.write(&text("2", "true"));

    let preview = w.run(&["preview"]);
    assert!(
        preview.contains("completing deletion from previous update")
            && preview.contains(&format!(" -  {COMMAND} r delete"))
            && preview.contains("- 1 to delete"),
        "{preview}"
    );
    assert!(w.log().is_empty(), "a preview deletes nothing");
    let up = w.run(&["up", "--yes"]);
    assert!(
        up.contains(&format!(" -  {COMMAND} r deleted")) && up.contains("- 1 deleted"),
        "{up}"
    );
    assert_eq!(w.log(), ["delete-r"]);
    let history: Value = serde_json::from_str(&w.run(&["stack", "history", "--json"])).unwrap();
    assert_eq!(history[0]["resourceChanges"]["delete"], 1, "{history}");
    assert_eq!(
        w.resources()
            .iter()
            .filter(|r| r["urn"].as_str().unwrap().ends_with("::r"))
            .count(),
        1
    );
}

/// `a` replaced delete-before-replace when `v` changes; `b` takes `a`'s
/// output in its triggers, so it is replaced with `a`.
const DBR_CHAIN: &str = "name: dbr
runtime: yaml
config:
  v: {type: string}
resources:
  a:
    type: command:local:Command
    properties:
      create: echo create-a >> log
      delete: echo delete-a >> log
      triggers: [\"${v}\"]
    options:
      deleteBeforeReplace: true
  b:
    type: command:local:Command
    properties:
      create: echo create-b >> log
      delete: echo delete-b >> log
      triggers: [\"${a.stdout}\"]
";

/// `up --target a` that would delete `b` (a dependent replaced with it,
/// delete-before-replace) without recreating it is refused before any
/// command runs, the state as it was; with `--target-dependents`, both
/// are replaced, `b` deleted first.
#[test]
fn a_targeted_delete_before_replace_refuses_to_delete_an_untargeted_dependent() {
    let w = World::new(DBR_CHAIN);
    w.run(&["config", "set", "v", "1"]);
    w.run(&["up", "--yes"]);
    assert_eq!(w.log(), ["create-a", "create-b"]);
    let before = w.run(&["stack", "export"]);
    w.run(&["config", "set", "v", "2"]);
    let a = "urn:pulumi:dev::dbr::command:local:Command::a";
    let out = w.fails(&["up", "--yes", "--target", a]);
    assert!(
        out.contains(
            "::b, which depends on it and would be replaced with it, is not part of this update"
        ) && out.contains("--target-dependents"),
        "{out}"
    );
    assert!(w.log().is_empty());
    assert_eq!(w.run(&["stack", "export"]), before);
    w.run(&["up", "--yes", "--target", a, "--target-dependents"]);
    assert_eq!(w.log(), ["delete-b", "delete-a", "create-a", "create-b"]);
}

//! `stack history`, `stack rename` and `stack tag` through the `converge`
//! binary, the same scenario on each backend: the file backend, an object
//! store (a real S3 server on 127.0.0.1, started by scripts/test) and the
//! state service (`converge serve`). `--json` outputs are checked against
//! Pulumi's shapes (field names and types).

use crate::common;

use serde_json::Value;

const PROGRAM: &str = "name: meta
runtime: yaml
description: stack metadata test
resources:
  pet:
    type: random:index/randomPet:RandomPet
    properties:
      length: 2
  suffix:
    type: random:index/randomString:RandomString
    properties:
      length: 4
      special: false
    options:
      dependsOn:
        - ${pet}
outputs:
  name: ${pet.id}-${suffix.result}
";

struct World {
    scratch: common::Scratch,
    backend: common::Backend,
}

impl World {
    fn cmd(&self, args: &[&str]) -> std::process::Command {
        common::converge_on(&self.scratch, &self.backend, args)
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.cmd(&[]), args)
    }

    fn fails(&self, args: &[&str]) -> String {
        common::failure_of(self.cmd(&[]), args)
    }

    fn json(&self, args: &[&str]) -> Value {
        let out = self.run(args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
    }
}

/// RFC 5424 with milliseconds, as Pulumi prints history times.
fn is_pulumi_time(v: &Value) -> bool {
    let Some(s) = v.as_str() else { return false };
    s.len() == "2024-01-02T03:04:05.000Z".len()
        && s.as_bytes()[10] == b'T'
        && s.as_bytes()[19] == b'.'
        && s.ends_with('Z')
}

/// Every field of Pulumi's `updateInfoJSON`, with its type.
fn check_update_shape(u: &Value) {
    let o = u
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {u}"));
    for key in o.keys() {
        assert!(
            [
                "version",
                "kind",
                "startTime",
                "message",
                "environment",
                "config",
                "result",
                "endTime",
                "resourceChanges"
            ]
            .contains(&key.as_str()),
            "a field Pulumi does not print: {key}"
        );
    }
    assert!(u["version"].is_i64(), "{u}");
    assert!(u["kind"].is_string(), "{u}");
    assert!(is_pulumi_time(&u["startTime"]), "{u}");
    assert!(is_pulumi_time(&u["endTime"]), "{u}");
    assert!(u["message"].is_string(), "{u}");
    assert!(u["environment"].is_object(), "{u}");
    assert!(u["result"].is_string(), "{u}");
    for (_, n) in u["resourceChanges"].as_object().unwrap() {
        assert!(n.is_i64(), "{u}");
    }
    for (_, c) in u["config"].as_object().unwrap() {
        assert!(c["secret"].is_boolean(), "{c}");
        assert!(c.get("value").is_none_or(Value::is_string), "{c}");
    }
}

fn scenario(backend: common::Backend) {
    let w = World {
        scratch: common::Scratch::new(PROGRAM),
        backend,
    };
    w.run(&["stack", "init", "dev"]);
    w.run(&["config", "set", "--secret", "token", "s3cret-value"]);
    w.run(&["config", "set", "plain", "x"]);
    w.run(&["up", "--yes", "-m", "first"]);
    w.run(&["up", "--yes"]);

    // History, newest first, in Pulumi's JSON shape; secrets blind.
    let text = w.run(&["stack", "history", "--json"]);
    assert!(!text.contains("s3cret-value"), "{text}");
    let history: Value = serde_json::from_str(&text).unwrap();
    let updates = history.as_array().unwrap();
    assert_eq!(updates.len(), 2, "{text}");
    updates.iter().for_each(check_update_shape);
    assert_eq!(updates[0]["version"], 2);
    assert_eq!(updates[1]["version"], 1);
    assert_eq!(updates[1]["kind"], "update");
    assert_eq!(updates[1]["message"], "first");
    assert_eq!(updates[1]["result"], "succeeded");
    assert_eq!(updates[1]["resourceChanges"]["create"], 3);
    assert_eq!(updates[0]["resourceChanges"]["same"], 3);
    assert_eq!(
        updates[0]["config"]["meta:token"],
        serde_json::json!({ "secret": true })
    );
    assert_eq!(
        updates[0]["config"]["meta:plain"],
        serde_json::json!({ "value": "x", "secret": false })
    );
    let shown = w.json(&["stack", "history", "--json", "--show-secrets"]);
    assert_eq!(shown[0]["config"]["meta:token"]["value"], "s3cret-value");

    let human = w.run(&["stack", "history"]);
    for line in [
        "Version: 2",
        "UpdateKind: update",
        "Status: succeeded",
        "Message: first",
        "+3-0~0 0 Updated",
        "+0-0~0 3 Updated",
    ] {
        assert!(human.contains(line), "{line:?} in\n{human}");
    }
    assert!(
        human.find("Version: 2") < human.find("Version: 1"),
        "{human}"
    );
    // --full-dates: the date as Go prints it.
    let full = w.run(&["stack", "history", "--full-dates"]);
    let updated = full
        .lines()
        .find(|l| l.starts_with("+3-0~0 0 Updated "))
        .unwrap_or_else(|| panic!("{full}"));
    let date = updated
        .trim_start_matches("+3-0~0 0 Updated ")
        .split(" took ")
        .next()
        .unwrap();
    assert_eq!(date.len(), "2026-11-24 18:47:28 +0000 UTC".len(), "{date}");
    assert!(
        date.ends_with(" +0000 UTC") && date.as_bytes()[10] == b' ',
        "{date}"
    );
    let page2 = w.run(&["stack", "history", "--page-size", "1", "--page", "2"]);
    assert!(
        page2.contains("Version: 1") && !page2.contains("Version: 2"),
        "{page2}"
    );
    let page3 = w.run(&["stack", "history", "--page-size", "1", "--page", "3"]);
    assert_eq!(page3, "No stack updates found on page '3'\n");

    // Tags: Pulumi's built-in ones, and the user's.
    let tags = w.json(&["stack", "tag", "ls", "--json"]);
    assert_eq!(tags["pulumi:project"], "meta");
    assert_eq!(tags["pulumi:runtime"], "yaml");
    assert_eq!(tags["pulumi:description"], "stack metadata test");
    w.run(&["stack", "tag", "set", "env", "dev"]);
    w.run(&["stack", "tag", "set", "owner", "team-a"]);
    assert_eq!(w.run(&["stack", "tag", "get", "env"]), "dev\n");
    let ls = w.run(&["stack", "tag", "ls"]);
    assert!(ls.starts_with("NAME"), "{ls}");
    assert!(ls.contains("owner") && ls.contains("team-a"), "{ls}");
    // Pulumi's rules for names and values.
    for (name, value, expected) in [
        ("has space", "x", "may only contain alphanumerics"),
        (&"n".repeat(41)[..], "x", "is too long (max length 40"),
        (
            "big",
            &"v".repeat(257)[..],
            "value is too long (max length 256",
        ),
    ] {
        let err = w.fails(&["stack", "tag", "set", name, value]);
        assert!(err.contains(expected), "{name}: {err}");
    }
    w.run(&["stack", "tag", "set", "a-b_c.d:e", &"v".repeat(256)]);
    w.run(&["stack", "tag", "rm", "a-b_c.d:e"]);
    w.run(&["stack", "tag", "rm", "env"]);
    let missing = w.fails(&["stack", "tag", "get", "env"]);
    assert!(missing.contains("stack tag 'env' not found"), "{missing}");
    let refused = w.fails(&["stack", "tag", "rm", "pulumi:project"]);
    assert!(refused.contains("Pulumi.yaml"), "{refused}");
    // Tags survive other commands.
    w.run(&["refresh", "--yes"]);
    assert_eq!(w.run(&["stack", "tag", "get", "owner"]), "team-a\n");

    // A name that exists is refused, and nothing changes.
    w.run(&["stack", "init", "taken"]);
    w.run(&["stack", "select", "dev"]);
    let before = w.run(&["stack", "export"]);
    let taken = w.fails(&["stack", "rename", "taken"]);
    assert!(taken.contains("already exists"), "{taken}");
    assert_eq!(w.run(&["stack", "export"]), before);
    assert!(w.scratch.project.join("Pulumi.dev.yaml").exists());

    // Rename: every URN moves, history, tags and config follow, the new
    // name is selected, and the next `up` changes nothing.
    let renamed = w.run(&["stack", "rename", "prod"]);
    assert_eq!(renamed, "Renamed dev to prod\n");
    assert!(!w.scratch.project.join("Pulumi.dev.yaml").exists());
    assert!(w.scratch.project.join("Pulumi.prod.yaml").exists());
    let ls = w.run(&["stack", "ls"]);
    assert!(ls.contains("prod*") && !ls.contains("dev"), "{ls}");
    let export = w.run(&["stack", "export"]);
    assert!(!export.contains("urn:pulumi:dev::"), "{export}");
    let deployment: Value = serde_json::from_str(&export).unwrap();
    let resources = deployment["deployment"]["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 4);
    for r in resources {
        assert!(
            r["urn"]
                .as_str()
                .unwrap()
                .starts_with("urn:pulumi:prod::meta::"),
            "{r}"
        );
    }
    assert_eq!(
        resources[0]["urn"],
        "urn:pulumi:prod::meta::pulumi:pulumi:Stack::meta-prod"
    );
    let up = w.run(&["up", "--yes", "--expect-no-changes"]);
    assert!(up.contains("3 unchanged"), "{up}");
    let history = w.json(&["stack", "history", "--json"]);
    let kinds: Vec<&str> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["update", "refresh", "update", "update"]);
    assert_eq!(history[0]["version"], 4);
    assert_eq!(w.run(&["stack", "tag", "get", "owner"]), "team-a\n");
    assert_eq!(
        w.run(&["config", "get", "token"]),
        "s3cret-value\n",
        "the configuration followed the stack"
    );
    let missing = w.fails(&["stack", "history", "-s", "dev"]);
    assert!(missing.contains("no stack named dev"), "{missing}");

    // `stack select --create` still creates and selects.
    w.run(&["stack", "select", "--create", "staging"]);
    assert!(w.run(&["stack", "ls"]).contains("staging*"));
    assert_eq!(
        w.run(&["stack", "history"]),
        "Stack has never been updated\n"
    );
}

#[test]
fn history_rename_and_tags_on_the_file_backend() {
    scenario(common::Backend::File);
}

#[test]
fn history_rename_and_tags_on_s3() {
    let Some(url) = converge_backend::conformance::test_s3_url("stack-meta") else {
        return;
    };
    scenario(common::Backend::Url(url));
}

#[test]
fn history_rename_and_tags_on_the_service() {
    let data = tempfile::tempdir().unwrap();
    let service =
        common::service::Service::start(data.path(), &data.path().join("db"), "127.0.0.1:0");
    scenario(common::Backend::Service(service));
}

//! What a Pulumi user sees and scripts against, through the `converge`
//! binary running a Python program with the published `pulumi` SDK: the
//! operation headers, `--diff` with old → new values (secrets masked
//! unless `--show-secrets`), the Duration line, `--expect-no-changes` with
//! Pulumi's messages and exit code 255, `refresh --preview-only`,
//! `--refresh` and `options.refresh: always`, relative times in `stack ls`.

use crate::common;

use common::python::{venv, PythonWorld as World};

const PROGRAM: &str = r#"
import os
import pulumi

cfg = pulumi.Config()
pet = pulumi.CustomResource("random:index/randomPet:RandomPet", "pet", {
    "length": cfg.get_int("length") or 2,
    "keepers": {
        "env": cfg.get("env") or "dev",
        "team": "web",
        "token": cfg.require_secret("token"),
    },
    "id": None,
})
motd = pulumi.CustomResource("converge:index:File", "motd", {
    "path": os.path.join(os.getcwd(), "motd.txt"),
    "content": "hello",
    "permissions": "0644",
})
pulumi.export("pet", pet.id)
"#;

/// `converge args…`: its exit code and its stdout and stderr together.
fn exit_of(w: &World, args: &[&str]) -> (Option<i32>, String) {
    let out = w.cmd(args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

fn motd(w: &World) -> std::path::PathBuf {
    w.scratch.project.join("motd.txt")
}

#[test]
fn diffs_show_old_and_new_values_and_secrets_stay_masked() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PROGRAM);
    w.run(&["config", "set", "--secret", "token", "t0ps3cret"]);

    let up = w.run(&["up", "--yes"]);
    let order = [
        "Previewing update (dev):",
        "Updating (dev):",
        "Outputs:",
        "Resources:",
        "Duration: ",
    ];
    let mut from = 0;
    for s in order {
        let at = up[from..].find(s);
        from += at.unwrap_or_else(|| panic!("no {s:?} after byte {from} in\n{up}"));
    }

    w.run(&["config", "set", "env", "prod"]);
    w.run(&["config", "set", "--secret", "token", "n3wsecret"]);
    let p = w.run(&["preview"]);
    assert!(p.contains("pet replace [diff: ~keepers]"), "{p}");
    // The stack's outputs that change, before the counts.
    let outputs = p.find("\nOutputs:\n      ~ pet: \"").expect(&p);
    assert!(p[outputs..].contains("=> [unknown]\n\nResources:"), "{p}");

    let p = w.run(&["preview", "--diff"]);
    for line in [
        "      ~ keepers: {",
        "          ~ env  : \"dev\" => \"prod\"",
        "          ~ token: [secret] => [secret]",
        "      (replaced because of changes to: keepers)",
    ] {
        assert!(p.contains(line), "no {line:?} in\n{p}");
    }
    assert!(!p.contains("t0ps3cret") && !p.contains("n3wsecret"), "{p}");
    let p = w.run(&["preview", "--diff", "--show-secrets"]);
    assert!(p.contains("~ token: \"t0ps3cret\" => \"n3wsecret\""), "{p}");

    // `up --diff` shows the same detail under the finished step.
    let up = w.run(&["up", "--yes", "--diff"]);
    let updating = &up[up.find("Updating (dev):").unwrap()..];
    assert!(updating.contains("~ env  : \"dev\" => \"prod\""), "{up}");
    assert!(!up.contains("n3wsecret"), "{up}");

    let ls = w.run(&["stack", "ls"]);
    let row = ls.lines().find(|l| l.starts_with("dev*")).unwrap();
    assert!(row.contains(" ago") || row.contains(" now "), "{ls}");
    assert!(!row.contains("T0") && !row.contains("Z "), "{ls}");
    // Outside a project, every stack of the backend, as Pulumi lists them.
    let outside = w.scratch.dir.path().to_str().unwrap().to_owned();
    let ls = w.run(&["-C", &outside, "stack", "ls"]);
    assert!(ls.contains("pyproj/dev "), "{ls}");
}

#[test]
fn expect_no_changes_fails_with_pulumis_message_and_code() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PROGRAM);
    w.run(&["config", "set", "--secret", "token", "a"]);

    let (code, out) = exit_of(&w, &["preview", "--expect-no-changes"]);
    assert_eq!(code, Some(255), "{out}");
    assert!(
        out.contains("error: no changes were expected but changes were proposed"),
        "{out}"
    );

    // `up` applies, then reports that changes occurred.
    let (code, out) = exit_of(&w, &["up", "--yes", "--expect-no-changes"]);
    assert_eq!(code, Some(255), "{out}");
    assert!(
        out.contains("error: no changes were expected but changes occurred"),
        "{out}"
    );
    assert!(w.state().contains("randomPet:RandomPet::pet"));

    for args in [
        &["preview", "--expect-no-changes"][..],
        &["up", "--yes", "--expect-no-changes"],
        &["refresh", "--yes", "--expect-no-changes"],
    ] {
        let (code, out) = exit_of(&w, args);
        assert_eq!(code, Some(0), "{args:?}: {out}");
    }

    // Drift: a refresh that finds it fails the check.
    std::fs::write(motd(&w), "edited").unwrap();
    let (code, out) = exit_of(&w, &["refresh", "--yes", "--expect-no-changes"]);
    assert_eq!(code, Some(255), "{out}");
    assert!(out.contains("changes occurred"), "{out}");
}

#[test]
fn refresh_previews_and_refresh_before_an_operation() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PROGRAM);
    w.run(&["config", "set", "--secret", "token", "a"]);
    w.run(&["up", "--yes"]);
    let before = w.run(&["stack", "export"]);

    std::fs::write(motd(&w), "edited").unwrap();
    let p = w.run(&["refresh", "--preview-only", "--diff"]);
    assert!(p.starts_with("Previewing refresh (dev):"), "{p}");
    assert!(p.contains("~ content: \"hello\" => \"edited\""), "{p}");
    assert!(!p.contains("Refreshing (dev):"), "{p}");
    let (code, out) = exit_of(&w, &["refresh", "--preview-only", "--expect-no-changes"]);
    assert_eq!(code, Some(255), "{out}");
    assert!(out.contains("changes were proposed"), "{out}");
    // `preview --refresh` sees the drift and plans to undo it; neither
    // preview changes the state.
    // One preview, as Pulumi shows it: the refresh's steps first.
    let p = w.run(&["preview", "--refresh"]);
    assert_eq!(p.matches("Previewing update (dev):").count(), 1, "{p}");
    assert!(!p.contains("Previewing refresh"), "{p}");
    assert_eq!(p.matches("Resources:").count(), 1, "{p}");
    assert!(p.contains("motd update"), "{p}");
    assert_eq!(w.run(&["stack", "export"]), before);

    // Nothing is refreshed into the state before the update is confirmed.
    let out = w.fails(&["up", "--refresh"]);
    assert!(
        out.contains("--yes or --skip-preview must be passed"),
        "{out}"
    );
    assert!(!out.contains("Refreshing"), "{out}");
    assert_eq!(w.run(&["stack", "export"]), before);

    // Without a refresh the drift goes unseen…
    w.run(&["up", "--yes"]);
    assert_eq!(std::fs::read_to_string(motd(&w)).unwrap(), "edited");
    // …with `options.refresh: always` every update refreshes first.
    let project = w.scratch.project.join("Pulumi.yaml");
    let mut yaml = std::fs::read_to_string(&project).unwrap();
    yaml.push_str("options:\n  refresh: always\n");
    std::fs::write(&project, yaml).unwrap();
    let up = w.run(&["up", "--yes"]);
    for header in ["Previewing update (dev):", "Updating (dev):"] {
        assert_eq!(up.matches(header).count(), 1, "{header:?} in\n{up}");
    }
    assert!(
        !up.contains("refresh (dev)") && !up.contains("Refreshing (dev)"),
        "{up}"
    );
    assert_eq!(up.matches("Resources:").count(), 2, "{up}");
    let mut from = 0;
    for s in [
        "Previewing update (dev):",
        "motd update",
        "Updating (dev):",
        "motd refreshing...",
        "motd refreshed",
        "motd updated",
    ] {
        let at = up[from..].find(s);
        from += at.unwrap_or_else(|| panic!("no {s:?} after byte {from} in\n{up}"));
    }
    assert_eq!(std::fs::read_to_string(motd(&w)).unwrap(), "hello");

    // In sync: each `refreshing...` line is closed, and the event log has
    // one prelude and one summary for the preview and for the update.
    let log = w.scratch.dir.path().join("events.jsonl");
    let again = w.run(&["up", "--yes", "--event-log", log.to_str().unwrap()]);
    let refreshing: Vec<&str> = again
        .lines()
        .filter_map(|l| l.strip_suffix(" refreshing..."))
        .collect();
    assert!(!refreshing.is_empty(), "{again}");
    for line in refreshing {
        let resource = line.trim_start_matches([' ', '~']);
        assert!(
            again.contains(&format!("    {resource} unchanged")),
            "{resource:?} left open in\n{again}"
        );
    }
    let events = std::fs::read_to_string(&log).unwrap();
    for kind in ["\"preludeEvent\"", "\"summaryEvent\""] {
        assert_eq!(events.matches(kind).count(), 2, "{kind} in\n{events}");
    }

    // --preview-only belongs to refresh and destroy.
    let out = w.fails(&["up", "--yes", "--preview-only"]);
    assert!(
        out.contains("`converge up` has no --preview-only flag"),
        "{out}"
    );
    let out = w.fails(&["refresh", "--yes", "--replace", "**motd"]);
    assert!(
        out.contains("`converge refresh` has no --replace flag"),
        "{out}"
    );
    let p = w.run(&["destroy", "--preview-only"]);
    assert!(
        p.contains("Previewing destroy (dev):") && p.contains("to delete"),
        "{p}"
    );
    assert!(w.state().contains("converge:index:File::motd"));
}

#[test]
fn an_operations_error_is_printed_once() {
    let Some(venv) = venv() else { return };
    let w = World::new(
        &venv,
        "import pulumi\npulumi.CustomResource('random:index/randomPet:RandomPet', 'pet', {'length': 'two', 'id': None})\n",
    );
    let (code, out) = exit_of(&w, &["up", "--yes", "--skip-preview"]);
    assert_eq!(code, Some(255), "{out}");
    let errors = out.lines().filter(|l| l.starts_with("error: ")).count();
    assert_eq!(errors, 1, "{out}");
    assert!(
        out.contains("Resources:") && out.contains("Duration: "),
        "{out}"
    );
}

#[test]
fn a_programs_exception_is_shown_once() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, "import pulumi\nraise ValueError('boom here')\n");
    let (code, out) = exit_of(&w, &["up", "--yes"]);
    assert_eq!(code, Some(255), "{out}");
    assert_eq!(out.matches("ValueError: boom here").count(), 1, "{out}");
    assert!(
        out.contains("error: the program failed (its error is shown above)"),
        "{out}"
    );
    assert!(!out.contains("Resources:"), "{out}");
}

/// A program that fails never registers the stack's outputs: a preview
/// does not show them as deleted, and a failed update prints no Outputs
/// section; the recorded outputs stay as they were.
#[test]
fn a_failed_programs_outputs_are_left_alone() {
    let Some(venv) = venv() else { return };
    let w = World::new(
        &venv,
        "import pulumi\npulumi.export('greeting', 'hello')\npulumi.export('n', 3)\n",
    );
    let up = w.run(&["up", "--yes"]);
    assert!(
        up.contains("Outputs:\n    greeting: \"hello\"\n    n       : 3\n"),
        "{up}"
    );
    std::fs::write(
        w.scratch.project.join("__main__.py"),
        "import pulumi\nraise ValueError('boom here')\n",
    )
    .unwrap();
    for args in [&["preview"][..], &["up", "--yes", "--skip-preview"]] {
        let (code, out) = exit_of(&w, args);
        assert_eq!(code, Some(255), "{out}");
        assert!(out.contains("ValueError: boom here"), "{out}");
        assert!(!out.contains("Outputs:"), "{args:?}: {out}");
    }
    let outputs = w.run(&["stack", "output", "--json"]);
    let outputs: serde_json::Value = serde_json::from_str(&outputs).unwrap();
    assert_eq!(outputs, serde_json::json!({"greeting": "hello", "n": 3}));
}

/// A resource exported as an output (`pulumi.export("pet", pet)`): the
/// SDK marks it `@isPulumiResource` and leaves its outputs unknown in a
/// preview only. A preview of an unchanged program shows no change of
/// that output, as Pulumi's display shows none.
#[test]
fn an_exported_resource_is_no_output_change_in_a_preview() {
    let Some(venv) = venv() else { return };
    let w = World::new(
        &venv,
        r#"
import pulumi
pet = pulumi.CustomResource("random:index/randomPet:RandomPet", "pet", {"length": 2, "id": None, "separator": None})
pulumi.export("pet", pet)
pulumi.export("nested", {"pets": [pet]})
"#,
    );
    let first = w.run(&["preview"]);
    assert!(!first.contains("@isPulumiResource"), "{first}");
    w.run(&["up", "--yes"]);
    let again = w.run(&["preview", "--expect-no-changes"]);
    assert!(!again.contains("@isPulumiResource"), "{again}");
    assert!(!again.contains("Outputs:"), "no output changes: {again}");
}

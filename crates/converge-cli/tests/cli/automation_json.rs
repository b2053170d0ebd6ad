//! `preview --json` and `up --json` in Pulumi's shape (the preview
//! digest), checked field by field against what Pulumi documents and the
//! Automation API SDKs parse, and snapshotted whole.

use std::collections::BTreeSet;

use crate::common;

const PROJECT: &str = r#"name: digest
runtime: yaml
config:
  length:
    type: integer
resources:
  word:
    type: random:index/randomString:RandomString
    properties:
      length: ${length}
      special: false
outputs:
  word: ${word.result}
"#;

/// The keys Pulumi's preview digest has, at the top and in a step and a
/// diagnostic.
const DIGEST_KEYS: &[&str] = &[
    "config",
    "steps",
    "diagnostics",
    "duration",
    "changeSummary",
    "maybeCorrupt",
];
const STEP_KEYS: &[&str] = &[
    "op",
    "urn",
    "provider",
    "oldState",
    "newState",
    "diffReasons",
    "replaceReasons",
    "detailedDiff",
];
const DIAGNOSTIC_KEYS: &[&str] = &["urn", "prefix", "message", "severity"];
/// Pulumi's step operations (`OpType` in the SDKs).
const OPS: &[&str] = &[
    "same",
    "create",
    "update",
    "delete",
    "replace",
    "create-replacement",
    "delete-replaced",
    "read",
    "read-replacement",
    "refresh",
    "discard",
    "discard-replaced",
    "remove-pending-replace",
    "import",
    "import-replacement",
];

fn keys(v: &serde_json::Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

/// Checks `digest` against Pulumi's shape; returns it with its duration
/// (which varies) replaced, for a snapshot.
fn checked(text: &str) -> String {
    let mut digest: serde_json::Value = serde_json::from_str(text).unwrap();
    let allowed = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>();
    assert!(keys(&digest).is_subset(&allowed(DIGEST_KEYS)), "{digest}");
    assert!(
        digest["duration"].is_u64(),
        "duration is Go's nanoseconds: {digest}"
    );
    for (op, n) in digest["changeSummary"].as_object().unwrap() {
        assert!(OPS.contains(&op.as_str()) && n.is_u64(), "{op}: {n}");
    }
    for step in digest["steps"].as_array().unwrap() {
        assert!(keys(step).is_subset(&allowed(STEP_KEYS)), "{step}");
        assert!(OPS.contains(&step["op"].as_str().unwrap()), "{step}");
        assert!(step["urn"]
            .as_str()
            .unwrap()
            .starts_with("urn:pulumi:dev::digest::"));
        for state in ["oldState", "newState"] {
            if let Some(s) = step.get(state) {
                assert_eq!(s["urn"], step["urn"], "{step}");
                assert!(s["type"].is_string() && s["custom"].is_boolean(), "{step}");
            }
        }
        if let Some(reasons) = step.get("diffReasons") {
            assert!(reasons.as_array().unwrap().iter().all(|r| r.is_string()));
        }
        if let Some(detail) = step.get("detailedDiff") {
            for d in detail.as_object().unwrap().values() {
                assert!(
                    d["diffKind"].is_string() && d["inputDiff"].is_boolean(),
                    "{d}"
                );
            }
        }
    }
    for d in digest
        .get("diagnostics")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
    {
        assert!(keys(d).is_subset(&allowed(DIAGNOSTIC_KEYS)), "{d}");
    }
    digest["duration"] = "[duration]".into();
    // IDs are random (the word's is its result; the provider's a UUID).
    // Numbered in the order they first appear.
    // A default provider has no step of its own: its ID is seen in the
    // provider references (`<provider URN>::<ID>`).
    let mut ids: Vec<String> = Vec::new();
    let mut seen = |id: &str| {
        if id != "04da6b54-80e4-46f7-96ec-b56ff0331ba9" && !ids.iter().any(|i| i == id) {
            ids.push(id.to_owned());
        }
    };
    for step in digest["steps"].as_array().unwrap() {
        let reference_id = |v: &serde_json::Value| {
            v.as_str()
                .and_then(|r| r.rsplit_once("::"))
                .map(|(_, id)| id.to_owned())
        };
        if let Some(id) = reference_id(&step["provider"]) {
            seen(&id);
        }
        for state in ["oldState", "newState"] {
            if let Some(s) = step.get(state) {
                if let Some(id) = s["id"].as_str() {
                    seen(id);
                }
                if let Some(id) = reference_id(&s["provider"]) {
                    seen(&id);
                }
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&digest).unwrap();
    for (i, id) in ids.iter().enumerate() {
        text = text.replace(id.as_str(), &format!("[id-{i}]"));
    }
    text
}

#[test]
fn preview_json_is_pulumis_preview_digest() {
    let scratch = common::Scratch::new(PROJECT);
    let run = |args: &[&str]| common::stdout_of(scratch.command("pw"), args);
    run(&["stack", "init", "dev"]);
    run(&["config", "set", "length", "6"]);
    run(&["config", "set", "--secret", "token", "do-not-show"]);
    let create = run(&["preview", "--json"]);
    assert!(!create.contains("do-not-show"), "{create}");
    insta::assert_snapshot!("preview_json_create", checked(&create));
    // `up --json`, as Pulumi's: the preview's digest, then the update's
    // events streamed one a line (secrets masked), ending with the
    // `cancelEvent`.
    let up = run(&["up", "--yes", "--json"]);
    assert!(!up.contains("do-not-show"), "{up}");
    let mut values = serde_json::Deserializer::from_str(&up).into_iter::<serde_json::Value>();
    let digest = values.next().unwrap().unwrap();
    assert_eq!(
        digest["changeSummary"],
        serde_json::json!({"create": 2}),
        "{up}"
    );
    let events: Vec<serde_json::Value> = values.map(Result::unwrap).collect();
    let lines: Vec<&str> = up.lines().rev().take(events.len()).collect();
    assert!(
        lines.iter().all(|l| l.starts_with("{\"sequence\":")),
        "{up}"
    );
    assert!(events[0].get("preludeEvent").is_some(), "{up}");
    let summary = events.iter().find_map(|e| e.get("summaryEvent")).unwrap();
    assert_eq!(
        summary["resourceChanges"],
        serde_json::json!({"create": 2}),
        "{up}"
    );
    assert!(events.last().unwrap().get("cancelEvent").is_some(), "{up}");
    let sequences: Vec<u64> = events
        .iter()
        .map(|e| e["sequence"].as_u64().unwrap())
        .collect();
    assert!(
        sequences.windows(2).all(|w| w[1] == w[0] + 1),
        "{sequences:?}"
    );
    // --skip-preview: the events alone.
    let again = run(&["up", "--skip-preview", "--json"]);
    assert!(
        again.lines().all(|l| l.starts_with("{\"sequence\":")),
        "{again}"
    );
    run(&["config", "set", "length", "9"]);
    insta::assert_snapshot!(
        "preview_json_replace",
        checked(&run(&["preview", "--json"]))
    );
}

/// A preview that fails (a provider's Check refuses an input) prints its
/// digest with the error among its `diagnostics`, as tools that parse
/// `--json` read it, and exits non-zero.
#[test]
fn a_failed_previews_digest_carries_the_error() {
    let scratch = common::Scratch::new(
        "name: digest\nruntime: yaml\nresources:\n  r:\n    type: random:RandomInteger\n    properties:\n      min: 10\n      max: 1\n",
    );
    common::stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    let out = scratch
        .command("pw")
        .args(["preview", "--json"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let digest = checked(&String::from_utf8(out.stdout).unwrap());
    let digest: serde_json::Value = serde_json::from_str(&digest).unwrap();
    let errors: Vec<&serde_json::Value> = digest["diagnostics"]
        .as_array()
        .unwrap_or_else(|| panic!("no diagnostics: {digest}"))
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{digest}");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains("min (10) must be at most max (1)"),
        "{message}"
    );
}

//! What the operation commands print besides the events: the stack's
//! outputs and their planned changes, `--json`'s documents, the
//! duration.

use std::collections::BTreeMap;

use anyhow::{Context as _, Result};
use converge_engine::OperationResult;
use converge_language::yaml::ConfigValue;
use converge_model::{PropertyMap, PropertyValue};
use converge_state::Snapshot;

use crate::commands::stack::output::{display_json, stack_outputs};
use crate::display::say;

pub(crate) fn print_lines(lines: &[String]) {
    for line in lines {
        say(line);
    }
}

/// A duration as Go prints one rounded to seconds, as Pulumi shows it:
/// `3s`, `1m5s`, `2h0m1s`.
pub(crate) fn go_duration(d: std::time::Duration) -> String {
    let secs = d.as_secs() + u64::from(d.subsec_millis() >= 500);
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    match (h, m) {
        (0, 0) => format!("{s}s"),
        (0, _) => format!("{m}m{s}s"),
        _ => format!("{h}h{m}m{s}s"),
    }
}

pub(super) fn print_outputs(snapshot: &Snapshot, reveal: bool) {
    let outputs = stack_outputs(Some(snapshot));
    if outputs.is_empty() {
        return;
    }
    say("\nOutputs:");
    let width = outputs.keys().map(String::len).max().unwrap_or(0);
    let style = crate::display::values::ValueStyle {
        show_secrets: reveal,
    };
    for (k, v) in &outputs {
        for line in crate::display::values::output_lines(&format!("{k:<width$}"), v, style) {
            say(line);
        }
    }
}

/// A preview's changes to the stack's outputs, old → new, as Pulumi shows
/// them before the resource counts.
pub(super) fn print_output_changes(base: &Snapshot, planned: &Snapshot, reveal: bool) {
    let style = crate::display::values::ValueStyle {
        show_secrets: reveal,
    };
    let old = stack_outputs(Some(base));
    let planned: PropertyMap = stack_outputs(Some(planned))
        .iter()
        .map(|(k, v)| (k.clone(), exported_resource_as_shown(old.get(k), v)))
        .collect();
    let lines = crate::display::values::diff_lines(&old, &planned, style);
    if lines.is_empty() {
        return;
    }
    say("\nOutputs:");
    for line in lines {
        say(line);
    }
}

/// A resource the program exported (`pulumi.export("bucket", bucket)`),
/// as a preview shows it: the SDKs mark such an object with
/// `@isPulumiResource` in a preview only, and its outputs not known yet
/// are unknown. As Pulumi's display does, the marker is left out and an
/// unknown property shows its last value (or nothing), so an unchanged
/// resource is not a change of the output.
fn exported_resource_as_shown(old: Option<&PropertyValue>, new: &PropertyValue) -> PropertyValue {
    match new {
        PropertyValue::Object(map) => {
            let old_map = match old {
                Some(PropertyValue::Object(m)) => Some(m),
                _ => None,
            };
            let is_resource = map.get(RESOURCE_MARKER) == Some(&PropertyValue::Bool(true));
            let mut out = PropertyMap::new();
            for (k, v) in map.iter() {
                let was = old_map.and_then(|m| m.get(k));
                if is_resource && k == RESOURCE_MARKER {
                    continue;
                }
                if is_resource && *v == PropertyValue::Unknown {
                    if let Some(was) = was {
                        out.insert(k.clone(), was.clone());
                    }
                    continue;
                }
                out.insert(k.clone(), exported_resource_as_shown(was, v));
            }
            PropertyValue::Object(out)
        }
        PropertyValue::Array(items) => {
            let old_items = match old {
                Some(PropertyValue::Array(items)) => Some(items),
                _ => None,
            };
            PropertyValue::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| exported_resource_as_shown(old_items.and_then(|o| o.get(i)), v))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// The key the SDKs add, in a preview, to a resource exported as an output.
const RESOURCE_MARKER: &str = "@isPulumiResource";

/// `--json`: the operation in Pulumi's digest shape
/// (`converge_engine::events::digest`).
pub(super) fn print_digest(digest: Option<&serde_json::Value>) -> Result<()> {
    let digest = digest.context("the operation's events ended before its summary")?;
    say(serde_json::to_string_pretty(digest)?);
    Ok(())
}

/// `import --json`: Converge's own shape.
pub(crate) fn print_json(result: &OperationResult, reveal: bool) -> Result<()> {
    let outputs: serde_json::Map<String, serde_json::Value> = stack_outputs(Some(&result.snapshot))
        .iter()
        .map(|(k, v)| (k.clone(), display_json(v, reveal)))
        .collect();
    let out = serde_json::json!({
        "steps": result.plan.steps,
        "changeSummary": result.plan.counts().into_iter().map(|(k, v)| (k.as_str().to_owned(), v)).collect::<std::collections::BTreeMap<_, _>>(),
        "outputs": outputs,
        "error": result.error.as_ref().map(ToString::to_string),
    });
    say(serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// The configuration a `preludeEvent` shows: each value's text, a
/// secret's as `[secret]` unless revealed.
pub(super) fn prelude_config(
    config: &BTreeMap<String, ConfigValue>,
    reveal: bool,
) -> BTreeMap<String, String> {
    config
        .iter()
        .map(|(k, v)| {
            let text = if v.secret && !reveal {
                "[secret]".to_owned()
            } else {
                v.value.clone()
            };
            (k.clone(), text)
        })
        .collect()
}

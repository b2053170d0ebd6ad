//! `--json` of an operation in Pulumi's shape: the preview digest, folded
//! from the same Pulumi events the event log carries
//! ([`super::pulumi::PulumiEvents`]) — `config`, `steps` (each with `op`,
//! `urn`, `provider`, `oldState`, `newState`, `diffReasons`,
//! `detailedDiff`), `diagnostics` (`urn`, `prefix`, `message`,
//! `severity`; a policy violation is one, its message naming the
//! enforcement level, the pack and the policy), `changeSummary` and `duration` (nanoseconds, as Go's
//! `time.Duration` marshals).

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{json, Map, Value};

/// The digest of one operation, built event by event.
#[derive(Debug)]
pub struct Digest {
    config: BTreeMap<String, String>,
    steps: Vec<Value>,
    diagnostics: Vec<Value>,
    change_summary: Value,
    started: Instant,
    duration_ns: Option<u128>,
    suppress_stack_outputs: bool,
}

impl Digest {
    /// A digest of an operation run with `config` (secrets as the caller
    /// shows them).
    pub fn new(config: BTreeMap<String, String>) -> Digest {
        Digest {
            config,
            steps: Vec::new(),
            diagnostics: Vec::new(),
            change_summary: json!({}),
            started: Instant::now(),
            duration_ns: None,
            suppress_stack_outputs: false,
        }
    }

    /// With `suppress`, the root stack's steps show no inputs or outputs
    /// (`--suppress-outputs`: the stack's outputs may hold sensitive
    /// values that are not secrets).
    pub fn suppressing_stack_outputs(mut self, suppress: bool) -> Digest {
        self.suppress_stack_outputs = suppress;
        self
    }

    /// Takes in one Pulumi event (`sequence`, `timestamp`, one kind).
    pub fn add(&mut self, event: &Value) {
        if let Some(body) = event
            .get("resOutputsEvent")
            .or_else(|| event.get("resOpFailedEvent"))
        {
            // Default providers' steps are internal: Pulumi's digest
            // leaves them out, as its display does.
            if let Some(metadata) = body.get("metadata").filter(|m| !is_default_provider(m)) {
                let mut step = step(metadata);
                if self.suppress_stack_outputs && is_root_stack(metadata) {
                    for state in ["oldState", "newState"] {
                        if let Some(Value::Object(state)) = step.get_mut(state) {
                            state.insert("inputs".to_owned(), json!({}));
                            state.insert("outputs".to_owned(), json!({}));
                        }
                    }
                }
                self.steps.push(step);
            }
        } else if let Some(d) = event.get("diagnosticEvent") {
            let mut out = Map::new();
            for key in ["urn", "prefix", "message", "severity"] {
                if let Some(v) = d
                    .get(key)
                    .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                {
                    out.insert(key.to_owned(), v.clone());
                }
            }
            self.diagnostics.push(Value::Object(out));
        } else if let Some(p) = event.get("policyEvent") {
            // A violation, as a diagnostic naming its pack and policy.
            let text = |key: &str| p.get(key).and_then(Value::as_str).unwrap_or_default();
            let level = text("enforcementLevel");
            let mut out = Map::new();
            if !text("resourceUrn").is_empty() {
                out.insert("urn".to_owned(), text("resourceUrn").into());
            }
            out.insert(
                "message".to_owned(),
                format!(
                    "[{level}] {}@v{} {}: {}",
                    text("policyPackName"),
                    text("policyPackVersion"),
                    text("policyName"),
                    text("message")
                )
                .into(),
            );
            let severity = if level == "mandatory" {
                "error"
            } else {
                "warning"
            };
            out.insert("severity".to_owned(), severity.into());
            self.diagnostics.push(Value::Object(out));
        } else if let Some(s) = event.get("summaryEvent") {
            self.change_summary = s.get("resourceChanges").cloned().unwrap_or(json!({}));
            self.duration_ns = Some(self.started.elapsed().as_nanos());
        }
    }

    /// The digest as Pulumi's `--json` prints it.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if !self.config.is_empty() {
            out.insert("config".into(), json!(self.config));
        }
        if !self.steps.is_empty() {
            out.insert("steps".into(), Value::Array(self.steps.clone()));
        }
        if !self.diagnostics.is_empty() {
            out.insert("diagnostics".into(), Value::Array(self.diagnostics.clone()));
        }
        let duration = self
            .duration_ns
            .unwrap_or_else(|| self.started.elapsed().as_nanos());
        out.insert(
            "duration".into(),
            json!(u64::try_from(duration).unwrap_or(u64::MAX)),
        );
        out.insert("changeSummary".into(), self.change_summary.clone());
        Value::Object(out)
    }
}

/// One step of the digest from a step event's metadata.
fn step(metadata: &Value) -> Value {
    let mut out = Map::new();
    for (from, to) in [
        ("op", "op"),
        ("urn", "urn"),
        ("provider", "provider"),
        ("old", "oldState"),
        ("new", "newState"),
        ("diffs", "diffReasons"),
        ("detailedDiff", "detailedDiff"),
    ] {
        match metadata.get(from) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(Value::Object(state)) if to.ends_with("State") => {
                // As Pulumi's resource states: empty fields left out.
                let state: Map<String, Value> = state
                    .iter()
                    .filter(|(_, v)| !v.as_str().is_some_and(str::is_empty))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                out.insert(to.to_owned(), Value::Object(state));
            }
            Some(v) => {
                out.insert(to.to_owned(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// A step's metadata is the root stack's (`pulumi:pulumi:Stack`).
fn is_root_stack(metadata: &Value) -> bool {
    metadata.get("type").and_then(Value::as_str) == Some("pulumi:pulumi:Stack")
}

/// A step's metadata names a default provider (`pulumi:providers:<pkg>`
/// named `default…`).
fn is_default_provider(metadata: &Value) -> bool {
    let text = |key: &str| {
        metadata
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let name = text("urn").rsplit("::").next().unwrap_or_default();
    converge_model::is_default_provider(text("type"), name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outputs_event(ty: &str) -> Value {
        json!({"sequence": 1, "timestamp": 0, "resOutputsEvent": {"metadata": {
            "op": "create",
            "urn": format!("urn:pulumi:dev::p::{ty}::x"),
            "type": ty,
            "new": {"type": ty, "inputs": {"a": 1}, "outputs": {"said": "hi"}},
        }}})
    }

    #[test]
    fn suppressed_outputs_leave_the_root_stacks_step_empty_and_no_other() {
        let mut d = Digest::new(BTreeMap::new()).suppressing_stack_outputs(true);
        d.add(&outputs_event("pulumi:pulumi:Stack"));
        d.add(&outputs_event("random:index/randomPet:RandomPet"));
        let steps = d.to_json()["steps"].clone();
        assert_eq!(steps[0]["newState"]["outputs"], json!({}));
        assert_eq!(steps[0]["newState"]["inputs"], json!({}));
        assert_eq!(steps[1]["newState"]["outputs"], json!({"said": "hi"}));

        let mut shown = Digest::new(BTreeMap::new());
        shown.add(&outputs_event("pulumi:pulumi:Stack"));
        assert_eq!(
            shown.to_json()["steps"][0]["newState"]["outputs"],
            json!({"said": "hi"})
        );
    }
}

//! The engine's events in Pulumi's wire form: `EngineEvent` JSON objects
//! (`sequence`, `timestamp` and one of `preludeEvent`, `resourcePreEvent`,
//! `resOutputsEvent`, `resOpFailedEvent`, `diagnosticEvent`,
//! `summaryEvent`, `policyEvent`, `policyRemediationEvent`,
//! `policyAnalyzeSummaryEvent`, `cancelEvent`…), as the Automation API SDKs read them
//! from `--event-log` and the web console shows them.
//!
//! [`PulumiEvents`] translates one command's stream of [`EngineEvent`]s:
//! it numbers them from 0 across every operation the command runs (a
//! refresh before an update, a preview before it), opens each step with
//! a `resourcePreEvent` (a step the engine reports only when finished —
//! a Same step, a planned step of a preview — gets one just before its
//! outputs; both events' metadata carry the step's old and new states,
//! its diff and its provider reference) and ends the stream with the `cancelEvent` Pulumi writes last,
//! on which the SDKs stop reading.
//!
//! Property values are written as the checkpoint writes them, each secret
//! as the blinding crypter's `[secret]` unless the command reveals them.

use std::collections::{BTreeMap, HashSet};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use converge_model::{DiffKind, PropertyDiff, PropertyMap, PropertyValue, ResourceState, Urn};
use converge_state::checkpoint::property_map_to_json;
use converge_state::secrets::{BlindingCrypter, SecretsMode};
use serde_json::{json, Map, Value};

use super::{EngineEvent, Severity, StepOp};

/// How events are written.
#[derive(Debug, Clone, Copy, Default)]
pub struct PulumiEventOptions {
    /// Write what secrets hold instead of `[secret]`.
    pub show_secrets: bool,
}

/// One command's event stream in Pulumi's form; see the module comment.
#[derive(Debug)]
pub struct PulumiEvents {
    options: PulumiEventOptions,
    sequence: u64,
    /// Steps whose `resourcePreEvent` went out and whose outputs did not.
    open: HashSet<(StepOp, Urn)>,
    /// When the current operation's first event came.
    operation_start: Option<Instant>,
    /// The current operation plans its steps (a preview).
    planning: bool,
    /// The policy packs of the current operation, name → version, for
    /// its summary's `PolicyPacks`.
    policy_packs: BTreeMap<String, String>,
    /// An error diagnostic of the current operation went out.
    error_reported: bool,
}

impl PulumiEvents {
    pub fn new(options: PulumiEventOptions) -> PulumiEvents {
        PulumiEvents {
            options,
            sequence: 0,
            open: HashSet::new(),
            operation_start: None,
            planning: false,
            policy_packs: BTreeMap::new(),
            error_reported: false,
        }
    }

    /// The `preludeEvent` that opens an operation: its configuration,
    /// `key → value` (secret values as `[secret]` unless revealed, which
    /// the caller decides).
    pub fn prelude(&mut self, config: &BTreeMap<String, String>, planning: bool) -> Value {
        self.operation_start = Some(Instant::now());
        self.planning = planning;
        self.wrap("preludeEvent", json!({ "config": config }))
    }

    /// The events `event` becomes (none, one, or a step's pre event and
    /// its outputs).
    pub fn translate(&mut self, event: &EngineEvent) -> Vec<Value> {
        self.operation_start.get_or_insert_with(Instant::now);
        match event {
            EngineEvent::StepStarted {
                op,
                urn,
                old,
                new,
                diff,
            } => {
                self.open.insert((*op, urn.clone()));
                let metadata = self.metadata(*op, urn, old.as_deref(), new.as_deref(), diff);
                vec![self.wrap(
                    "resourcePreEvent",
                    json!({ "metadata": metadata, "planning": self.planning }),
                )]
            }
            EngineEvent::StepFinished {
                op,
                urn,
                old,
                new,
                diff,
                error,
            } => {
                // A Same step's new state is its old one.
                let old = match op {
                    StepOp::Same => new.as_deref(),
                    _ => old.as_deref(),
                };
                let metadata = self.metadata(*op, urn, old, new.as_deref(), diff);
                let mut out = Vec::new();
                // A refresh that finds the object gone ends as a deletion.
                let opened = self.open.remove(&(*op, urn.clone()))
                    || (*op == StepOp::Delete && self.open.remove(&(StepOp::Refresh, urn.clone())));
                if !opened {
                    out.push(self.wrap(
                        "resourcePreEvent",
                        json!({ "metadata": metadata, "planning": self.planning }),
                    ));
                }
                match error {
                    None => out.push(self.wrap(
                        "resOutputsEvent",
                        json!({ "metadata": metadata, "planning": self.planning }),
                    )),
                    Some(e) => {
                        out.push(self.diagnostic(Severity::Error, Some(urn), e));
                        out.push(self.wrap(
                            "resOpFailedEvent",
                            json!({ "metadata": metadata, "status": 0, "steps": 0 }),
                        ));
                    }
                }
                out
            }
            EngineEvent::Diagnostic {
                severity,
                urn,
                message,
            } => vec![self.diagnostic(*severity, urn.as_ref(), message)],
            EngineEvent::Summary { counts, error } => {
                // A failed operation's error is a diagnostic of its stream
                // (so of `--json`'s digest), as Pulumi's engine reports
                // it, unless a failed step or the program said it already.
                let mut out = Vec::new();
                if let Some(e) = error.as_deref().filter(|_| !self.error_reported) {
                    out.push(self.diagnostic(Severity::Error, None, e));
                }
                self.error_reported = false;
                let seconds = self
                    .operation_start
                    .take()
                    .map(|s| s.elapsed().as_secs())
                    .unwrap_or(0);
                self.open.clear();
                let changes: BTreeMap<&str, usize> = counts
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(op, n)| (op.as_str(), *n))
                    .collect();
                let packs = std::mem::take(&mut self.policy_packs);
                out.push(self.wrap(
                    "summaryEvent",
                    json!({
                        "maybeCorrupt": false,
                        "durationSeconds": seconds,
                        "resourceChanges": changes,
                        "PolicyPacks": packs,
                    }),
                ));
                out
            }
            EngineEvent::PolicyViolation(v) => {
                let mut body = Map::new();
                if let Some(urn) = &v.urn {
                    body.insert("resourceUrn".into(), urn.to_string().into());
                }
                body.insert("message".into(), v.message.clone().into());
                body.insert("color".into(), "never".into());
                body.insert("policyName".into(), v.policy.clone().into());
                body.insert("policyPackName".into(), v.pack.clone().into());
                body.insert("policyPackVersion".into(), v.version.clone().into());
                body.insert("policyPackVersionTag".into(), v.version.clone().into());
                body.insert("enforcementLevel".into(), v.level.as_str().into());
                vec![self.wrap("policyEvent", Value::Object(body))]
            }
            EngineEvent::PolicyRemediation(r) => {
                let body = json!({
                    "resourceUrn": r.urn.to_string(),
                    "color": "never",
                    "policyName": r.policy,
                    "policyPackName": r.pack,
                    "policyPackVersion": r.version,
                    "policyPackVersionTag": r.version,
                    "before": self.properties(&r.before),
                    "after": self.properties(&r.after),
                });
                vec![self.wrap("policyRemediationEvent", body)]
            }
            EngineEvent::PolicyAnalyzeSummary {
                urn,
                pack,
                version,
                passed,
                failed,
            } => {
                let mut body = Map::new();
                if let Some(urn) = urn {
                    body.insert("resourceUrn".into(), urn.to_string().into());
                }
                body.insert("policyPackName".into(), pack.clone().into());
                body.insert("policyPackVersion".into(), version.clone().into());
                body.insert("policyPackVersionTag".into(), version.clone().into());
                if !passed.is_empty() {
                    body.insert("passed".into(), json!(passed));
                }
                if !failed.is_empty() {
                    body.insert("failed".into(), json!(failed));
                }
                vec![self.wrap("policyAnalyzeSummaryEvent", Value::Object(body))]
            }
            EngineEvent::Policies(reports) => {
                for r in reports {
                    self.policy_packs.insert(r.pack.clone(), r.version.clone());
                }
                Vec::new()
            }
        }
    }

    /// The `cancelEvent` that ends the stream.
    pub fn cancel(&mut self) -> Value {
        self.wrap("cancelEvent", json!({}))
    }

    fn diagnostic(&mut self, severity: Severity, urn: Option<&Urn>, message: &str) -> Value {
        self.error_reported |= severity == Severity::Error;
        let severity = match severity {
            Severity::Debug => "debug",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        let mut body = Map::new();
        body.insert("message".into(), Value::String(format!("{message}\n")));
        body.insert("color".into(), Value::String("never".into()));
        body.insert("severity".into(), Value::String(severity.into()));
        if let Some(urn) = urn {
            body.insert("urn".into(), Value::String(urn.to_string()));
        }
        self.wrap("diagnosticEvent", Value::Object(body))
    }

    fn wrap(&mut self, kind: &str, body: Value) -> Value {
        let sequence = self.sequence;
        self.sequence += 1;
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let mut event = Map::new();
        event.insert("sequence".into(), sequence.into());
        event.insert("timestamp".into(), timestamp.into());
        event.insert(kind.into(), body);
        Value::Object(event)
    }

    /// A step's `metadata` (Pulumi's `StepEventMetadata`).
    fn metadata(
        &self,
        op: StepOp,
        urn: &Urn,
        old: Option<&ResourceState>,
        new: Option<&ResourceState>,
        diff: &BTreeMap<String, PropertyDiff>,
    ) -> Value {
        let provider = new
            .or(old)
            .and_then(|s| s.provider.as_ref())
            .map(ToString::to_string)
            .unwrap_or_default();
        let mut keys: Vec<String> = diff.keys().map(|path| top_key(path)).collect();
        keys.dedup();
        let detailed: Map<String, Value> = diff
            .iter()
            .map(|(path, d)| {
                (
                    path.clone(),
                    json!({ "diffKind": diff_kind(d.kind), "inputDiff": d.input_diff }),
                )
            })
            .collect();
        let mut m = Map::new();
        m.insert("op".into(), op.as_str().into());
        m.insert("urn".into(), urn.to_string().into());
        m.insert("type".into(), urn.type_token().into());
        m.insert("provider".into(), provider.into());
        if let Some(old) = old {
            m.insert("old".into(), self.state(old));
        }
        if let Some(new) = new {
            m.insert("new".into(), self.state(new));
        }
        if !keys.is_empty() {
            m.insert("keys".into(), json!(keys));
            m.insert("diffs".into(), json!(keys));
            m.insert("detailedDiff".into(), Value::Object(detailed));
        }
        m.insert("logical".into(), Value::Bool(true));
        Value::Object(m)
    }

    /// A resource's state (Pulumi's `StepEventStateMetadata`).
    fn state(&self, s: &ResourceState) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), s.type_token.clone().into());
        m.insert("urn".into(), s.urn.to_string().into());
        m.insert("custom".into(), s.custom.into());
        if s.delete {
            m.insert("delete".into(), true.into());
        }
        m.insert("id".into(), s.id.clone().unwrap_or_default().into());
        m.insert(
            "parent".into(),
            s.parent
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
                .into(),
        );
        if s.protect {
            m.insert("protect".into(), true.into());
        }
        if s.retain_on_delete {
            m.insert("retainOnDelete".into(), true.into());
        }
        if s.taint {
            m.insert("taint".into(), true.into());
        }
        m.insert("inputs".into(), self.properties(&s.inputs));
        m.insert("outputs".into(), self.properties(&s.outputs));
        m.insert(
            "provider".into(),
            s.provider
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
                .into(),
        );
        if !s.init_errors.is_empty() {
            m.insert("initErrors".into(), json!(s.init_errors));
        }
        Value::Object(m)
    }

    fn properties(&self, map: &PropertyMap) -> Value {
        let blind = SecretsMode::Crypter(&BlindingCrypter);
        let written = if self.options.show_secrets {
            property_map_to_json(&revealed(map), blind)
        } else {
            property_map_to_json(map, blind)
        };
        written.map(Value::Object).unwrap_or(Value::Null)
    }
}

/// The top-level property a diff path starts with (`a.b[0]` → `a`).
fn top_key(path: &str) -> String {
    path.split(['.', '['])
        .next()
        .unwrap_or(path)
        .trim_matches('"')
        .to_owned()
}

/// Pulumi's name of a diff kind.
fn diff_kind(kind: DiffKind) -> &'static str {
    match kind {
        DiffKind::Add => "add",
        DiffKind::AddReplace => "add-replace",
        DiffKind::Delete => "delete",
        DiffKind::DeleteReplace => "delete-replace",
        DiffKind::Update => "update",
        DiffKind::UpdateReplace => "update-replace",
    }
}

/// `map` with every secret's wrapper taken off: what `--show-secrets`
/// shows.
fn revealed(map: &PropertyMap) -> PropertyMap {
    map.iter()
        .map(|(k, v)| (k.clone(), revealed_value(v)))
        .collect()
}

fn revealed_value(v: &PropertyValue) -> PropertyValue {
    match v {
        PropertyValue::Secret(inner) => revealed_value(inner),
        PropertyValue::Array(items) => {
            PropertyValue::Array(items.iter().map(revealed_value).collect())
        }
        PropertyValue::Object(m) => PropertyValue::Object(revealed(m)),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn urn(name: &str) -> Urn {
        Urn::parse(&format!(
            "urn:pulumi:dev::p::random:index/randomString:RandomString::{name}"
        ))
        .unwrap()
    }

    fn state(name: &str) -> Arc<ResourceState> {
        let mut s = ResourceState::new(urn(name), true);
        s.type_token = "random:index/randomString:RandomString".into();
        s.id = Some("id-1".into());
        s.outputs.insert(
            "result".into(),
            PropertyValue::secret(PropertyValue::from("hush")),
        );
        Arc::new(s)
    }

    #[test]
    fn a_stream_is_numbered_opened_per_step_and_ends_with_cancel() {
        let mut e = PulumiEvents::new(PulumiEventOptions::default());
        let prelude = e.prelude(&BTreeMap::from([("p:a".into(), "1".into())]), false);
        assert_eq!(prelude["sequence"], 0);
        assert_eq!(prelude["preludeEvent"]["config"]["p:a"], "1");
        let started = e.translate(&EngineEvent::StepStarted {
            op: StepOp::Create,
            urn: urn("s"),
            old: None,
            new: None,
            diff: BTreeMap::new(),
        });
        assert_eq!(started.len(), 1);
        assert_eq!(started[0]["resourcePreEvent"]["metadata"]["op"], "create");
        let finished = e.translate(&EngineEvent::StepFinished {
            op: StepOp::Create,
            urn: urn("s"),
            old: None,
            new: Some(state("s")),
            diff: BTreeMap::new(),
            error: None,
        });
        assert_eq!(finished.len(), 1, "the step was opened already");
        let outputs = &finished[0]["resOutputsEvent"]["metadata"];
        assert_eq!(outputs["type"], "random:index/randomString:RandomString");
        assert_eq!(outputs["new"]["id"], "id-1");
        assert_eq!(
            outputs["new"]["outputs"]["result"]["ciphertext"], "[secret]",
            "secrets are blinded: {outputs}"
        );
        // A Same step is opened when it is reported.
        let same = e.translate(&EngineEvent::StepFinished {
            op: StepOp::Same,
            urn: urn("t"),
            old: None,
            new: Some(state("t")),
            diff: BTreeMap::new(),
            error: None,
        });
        assert_eq!(same.len(), 2);
        assert!(same[0].get("resourcePreEvent").is_some());
        assert_eq!(
            same[1]["resOutputsEvent"]["metadata"]["old"]["urn"],
            urn("t").to_string()
        );
        let summary = e.translate(&EngineEvent::Summary {
            counts: BTreeMap::from([(StepOp::Create, 1), (StepOp::Same, 1), (StepOp::Update, 0)]),
            error: None,
        });
        assert_eq!(
            summary[0]["summaryEvent"]["resourceChanges"],
            json!({"create": 1, "same": 1})
        );
        let cancel = e.cancel();
        assert_eq!(cancel["sequence"], 6);
        assert_eq!(cancel["cancelEvent"], json!({}));
    }

    #[test]
    fn a_failed_step_is_a_diagnostic_and_a_failure() {
        let mut e = PulumiEvents::new(PulumiEventOptions::default());
        let mut diff = BTreeMap::new();
        diff.insert(
            "tags.env".to_owned(),
            PropertyDiff {
                kind: DiffKind::UpdateReplace,
                input_diff: true,
            },
        );
        let out = e.translate(&EngineEvent::StepFinished {
            op: StepOp::Update,
            urn: urn("s"),
            old: Some(state("s")),
            new: Some(state("s")),
            diff,
            error: Some("boom".into()),
        });
        assert_eq!(out.len(), 3);
        assert_eq!(out[1]["diagnosticEvent"]["severity"], "error");
        assert_eq!(out[1]["diagnosticEvent"]["message"], "boom\n");
        let failed = &out[2]["resOpFailedEvent"]["metadata"];
        assert_eq!(failed["keys"], json!(["tags"]));
        assert_eq!(
            failed["detailedDiff"]["tags.env"],
            json!({"diffKind": "update-replace", "inputDiff": true})
        );
    }

    #[test]
    fn a_failed_operations_error_is_a_diagnostic_once() {
        let mut e = PulumiEvents::new(PulumiEventOptions::default());
        // An error no step reported (a Check failure, say) becomes one.
        let out = e.translate(&EngineEvent::Summary {
            counts: BTreeMap::new(),
            error: Some("invalid inputs".into()),
        });
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["diagnosticEvent"]["severity"], "error");
        assert_eq!(out[0]["diagnosticEvent"]["message"], "invalid inputs\n");
        assert!(out[1].get("summaryEvent").is_some());
        // One a failed step reported is not said again.
        e.translate(&EngineEvent::Diagnostic {
            severity: Severity::Error,
            urn: None,
            message: "boom".into(),
        });
        let out = e.translate(&EngineEvent::Summary {
            counts: BTreeMap::new(),
            error: Some("boom".into()),
        });
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn an_update_opens_with_its_states_diff_and_provider() {
        let mut e = PulumiEvents::new(PulumiEventOptions::default());
        let provider = "urn:pulumi:dev::p::pulumi:providers:random::default::prov-1";
        let mut old = (*state("s")).clone();
        old.provider = Some(converge_model::ProviderReference::parse(provider).unwrap());
        old.inputs.insert("length".into(), PropertyValue::from(8.0));
        let mut new = old.clone();
        new.inputs
            .insert("length".into(), PropertyValue::from(12.0));
        let diff = BTreeMap::from([(
            "length".to_owned(),
            PropertyDiff {
                kind: DiffKind::UpdateReplace,
                input_diff: true,
            },
        )]);
        let out = e.translate(&EngineEvent::StepStarted {
            op: StepOp::Replace,
            urn: urn("s"),
            old: Some(Arc::new(old)),
            new: Some(Arc::new(new)),
            diff,
        });
        let m = &out[0]["resourcePreEvent"]["metadata"];
        assert_eq!(m["op"], "replace");
        assert_eq!(m["provider"], provider, "{m}");
        assert_eq!(m["diffs"], json!(["length"]), "{m}");
        assert_eq!(m["keys"], json!(["length"]), "{m}");
        assert_eq!(m["detailedDiff"]["length"]["diffKind"], "update-replace");
        assert_eq!(m["old"]["inputs"]["length"], 8.0, "{m}");
        assert_eq!(m["new"]["inputs"]["length"], 12.0, "{m}");
        assert_eq!(
            m["old"]["outputs"]["result"]["ciphertext"], "[secret]",
            "secrets stay blinded: {m}"
        );
    }

    #[test]
    fn a_refresh_that_finds_the_object_gone_ends_as_its_deletion() {
        let mut e = PulumiEvents::new(PulumiEventOptions::default());
        e.translate(&EngineEvent::StepStarted {
            op: StepOp::Refresh,
            urn: urn("s"),
            old: Some(state("s")),
            new: None,
            diff: BTreeMap::new(),
        });
        let out = e.translate(&EngineEvent::StepFinished {
            op: StepOp::Delete,
            urn: urn("s"),
            old: Some(state("s")),
            new: None,
            diff: BTreeMap::new(),
            error: None,
        });
        assert_eq!(out.len(), 1, "the refresh's pre event opened it: {out:?}");
        assert_eq!(out[0]["resOutputsEvent"]["metadata"]["op"], "delete");
    }

    #[test]
    fn revealed_secrets_are_plaintext() {
        let e = PulumiEvents::new(PulumiEventOptions { show_secrets: true });
        let shown = e.state(&state("s"));
        assert_eq!(shown["outputs"]["result"], "hush", "{shown}");
    }
}

//! Between the `Provider` trait's model types and the wire: marshalling
//! options from the plugin's capabilities, gRPC errors, diffs, config
//! variables.

use std::collections::{BTreeMap, HashMap};

use converge_model::{DiffKind, PropertyDiff, PropertyMap, PropertyValue};
use converge_proto::google::rpc;
use converge_proto::pulumirpc::{
    self, diff_response::DiffChanges as WireChanges, property_diff::Kind, ErrorResourceInitFailed,
};
use converge_proto::{marshal_properties, unmarshal_properties, MarshalOptions};
use prost_types::{value::Kind as ValueKind, Struct, Value};

use crate::provider::{CheckFailure, DiffChanges, DiffResponse};
use crate::ProviderError;

/// What the plugin said it accepts (Handshake, then Configure).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Caps {
    pub accept_secrets: bool,
    pub accept_resources: bool,
    pub accept_outputs: bool,
    pub supports_preview: bool,
}

impl Caps {
    /// What to send: kinds the plugin does not accept are downgraded.
    pub fn send(self, keep_unknowns: bool) -> MarshalOptions {
        MarshalOptions {
            keep_unknowns,
            keep_secrets: self.accept_secrets,
            keep_resources: self.accept_resources,
            keep_output_values: self.accept_outputs,
            ..MarshalOptions::default()
        }
    }

    pub fn from_handshake(h: &pulumirpc::ProviderHandshakeResponse) -> Caps {
        Caps {
            accept_secrets: h.accept_secrets,
            accept_resources: h.accept_resources,
            accept_outputs: h.accept_outputs,
            supports_preview: false,
        }
    }

    pub fn from_configure(c: &pulumirpc::ConfigureResponse) -> Caps {
        Caps {
            accept_secrets: c.accept_secrets,
            accept_resources: c.accept_resources,
            accept_outputs: c.accept_outputs,
            supports_preview: c.supports_preview,
        }
    }
}

/// What to accept back: everything, unknowns only in previews.
pub(crate) fn receive(keep_unknowns: bool) -> MarshalOptions {
    MarshalOptions {
        keep_unknowns,
        ..MarshalOptions::full()
    }
}

pub(crate) fn to_wire(
    method: &str,
    props: &PropertyMap,
    opts: MarshalOptions,
) -> Result<Option<Struct>, ProviderError> {
    marshal_properties(props, opts)
        .map(Some)
        .map_err(|e| ProviderError::Failed(format!("{method}: cannot send properties: {e}")))
}

pub(crate) fn from_wire(
    method: &str,
    props: Option<&Struct>,
    opts: MarshalOptions,
) -> Result<PropertyMap, ProviderError> {
    match props {
        None => Ok(PropertyMap::new()),
        Some(s) => unmarshal_properties(s, opts).map_err(|e| {
            ProviderError::Failed(format!(
                "{method}: the plugin returned invalid properties: {e}"
            ))
        }),
    }
}

/// Pulumi's `annotateSecrets`: for a plugin that does not accept secrets,
/// a top-level output whose input was secret is made secret again.
pub(crate) fn annotate_secrets(outputs: &mut PropertyMap, inputs: &PropertyMap) {
    for (key, input) in inputs {
        if !input.contains_secrets() {
            continue;
        }
        if let Some(out) = outputs.get_mut(key) {
            if !out.contains_secrets() {
                let plain = std::mem::replace(out, PropertyValue::Null);
                *out = PropertyValue::secret(plain);
            }
        }
    }
}

pub(crate) fn failures(wire: Vec<pulumirpc::CheckFailure>) -> Vec<CheckFailure> {
    wire.into_iter()
        .map(|f| CheckFailure {
            property: f.property,
            reason: f.reason,
        })
        .collect()
}

pub(crate) fn diff_response(resp: pulumirpc::DiffResponse) -> DiffResponse {
    let changes = match resp.changes() {
        WireChanges::DiffUnknown => DiffChanges::Unknown,
        WireChanges::DiffNone => DiffChanges::None,
        WireChanges::DiffSome => DiffChanges::Some,
    };
    let detailed_diff = resp.has_detailed_diff.then(|| {
        resp.detailed_diff
            .iter()
            .map(|(path, d)| {
                let kind = match d.kind() {
                    Kind::Add => DiffKind::Add,
                    Kind::AddReplace => DiffKind::AddReplace,
                    Kind::Delete => DiffKind::Delete,
                    Kind::DeleteReplace => DiffKind::DeleteReplace,
                    Kind::Update => DiffKind::Update,
                    Kind::UpdateReplace => DiffKind::UpdateReplace,
                };
                let diff = PropertyDiff {
                    kind,
                    input_diff: d.input_diff,
                };
                (path.clone(), diff)
            })
            .collect::<BTreeMap<_, _>>()
    });
    DiffResponse {
        changes,
        replace_keys: resp.replaces,
        stable_keys: resp.stables,
        changed_keys: resp.diffs,
        detailed_diff,
        delete_before_replace: resp.delete_before_replace,
        upgraded_outputs: None,
    }
}

/// `ConfigureRequest.variables`, which older plugins read instead of
/// `args`: `<pkg>:config:<key>` → the value as a string (strings as they
/// are, anything else as JSON; secrets as their plain values). Internal
/// `__` keys are left out.
pub(crate) fn config_variables(package: &str, inputs: &PropertyMap) -> HashMap<String, String> {
    let plain = MarshalOptions::default();
    inputs
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .filter_map(|(k, v)| {
            let text = match converge_proto::marshal_value(v, plain).ok()?? {
                Value {
                    kind: Some(ValueKind::StringValue(s)),
                } => s,
                other => json(&other).to_string(),
            };
            Some((format!("{package}:config:{k}"), text))
        })
        .collect()
}

fn json(v: &Value) -> serde_json::Value {
    match &v.kind {
        None | Some(ValueKind::NullValue(_)) => serde_json::Value::Null,
        Some(ValueKind::BoolValue(b)) => (*b).into(),
        Some(ValueKind::NumberValue(n)) => {
            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                serde_json::Value::from(*n as i64)
            } else {
                serde_json::Number::from_f64(*n).map_or(serde_json::Value::Null, Into::into)
            }
        }
        Some(ValueKind::StringValue(s)) => s.clone().into(),
        Some(ValueKind::ListValue(l)) => l.values.iter().map(json).collect(),
        Some(ValueKind::StructValue(s)) => s
            .fields
            .iter()
            .map(|(k, v)| (k.clone(), json(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

/// A gRPC error as a [`ProviderError`]:
///
/// - an `ErrorResourceInitFailed` detail (the object exists but did not
///   finish initialising) → [`ProviderError::PartialFailure`];
/// - `Unimplemented` → [`ProviderError::Unimplemented`];
/// - the process is gone (`death` says how: exit status and stderr) →
///   [`ProviderError::Unavailable`] with that note, whatever the code
///   (tonic reports a refused connection as `Unknown: transport error`);
/// - `Unavailable` → [`ProviderError::Unavailable`];
/// - anything else → [`ProviderError::Failed`] with the plugin's message.
pub(crate) fn status_error(
    method: &'static str,
    status: &tonic::Status,
    preview: bool,
    death: impl FnOnce() -> Option<String>,
) -> ProviderError {
    if let Some(init) = init_failed(status) {
        let properties =
            from_wire(method, init.properties.as_ref(), receive(preview)).unwrap_or_default();
        let mut reasons = init.reasons;
        if reasons.is_empty() {
            reasons.push(status.message().to_owned());
        }
        return ProviderError::PartialFailure {
            id: init.id,
            properties,
            reasons,
        };
    }
    if let Some(note) = death() {
        return ProviderError::Unavailable(format!("{method}: {}{note}", status.message()));
    }
    match status.code() {
        tonic::Code::Unimplemented => ProviderError::Unimplemented(method),
        tonic::Code::Unavailable => {
            ProviderError::Unavailable(format!("{method}: {}", status.message()))
        }
        _ => ProviderError::Failed(status.message().to_owned()),
    }
}

/// The `pulumirpc.ErrorResourceInitFailed` detail of a status, if any.
fn init_failed(status: &tonic::Status) -> Option<ErrorResourceInitFailed> {
    if status.details().is_empty() {
        return None;
    }
    let details: rpc::Status = converge_proto::decode_message(status.details()).ok()?;
    details
        .details
        .iter()
        .find(|any| any.type_url.ends_with("pulumirpc.ErrorResourceInitFailed"))
        .and_then(|any| converge_proto::decode_message::<ErrorResourceInitFailed>(&any.value).ok())
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn variables_are_strings_or_json() {
        let mut inputs = PropertyMap::new();
        inputs.insert("region".into(), "us-west-2".into());
        inputs.insert("retries".into(), PropertyValue::Number(3.0));
        inputs.insert("token".into(), PropertyValue::secret("s3cret".into()));
        inputs.insert("__internal".into(), "x".into());
        inputs.insert("tags".into(), {
            let mut m = PropertyMap::new();
            m.insert("a".into(), PropertyValue::Bool(true));
            PropertyValue::Object(m)
        });
        let vars = config_variables("aws", &inputs);
        assert_eq!(vars["aws:config:region"], "us-west-2");
        assert_eq!(vars["aws:config:retries"], "3");
        assert_eq!(vars["aws:config:token"], "s3cret");
        assert_eq!(vars["aws:config:tags"], r#"{"a":true}"#);
        assert!(!vars.contains_key("aws:config:__internal"));
    }

    #[test]
    fn init_failed_detail_is_a_partial_failure() {
        let detail = ErrorResourceInitFailed {
            id: "i-1".into(),
            properties: Some(Struct::default()),
            reasons: vec!["not healthy".into()],
            ..ErrorResourceInitFailed::default()
        };
        let status = rpc::Status {
            code: 2,
            message: "init failed".into(),
            details: vec![prost_types::Any {
                type_url: "type.googleapis.com/pulumirpc.ErrorResourceInitFailed".into(),
                value: detail.encode_to_vec(),
            }],
        };
        let status = tonic::Status::with_details(
            tonic::Code::Unknown,
            "init failed",
            status.encode_to_vec().into(),
        );
        assert_eq!(
            status_error("Create", &status, false, || None),
            ProviderError::PartialFailure {
                id: "i-1".into(),
                properties: PropertyMap::new(),
                reasons: vec!["not healthy".into()]
            }
        );
        let plain = tonic::Status::unimplemented("nope");
        assert_eq!(
            status_error("Read", &plain, false, || None),
            ProviderError::Unimplemented("Read")
        );
    }
}

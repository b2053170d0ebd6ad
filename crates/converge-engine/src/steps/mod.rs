//! One module per step kind. Each step journals its Begin (durable before
//! any provider call), calls the provider, journals its end entry (durable
//! before the step reports done), and emits events.

pub mod create;
pub mod delete;
pub mod import;
pub mod read;
pub mod refresh;
pub mod rename;
pub mod same;
pub mod update;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use converge_model::{
    CustomTimeouts, PropertyDiff, PropertyMap, PropertyValue, ResourceState, Urn,
};
use converge_plugin::{Provider, ReadRequest, ReadResponse};

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::{EngineEvent, StepOp};
use crate::ledger::{Recorded, Registered};
use crate::plan::PlannedStep;

/// The provider instance that manages `state`. A provider not registered
/// in this deployment (one whose resources are being deleted or refreshed)
/// is loaded and configured from its state in the base snapshot, once per
/// deployment however many steps ask at once.
pub(crate) async fn provider_of(
    d: &Deployment,
    state: &ResourceState,
) -> Result<Arc<dyn Provider>, EngineError> {
    let unknown = |what: String| EngineError::Provider {
        urn: state.urn.clone(),
        source: converge_plugin::RegistryError::UnknownProvider(what),
    };
    let reference = state
        .provider
        .as_ref()
        .ok_or_else(|| unknown("(none)".to_owned()))?;
    if let Ok(p) = d.registry.get(reference) {
        return Ok(p);
    }
    let old = {
        let p = d.progress();
        d.base
            .resources
            .iter()
            .enumerate()
            .find(|(i, r)| {
                r.id.as_deref() == Some(reference.id.as_str())
                    && (r.urn == reference.urn || p.renamed_to(*i) == Some(&reference.urn))
            })
            .map(|(_, r)| r)
            .ok_or_else(|| unknown(reference.to_string()))?
    };
    // Configured once, however many steps ask at once.
    d.registry
        .get_or_configure(reference, &old.inputs)
        .await
        .map_err(|source| EngineError::Provider {
            urn: state.urn.clone(),
            source,
        })
}

/// Marks outputs secret where the matching input was secret or the program
/// asked for it (`additionalSecretOutputs`).
///
/// The outputs are changed only when a value is to be marked: a map a
/// provider answered with its inputs is still shared with them (a change
/// would copy it first), and most resources have nothing to mark.
pub(crate) fn mark_secret_outputs(
    inputs: &PropertyMap,
    outputs: &mut PropertyMap,
    extra: &[String],
) {
    let to_mark = |key: &String, value: &PropertyValue| {
        let wanted = extra.iter().any(|k| k == key)
            || matches!(inputs.get(key), Some(PropertyValue::Secret(_)));
        wanted && !matches!(value, PropertyValue::Secret(_))
    };
    if !outputs.iter().any(|(key, value)| to_mark(key, value)) {
        return;
    }
    for (key, value) in outputs.iter_mut() {
        if to_mark(key, value) {
            let inner = std::mem::replace(value, PropertyValue::Null);
            *value = PropertyValue::secret(inner);
        }
    }
}

/// The resource's custom timeout for `key` (`create`, `update`,
/// `delete`), which the provider is given with the call.
pub(crate) fn timeout(state: &ResourceState, key: &str) -> Option<Duration> {
    state.custom_timeouts.as_ref()?.duration(key)
}

/// A provider `Read` for step `op`, bounded by `timeouts.read`: the
/// provider is told the timeout, and a read that outlasts it fails the step
/// naming the operation, the resource and the timeout. (A read changes
/// nothing, so the engine may stop waiting for it.)
pub(crate) async fn read_within(
    provider: &dyn Provider,
    op: StepOp,
    timeouts: Option<&CustomTimeouts>,
    mut req: ReadRequest,
) -> Result<ReadResponse, EngineError> {
    let urn = req.urn.clone();
    let limit = timeouts.and_then(|t| Some((t.duration("read")?, t.read.clone()?)));
    req.timeout = limit.as_ref().map(|(d, _)| *d);
    let call = provider.read(req);
    let result = match limit {
        None => call.await,
        Some((limit, text)) => match tokio::time::timeout(limit, call).await {
            Ok(result) => result,
            Err(_) => {
                return Err(EngineError::TimedOut {
                    op,
                    urn,
                    call: "Read",
                    key: "read",
                    timeout: text,
                })
            }
        },
    };
    result.map_err(|source| EngineError::Step { op, urn, source })
}

/// Records a registration's final state, emits its finish event and plan
/// step.
pub(crate) fn finish(
    d: &Deployment,
    op: StepOp,
    op_id: Option<u64>,
    old: Option<&ResourceState>,
    new: ResourceState,
    diff: BTreeMap<String, PropertyDiff>,
) -> Arc<ResourceState> {
    // The step's state itself, shared by the ledger, the finish event and
    // the registration's answer: not copied.
    let shared = Arc::new(new);
    d.progress().record(
        shared.urn.clone(),
        Registered {
            op: op_id,
            state: Recorded::Own(Arc::clone(&shared)),
        },
    );
    report_shared(d, op, old, Some(Arc::clone(&shared)), diff);
    shared
}

/// [`finish`] of a Same step whose state is its base resource's as it is:
/// the ledger records the base index, not a copy; the finish event and the
/// registration's answer share `new`, which is freed with them.
pub(crate) fn finish_unchanged(
    d: &Deployment,
    op_id: u64,
    old_index: usize,
    new: ResourceState,
) -> Arc<ResourceState> {
    d.progress().record(
        new.urn.clone(),
        Registered {
            op: Some(op_id),
            state: Recorded::Base(old_index),
        },
    );
    let shared = Arc::new(new);
    report_shared(
        d,
        StepOp::Same,
        Some(&d.base.resources[old_index]),
        Some(Arc::clone(&shared)),
        Default::default(),
    );
    shared
}

/// A step whose provider call left a real object but failed (a partial
/// failure): the object is registered as recorded, and the step is
/// reported only by the failure that follows, never as done.
pub(crate) fn finish_partial(d: &Deployment, op_id: u64, new: &ResourceState) {
    d.progress().record(
        new.urn.clone(),
        Registered {
            op: Some(op_id),
            state: Recorded::Own(Arc::new(new.clone())),
        },
    );
}

/// Records in the ledger that the registration of `urn` took over old
/// resource `old_index` (its end entry is durable). A refusal (another
/// registration holds it) fails the step.
pub(crate) fn claim(
    d: &Deployment,
    op: StepOp,
    old_index: usize,
    urn: &Urn,
) -> Result<(), EngineError> {
    // The guard is gone before `failed` takes the lock again.
    let claimed = d.progress().claim(old_index, urn);
    claimed.map_err(|e| failed(d, op, urn, e))
}

/// Emits a step's finish event and plan step.
pub(crate) fn report(
    d: &Deployment,
    op: StepOp,
    old: Option<&ResourceState>,
    new: Option<&ResourceState>,
    diff: BTreeMap<String, PropertyDiff>,
) {
    report_shared(d, op, old, new.map(|n| Arc::new(n.clone())), diff);
}

/// [`report`] of a new state already shared.
fn report_shared(
    d: &Deployment,
    op: StepOp,
    old: Option<&ResourceState>,
    new: Option<Arc<ResourceState>>,
    diff: BTreeMap<String, PropertyDiff>,
) {
    let Some(subject) = new.as_deref().or(old) else {
        return;
    };
    let new_ref = new.as_deref();
    if d.opts.record_plans {
        crate::saved_plan::record::step(d, op, &subject.urn, new_ref);
    }
    d.record_step(PlannedStep {
        op,
        urn: subject.urn.to_string(),
        type_token: subject.type_token.clone(),
        diff: diff
            .iter()
            .map(|(k, v)| (k.clone(), format!("{:?}", v.kind).to_lowercase()))
            .collect(),
        inputs: if d.opts.preview && d.opts.record_plans {
            new_ref.map(planned_inputs)
        } else {
            None
        },
        read_changed: op == StepOp::Read
            && matches!((old, new_ref), (Some(o), Some(n)) if o.outputs != n.outputs),
    });
    let urn = subject.urn.clone();
    // A Same step's new state is its old one carried over: its event does
    // not copy the old state beside it (100,000 copies in a no-op update).
    let old = match op {
        StepOp::Same => None,
        _ => old.map(|o| Arc::new(o.clone())),
    };
    d.events.send(EngineEvent::StepFinished {
        op,
        urn,
        old,
        new,
        diff,
        error: None,
    });
}

/// Planned inputs as JSON, secrets blinded.
fn planned_inputs(state: &ResourceState) -> serde_json::Value {
    let blind = converge_state::secrets::BlindingCrypter;
    converge_state::checkpoint::property_map_to_json(
        &state.inputs,
        converge_state::secrets::SecretsMode::Crypter(&blind),
    )
    .map(serde_json::Value::Object)
    .unwrap_or(serde_json::Value::Null)
}

/// Emits a failed step's event and turns the provider error into the
/// operation's error.
pub(crate) fn failed(d: &Deployment, op: StepOp, urn: &Urn, err: EngineError) -> EngineError {
    d.fail(&err);
    d.events.send(EngineEvent::StepFinished {
        op,
        urn: urn.clone(),
        old: None,
        new: None,
        diff: BTreeMap::new(),
        error: Some(err.to_string()),
    });
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_copied_only_when_a_value_is_marked_secret() {
        let mut inputs = PropertyMap::new();
        inputs.insert("plain".to_owned(), PropertyValue::from("x"));
        let mut outputs = inputs.clone();
        mark_secret_outputs(&inputs, &mut outputs, &[]);
        assert!(outputs.shares_with(&inputs), "nothing to mark, no copy");

        mark_secret_outputs(&inputs, &mut outputs, &["plain".to_owned()]);
        assert!(!outputs.shares_with(&inputs));
        assert!(matches!(
            outputs.get("plain"),
            Some(PropertyValue::Secret(_))
        ));
        assert_eq!(inputs.get("plain"), Some(&PropertyValue::from("x")));

        // A secret input makes its output secret too.
        let mut inputs = PropertyMap::new();
        inputs.insert(
            "key".to_owned(),
            PropertyValue::secret(PropertyValue::from("k")),
        );
        let mut outputs = PropertyMap::new();
        outputs.insert("key".to_owned(), PropertyValue::from("k"));
        outputs.insert("other".to_owned(), PropertyValue::from("o"));
        mark_secret_outputs(&inputs, &mut outputs, &[]);
        assert!(matches!(outputs.get("key"), Some(PropertyValue::Secret(_))));
        assert_eq!(outputs.get("other"), Some(&PropertyValue::from("o")));
    }
}

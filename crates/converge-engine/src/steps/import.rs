//! Import: adopt an existing object by ID, as current Pulumi does (its
//! `import` option): Read the object, then Check and Diff the desired
//! inputs against what was read, as for any resource with old state.
//!
//! - No difference: the import is the only step.
//! - A difference that an update can make: the import, then an update
//!   (both journaled; the update's old state is the imported one).
//! - A difference that needs a replacement: an error before anything is
//!   recorded (a warning in a preview, which shows the import) — importing
//!   must never destroy the object it adopts.
//!
//! With [`ImportInputs::Read`] (`converge import`, no program) the desired
//! inputs are what the Read returned, restricted to the keys asked for:
//! a Check failure is a warning, as in Pulumi, and there is nothing to diff.
//!
//! Policy packs judge the inputs the object is adopted with (`Analyze`;
//! nothing is remediated): a mandatory violation fails the import before
//! anything is recorded.
//!
//! An old state under the URN that is not this object (another ID, or an
//! external read) is replaced: it is marked for deletion and deleted after
//! the program, as a create-before-delete replacement is.

use std::collections::BTreeMap;
use std::sync::Arc;

use converge_model::{PropertyDiff, ResourceState};
use converge_plugin::{CheckRequest, DiffRequest, DiffResponse, ReadRequest, ReadResponse};
use converge_state::journal::JournalEntry;
use converge_state::OperationType;

use super::{claim, failed, finish, mark_secret_outputs, provider_of, read_within};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::{Severity, StepOp};
use crate::goal::ImportInputs;

/// One import: the registration's goal state and where its inputs come
/// from.
#[derive(Debug)]
pub(crate) struct ImportStep {
    /// An old state under this URN that is not the object imported.
    pub old_index: Option<usize>,
    pub state: ResourceState,
    pub import_id: String,
    pub inputs: ImportInputs,
}

/// What Read, Check and Diff decided before anything is recorded.
struct Planned {
    imported: ResourceState,
    /// The desired state after the import, if an update must follow.
    update: Option<(ResourceState, BTreeMap<String, PropertyDiff>)>,
}

pub(crate) async fn run(
    d: &Deployment,
    step: ImportStep,
) -> Result<Arc<ResourceState>, EngineError> {
    let ImportStep {
        old_index,
        state,
        import_id,
        inputs,
    } = step;
    let urn = state.urn.clone();
    let op = StepOp::Import;
    let old = old_index.map(|i| &d.base.resources[i]);
    if let Some(old) = old.filter(|o| o.protect && !o.external) {
        let err = EngineError::Protected {
            urn: old.urn.clone(),
            action: "replaced",
        };
        return Err(failed(d, op, &urn, err));
    }
    let start = crate::events::StepStart {
        old,
        new: Some(&state),
        diff: None,
    };
    d.started(op, &urn, start);
    let op_id = d.next_operation();
    let mut pending = state.clone();
    pending.id = Some(import_id.clone());
    d.begin(op_id, Some((OperationType::Importing, pending)))
        .await
        .map_err(|e| failed(d, op, &urn, e))?;
    let planned = match plan(d, state, &import_id, &inputs).await {
        Ok(p) => p,
        Err(e) => {
            d.end_failed(op_id).await;
            return Err(failed(d, op, &urn, e));
        }
    };
    let imported = planned.imported;
    let mut entry = JournalEntry::success(0, op_id).with_state(imported.clone());
    // An external old state is forgotten; a managed one is deleted after
    // the program (its object is not the one imported).
    match old {
        Some(o) if !o.external => entry.delete_old = old_index,
        _ => entry.remove_old = old_index,
    }
    d.end(entry).await.map_err(|e| failed(d, op, &urn, e))?;
    if let (Some(i), Some(o)) = (old_index, old) {
        if o.external {
            claim(d, op, i, &urn)?;
        } else {
            let replaced = d.progress().replace(i, &urn);
            replaced.map_err(|e| failed(d, op, &urn, e))?;
        }
    }
    let imported = finish(d, op, Some(op_id), old, imported, BTreeMap::new());
    match planned.update {
        None => Ok(imported),
        Some((desired, diff)) => update_imported(d, op_id, &imported, desired, diff).await,
    }
}

/// Read, then the desired inputs and whether an update must follow.
async fn plan(
    d: &Deployment,
    mut state: ResourceState,
    import_id: &str,
    inputs: &ImportInputs,
) -> Result<Planned, EngineError> {
    let urn = state.urn.clone();
    let provider = provider_of(d, &state).await?;
    let read = {
        let _permit = d.provider_turn(&urn).await?;
        let request = ReadRequest {
            urn: urn.clone(),
            id: import_id.to_owned(),
            inputs: None,
            state: None,
            timeout: None,
        };
        let timeouts = state.custom_timeouts.as_deref();
        read_within(provider.as_ref(), StepOp::Import, timeouts, request).await?
    };
    if read.id.is_empty() {
        return Err(EngineError::ImportNotFound {
            urn,
            id: import_id.to_owned(),
        });
    }
    let mut imported = state.clone();
    let now = converge_backend::now_rfc3339();
    imported.created = Some(now.clone());
    imported.modified = Some(now);
    imported.id = Some(read.id.clone());
    imported.import_id = Some(import_id.to_owned());
    imported.inputs = read.inputs.clone();
    imported.outputs = read.properties.clone();
    if let ImportInputs::Read { properties } = inputs {
        imported.inputs = checked_read_inputs(d, &imported, &read, properties.as_deref()).await?;
        crate::policy::check_import(d, &imported).await?;
        mark_secret_outputs(
            &imported.inputs,
            &mut imported.outputs,
            &imported.additional_secret_outputs,
        );
        return Ok(Planned {
            imported,
            update: None,
        });
    }
    mark_secret_outputs(
        &imported.inputs,
        &mut imported.outputs,
        &imported.additional_secret_outputs,
    );
    // The program's inputs, ignoreChanges taken from what was read.
    crate::step_generator::apply_ignore_changes(d, &imported, &mut state);
    let step_err = |source| EngineError::Step {
        op: StepOp::Import,
        urn: urn.clone(),
        source,
    };
    let checked = provider
        .check(CheckRequest {
            urn: urn.clone(),
            olds: read.inputs.clone(),
            news: state.inputs.clone(),
            random_seed: urn.as_str().as_bytes().to_vec(),
        })
        .await
        .map_err(step_err)?;
    if !checked.failures.is_empty() {
        return Err(crate::check_failures::refuse(d, urn, checked.failures));
    }
    state.inputs = checked.inputs;
    crate::policy::check_import(d, &state).await?;
    let response = provider
        .diff(DiffRequest {
            urn: urn.clone(),
            id: read.id.clone(),
            old_inputs: read.inputs.clone(),
            old_outputs: read.properties.clone(),
            new_inputs: state.inputs.clone(),
            ignore_changes: state.ignore_changes.clone(),
        })
        .await
        .map_err(step_err)?;
    let diff = crate::step_generator::detailed_diff(&response, &imported, &state);
    let replace = needs_replacement(&response, &diff, &state);
    if replace.is_some() || !diff.is_empty() {
        state.id = imported.id.clone();
        state.import_id = imported.import_id.clone();
    }
    if let Some(keys) = replace {
        let err = EngineError::ImportReplaces { urn, keys };
        if !d.opts.preview {
            return Err(err);
        }
        d.events
            .diagnostic(Severity::Warning, Some(&state.urn), err.to_string());
        return Ok(Planned {
            imported,
            update: None,
        });
    }
    let update = (!diff.is_empty()).then_some((state, diff));
    Ok(Planned { imported, update })
}

/// `--properties` (or every key) of what was read, checked by the
/// provider; a Check failure is a warning (the inputs stay as read).
async fn checked_read_inputs(
    d: &Deployment,
    imported: &ResourceState,
    read: &ReadResponse,
    properties: Option<&[String]>,
) -> Result<converge_model::PropertyMap, EngineError> {
    let urn = &imported.urn;
    let wanted: converge_model::PropertyMap = read
        .inputs
        .iter()
        .filter(|(k, _)| properties.is_none_or(|p| p.iter().any(|w| w == *k)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(missing) = properties
        .unwrap_or_default()
        .iter()
        .find(|k| !read.inputs.contains_key(*k))
    {
        d.events.diagnostic(
            Severity::Warning,
            Some(urn),
            format!("property {missing} was not read from the object; it is not an input"),
        );
    }
    let provider = provider_of(d, imported).await?;
    let checked = provider
        .check(CheckRequest {
            urn: urn.clone(),
            olds: read.inputs.clone(),
            news: wanted.clone(),
            random_seed: urn.as_str().as_bytes().to_vec(),
        })
        .await
        .map_err(|source| EngineError::Step {
            op: StepOp::Import,
            urn: urn.clone(),
            source,
        })?;
    if checked.failures.is_empty() {
        return Ok(checked.inputs);
    }
    for f in &checked.failures {
        d.events.diagnostic(
            Severity::Warning,
            Some(urn),
            format!(
                "the imported inputs do not pass the provider's check ({}: {}); edit the program's inputs before the next update",
                f.property, f.reason
            ),
        );
    }
    Ok(wanted)
}

/// The keys whose change needs a replacement, if any does.
fn needs_replacement(
    response: &DiffResponse,
    diff: &BTreeMap<String, PropertyDiff>,
    state: &ResourceState,
) -> Option<Vec<String>> {
    let patterns: Vec<converge_model::PropertyPath> = state
        .replace_on_changes
        .iter()
        .filter_map(|p| converge_model::PropertyPath::parse(p).ok())
        .collect();
    let mut keys: Vec<String> = diff
        .iter()
        .filter(|(path, change)| {
            change.kind.is_replace()
                || converge_model::PropertyPath::parse(path)
                    .ok()
                    .is_some_and(|c| patterns.iter().any(|p| p.contains(&c) || c.contains(p)))
        })
        .map(|(k, _)| k.clone())
        .collect();
    for k in &response.replace_keys {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    if keys.is_empty() && !response.requires_replacement() {
        return None;
    }
    if keys.is_empty() {
        keys.push("(unspecified)".to_owned());
    }
    Some(keys)
}

/// The update after an import: the imported state is the old one.
async fn update_imported(
    d: &Deployment,
    import_op: u64,
    imported: &ResourceState,
    mut new: ResourceState,
    diff: BTreeMap<String, PropertyDiff>,
) -> Result<Arc<ResourceState>, EngineError> {
    let urn = new.urn.clone();
    let op = StepOp::Update;
    let start = crate::events::StepStart {
        old: Some(imported),
        new: Some(&new),
        diff: Some(&diff),
    };
    d.started(op, &urn, start);
    let op_id = d.next_operation();
    new.outputs = imported.outputs.clone();
    new.created = imported.created.clone();
    new.modified = Some(converge_backend::now_rfc3339());
    d.begin(op_id, Some((OperationType::Updating, new.clone())))
        .await
        .map_err(|e| failed(d, op, &urn, e))?;
    let outcome = match d.provider_turn(&urn).await {
        Ok(_permit) => super::update::perform(d, imported, &mut new).await,
        Err(e) => Err(e),
    };
    if let Err(e) = outcome {
        d.end_failed(op_id).await;
        return Err(failed(d, op, &urn, e));
    }
    let entry = JournalEntry::success(0, op_id)
        .with_state(new.clone())
        .with_remove_new(import_op);
    d.end(entry).await.map_err(|e| failed(d, op, &urn, e))?;
    Ok(finish(d, op, Some(op_id), Some(imported), new, diff))
}

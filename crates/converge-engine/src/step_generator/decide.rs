//! Diffing (seed 000, "Diffing"): same, update, or replace — and how.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use converge_model::{
    diff_objects, DiffKind, PropertyDiff, PropertyMap, PropertyPath, PropertyValue, ResourceState,
};
use converge_plugin::{DiffChanges, DiffRequest, DiffResponse};

use super::{check, delete_for_replacement};
use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;
use crate::goal::ResourceOptions;
use crate::steps::{self, create::CreateStep};

#[derive(Debug)]
pub(crate) enum Decision {
    /// No change; `upgraded` is the provider's newer form of the old
    /// outputs, if it gave one (`DiffResponse::upgraded_outputs`).
    Same {
        upgraded: Option<PropertyMap>,
    },
    Update(BTreeMap<String, PropertyDiff>),
    Replace {
        delete_before_replace: bool,
        diff: BTreeMap<String, PropertyDiff>,
    },
}

/// Decides what to do with a registration that has old state.
pub(crate) async fn decide(
    d: &Deployment,
    old: &ResourceState,
    old_index: usize,
    new: &ResourceState,
) -> Result<Decision, EngineError> {
    // The object is gone (an earlier delete-before-replace): recreate it.
    if old.pending_replacement || d.progress().object_gone(old_index) {
        return Ok(Decision::Replace {
            delete_before_replace: false,
            diff: BTreeMap::new(),
        });
    }
    // `--replace`, tainted by `converge state taint`, `replacementTrigger`
    // changed, or `replaceWith` names a resource replaced in this
    // deployment: a replacement whatever the diff — in the order the
    // provider's Diff asks for, since an object that keeps its identity
    // (a file at the same path) must go before its replacement comes.
    if d.opts.replaces(&new.urn) || old.taint || trigger_changed(old, new) || replaced_with(d, new)
    {
        let delete_before_replace =
            same_provider(d, old, new) && provider_diff(d, old, new).await?.delete_before_replace;
        return Ok(Decision::Replace {
            delete_before_replace,
            diff: BTreeMap::new(),
        });
    }
    // A resource whose provider changed must be replaced by the new one —
    // unless both are default providers of the package and the new one can
    // manage what the old one did (its DiffConfig asks for no replacement):
    // default providers may be upgraded without replacing everything.
    if !old.is_provider()
        && !same_provider(d, old, new)
        && !default_provider_compatible(d, old, new).await?
    {
        return Ok(Decision::Replace {
            delete_before_replace: false,
            diff: BTreeMap::new(),
        });
    }
    let response = provider_diff(d, old, new).await?;
    let mut diff = detailed(&response, old, new);
    let mut replace = response.requires_replacement();
    // replaceOnChanges: a change under one of these paths forces replacement.
    let patterns: Vec<PropertyPath> = new
        .replace_on_changes
        .iter()
        .filter_map(|p| PropertyPath::parse(p).ok())
        .collect();
    if !patterns.is_empty() {
        for (path, change) in diff.iter_mut() {
            let concrete = PropertyPath::parse(path).ok();
            let hit = concrete
                .as_ref()
                .is_some_and(|c| patterns.iter().any(|p| p.contains(c) || c.contains(p)));
            if hit {
                change.kind = change.kind.with_replace();
                replace = true;
            }
        }
    }
    // An object that did not finish initialising (a partial failure
    // recorded its init errors) is updated with the same inputs, as
    // Pulumi does, so the provider gets to finish it; never left as is.
    if diff.is_empty() && !replace && !old.init_errors.is_empty() {
        return Ok(Decision::Update(diff));
    }
    if diff.is_empty() && !replace {
        return Ok(Decision::Same {
            upgraded: response.upgraded_outputs,
        });
    }
    if !replace {
        return Ok(Decision::Update(diff));
    }
    // The program's `deleteBeforeReplace` option overrides this in
    // `execute`: it travels on the goal, not in the state.
    Ok(Decision::Replace {
        delete_before_replace: response.delete_before_replace,
        diff,
    })
}

/// `replacementTrigger`: a replacement when the recorded trigger and the
/// new one are both present and differ — compared by value, secret or not
/// — or the new one is not known yet (a preview cannot tell, so it shows
/// the replacement).
fn trigger_changed(old: &ResourceState, new: &ResourceState) -> bool {
    let (Some(before), Some(after)) = (&old.replacement_trigger, &new.replacement_trigger) else {
        return false;
    };
    if after.contains_unknowns() {
        return true;
    }
    without_secrets(before) != without_secrets(after)
}

/// A value with every secret wrapper removed, at any depth.
fn without_secrets(value: &PropertyValue) -> PropertyValue {
    match value {
        PropertyValue::Secret(inner) => without_secrets(inner),
        PropertyValue::Array(items) => {
            PropertyValue::Array(items.iter().map(without_secrets).collect())
        }
        PropertyValue::Object(map) => PropertyValue::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_secrets(v)))
                .collect(),
        ),
        PropertyValue::Output(o) => match &o.element {
            Some(e) => without_secrets(e),
            None => PropertyValue::Unknown,
        },
        other => other.clone(),
    }
}

/// `replaceWith`: one of the named resources was replaced in this
/// deployment. (They were registered first: the program names them by the
/// URNs their registrations answered, after their steps.)
fn replaced_with(d: &Deployment, new: &ResourceState) -> bool {
    if new.replace_with.is_empty() {
        return false;
    }
    let p = d.progress();
    new.replace_with.iter().any(|u| p.replaced.contains(u))
}

/// True if `new` uses the provider `old` used, possibly renamed through an
/// alias in this deployment.
fn same_provider(d: &Deployment, old: &ResourceState, new: &ResourceState) -> bool {
    match (&old.provider, &new.provider) {
        (Some(o), Some(n)) => {
            let renamed = || {
                d.olds
                    .get(&o.urn)
                    .is_some_and(|&i| d.progress().renamed_to(i) == Some(&n.urn))
            };
            o.id == n.id && (o.urn == n.urn || renamed())
        }
        (o, n) => o == n,
    }
}

/// True if `old` and `new` use default providers of one package and the
/// new provider's DiffConfig against the old one's configuration asks for
/// no replacement.
async fn default_provider_compatible(
    d: &Deployment,
    old: &ResourceState,
    new: &ResourceState,
) -> Result<bool, EngineError> {
    let (Some(old_ref), Some(new_ref)) = (&old.provider, &new.provider) else {
        return Ok(false);
    };
    let is_default = |u: &converge_model::Urn| u.name().starts_with("default");
    if !is_default(&old_ref.urn)
        || !is_default(&new_ref.urn)
        || old_ref.urn.type_token() != new_ref.urn.type_token()
    {
        return Ok(false);
    }
    let find = |r: &converge_model::ProviderReference| -> Option<ResourceState> {
        if let Some(reg) = d.progress().registered.get(&r.urn) {
            return Some(reg.state.clone());
        }
        d.base
            .resources
            .iter()
            .find(|s| s.urn == r.urn && s.id.as_deref() == Some(r.id.as_str()))
            .cloned()
    };
    let (Some(old_provider), Some(new_provider)) = (find(old_ref), find(new_ref)) else {
        return Ok(false);
    };
    let response = d
        .registry
        .diff(
            &new_provider.urn,
            &old_ref.id,
            old_provider.inputs,
            old_provider.outputs,
            new_provider.inputs,
        )
        .await
        .map_err(|source| EngineError::Provider {
            urn: new.urn.clone(),
            source,
        })?;
    Ok(!response.requires_replacement())
}

async fn provider_diff(
    d: &Deployment,
    old: &ResourceState,
    new: &ResourceState,
) -> Result<DiffResponse, EngineError> {
    let urn = new.urn.clone();
    let id = old.id.clone().unwrap_or_default();
    let response = if new.is_provider() {
        d.registry
            .diff(
                &urn,
                &id,
                old.inputs.clone(),
                old.outputs.clone(),
                new.inputs.clone(),
            )
            .await
            .map_err(|source| EngineError::Provider {
                urn: urn.clone(),
                source,
            })?
    } else {
        let provider = steps::provider_of(d, new).await?;
        provider
            .diff(DiffRequest {
                urn: urn.clone(),
                id,
                old_inputs: old.inputs.clone(),
                old_outputs: old.outputs.clone(),
                new_inputs: new.inputs.clone(),
                ignore_changes: new.ignore_changes.clone(),
            })
            .await
            .map_err(|source| EngineError::Step {
                op: StepOp::Update,
                urn,
                source,
            })?
    };
    Ok(response)
}

/// The detailed diff of a response; when the provider cannot tell
/// (`Unknown`), the engine compares old and new inputs itself.
pub(crate) fn detailed(
    response: &DiffResponse,
    old: &ResourceState,
    new: &ResourceState,
) -> BTreeMap<String, PropertyDiff> {
    match response.changes {
        DiffChanges::None => BTreeMap::new(),
        DiffChanges::Unknown => diff_objects(&old.inputs, &new.inputs)
            .into_iter()
            .map(|(k, mut v)| {
                v.input_diff = true;
                (k.to_string(), v)
            })
            .collect(),
        DiffChanges::Some => {
            if let Some(detailed) = response.detailed_diff.as_ref().filter(|d| !d.is_empty()) {
                return detailed.clone();
            }
            let mut out = BTreeMap::new();
            for key in &response.changed_keys {
                let kind = if response.replace_keys.contains(key) {
                    DiffKind::UpdateReplace
                } else {
                    DiffKind::Update
                };
                out.insert(
                    key.clone(),
                    PropertyDiff {
                        kind,
                        input_diff: true,
                    },
                );
            }
            for key in &response.replace_keys {
                out.entry(key.clone()).or_insert(PropertyDiff {
                    kind: DiffKind::UpdateReplace,
                    input_diff: true,
                });
            }
            if out.is_empty() {
                // Changes without any key: still an update.
                out.insert(
                    String::new(),
                    PropertyDiff {
                        kind: DiffKind::Update,
                        input_diff: false,
                    },
                );
            }
            out
        }
    }
}

/// A step's future, boxed.
pub(crate) type StepFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Arc<ResourceState>, EngineError>> + Send + 'a>>;

/// Carries out a decision. Each kind of step is a future of its own: a
/// registration waiting in a Same step holds that step's future alone, not
/// the space a replacement would need.
///
/// The old state is read where the base holds it; only a replacement,
/// which keeps it until the original is deleted, takes a copy.
pub(crate) fn execute<'a>(
    d: &'a Deployment,
    old_index: usize,
    mut new: ResourceState,
    decision: Decision,
    options: &ResourceOptions,
) -> StepFuture<'a> {
    let old = d.old_state(old_index);
    match decision {
        Decision::Same { upgraded } => {
            new.id = old.id.clone();
            new.outputs = upgraded.unwrap_or_else(|| old.outputs.clone());
            new.created = old.created.clone();
            new.modified = old.modified.clone();
            Box::pin(steps::same::run(d, old_index, new))
        }
        Decision::Update(diff) => {
            new.id = old.id.clone();
            new.outputs = old.outputs.clone();
            new.created = old.created.clone();
            Box::pin(steps::update::run(d, old_index, new, diff))
        }
        Decision::Replace {
            delete_before_replace,
            diff,
        } => Box::pin(replace(
            d,
            Replacement {
                old_index,
                old: old.clone(),
                new,
                delete_before_replace: options
                    .delete_before_replace
                    .unwrap_or(delete_before_replace),
                imported: options.import_id.is_some(),
                diff,
            },
        )),
    }
}

/// A replacement decided on.
struct Replacement {
    old_index: usize,
    old: ResourceState,
    new: ResourceState,
    /// The goal's `deleteBeforeReplace`, else the provider's answer.
    delete_before_replace: bool,
    /// The goal imports the resource (which a replacement cannot keep).
    imported: bool,
    diff: BTreeMap<String, PropertyDiff>,
}

/// Replaces `r.old` by `r.new`: create then delete, or delete first.
async fn replace(d: &Deployment, r: Replacement) -> Result<Arc<ResourceState>, EngineError> {
    let Replacement {
        old_index,
        old,
        mut new,
        delete_before_replace,
        imported,
        diff,
    } = r;
    if old.protect && !old.pending_replacement && !d.progress().object_gone(old_index) {
        let err = EngineError::Protected {
            urn: old.urn.clone(),
            action: "replaced",
        };
        return Err(steps::failed(d, StepOp::Replace, &old.urn, err));
    }
    if imported {
        let err = EngineError::ImportedReplace {
            urn: new.urn.clone(),
            keys: replace_keys(&diff),
        };
        if !d.opts.preview {
            return Err(steps::failed(d, StepOp::Replace, &new.urn, err));
        }
        d.events.diagnostic(
            crate::events::Severity::Warning,
            Some(&new.urn),
            err.to_string(),
        );
    }
    d.progress().replaced.insert(new.urn.clone());
    let start = crate::events::StepStart {
        old: Some(&old),
        new: Some(&new),
        diff: Some(&diff),
    };
    d.started(StepOp::Replace, &new.urn, start);
    // A replacement is a new object: check again without old inputs
    // so no generated default of the old one is reused.
    new.inputs = check(d, &new, Default::default()).await?;
    let gone = old.pending_replacement || d.progress().object_gone(old_index);
    let (remove_old, delete_old) = if gone {
        (Some(old_index), None)
    } else if delete_before_replace {
        delete_for_replacement(d, old_index).await?;
        (Some(old_index), None)
    } else {
        (None, Some(old_index))
    };
    steps::create::run(
        d,
        CreateStep {
            op: StepOp::CreateReplacement,
            state: new,
            remove_old,
            delete_old,
            old: Some(Box::new(old)),
            diff,
        },
    )
    .await
}

/// The keys of a replacement's diff that force it (all of them if none
/// says so: `--replace`, a taint, a changed provider).
fn replace_keys(diff: &BTreeMap<String, PropertyDiff>) -> Vec<String> {
    let forcing: Vec<String> = diff
        .iter()
        .filter(|(_, c)| c.kind.is_replace())
        .map(|(k, _)| k.clone())
        .collect();
    match forcing.is_empty() {
        true if diff.is_empty() => vec!["(a replacement was requested)".to_owned()],
        true => diff.keys().cloned().collect(),
        false => forcing,
    }
}

//! Dependent replacements (seed 000): before a delete-before-replace
//! deletes a resource, the resources that depend on it and would be
//! replaced anyway must be deleted first, and every refusal comes before
//! the first delete.

use std::collections::HashSet;

use converge_model::{PropertyValue, Urn};
use converge_plugin::DiffRequest;

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;
use crate::steps::{self, delete};

/// The base indices of the resources that must be deleted (and later
/// recreated) along with `root`, dependents first.
///
/// Walks the base snapshot in order (it is topologically sorted). A
/// resource joins the set if its provider is in the set, or if one of its
/// inputs comes from the set (property dependencies) and the provider's
/// `Diff`, with those inputs made unknown, says it must be replaced. A
/// relationship through `dependsOn` or a parent alone does not replace.
/// Resources whose object is already gone are skipped, and so are those a
/// registration has taken over: their object is the registration's now.
async fn dependent_replacements(d: &Deployment, root: usize) -> Result<Vec<usize>, EngineError> {
    let mut replaced: HashSet<Urn> = HashSet::from([d.base.resources[root].urn.clone()]);
    let mut order = Vec::new();
    for (i, r) in d.base.resources.iter().enumerate().skip(root + 1) {
        let settled = {
            let p = d.progress();
            p.object_gone(i) || p.is_claimed(i)
        };
        if r.delete || !r.custom || settled {
            continue;
        }
        let provider_replaced = r
            .provider
            .as_ref()
            .is_some_and(|p| replaced.contains(&p.urn));
        let affected: Vec<&String> = r
            .property_dependencies
            .iter()
            .filter(|(_, deps)| deps.iter().any(|u| replaced.contains(u)))
            .map(|(k, _)| k)
            .collect();
        let must_replace = if provider_replaced {
            true
        } else if affected.is_empty() {
            false
        } else {
            let mut inputs = r.inputs.clone();
            for key in affected {
                if inputs.contains_key(key) {
                    inputs.insert(key.clone(), PropertyValue::Unknown);
                }
            }
            let provider = steps::provider_of(d, r).await?;
            let response = provider
                .diff(DiffRequest {
                    urn: r.urn.clone(),
                    id: r.id.clone().unwrap_or_default(),
                    old_inputs: r.inputs.clone(),
                    old_outputs: r.outputs.clone(),
                    new_inputs: inputs,
                    ignore_changes: r.ignore_changes.clone(),
                })
                .await
                .map_err(|source| EngineError::Step {
                    op: StepOp::Replace,
                    urn: r.urn.clone(),
                    source,
                })?;
            response.requires_replacement()
        };
        if must_replace {
            replaced.insert(r.urn.clone());
            order.push(i);
        }
    }
    order.reverse();
    Ok(order)
}

/// Deletes `old_index` (and first the dependents that must go with it) for
/// a delete-before-replace.
pub(crate) async fn delete_for_replacement(
    d: &Deployment,
    old_index: usize,
) -> Result<(), EngineError> {
    let dependents = dependent_replacements(d, old_index).await?;
    let order: Vec<usize> = dependents
        .into_iter()
        .chain(std::iter::once(old_index))
        .collect();
    // Every refusal comes before the first delete: a protected resource,
    // or a dependent the update may not touch (`--target` without it, or
    // `--exclude`), whose object would be deleted and never recreated
    // while its state says it is there.
    let root = &d.base.resources[old_index].urn;
    for &i in &order {
        let r = &d.base.resources[i];
        if r.protect {
            return Err(steps::failed(
                d,
                StepOp::DeleteReplaced,
                &r.urn,
                EngineError::Protected {
                    urn: r.urn.clone(),
                    action: "replaced",
                },
            ));
        }
        if i != old_index && !d.selection.is_targeted(&r.urn) {
            return Err(steps::failed(
                d,
                StepOp::DeleteReplaced,
                root,
                EngineError::ReplacementDependentNotTargeted {
                    urn: root.clone(),
                    dependent: r.urn.clone(),
                },
            ));
        }
    }
    for i in order {
        let r = &d.base.resources[i];
        if d.progress().object_gone(i) {
            continue;
        }
        let action = if r.retain_on_delete {
            delete::ObjectAction::Forget
        } else {
            delete::ObjectAction::Delete
        };
        delete::run(
            d,
            StepOp::DeleteReplaced,
            i,
            delete::DeleteMode::PendingReplacement,
            action,
        )
        .await?;
    }
    Ok(())
}

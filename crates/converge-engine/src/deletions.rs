//! Deletions once the program has exited (seed 000): every old resource
//! the program no longer declares, every original a create-before-delete
//! replaced, and every state a delete-before-replace left behind.
//!
//! Each deletion waits only for the deletions of the resources that depend
//! on it — real dependencies, not layer barriers — and runs on the shared
//! worker pool.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use converge_model::{DependencyKind, Urn};
use tokio::sync::watch;

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::StepOp;
use crate::ledger::Disposition;
use crate::steps::delete::{self, DeleteMode, ObjectAction};
use crate::steps::failed;

#[derive(Debug, Clone, Copy)]
struct Candidate {
    index: usize,
    op: StepOp,
    action: ObjectAction,
}

/// Which base resources this operation deletes, and how.
fn candidates(d: &Deployment, destroy: bool) -> Result<Vec<Candidate>, EngineError> {
    let p = d.progress();
    let mut out = Vec::new();
    for (i, r) in d.base.resources.iter().enumerate() {
        let disposition = p.disposition(i);
        if let Some(Disposition::Claimed(_)) = disposition {
            continue;
        }
        let replaced = matches!(disposition, Some(Disposition::Replaced { .. }));
        let gone = r.pending_replacement || disposition.is_some_and(Disposition::object_gone);
        // A resource the program still declares is never deleted here,
        // even if its step failed.
        let seen = disposition.and_then(Disposition::holder).is_some();
        let op = if replaced || (r.delete && !gone) {
            StepOp::DeleteReplaced
        } else if gone && (destroy || !seen) {
            StepOp::RemovePendingReplace
        } else if destroy || !seen {
            StepOp::Delete
        } else {
            continue;
        };
        if !replaced && !d.selection.is_targeted(&r.urn) {
            continue;
        }
        let action = if gone || r.retain_on_delete || r.external || (!r.custom && !r.is_provider())
        {
            ObjectAction::Forget
        } else {
            ObjectAction::Delete
        };
        out.push(Candidate {
            index: i,
            op,
            action,
        });
    }
    // Whatever stays in the snapshot keeps what it depends on: a resource
    // that is not being deleted (its step failed, it is not targeted, the
    // program did not reach it) holds its dependencies back, unless a new
    // copy of the dependency is already recorded.
    let recorded: HashSet<&Urn> = p
        .registered
        .iter()
        .filter(|(_, r)| r.op.is_some())
        .map(|(u, _)| u)
        .collect();
    let mut held = Vec::new();
    loop {
        let leaving: HashSet<usize> = out.iter().map(|c| c.index).collect();
        let staying: Vec<&converge_model::ResourceState> = d
            .base
            .resources
            .iter()
            .enumerate()
            .filter(|(i, _)| !p.is_claimed(*i) && !leaving.contains(i))
            .map(|(_, r)| r)
            .collect();
        let before = out.len();
        out.retain(|c| {
            let candidate = &d.base.resources[c.index];
            let user = staying.iter().find(|r| {
                // A provider reference names one copy (URN and ID); other
                // references are satisfied by any recorded copy of the URN.
                let by_provider = r.provider.as_ref().is_some_and(|p| {
                    p.urn == candidate.urn && Some(p.id.as_str()) == candidate.id.as_deref()
                });
                let by_urn = !recorded.contains(&candidate.urn)
                    && r.all_dependencies().any(|(kind, dep)| {
                        kind != DependencyKind::Provider && *dep == candidate.urn
                    });
                by_provider || by_urn
            });
            match user {
                Some(user) => {
                    held.push((candidate.urn.clone(), user.urn.clone()));
                    false
                }
                None => true,
            }
        });
        if out.len() == before {
            break;
        }
    }
    drop(p);
    for (urn, user) in held {
        if d.selection.is_explicitly_targeted(&urn) {
            return Err(failed(
                d,
                StepOp::Delete,
                &urn,
                EngineError::DependentNotTargeted {
                    urn: urn.clone(),
                    user,
                },
            ));
        }
        d.events.diagnostic(
            crate::events::Severity::Warning,
            Some(&urn),
            format!("not deleted: {user}, which stays, depends on it"),
        );
    }
    // deletedWith: no provider call when the resource it goes with is being
    // deleted too.
    let deleting: HashSet<&Urn> = out
        .iter()
        .filter(|c| c.action == ObjectAction::Delete)
        .map(|c| &d.base.resources[c.index].urn)
        .collect();
    let forget: Vec<usize> = out
        .iter()
        .enumerate()
        .filter(|(_, c)| {
            d.base.resources[c.index]
                .deleted_with
                .as_ref()
                .is_some_and(|w| deleting.contains(w))
        })
        .map(|(k, _)| k)
        .collect();
    for k in forget {
        out[k].action = ObjectAction::Forget;
    }
    for c in &out {
        let r = &d.base.resources[c.index];
        if r.protect && c.op == StepOp::Delete {
            return Err(failed(
                d,
                StepOp::Delete,
                &r.urn,
                EngineError::Protected {
                    urn: r.urn.clone(),
                    action: "deleted",
                },
            ));
        }
    }
    Ok(out)
}

/// Runs the deletion phase. `destroy` deletes everything in the base.
pub(crate) async fn run(d: &Arc<Deployment>, destroy: bool) -> Result<(), EngineError> {
    let list = candidates(d, destroy)?;
    if list.is_empty() {
        return Ok(());
    }
    // For each candidate, the candidates that depend on it (and so must be
    // deleted first).
    let mut by_urn: HashMap<&Urn, Vec<usize>> = HashMap::new();
    for (k, c) in list.iter().enumerate() {
        by_urn
            .entry(&d.base.resources[c.index].urn)
            .or_default()
            .push(k);
    }
    let mut waits_for: Vec<Vec<usize>> = vec![Vec::new(); list.len()];
    for (k, c) in list.iter().enumerate() {
        for (_, dep) in d.base.resources[c.index].all_dependencies() {
            for &j in by_urn.get(dep).map(Vec::as_slice).unwrap_or_default() {
                if j != k && list[j].index < c.index {
                    waits_for[j].push(k);
                }
            }
        }
    }
    // Done signals: None = pending, Some(true) = deleted, Some(false) =
    // failed or skipped.
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..list.len())
        .map(|_| watch::channel(None::<bool>))
        .unzip();
    let mut tasks = tokio::task::JoinSet::new();
    for (k, (c, tx)) in list.iter().copied().zip(senders).enumerate() {
        let d = Arc::clone(d);
        let waits: Vec<watch::Receiver<Option<bool>>> =
            waits_for[k].iter().map(|&j| receivers[j].clone()).collect();
        tasks.spawn(async move {
            let mut ok = true;
            for mut rx in waits {
                let done = rx.wait_for(Option::is_some).await.map(|v| *v == Some(true));
                ok &= done.unwrap_or(false);
            }
            if !ok || (!d.opts.continue_on_error && d.progress().failure.is_some()) {
                let _ = tx.send(Some(false));
                return Ok(());
            }
            let urn = d.base.resources[c.index].urn.clone();
            if let Err(e) = crate::saved_plan::enforce::deletion(&d, &urn) {
                let _ = tx.send(Some(false));
                return Err(crate::steps::failed(&d, c.op, &urn, e));
            }
            let result = delete::run(&d, c.op, c.index, DeleteMode::Remove, c.action).await;
            let _ = tx.send(Some(result.is_ok()));
            result
        });
    }
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Err(e)) if first_error.is_none() => first_error = Some(e),
            Err(_) if first_error.is_none() => first_error = Some(EngineError::DeletionTask),
            _ => {}
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

//! Deletions once the program has exited (seed 000): every old resource
//! the program no longer declares, every original a create-before-delete
//! replaced, and every state a delete-before-replace left behind.
//!
//! Each deletion waits only for the deletions of the resources that depend
//! on it — real dependencies, not layer barriers — and runs on the shared
//! worker pool.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use converge_model::{DependencyKind, ResourceState, Urn};
use converge_state::journal::JournalEntry;

use crate::deployment::{Deployment, Progress};
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
        // An old copy a previous operation left to delete (its replacement
        // failed or was cancelled before the original went) is an ordinary
        // deletion, shown and counted as one, as Pulumi's pending deletes
        // are; the original of a replacement in this operation is not.
        let op = if replaced {
            StepOp::DeleteReplaced
        } else if r.delete && !gone {
            StepOp::Delete
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
    // copy of the dependency is already recorded. A candidate held back
    // stays too, so this repeats until nothing more is held.
    let mut held = Vec::new();
    while !out.is_empty() {
        let users = Users::of(d, &p, &out);
        let before = out.len();
        out.retain(|c| match users.first_of(&d.base.resources[c.index]) {
            Some(user) => {
                held.push((d.base.resources[c.index].urn.clone(), user.clone()));
                false
            }
            None => true,
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
    // deleted too — a custom resource whose object is deleted, or a
    // component (which has no object of its own: deleting it is what
    // Pulumi's `otherDeletions` counts, so `deletedWith` a component that
    // goes skips the delete). A retained resource's object stays, so what
    // goes with it is deleted.
    let deleting: HashSet<&Urn> = out
        .iter()
        .filter(|c| {
            let r = &d.base.resources[c.index];
            c.action == ObjectAction::Delete
                || (!r.custom && !r.is_provider() && !r.retain_on_delete)
        })
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
        if r.protect && c.op == StepOp::Delete && !r.delete {
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

/// The staying resources that use the candidates for deletion: for each
/// candidate, the first staying resource (in base order) that names its
/// copy as provider (URN and ID), and the first that depends on its URN
/// otherwise. Found in one pass over the base, each reference looked up
/// among the candidates: not each candidate against every resource that
/// stays (a deletion of half of 100,000 resources made that 2.5 billion
/// comparisons). Each table has a key per candidate, its first user once
/// found.
struct Users<'a> {
    by_provider: HashMap<(&'a Urn, &'a str), Option<(usize, &'a Urn)>>,
    /// Only candidates with no recorded new copy: any recorded copy of the
    /// URN satisfies a dependency.
    by_urn: HashMap<&'a Urn, Option<(usize, &'a Urn)>>,
}

impl<'a> Users<'a> {
    fn of(d: &'a Deployment, p: &Progress, out: &[Candidate]) -> Users<'a> {
        let base = &d.base.resources;
        let mut users = Users {
            by_provider: HashMap::new(),
            by_urn: HashMap::new(),
        };
        let mut leaving = vec![false; base.len()];
        for c in out {
            leaving[c.index] = true;
        }
        let stays = |i: usize| !leaving[i] && !p.is_claimed(i);
        if !(0..base.len()).any(stays) {
            // A destroy: nothing stays to hold anything back.
            return users;
        }
        for c in out {
            let candidate = &base[c.index];
            if let Some(id) = candidate.id.as_deref() {
                users.by_provider.insert((&candidate.urn, id), None);
            }
            if p.registered
                .get(&candidate.urn)
                .is_none_or(|r| r.op.is_none())
            {
                users.by_urn.insert(&candidate.urn, None);
            }
        }
        let first = |slot: Option<&mut Option<(usize, &'a Urn)>>, user| {
            if let Some(slot @ None) = slot {
                *slot = Some(user);
            }
        };
        for (i, r) in base.iter().enumerate().filter(|(i, _)| stays(*i)) {
            if let Some(reference) = &r.provider {
                let key = (&reference.urn, reference.id.as_str());
                first(users.by_provider.get_mut(&key), (i, &r.urn));
            }
            for (kind, dep) in r.all_dependencies() {
                if kind != DependencyKind::Provider {
                    first(users.by_urn.get_mut(dep), (i, &r.urn));
                }
            }
        }
        users
    }

    /// The first staying resource that uses `candidate`.
    fn first_of(&self, candidate: &ResourceState) -> Option<&'a Urn> {
        let by_provider = candidate
            .id
            .as_deref()
            .and_then(|id| *self.by_provider.get(&(&candidate.urn, id))?);
        let by_urn = self.by_urn.get(&candidate.urn).copied().flatten();
        by_provider
            .into_iter()
            .chain(by_urn)
            .min_by_key(|(i, _)| *i)
            .map(|(_, user)| user)
    }
}

/// Runs the deletion phase. `destroy` deletes everything in the base.
///
/// A deletion starts once every deletion that must come before it is
/// done, and no more than [`crate::DeploymentOptions::steps_in_flight`]
/// are under way at once: a destroy of 100,000 resources holds a task for
/// the deletions running, not for every deletion still waiting.
pub(crate) async fn run(d: &Arc<Deployment>, destroy: bool) -> Result<(), EngineError> {
    let list = candidates(d, destroy)?;
    if list.is_empty() {
        return Ok(());
    }
    if !destroy {
        // What the program no longer declares (not the old copies a
        // previous operation left to delete).
        let deleted = list
            .iter()
            .filter(|c| c.op == StepOp::Delete)
            .map(|c| &d.base.resources[c.index])
            .filter(|r| !r.delete)
            .map(|r| &r.urn);
        crate::alias_hints::warn(d, deleted);
    }
    let mut order = Order::of(d, &list);
    let in_flight = d.opts.steps_in_flight();
    let mut tasks = tokio::task::JoinSet::new();
    let mut running = HashMap::new();
    let mut first_error = None;
    loop {
        while tasks.len() < in_flight {
            let Some((k, ok)) = order.next_ready() else {
                break;
            };
            let (d, c) = (Arc::clone(d), list[k]);
            let task = tasks.spawn(async move { delete_one(&d, c, ok).await });
            running.insert(task.id(), k);
        }
        let Some(joined) = tasks.join_next_with_id().await else {
            break;
        };
        let (k, deleted) = match joined {
            Ok((id, result)) => {
                let deleted = matches!(result, Ok(true));
                if let Err(e) = result {
                    first_error.get_or_insert(e);
                }
                (running.remove(&id), deleted)
            }
            Err(e) => {
                first_error.get_or_insert(EngineError::DeletionTask);
                (running.remove(&e.id()), false)
            }
        };
        if let Some(k) = k {
            order.done(k, deleted);
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Deletes candidate `c` if every deletion before it succeeded (`ok`) and
/// the operation has not failed; whether it was deleted.
async fn delete_one(d: &Arc<Deployment>, c: Candidate, ok: bool) -> Result<bool, EngineError> {
    if !ok || (!d.opts.continue_on_error && d.progress().failure.is_some()) {
        return Ok(false);
    }
    if d.opts.cancel.is_cancelled() {
        return Ok(false);
    }
    if d.merged_away(c.index) {
        // A component a state migration merged into its successor: only
        // its state entry leaves. Nothing is deleted, so no step is shown
        // and no hook runs.
        let op_id = d.next_operation();
        d.begin(op_id, None).await?;
        d.end(JournalEntry::success(0, op_id).with_remove_old(c.index))
            .await?;
        return Ok(true);
    }
    let urn = d.base.resources[c.index].urn.clone();
    if let Err(e) = crate::saved_plan::enforce::deletion(d, &urn) {
        return Err(crate::steps::failed(d, c.op, &urn, e));
    }
    if d.base.resources[c.index].delete {
        d.events.diagnostic(
            crate::events::Severity::Info,
            Some(&urn),
            "completing deletion from previous update".to_string(),
        );
    }
    delete::run(d, c.op, c.index, DeleteMode::Remove, c.action).await?;
    Ok(true)
}

/// The order deletions run in: a resource's deletion waits for those of
/// the candidates that depend on it.
struct Order {
    /// For each candidate, how many deletions it still waits for.
    waiting: Vec<usize>,
    /// For each candidate, whether every deletion it waited for succeeded.
    ok: Vec<bool>,
    /// For each candidate, the candidates that wait for it.
    unblocks: Vec<Vec<usize>>,
    /// Candidates waiting for nothing, not started yet.
    ready: Vec<usize>,
}

impl Order {
    fn of(d: &Deployment, list: &[Candidate]) -> Order {
        let mut by_urn: HashMap<&Urn, Vec<usize>> = HashMap::new();
        for (k, c) in list.iter().enumerate() {
            by_urn
                .entry(&d.base.resources[c.index].urn)
                .or_default()
                .push(k);
        }
        let mut waiting = vec![0; list.len()];
        let mut unblocks: Vec<Vec<usize>> = vec![Vec::new(); list.len()];
        for (k, c) in list.iter().enumerate() {
            // Candidate k depends on candidate j (an earlier resource of
            // the base, which is in dependency order): j waits for k.
            let mut deps: Vec<usize> = d.base.resources[c.index]
                .all_dependencies()
                .flat_map(|(_, dep)| by_urn.get(dep).map(Vec::as_slice).unwrap_or_default())
                .copied()
                .filter(|&j| j != k && list[j].index < c.index)
                .collect();
            deps.sort_unstable();
            deps.dedup();
            for j in deps {
                waiting[j] += 1;
                unblocks[k].push(j);
            }
        }
        // Started in the base's reverse order: dependents first, as the
        // base is sorted.
        let ready = (0..list.len()).filter(|&k| waiting[k] == 0).collect();
        Order {
            waiting,
            ok: vec![true; list.len()],
            unblocks,
            ready,
        }
    }

    /// A candidate that may start, and whether every deletion it waited
    /// for succeeded.
    fn next_ready(&mut self) -> Option<(usize, bool)> {
        let k = self.ready.pop()?;
        Some((k, self.ok[k]))
    }

    /// Candidate `k` is done (`deleted` or not): those waiting for it may
    /// start once they wait for nothing else.
    fn done(&mut self, k: usize, deleted: bool) {
        for j in std::mem::take(&mut self.unblocks[k]) {
            self.ok[j] &= deleted;
            self.waiting[j] -= 1;
            if self.waiting[j] == 0 {
                self.ready.push(j);
            }
        }
    }
}

//! Renames: a registration that took over an old resource through an
//! alias (its URN differs from the old one).
//!
//! The old state cannot simply leave the snapshot when the new one arrives:
//! old resources that still refer to it by its old URN would dangle until
//! they register. So the takeover marks the old state pending replacement
//! (if the deployment stops here, the next one forgets it without deleting
//! the object, which the new state tracks), then rewrites every remaining
//! reference to the old URN, then forgets the old state. Every journal
//! prefix stays valid.

use converge_model::{ResourceState, Urn};
use converge_state::journal::JournalEntry;

use crate::deployment::Deployment;
use crate::error::EngineError;

/// True if the registration of `new_urn` took over `old_index` under
/// another URN.
pub(crate) fn is_rename(d: &Deployment, old_index: usize, new_urn: &Urn) -> bool {
    &d.base.resources[old_index].urn != new_urn
}

/// An end entry that takes over `old_index`: removes it, or for a rename
/// marks it pending replacement (see the module docs).
pub(crate) fn take_over(
    d: &Deployment,
    entry: JournalEntry,
    old_index: usize,
    new_urn: &Urn,
) -> JournalEntry {
    if is_rename(d, old_index, new_urn) {
        entry.with_pending_replacement_old(old_index)
    } else {
        entry.with_remove_old(old_index)
    }
}

fn rewrite(state: &mut ResourceState, from: &Urn, to: &Urn) {
    let swap = |u: &mut Urn| {
        if u == from {
            *u = to.clone();
        }
    };
    if let Some(p) = state.parent.as_mut() {
        swap(p);
    }
    if let Some(p) = state.provider.as_mut() {
        swap(&mut p.urn);
    }
    if let Some(w) = state.deleted_with.as_mut() {
        swap(w);
    }
    state.dependencies.iter_mut().for_each(swap);
    state
        .property_dependencies
        .values_mut()
        .flatten()
        .for_each(swap);
}

/// After a rename's end entry (and its claim in the ledger): rewrite the
/// references of the old resources that stay, then forget the old state.
/// Most steps are no rename: only a rename allocates the rewrite's future,
/// so the steps that await this one stay small.
pub(crate) async fn finish(
    d: &Deployment,
    old_index: usize,
    new: &ResourceState,
) -> Result<(), EngineError> {
    if !is_rename(d, old_index, &new.urn) {
        return Ok(());
    }
    Box::pin(rewrite_referrers(d, old_index)).await
}

/// [`finish`] of a rename.
async fn rewrite_referrers(d: &Deployment, old_index: usize) -> Result<(), EngineError> {
    let old_urn = &d.base.resources[old_index].urn;
    // One rename rewrites at a time. Each rewrite of a referrer starts from
    // its base state with every rename so far applied (the ledger knows
    // them all), so two renames of what one resource refers to both hold,
    // whichever rewrites last.
    let _one_at_a_time = d.renames.lock().await;
    let rewrites: Vec<(usize, ResourceState)> = {
        let p = d.progress();
        let renames = p.renames();
        d.base
            .resources
            .iter()
            .enumerate()
            .filter(|(j, r)| {
                *j != old_index
                    && !p.is_claimed(*j)
                    && r.all_dependencies().any(|(_, u)| u == old_urn)
            })
            .map(|(j, r)| {
                let mut state = r.clone();
                for (from, to) in &renames {
                    rewrite(&mut state, from, to);
                }
                (j, state)
            })
            .collect()
    };
    for (j, state) in rewrites {
        let entry = JournalEntry::outputs(0, d.next_operation(), state).with_remove_old(j);
        d.end(entry).await?;
    }
    let op = d.next_operation();
    d.begin(op, None).await?;
    d.end(JournalEntry::success(0, op).with_remove_old(old_index))
        .await?;
    Ok(())
}

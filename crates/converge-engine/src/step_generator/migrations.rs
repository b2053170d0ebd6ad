//! State migrations: the `stateMigrations` resource option.
//!
//! A registration that carries migration callbacks and has an old state
//! (by URN or alias) hands that state and its descendants' to the
//! program, as checkpoint resources with secrets in plaintext, before
//! anything is diffed. Each callback answers nothing (the state stays) or
//! the whole subtree rewritten, naming a successor for every old URN it
//! dropped; the next callback gets what the last one returned.
//!
//! What a migration may change, and what it may not:
//! - URNs, parents, dependencies, inputs and outputs: freely;
//! - a provider's state: not at all;
//! - a custom resource's type, ID, provider, `custom`, `protect` and
//!   `retainOnDelete`: never (the object it tracks stays the same); it may
//!   be renamed (dropped with a successor that takes its place) but never
//!   removed, so no real object is lost track of;
//! - a component may be merged into its successor (removed from the state
//!   once the operation's deletions run, with no step shown, no hook and
//!   no provider call);
//! - no resource may be added, and no new URN may be one that another
//!   resource already has.
//!
//! The migrated states are held in memory ([`Overlay`]): the base
//! snapshot is not touched. Each resource's step then starts from its
//! migrated state and writes it (a renamed one as a rename, rewriting
//! what refers to it). Until then the stored state is the old one, so an
//! operation that stops midway leaves a state the next one migrates again
//! (callbacks must be idempotent, as Pulumi requires).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use converge_model::{ResourceState, Urn};
use converge_state::checkpoint::{resources_from_json, resources_to_json};

use crate::deployment::Deployment;
use crate::error::EngineError;

/// A state migration callback of the program, as a registration names it
/// (the program's `Callbacks` server and the callback's token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationCallback {
    pub target: String,
    pub token: String,
}

/// A callback's answer that changes the state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MigrationAnswer {
    /// The subtree's new states: a JSON array of checkpoint resources.
    pub new_state: Vec<u8>,
    /// Old URN → the URN in `new_state` that takes its place.
    pub successors: BTreeMap<String, String>,
}

/// Calls the program's state migration callbacks.
#[async_trait]
pub trait StateMigrator: Send + Sync + fmt::Debug {
    /// Calls `callback` for the registration `urn` with `old_state` (a
    /// JSON array of checkpoint resources): `None` if it left the state
    /// as it was; `Err` with the reason if it failed.
    async fn migrate(
        &self,
        callback: &MigrationCallback,
        urn: &Urn,
        old_state: Vec<u8>,
    ) -> Result<Option<MigrationAnswer>, String>;
}

/// The migrated base states, by base index.
#[derive(Debug, Default)]
pub(crate) struct Overlay {
    /// Set once anything was migrated: until then no lookup takes the lock.
    any: AtomicBool,
    inner: RwLock<Migrated>,
}

#[derive(Debug, Default)]
struct Migrated {
    states: HashMap<usize, Arc<ResourceState>>,
    /// The URN each migrated state has now.
    by_urn: HashMap<Urn, usize>,
    /// Components merged into a successor: removed at the end.
    merged: HashMap<usize, Urn>,
}

impl Overlay {
    fn read(&self) -> RwLockReadGuard<'_, Migrated> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Migrated> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// An old resource's state: the base's, or its migrated one. (Not
/// `Clone`: `.clone()` of one is a clone of the state.)
#[derive(Debug)]
pub(crate) enum OldState<'a> {
    Base(&'a ResourceState),
    Migrated(Arc<ResourceState>),
}

impl Deref for OldState<'_> {
    type Target = ResourceState;

    fn deref(&self) -> &ResourceState {
        match self {
            OldState::Base(s) => s,
            OldState::Migrated(s) => s,
        }
    }
}

impl Deployment {
    /// The old state at base index `i`, as migrated if it was.
    pub(crate) fn old_state(&self, i: usize) -> OldState<'_> {
        if self.migrated.any.load(Ordering::Acquire) {
            if let Some(s) = self.migrated.read().states.get(&i) {
                return OldState::Migrated(Arc::clone(s));
            }
        }
        OldState::Base(&self.base.resources[i])
    }

    /// The live old resource that has the URN `urn` now (after any
    /// migration): its base index.
    pub(crate) fn old_index_of(&self, urn: &Urn) -> Option<usize> {
        let base = self.olds.get(urn).copied();
        if !self.migrated.any.load(Ordering::Acquire) {
            return base;
        }
        let m = self.migrated.read();
        if let Some(&i) = m.by_urn.get(urn) {
            return Some(i);
        }
        base.filter(|i| !m.states.contains_key(i) && !m.merged.contains_key(i))
    }

    /// True if base index `i` is a component a migration merged into
    /// another resource: it leaves the state without a provider call.
    pub(crate) fn merged_away(&self, i: usize) -> bool {
        self.migrated.any.load(Ordering::Acquire) && self.migrated.read().merged.contains_key(&i)
    }
}

/// Runs the registration `urn`'s migration callbacks over its old state
/// (base index `old_index`) and its descendants, and keeps the result.
pub(crate) async fn run(
    d: &Deployment,
    urn: &Urn,
    old_index: usize,
    callbacks: &[MigrationCallback],
) -> Result<(), EngineError> {
    let failed = |message: String| EngineError::StateMigration {
        urn: urn.clone(),
        message,
    };
    let Some(migrator) = d.migrator.get() else {
        return Err(failed(
            "this program cannot run state migration callbacks".to_owned(),
        ));
    };
    let subtree = subtree(d, old_index);
    let before: Vec<(usize, ResourceState)> = subtree
        .iter()
        .map(|&i| (i, d.old_state(i).clone()))
        .collect();
    let mut current = before.clone();
    let mut merged: Vec<(usize, Urn)> = Vec::new();
    let mut changed = false;
    for callback in callbacks {
        let states: Vec<ResourceState> = current.iter().map(|(_, s)| s.clone()).collect();
        let json = resources_to_json(&states)
            .map_err(|e| failed(format!("the old state cannot be written: {e}")))?;
        let answer = migrator
            .migrate(callback, urn, json)
            .await
            .map_err(|e| failed(format!("the callback failed: {e}")))?;
        let Some(answer) = answer.filter(|a| !a.new_state.is_empty()) else {
            continue;
        };
        let new_states = resources_from_json(&answer.new_state)
            .map_err(|e| failed(format!("its new state cannot be read: {e}")))?;
        let successors = parse_successors(&answer.successors).map_err(failed)?;
        let (next, dropped) = match_up(&current, new_states, &successors).map_err(failed)?;
        for (_, to) in &mut merged {
            if let Some(again) = successors.get(to) {
                *to = again.clone();
            }
        }
        merged.extend(dropped);
        current = next;
        changed = true;
    }
    if !changed {
        return Ok(());
    }
    let before: HashMap<usize, ResourceState> = before.into_iter().collect();
    for (host, state) in &current {
        check_identity(d, &before[host], state).map_err(failed)?;
    }
    for (host, _) in &merged {
        let old = &before[host];
        if old.custom || old.is_provider() {
            return Err(failed(format!(
                "it drops {}, a {} resource: a migration may rename a custom resource (name a successor that keeps its type and ID) but never remove one",
                old.urn,
                if old.is_provider() { "provider" } else { "custom" }
            )));
        }
    }
    let ours: HashSet<usize> = subtree.iter().copied().collect();
    {
        let p = d.progress();
        for (host, state) in &current {
            if state.urn == before[host].urn {
                continue;
            }
            let taken = d
                .old_index_of(&state.urn)
                .is_some_and(|i| !ours.contains(&i))
                || p.registered.contains_key(&state.urn);
            if taken {
                return Err(failed(format!(
                    "it renames {} to {}, which another resource has",
                    before[host].urn, state.urn
                )));
            }
        }
    }
    let mut m = d.migrated.write();
    for (host, state) in current {
        if let Some(previous) = m.states.get(&host) {
            let previous = previous.urn.clone();
            m.by_urn.remove(&previous);
        }
        m.by_urn.insert(state.urn.clone(), host);
        m.states.insert(host, Arc::new(state));
    }
    for (host, successor) in merged {
        if let Some(previous) = m.states.remove(&host) {
            m.by_urn.remove(&previous.urn);
        }
        m.merged.insert(host, successor);
    }
    d.migrated.any.store(true, Ordering::Release);
    Ok(())
}

/// The base index `root` and its live descendants (by their parents, as
/// migrated so far), the root first, then in base order. Resources
/// already registered in this operation are not old state any more.
fn subtree(d: &Deployment, root: usize) -> Vec<usize> {
    // Each live old resource not yet registered, by its parent as
    // migrated so far (a migrated child may come before its parent).
    let mut children: HashMap<Urn, Vec<usize>> = HashMap::new();
    {
        let p = d.progress();
        for (i, r) in d.base.resources.iter().enumerate() {
            if i == root || r.delete || d.merged_away(i) || p.is_claimed(i) {
                continue;
            }
            let state = d.old_state(i);
            if d.old_index_of(&state.urn) != Some(i) {
                continue;
            }
            if let Some(parent) = &state.parent {
                children.entry(parent.clone()).or_default().push(i);
            }
        }
    }
    let mut found = Vec::new();
    let mut next = vec![d.old_state(root).urn.clone()];
    while let Some(parent) = next.pop() {
        for i in children.remove(&parent).unwrap_or_default() {
            next.push(d.old_state(i).urn.clone());
            found.push(i);
        }
    }
    found.sort_unstable();
    std::iter::once(root).chain(found).collect()
}

fn parse_successors(raw: &BTreeMap<String, String>) -> Result<HashMap<Urn, Urn>, String> {
    raw.iter()
        .map(|(from, to)| {
            let parse =
                |s: &str| Urn::parse(s).map_err(|e| format!("successor {from:?} → {to:?}: {e}"));
            Ok((parse(from)?, parse(to)?))
        })
        .collect()
}

/// Pairs each state a callback returned with the base index it takes the
/// place of: its own (same URN), else that of the first old state whose
/// successor it is. Returns the pairs in the callback's order, and the
/// old states merged into a successor that holds another's place.
#[allow(clippy::type_complexity)]
fn match_up(
    current: &[(usize, ResourceState)],
    new_states: Vec<ResourceState>,
    successors: &HashMap<Urn, Urn>,
) -> Result<(Vec<(usize, ResourceState)>, Vec<(usize, Urn)>), String> {
    let old: HashMap<&Urn, usize> = current.iter().map(|(h, s)| (&s.urn, *h)).collect();
    let mut new_urns = HashSet::new();
    for s in &new_states {
        if !new_urns.insert(s.urn.clone()) {
            return Err(format!("its new state lists {} twice", s.urn));
        }
        if s.delete || s.pending_replacement {
            return Err(format!(
                "its new state marks {} for deletion or replacement; a migration rewrites live states only",
                s.urn
            ));
        }
    }
    for (from, to) in successors {
        if !old.contains_key(from) {
            return Err(format!(
                "it names a successor for {from}, which is not in the old state it was given"
            ));
        }
        if new_urns.contains(from) {
            return Err(format!(
                "it both keeps {from} and names a successor for it; a resource is kept or succeeded, not both"
            ));
        }
        if !new_urns.contains(to) {
            return Err(format!(
                "it names {to} as the successor of {from}, but {to} is not in its new state"
            ));
        }
    }
    for (_, s) in current {
        if !new_urns.contains(&s.urn) && !successors.contains_key(&s.urn) {
            return Err(format!(
                "it drops {} without naming a successor for it",
                s.urn
            ));
        }
    }
    let mut used = HashSet::new();
    let mut pairs = Vec::with_capacity(new_states.len());
    for s in new_states {
        let host = match old.get(&s.urn) {
            Some(&h) => h,
            None => current
                .iter()
                .find(|(h, o)| successors.get(&o.urn) == Some(&s.urn) && !used.contains(h))
                .map(|(h, _)| *h)
                .ok_or_else(|| {
                    format!(
                        "its new state adds {}, which succeeds no old resource; a migration cannot add resources",
                        s.urn
                    )
                })?,
        };
        used.insert(host);
        pairs.push((host, s));
    }
    let merged = current
        .iter()
        .filter(|(h, _)| !used.contains(h))
        .map(|(h, s)| (*h, successors[&s.urn].clone()))
        .collect();
    Ok((pairs, merged))
}

/// What a migration must leave as it was: a provider's whole state; a
/// custom resource's identity and safety flags; the stack and project.
fn check_identity(d: &Deployment, old: &ResourceState, new: &ResourceState) -> Result<(), String> {
    if new.urn.stack() != d.opts.stack || new.urn.project() != d.opts.project {
        return Err(format!(
            "it moves {} to {}, outside this stack and project",
            old.urn, new.urn
        ));
    }
    if old.is_provider() {
        return match old == new {
            true => Ok(()),
            false => Err(format!(
                "it changes the provider {}; a provider's state must stay as it is",
                old.urn
            )),
        };
    }
    let kept = |what: &str, same: bool| match same {
        true => Ok(()),
        false => Err(format!(
            "it changes the {what} of {}; a migration keeps a resource's identity",
            old.urn
        )),
    };
    kept("`custom` flag", old.custom == new.custom)?;
    if !old.custom {
        return Ok(());
    }
    kept("type", old.type_token == new.type_token)?;
    kept("ID", old.id == new.id)?;
    kept("provider", old.provider == new.provider)?;
    kept("`protect` flag", old.protect == new.protect)?;
    kept(
        "`retainOnDelete` flag",
        old.retain_on_delete == new.retain_on_delete,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(urn: &str, custom: bool) -> ResourceState {
        let urn = Urn::parse(urn).unwrap();
        let mut s = ResourceState::new(urn.clone(), custom);
        s.type_token = urn.type_token().to_owned();
        s
    }

    const A: &str = "urn:pulumi:s::p::my:index:C::a";
    const B: &str = "urn:pulumi:s::p::my:index:C$pkg:index:T::b";
    const B2: &str = "urn:pulumi:s::p::my:index:D$pkg:index:T::b";

    #[test]
    fn a_renamed_state_takes_its_predecessors_place() {
        let current = vec![(0, state(A, false)), (3, state(B, true))];
        let successors = HashMap::from([(Urn::parse(B).unwrap(), Urn::parse(B2).unwrap())]);
        let (pairs, merged) = match_up(
            &current,
            vec![state(A, false), state(B2, true)],
            &successors,
        )
        .unwrap();
        assert_eq!(pairs[1].0, 3);
        assert_eq!(pairs[1].1.urn.as_str(), B2);
        assert!(merged.is_empty());
    }

    #[test]
    fn drops_without_successors_and_additions_are_refused() {
        let current = vec![(0, state(A, false)), (3, state(B, true))];
        let e = match_up(&current, vec![state(A, false)], &HashMap::new()).unwrap_err();
        assert!(e.contains("without naming a successor"), "{e}");
        let e = match_up(
            &current,
            vec![state(A, false), state(B, true), state(B2, true)],
            &HashMap::new(),
        )
        .unwrap_err();
        assert!(e.contains("cannot add resources"), "{e}");
        let both = HashMap::from([(Urn::parse(B).unwrap(), Urn::parse(A).unwrap())]);
        let e = match_up(&current, vec![state(A, false), state(B, true)], &both).unwrap_err();
        assert!(e.contains("not both"), "{e}");
    }

    #[test]
    fn a_state_merged_into_another_is_reported() {
        let current = vec![(0, state(A, false)), (3, state(B, false))];
        let successors = HashMap::from([(Urn::parse(B).unwrap(), Urn::parse(A).unwrap())]);
        let (pairs, merged) = match_up(&current, vec![state(A, false)], &successors).unwrap();
        assert_eq!(pairs.len(), 1);
        assert_eq!(merged, vec![(3, Urn::parse(A).unwrap())]);
    }
}

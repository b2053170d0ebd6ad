//! An invoke's declared dependencies (`dependsOn` of an output-form
//! invoke): the invoke waits until each is registered, and its result is
//! unknown while one of them — or a resource under one — does not exist
//! yet (a preview's resource to be created, a new resource an update left
//! out). The SDKs only send dependencies the program has the URN of; the
//! engine's check also covers what the SDK cannot see, such as the
//! children a component provider registered.

use std::collections::HashSet;
use std::time::Duration;

use converge_model::{ResourceState, Urn};

use crate::deployment::Deployment;
use crate::error::EngineError;

/// Whether an invoke may run now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvokeReadiness {
    /// Every dependency exists: run the invoke.
    Ready,
    /// A dependency is still to be created (or failed): the invoke's
    /// result is unknown, and it is not run.
    Pending,
}

/// How often a dependency whose registration is under way is looked at
/// again. Registrations the program sent before its invoke are almost
/// always done already (the SDKs learn a URN when its step is done), so
/// this wait is rare and short.
const RECHECK: Duration = Duration::from_millis(10);

pub(super) async fn readiness(
    d: &Deployment,
    urns: &[Urn],
) -> Result<InvokeReadiness, EngineError> {
    for urn in urns {
        if !settled(d, urn).await? {
            return Ok(InvokeReadiness::Pending);
        }
    }
    let p = d.progress();
    let mut components = HashSet::new();
    for urn in urns {
        if p.failed.contains(urn) {
            return Ok(InvokeReadiness::Pending);
        }
        let Some(r) = p.registered.get(urn) else {
            continue;
        };
        if !exists(r.state) {
            return Ok(InvokeReadiness::Pending);
        }
        if !r.state.custom {
            components.insert(urn.clone());
        }
    }
    if components.is_empty() {
        return Ok(InvokeReadiness::Ready);
    }
    // Everything registered under a component it depends on.
    for (urn, r) in p.registered.iter() {
        if components.contains(urn) || !under(&p.registered, r.state, &components) {
            continue;
        }
        if p.failed.contains(urn) || !exists(r.state) {
            return Ok(InvokeReadiness::Pending);
        }
    }
    Ok(InvokeReadiness::Ready)
}

/// Waits while the registration of `urn` is under way. `false`: it
/// failed, or the operation stopped, meanwhile (a failed registration
/// stays reserved, never recorded).
async fn settled(d: &Deployment, urn: &Urn) -> Result<bool, EngineError> {
    loop {
        {
            let p = d.progress();
            if p.registered.contains_key(urn) {
                return Ok(true);
            }
            if !p.registered.in_flight(urn) {
                return Err(EngineError::UnknownInvokeDependency(urn.clone()));
            }
            let stopped =
                p.failed.contains(urn) || (!d.opts.continue_on_error && p.failure.is_some());
            if stopped {
                return Ok(false);
            }
        }
        if d.opts.cancel.is_cancelled() {
            return Ok(false);
        }
        tokio::time::sleep(RECHECK).await;
    }
}

/// A custom resource exists once it has an ID; a component once it is
/// registered.
fn exists(state: &ResourceState) -> bool {
    !state.custom || state.id.is_some()
}

/// True if an ancestor of `state` is one of `components`.
fn under(
    registered: &crate::ledger::Registrations,
    state: &ResourceState,
    components: &HashSet<Urn>,
) -> bool {
    // A parent is registered before its children, so the chain ends.
    let mut parent = state.parent.as_ref();
    while let Some(p) = parent {
        if components.contains(p) {
            return true;
        }
        parent = registered.get(p).and_then(|r| r.state.parent.as_ref());
    }
    false
}

//! How much memory a registration in flight holds. A program may have
//! thousands of registrations waiting at once (a YAML program spawns one
//! task per resource; an SDK sends them as fast as it can), and a future
//! holds, from its creation, the space of its largest await: sub-steps
//! inlined into `register` made each one 15 KB, 143 MB of a
//! 10,000-resource preview. Its sub-steps are boxed, so only the one
//! running is allocated. The step futures a registration waits in are
//! `async move` blocks, not `async fn`s, which keep their arguments twice
//! (as given and as the body's locals): at 30,000 resources the futures of
//! the registrations in flight were 70 % of an up's peak heap. The
//! preparation (goal, planned and old states) is freed before the step
//! runs, and the journal's futures hold no entry, so a create waiting for
//! its Begin entry holds about 1 KB.

use std::sync::Arc;

use converge_plugin::builtin::BuiltinLoader;
use converge_plugin::ProviderRegistry;
use converge_state::Snapshot;

use crate::deployment::{Deployment, DeploymentOptions};
use crate::events::EventSink;
use crate::goal::ResourceGoal;
use crate::journaler::{DiscardSink, Journaler, JournalerOptions};
use crate::monitor::Monitor;

/// Bytes a registration (and the monitor's call, which is the same
/// future) holds besides its boxed preparation and then its boxed step:
/// 40 bytes in a release build; 2.3 KB when the preparation lived as long
/// as the step.
const REGISTER_BOUND: usize = 128;
/// Bytes the preparation may hold, freed before the step runs (1.1 KB in
/// a release build; 2.2 KB with copies of the old state, 15.5 KB with its
/// sub-steps inlined).
const PREPARE_BOUND: usize = 2048;
/// Bytes a create may hold while it waits for its Begin entry (1.1 KB
/// in a release build; 3 KB with the journal's futures holding their
/// entries and an old state inline).
const CREATE_BOUND: usize = 2048;
/// Bytes a Same step may hold (0.6 KB in a release build; 2.5 KB with its
/// state kept twice and the rename's rewrite inlined).
const SAME_BOUND: usize = 2048;
#[tokio::test]
async fn a_registration_in_flight_holds_about_a_kilobyte() {
    let base = Arc::new(Snapshot::empty("2026-01-01T00:00:00Z"));
    let journal = Journaler::start(
        Arc::new(DiscardSink),
        JournalerOptions {
            base: Arc::clone(&base),
            keep_entries: false,
        },
    );
    let d = Arc::new(Deployment::new(
        DeploymentOptions::new("dev", "p"),
        base,
        ProviderRegistry::new(Arc::new(BuiltinLoader::new())),
        journal,
        EventSink::discard(),
    ));
    bounded(
        "step_generator::register",
        &super::register(&d, ResourceGoal::default()),
        REGISTER_BOUND,
    );
    bounded(
        "step_generator::prepare",
        &super::prepare(&d, ResourceGoal::default()),
        PREPARE_BOUND,
    );
    bounded(
        "steps::create::run",
        &super::create_new(&d, state("c")),
        CREATE_BOUND,
    );
    bounded(
        "steps::same::run",
        &crate::steps::same::run(&d, 0, state("r")),
        SAME_BOUND,
    );
    let monitor = Monitor::new(Arc::clone(&d));
    bounded(
        "Monitor::register_resource",
        &monitor.register_resource(ResourceGoal::default()),
        REGISTER_BOUND,
    );
}

/// Fails if the future `what` holds more than `bound` bytes.
fn bounded<F>(what: &str, future: &F, bound: usize) {
    let size = std::mem::size_of_val(future);
    assert!(size <= bound, "{what}: {size} bytes, more than {bound}");
}

/// A custom resource's state named `name`.
fn state(name: &str) -> converge_model::ResourceState {
    converge_model::ResourceState::new(
        converge_model::Urn::new("dev", "p", None, "pkg:index:T", name).expect("a URN"),
        true,
    )
}

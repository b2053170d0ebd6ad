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
    let register = super::register(&d, ResourceGoal::default());
    assert!(
        std::mem::size_of_val(&register) <= REGISTER_BOUND,
        "step_generator::register: {} bytes",
        std::mem::size_of_val(&register)
    );
    drop(register);
    let prepare = super::prepare(&d, ResourceGoal::default());
    assert!(
        std::mem::size_of_val(&prepare) <= PREPARE_BOUND,
        "step_generator::prepare: {} bytes",
        std::mem::size_of_val(&prepare)
    );
    drop(prepare);
    let create = super::create_new(
        &d,
        converge_model::ResourceState::new(
            converge_model::Urn::new("dev", "p", None, "pkg:index:T", "c").expect("a URN"),
            true,
        ),
    );
    assert!(
        std::mem::size_of_val(&create) <= CREATE_BOUND,
        "steps::create::run: {} bytes",
        std::mem::size_of_val(&create)
    );
    drop(create);
    let same = crate::steps::same::run(
        &d,
        0,
        converge_model::ResourceState::new(
            converge_model::Urn::new("dev", "p", None, "pkg:index:T", "r").expect("a URN"),
            true,
        ),
    );
    assert!(
        std::mem::size_of_val(&same) <= SAME_BOUND,
        "steps::same::run: {} bytes",
        std::mem::size_of_val(&same)
    );
    drop(same);
    let monitor = Monitor::new(Arc::clone(&d));
    let call = monitor.register_resource(ResourceGoal::default());
    assert!(
        std::mem::size_of_val(&call) <= REGISTER_BOUND,
        "Monitor::register_resource: {} bytes",
        std::mem::size_of_val(&call)
    );
}

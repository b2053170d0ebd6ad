//! Lifecycle tests: the engine's specification. Each test runs in-process
//! programs against mock providers; `Lifecycle` checks after every
//! operation that every journal prefix replays to a valid snapshot and that
//! every object in the cloud is tracked.

mod aliases;
mod aliases_inherited;
mod basics;
mod cancel;
mod claims;
mod continue_on_error;
mod counts;
mod deep_values;
mod deletes;
mod driver;
mod durability;
mod hooks;
mod import;
mod invoke_dependencies;
mod migrations;
mod options;
mod parameterized;
mod pipeline;
mod plans;
mod policy;
mod provider_instances;
mod provider_versions;
mod refresh;
mod remote;
mod replace;
mod replacement_options;
mod stack_reference;
mod targeting;
mod timeouts;
mod upgraded;
mod window;

use std::sync::{Arc, Mutex};

use converge_engine::{Monitor, OperationResult, RegisterResult, ResourceGoal, StepOp};
use converge_model::{PropertyMap, PropertyValue, Urn};
use converge_testkit::{Lifecycle, MockCloud, MockLoader, MockProvider};

pub const T: &str = "pkg:index:Thing";

/// A world with one mock provider for package `pkg`.
pub fn world(provider: MockProvider) -> (Lifecycle, Arc<MockCloud>) {
    let cloud = provider.cloud().clone();
    let loader = Arc::new(MockLoader::single(provider));
    (Lifecycle::new(cloud.clone(), loader), cloud)
}

pub fn provider() -> MockProvider {
    MockProvider::new("pkg").with_cloud(MockCloud::new())
}

pub fn s(v: &str) -> PropertyValue {
    PropertyValue::from(v)
}

/// The messages of the diagnostics of `severity` received so far.
pub fn diagnostics(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<converge_engine::EngineEvent>,
    severity: converge_engine::Severity,
) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let converge_engine::EngineEvent::Diagnostic {
            severity: s,
            message,
            ..
        } = event
        {
            if s == severity {
                out.push(message);
            }
        }
    }
    out
}

/// How many states of the snapshot (pending deletions included) carry
/// resource name `name`.
pub fn copies(w: &Lifecycle, name: &str) -> usize {
    w.snapshot
        .resources
        .iter()
        .filter(|r| r.urn.name() == name)
        .count()
}

/// The ops of a result's steps for one resource name, in plan order.
pub fn ops_of(result: &OperationResult, name: &str) -> Vec<StepOp> {
    result
        .plan
        .steps
        .iter()
        .filter(|s| s.urn.ends_with(&format!("::{name}")))
        .map(|s| s.op)
        .collect()
}

/// Every step's op, sorted, for compact assertions.
pub fn all_ops(result: &OperationResult) -> Vec<(String, StepOp)> {
    let mut out: Vec<(String, StepOp)> = result
        .plan
        .steps
        .iter()
        .map(|s| {
            (
                s.urn.rsplit("::").next().unwrap_or_default().to_owned(),
                s.op,
            )
        })
        .collect();
    out.sort();
    out
}

pub fn expect_ok(result: &OperationResult) {
    if let Some(e) = &result.error {
        panic!("operation failed: {e}");
    }
}

/// Registers `goal` with the stack as parent.
pub async fn reg(
    m: &Monitor,
    stack: &Urn,
    mut goal: ResourceGoal,
) -> Result<RegisterResult, String> {
    if goal.parent.is_none() {
        goal.parent = Some(stack.clone());
    }
    m.register_resource(goal).await.map_err(|e| e.to_string())
}

/// A shared log of events a provider closure saw.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

pub fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

pub fn inputs(pairs: &[(&str, &str)]) -> PropertyMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), PropertyValue::from(*v)))
        .collect()
}

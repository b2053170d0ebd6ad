//! The engine's side of a running program: what in-process programs call
//! directly and the gRPC resource monitor (issue 4) calls for language
//! hosts. One interface, one step generator behind it.

use std::sync::Arc;

use async_trait::async_trait;
use converge_model::{PropertyMap, Urn};
use converge_state::journal::JournalEntry;

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::goal::{ReadGoal, RegisterResult, ResourceGoal};
use crate::step_generator;

/// A handle a program uses to declare its resources. Cheap to clone; use it
/// from as many tasks as the program likes.
#[derive(Debug, Clone)]
pub struct Monitor {
    pub(crate) deployment: Arc<Deployment>,
}

impl Monitor {
    /// `RegisterResource`: returns once the resource's step is done.
    pub async fn register_resource(
        &self,
        goal: ResourceGoal,
    ) -> Result<RegisterResult, EngineError> {
        let result = step_generator::register(&self.deployment, goal).await;
        self.record(result)
    }

    /// A registration that fails — in its step, or before it (Check, Diff,
    /// provider resolution) — fails the operation, even if the program
    /// carries on.
    fn record<T>(&self, result: Result<T, EngineError>) -> Result<T, EngineError> {
        if let Err(e) = &result {
            self.deployment.fail(e);
        }
        result
    }

    /// `ReadResource`: reads an external object by ID.
    pub async fn read_resource(&self, goal: ReadGoal) -> Result<RegisterResult, EngineError> {
        let result = step_generator::read(&self.deployment, goal).await;
        self.record(result)
    }

    /// `RegisterResourceOutputs`: a component's (or the stack's) outputs.
    pub async fn register_resource_outputs(
        &self,
        urn: &Urn,
        outputs: PropertyMap,
    ) -> Result<(), EngineError> {
        let d = &self.deployment;
        let (op, state) = {
            let p = d.progress();
            let registered = p
                .registered
                .get(urn)
                .ok_or_else(|| EngineError::OutputsOfUnregistered(urn.clone()))?;
            let mut state = registered.state.clone();
            state.outputs = outputs;
            (registered.op, state)
        };
        let Some(op) = op else { return Ok(()) };
        let entry = JournalEntry::outputs(0, d.next_operation(), state.clone()).with_remove_new(op);
        self.record(d.end(entry).await)?;
        if let Some(r) = d.progress().registered.get_mut(urn) {
            r.state = state;
        }
        Ok(())
    }

    /// The stack this program deploys.
    pub fn stack(&self) -> &str {
        &self.deployment.opts.stack
    }

    pub fn project(&self) -> &str {
        &self.deployment.opts.project
    }

    /// True in a preview.
    pub fn is_preview(&self) -> bool {
        self.deployment.opts.preview
    }
}

/// A program: registers resources through the monitor.
#[async_trait]
pub trait Program: Send + Sync {
    /// Runs the program; an `Err` is the program's own failure message.
    async fn run(&self, monitor: Monitor) -> Result<(), String>;
}

/// The empty program (`destroy`).
#[derive(Debug, Default)]
pub struct EmptyProgram;

#[async_trait]
impl Program for EmptyProgram {
    async fn run(&self, _monitor: Monitor) -> Result<(), String> {
        Ok(())
    }
}

//! YAML programs run by the engine across successive operations, against
//! mock providers, with the testkit's checks after every operation.

mod aliases;
mod basics;
mod graph;
mod invoke;
mod replacement;
mod spellings;
mod timeouts;
mod tokens;
mod values;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use converge_engine::{OperationResult, StepOp};
use converge_language::yaml::{ConfigValue, YamlOptions, YamlProgram};
use converge_model::{PropertyValue, ResourceState};
use converge_testkit::{Lifecycle, MockCloud, MockLoader, MockProvider};

/// A world with one mock provider for package `pkg`, shared so that the
/// test can read its call log.
pub fn world(provider: MockProvider) -> (Lifecycle, Arc<MockCloud>, Arc<MockProvider>) {
    let provider = Arc::new(provider);
    let cloud = provider.cloud().clone();
    let loader = Arc::new(MockLoader::single(Arc::clone(&provider)));
    (Lifecycle::new(cloud.clone(), loader), cloud, provider)
}

pub fn provider() -> MockProvider {
    MockProvider::new("pkg").with_cloud(MockCloud::new())
}

/// A project directory whose Pulumi.yaml is rewritten for each step.
#[derive(Debug)]
pub struct Project {
    pub dir: tempfile::TempDir,
    pub config: BTreeMap<String, ConfigValue>,
    pub options: YamlOptions,
}

impl Default for Project {
    fn default() -> Self {
        Self::new()
    }
}

impl Project {
    pub fn new() -> Self {
        Project {
            dir: tempfile::tempdir().unwrap(),
            config: BTreeMap::new(),
            options: YamlOptions {
                project: "proj".to_owned(),
                stack: "test".to_owned(),
                ..YamlOptions::default()
            },
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn set(&mut self, key: &str, value: ConfigValue) {
        self.config.insert(key.to_owned(), value);
    }

    /// Writes `body` below the project header and loads it.
    pub fn program(&self, body: &str) -> YamlProgram {
        let text = format!("name: proj\nruntime: yaml\n{body}");
        std::fs::write(self.path().join("Pulumi.yaml"), text).unwrap();
        let mut options = self.options.clone();
        options.config = self.config.clone();
        YamlProgram::load(self.path(), options).unwrap_or_else(|e| panic!("{e}"))
    }
}

pub fn s(v: &str) -> PropertyValue {
    PropertyValue::from(v)
}

pub fn secret(v: &str) -> PropertyValue {
    PropertyValue::secret(s(v))
}

pub fn expect_ok(result: &OperationResult) {
    if let Some(e) = &result.error {
        panic!("operation failed: {e}");
    }
}

/// The error of a failed operation, as text.
pub fn expect_err(result: &OperationResult) -> String {
    match &result.error {
        Some(e) => e.to_string(),
        None => panic!("the operation succeeded"),
    }
}

pub fn ops_of(result: &OperationResult, name: &str) -> Vec<StepOp> {
    result
        .plan
        .steps
        .iter()
        .filter(|s| s.urn.ends_with(&format!("::{name}")))
        .map(|s| s.op)
        .collect()
}

pub fn stack_outputs(w: &Lifecycle) -> BTreeMap<String, PropertyValue> {
    w.resource("proj-test")
        .expect("the stack is registered")
        .outputs
        .clone()
        .into_iter()
        .collect()
}

pub fn state<'a>(w: &'a Lifecycle, name: &str) -> &'a ResourceState {
    w.resource(name)
        .unwrap_or_else(|| panic!("no resource {name}"))
}

/// A shared log of what provider closures saw.
pub type Log = Arc<Mutex<Vec<String>>>;

pub fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

pub fn entries(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

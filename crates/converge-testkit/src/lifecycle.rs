//! Lifecycle tests: in-process programs, one [`Lifecycle`] world per test,
//! and after every operation the checks that make the engine's invariants
//! executable (seed 002): every prefix of the journal replays onto the base
//! to a snapshot that passes integrity verification, and every object in
//! the cloud is tracked by the state.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use converge_engine::{
    DeploymentOptions, EventSink, JournalError, JournalSink, Monitor, OperationContext,
    OperationResult, Program, ResourceGoal,
};
use converge_model::{PropertyMap, PropertyValue, ResourceState, Urn};
use converge_plugin::ProviderLoader;
use converge_state::journal::{replay, JournalEntry};
use converge_state::{integrity, Snapshot};

use crate::cloud::MockCloud;

type ProgramFn =
    dyn Fn(Monitor) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync;

/// A program written as a closure over the monitor.
pub struct TestProgram(Box<ProgramFn>);

impl std::fmt::Debug for TestProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestProgram")
    }
}

/// Makes a program from an async closure.
pub fn program<F, Fut>(f: F) -> TestProgram
where
    F: Fn(Monitor) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    TestProgram(Box::new(move |m| Box::pin(f(m))))
}

#[async_trait]
impl Program for TestProgram {
    async fn run(&self, monitor: Monitor) -> Result<(), String> {
        (self.0)(monitor).await
    }
}

/// A program of `n` resources `pkg:index:Thing` named `r0`…, each with
/// input `i` = its number, registered one after another under the stack.
pub fn numbered_things(n: usize) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        for i in 0..n {
            let mut g = custom("pkg:index:Thing", &format!("r{i}"), Default::default());
            g.inputs
                .insert("i".to_owned(), PropertyValue::Number(i as f64));
            g.parent = Some(stack.clone());
            m.register_resource(g).await.map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// A goal for a custom resource of `type_token` named `name`.
pub fn custom(type_token: &str, name: &str, inputs: PropertyMap) -> ResourceGoal {
    ResourceGoal {
        type_token: type_token.to_owned(),
        name: name.to_owned(),
        custom: true,
        inputs,
        ..ResourceGoal::default()
    }
}

/// A goal for a component resource.
pub fn component(type_token: &str, name: &str) -> ResourceGoal {
    ResourceGoal {
        type_token: type_token.to_owned(),
        name: name.to_owned(),
        custom: false,
        ..ResourceGoal::default()
    }
}

/// A property map from `(key, value)` pairs.
pub fn props<const N: usize>(pairs: [(&str, PropertyValue); N]) -> PropertyMap {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The stack resource every program registers first; returns its URN.
pub async fn register_stack(monitor: &Monitor) -> Result<Urn, String> {
    monitor
        .register_stack()
        .await
        .map(|r| r.urn)
        .map_err(|e| e.to_string())
}

/// A journal sink that keeps entries in memory.
#[derive(Debug, Default)]
pub struct MemorySink {
    entries: std::sync::Mutex<Vec<JournalEntry>>,
}

impl MemorySink {
    pub fn entries(&self) -> Vec<JournalEntry> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

#[async_trait]
impl JournalSink for MemorySink {
    async fn persist(&self, batch: &[JournalEntry]) -> Result<(), JournalError> {
        self.entries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(batch);
        Ok(())
    }
}

/// One test world: a stack's snapshot, the cloud, the providers.
#[derive(Debug)]
pub struct Lifecycle {
    pub snapshot: Snapshot,
    pub cloud: Arc<MockCloud>,
    pub loader: Arc<dyn ProviderLoader>,
    pub options: DeploymentOptions,
    /// IDs of cloud objects that exist outside Converge's management (made
    /// by someone else, or retained on delete); the tracking check skips
    /// them.
    pub outside: Vec<String>,
    /// Where operations' events go (discarded unless a test listens).
    pub events: EventSink,
}

impl Lifecycle {
    pub fn new(cloud: Arc<MockCloud>, loader: Arc<dyn ProviderLoader>) -> Self {
        Lifecycle {
            snapshot: Snapshot::empty("2026-01-01T00:00:00Z"),
            cloud,
            loader,
            options: DeploymentOptions::new("test", "proj"),
            outside: Vec::new(),
            events: EventSink::discard(),
        }
    }

    /// Creates an object in the cloud behind Converge's back (for imports
    /// and reads); returns its ID.
    pub fn insert_outside(&mut self, urn: &str, package: &str, properties: PropertyMap) -> String {
        let urn = Urn::parse(urn).unwrap_or_else(|e| panic!("{e}"));
        let id = self.cloud.insert(&urn, package, properties);
        self.outside.push(id.clone());
        id
    }

    fn context(&self, sink: Arc<dyn JournalSink>) -> OperationContext {
        OperationContext {
            base: Arc::new(self.snapshot.clone()),
            loader: Arc::clone(&self.loader),
            sink,
            events: self.events.clone(),
            options: self.options.clone(),
        }
    }

    /// Runs `up`, checks it, and keeps the resulting snapshot.
    pub async fn up(&mut self, program: &dyn Program) -> OperationResult {
        let sink = Arc::new(MemorySink::default());
        let result = converge_engine::update(self.context(sink.clone()), program).await;
        self.accept(&sink, result)
    }

    /// Runs a preview and checks that nothing real changed.
    pub async fn preview(&mut self, program: &dyn Program) -> OperationResult {
        let before = self.cloud.objects();
        let result =
            converge_engine::preview(self.context(Arc::new(MemorySink::default())), program).await;
        assert_eq!(before, self.cloud.objects(), "a preview changed the cloud");
        result
    }

    pub async fn refresh(&mut self) -> OperationResult {
        let sink = Arc::new(MemorySink::default());
        let result = converge_engine::refresh(self.context(sink.clone())).await;
        self.accept(&sink, result)
    }

    pub async fn destroy(&mut self) -> OperationResult {
        let sink = Arc::new(MemorySink::default());
        let result = converge_engine::destroy(self.context(sink.clone())).await;
        self.accept(&sink, result)
    }

    fn accept(&mut self, sink: &MemorySink, result: OperationResult) -> OperationResult {
        let persisted = sink.entries();
        if self.options.keep_journal {
            assert_eq!(
                persisted, result.journal,
                "the result's journal is not what was persisted"
            );
        } else {
            assert!(result.journal.is_empty(), "the journal was kept");
        }
        check_journal(&self.snapshot, &persisted);
        let replayed = replay(&self.snapshot, &persisted).expect("the journal replays");
        assert_eq!(
            replayed, *result.snapshot,
            "the result is not the persisted journal replayed"
        );
        check_cloud_tracked(&self.cloud, &result.snapshot, &self.outside);
        self.snapshot = Snapshot::clone(&result.snapshot);
        result
    }

    /// The live state of a resource by name.
    pub fn resource(&self, name: &str) -> Option<&ResourceState> {
        self.snapshot
            .resources
            .iter()
            .find(|r| r.urn.name() == name && !r.delete)
    }
}

/// Every prefix of `journal` replays onto `base` to a snapshot that passes
/// integrity verification.
pub fn check_journal(base: &Snapshot, journal: &[JournalEntry]) {
    for k in 0..=journal.len() {
        let snapshot = replay(base, &journal[..k])
            .unwrap_or_else(|e| panic!("journal prefix of {k} entries does not replay: {e}"));
        if let Err(e) = integrity::verify(&snapshot) {
            panic!(
                "journal prefix of {k} entries gives a snapshot that fails integrity: {e}\n\
                 entries: {:#?}",
                &journal[..k]
            );
        }
    }
}

/// Every object in the cloud is a resource of the snapshot or named by one
/// of its pending operations: Converge never loses track of a real object.
pub fn check_cloud_tracked(cloud: &MockCloud, snapshot: &Snapshot, outside: &[String]) {
    for object in cloud.objects() {
        if outside.contains(&object.id) {
            continue;
        }
        let tracked = snapshot
            .resources
            .iter()
            .any(|r| r.custom && r.id.as_deref() == Some(object.id.as_str()))
            || snapshot
                .pending_operations
                .iter()
                .any(|p| p.resource.urn == object.urn);
        assert!(
            tracked,
            "object {} ({}) is in the cloud but not in the state",
            object.id, object.urn
        );
    }
}

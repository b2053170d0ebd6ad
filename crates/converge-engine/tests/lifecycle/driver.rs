//! The operation driver (`converge_engine::driver`): preview →
//! confirmation → operation on a locked stack, with refresh-first and the
//! history record, as every front-end drives it. A recording front-end
//! checks which phases ran, in which order, and what a refused
//! confirmation leaves behind (nothing).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use converge_backend::{Backend, FileBackend, ListHistoryOptions, LockInfo, StackRef, UpdateKind};
use converge_engine::driver::{
    drive, DriverError, DriverOptions, FrontEnd, OperationKind, Phase, Sources,
};
use converge_engine::stack_state::UpdateRecord;
use converge_engine::{DeploymentOptions, EventSink, OperationResult, Program, StackState};
use converge_plugin::ProviderLoader;
use converge_state::Snapshot;
use converge_testkit::{numbered_things, MockCloud, MockLoader, MockProvider};

/// What went wrong in a drive, for the tests.
#[derive(Debug)]
enum Stopped {
    /// The driver's error, as text (shown by `Debug` when a test fails).
    #[allow(dead_code)]
    Driver(String),
    Refused,
}

impl From<DriverError> for Stopped {
    fn from(e: DriverError) -> Self {
        Stopped::Driver(e.to_string())
    }
}

/// A front-end that records the phases and may refuse to go on.
#[derive(Default)]
struct Recorder {
    started: Vec<Phase>,
    ended: Vec<(Phase, usize)>,
    confirmations: Vec<bool>,
    refuse: bool,
}

#[async_trait]
impl FrontEnd for Recorder {
    type Error = Stopped;

    fn start(&mut self, phase: Phase) -> EventSink {
        self.started.push(phase);
        EventSink::discard()
    }

    async fn end(
        &mut self,
        phase: Phase,
        _base: &Snapshot,
        result: &OperationResult,
    ) -> Result<(), Stopped> {
        self.ended.push((phase, result.plan.steps.len()));
        Ok(())
    }

    async fn confirm(&mut self, preview: Option<&OperationResult>) -> Result<(), Stopped> {
        self.confirmations.push(preview.is_some());
        if self.refuse {
            return Err(Stopped::Refused);
        }
        Ok(())
    }
}

struct World {
    _dir: tempfile::TempDir,
    backend: Arc<dyn Backend>,
    stack: StackRef,
    cloud: Arc<MockCloud>,
    loader: Arc<dyn ProviderLoader>,
}

async fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Backend> = Arc::new(FileBackend::new(dir.path(), ""));
    let stack = StackRef::new("proj", "dev").unwrap();
    StackState::new(backend.clone(), stack.clone())
        .create()
        .await
        .unwrap();
    let provider = MockProvider::new("pkg").with_cloud(MockCloud::new());
    let cloud = provider.cloud().clone();
    World {
        _dir: dir,
        backend,
        stack,
        cloud,
        loader: Arc::new(MockLoader::single(provider)),
    }
}

impl World {
    fn options(&self, kind: OperationKind) -> DriverOptions {
        DriverOptions {
            kind,
            deployment: DeploymentOptions::new("dev", "proj"),
            preview_only: false,
            skip_preview: false,
            refresh_first: false,
            keep_preview_plans: false,
            plan: None,
            record: Some(UpdateRecord {
                kind: UpdateKind::Update,
                start_time: 0,
                message: "driven".to_owned(),
                environment: BTreeMap::from([("exec.kind".to_owned(), "cli".to_owned())]),
                config: Default::default(),
            }),
        }
    }

    async fn drive(
        &self,
        program: Option<&dyn Program>,
        options: DriverOptions,
        front: &mut Recorder,
    ) -> Result<converge_engine::driver::Driven, Stopped> {
        let state = StackState::new(self.backend.clone(), self.stack.clone());
        let mut locked = state.lock(LockInfo::current()).await.unwrap();
        let sources = Sources {
            loader: &self.loader,
            program,
        };
        let driven = drive(&mut locked, sources, options, front).await;
        locked.release().await.unwrap();
        driven
    }

    /// How many resources the stored state holds.
    async fn stored(&self) -> usize {
        let state = StackState::new(self.backend.clone(), self.stack.clone());
        let current = state.read(&Default::default()).await.unwrap();
        current.checkpoint.latest.map_or(0, |s| s.resources.len())
    }

    async fn history(&self) -> Vec<serde_json::Value> {
        self.backend
            .list_history(&self.stack, &ListHistoryOptions { limit: None })
            .await
            .unwrap()
            .iter()
            .map(|e| serde_json::from_slice(&e.record).unwrap())
            .collect()
    }
}

#[tokio::test]
async fn an_update_previews_then_is_confirmed_then_runs_and_is_recorded() {
    let w = world().await;
    let program = numbered_things(2);
    let mut front = Recorder::default();
    let driven = w
        .drive(Some(&program), w.options(OperationKind::Update), &mut front)
        .await
        .unwrap();
    assert_eq!(front.started, [Phase::Preview, Phase::Operation]);
    assert_eq!(front.confirmations, [true], "confirmed after the preview");
    assert!(driven.preview.is_some() && driven.operation.is_some());
    assert_eq!(w.cloud.counts().creates, 2, "only the operation created");
    assert_eq!(w.stored().await, 4);
    let history = w.history().await;
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["message"], "driven");
    assert_eq!(history[0]["environment"]["exec.kind"], "cli");
    assert!(
        history[0]["startTime"].as_i64().unwrap() > 0,
        "the driver stamps when the operation started: {}",
        history[0]
    );
}

#[tokio::test]
async fn a_refused_confirmation_changes_nothing() {
    let w = world().await;
    let program = numbered_things(3);
    let mut front = Recorder {
        refuse: true,
        ..Recorder::default()
    };
    let stopped = w
        .drive(Some(&program), w.options(OperationKind::Update), &mut front)
        .await;
    assert!(matches!(stopped, Err(Stopped::Refused)), "{stopped:?}");
    assert_eq!(front.started, [Phase::Preview]);
    assert_eq!(w.cloud.counts().creates, 0);
    assert_eq!(w.stored().await, 0);
    assert!(w.history().await.is_empty());
    assert!(w.backend.load_journal(&w.stack).await.unwrap().is_none());
}

#[tokio::test]
async fn a_preview_stops_after_the_preview_and_records_nothing() {
    let w = world().await;
    let program = numbered_things(2);
    let mut front = Recorder::default();
    let options = DriverOptions {
        preview_only: true,
        ..w.options(OperationKind::Update)
    };
    let driven = w.drive(Some(&program), options, &mut front).await.unwrap();
    assert_eq!(front.started, [Phase::Preview]);
    assert!(front.confirmations.is_empty());
    assert!(driven.operation.is_none() && driven.finished.is_none());
    let preview = driven.preview.unwrap();
    assert!(
        preview.resource_plans.is_empty(),
        "no update follows: no plans kept"
    );
    assert!(w.history().await.is_empty());
    assert_eq!(w.cloud.counts().creates, 0);
}

#[tokio::test]
async fn refresh_first_is_previewed_then_journaled_before_the_operation() {
    let w = world().await;
    let program = numbered_things(2);
    w.drive(
        Some(&program),
        w.options(OperationKind::Update),
        &mut Recorder::default(),
    )
    .await
    .unwrap();
    let mut front = Recorder::default();
    let options = DriverOptions {
        refresh_first: true,
        ..w.options(OperationKind::Update)
    };
    w.drive(Some(&program), options, &mut front).await.unwrap();
    assert_eq!(
        front.started,
        [
            Phase::RefreshPreview,
            Phase::Preview,
            Phase::Refresh,
            Phase::Operation
        ]
    );
    assert_eq!(w.cloud.counts().creates, 2, "nothing was created again");
    assert!(w.cloud.counts().reads >= 4, "{:?}", w.cloud.counts());
    // The refresh is journaled on its own; the history has the updates.
    assert_eq!(w.history().await.len(), 2);
}

#[tokio::test]
async fn a_skipped_preview_goes_straight_to_the_operation() {
    let w = world().await;
    let program = numbered_things(1);
    w.drive(
        Some(&program),
        w.options(OperationKind::Update),
        &mut Recorder::default(),
    )
    .await
    .unwrap();
    let mut front = Recorder::default();
    let options = DriverOptions {
        skip_preview: true,
        ..w.options(OperationKind::Destroy)
    };
    let driven = w.drive(None, options, &mut front).await.unwrap();
    assert_eq!(front.started, [Phase::Operation]);
    assert_eq!(front.confirmations, [false], "confirmed without a preview");
    assert!(driven.preview.is_none());
    assert_eq!(w.cloud.counts().deletes, 1);
    assert_eq!(w.stored().await, 0);
}

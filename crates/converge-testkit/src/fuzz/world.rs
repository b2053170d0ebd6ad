//! Running a fixture: the prior state (a well-behaved run of the prior
//! program), drift, the random operation, and the optional recovery.
//! [`Lifecycle`]'s checks run after every operation and panic when an
//! invariant breaks.

use std::fmt;
use std::sync::Arc;

use converge_engine::{DeploymentOptions, OperationResult};
use converge_model::{PropertyValue, Urn};
use converge_state::Snapshot;

use super::spec::{Kind, ProgramSpec};
use super::{Behaviour, Config, Fixture, Rng, PROJECT, STACK};
use crate::{Lifecycle, MockCloud};

/// An out-of-band change to the cloud, by resource name.
#[derive(Debug, Clone, PartialEq)]
pub enum Drift {
    /// Someone deleted the object.
    Delete(String),
    /// Someone changed the object's `v`.
    Change(String),
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Drift::Delete(n) => write!(f, "the object of {n} is deleted"),
            Drift::Change(n) => write!(f, "the object of {n} changes: v = \"drifted\""),
        }
    }
}

pub(crate) fn random_drift(rng: &mut Rng, prior: &ProgramSpec) -> Vec<Drift> {
    if !rng.chance(20) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for r in prior.resources.iter().filter(|r| r.kind == Kind::Custom) {
        match rng.below(8) {
            0 => out.push(Drift::Delete(r.name.clone())),
            1 => out.push(Drift::Change(r.name.clone())),
            _ => {}
        }
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Update,
    Preview,
    Refresh,
    Destroy,
}

/// The operation of a fixture and its options.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub kind: OpKind,
    pub targets: Option<Vec<Urn>>,
    pub excludes: Vec<Urn>,
    pub replace: Vec<Urn>,
    pub parallel: usize,
    pub continue_on_error: bool,
}

impl Operation {
    /// An untargeted update.
    pub fn update() -> Operation {
        Operation {
            kind: OpKind::Update,
            targets: None,
            excludes: Vec::new(),
            replace: Vec::new(),
            parallel: 4,
            continue_on_error: false,
        }
    }

    pub fn random(
        rng: &mut Rng,
        prior: &ProgramSpec,
        next: &ProgramSpec,
        config: &Config,
    ) -> Operation {
        let kind = [
            OpKind::Update,
            OpKind::Preview,
            OpKind::Refresh,
            OpKind::Destroy,
        ][rng.weighted(&[50, 15, 15, 20])];
        let candidates = urns(prior, next, kind);
        let some = |rng: &mut Rng, most: usize| -> Vec<Urn> {
            let mut out: Vec<Urn> = Vec::new();
            for _ in 0..rng.range(1, most) {
                let u = rng.pick(&candidates).clone();
                if !out.contains(&u) {
                    out.push(u);
                }
            }
            out
        };
        let targeted = config.targeted_updates || !matches!(kind, OpKind::Update | OpKind::Preview);
        let mut targets = (targeted && rng.chance(25)).then(|| some(rng, 3));
        let mut excludes = if targeted && rng.chance(10) {
            some(rng, 2)
        } else {
            Vec::new()
        };
        if !config.open_targets {
            let edges = edges(prior, next);
            if let Some(t) = &mut targets {
                close(t, edges.iter().map(|(from, to)| (to, from)));
            }
            close(&mut excludes, edges.iter().map(|(from, to)| (from, to)));
            // Closing may add what only the program that does not run
            // names.
            if let Some(t) = &mut targets {
                t.retain(|u| candidates.contains(u));
            }
            excludes.retain(|u| candidates.contains(u));
        }
        let replace = if matches!(kind, OpKind::Update | OpKind::Preview) && rng.chance(12) {
            some(rng, 2)
        } else {
            Vec::new()
        };
        Operation {
            kind,
            targets,
            excludes,
            replace,
            parallel: rng.range(1, 8),
            continue_on_error: config.continue_on_error && rng.chance(50),
        }
    }

    pub fn options(&self) -> DeploymentOptions {
        let mut o = DeploymentOptions::new(STACK, PROJECT);
        o.parallel = self.parallel;
        let patterns = |urns: &[Urn]| urns.iter().cloned().map(Into::into).collect();
        o.targets = self.targets.as_deref().map(patterns);
        o.excludes = patterns(&self.excludes);
        o.replace = patterns(&self.replace);
        o.continue_on_error = self.continue_on_error;
        o
    }
}

fn top_level(ty: &str, name: &str) -> Urn {
    Urn::new(STACK, PROJECT, None, ty, name).expect("valid")
}

fn stack() -> Urn {
    top_level(converge_model::STACK_TYPE, &format!("{PROJECT}-{STACK}"))
}

fn default_provider(package: &str, version: Option<&str>) -> Urn {
    let name = version.map_or("default".to_owned(), |v| {
        format!("default_{}", v.replace('.', "_"))
    });
    top_level(&converge_model::provider_type(package), &name)
}

/// Every "depends on" edge `(from, to)` of either program, by URN:
/// parents, providers (default ones too), dependencies, property
/// dependencies, deletedWith.
fn edges(prior: &ProgramSpec, next: &ProgramSpec) -> Vec<(Urn, Urn)> {
    let mut out = Vec::new();
    for spec in [prior, next] {
        for r in &spec.resources {
            let from = spec.urn_of(&r.name);
            let parent = r.parent.as_ref().map_or_else(stack, |p| spec.urn_of(p));
            out.push((from.clone(), parent));
            if r.kind == Kind::Custom {
                let provider = match &r.provider {
                    Some(p) => spec.urn_of(p),
                    None => default_provider(r.package, r.version),
                };
                out.push((from.clone(), provider));
            }
            let named = r
                .dependencies
                .iter()
                .chain(&r.property_dependencies)
                .chain(&r.deleted_with);
            for n in named {
                out.push((from.clone(), spec.urn_of(n)));
            }
        }
    }
    out
}

/// Adds to `set` every `b` of an edge `(a, b)` whose `a` is in it, until
/// nothing changes.
fn close<'a>(set: &mut Vec<Urn>, edges: impl Iterator<Item = (&'a Urn, &'a Urn)> + Clone) {
    loop {
        let before = set.len();
        for (a, b) in edges.clone() {
            if set.contains(a) && !set.contains(b) {
                set.push(b.clone());
            }
        }
        if set.len() == before {
            return;
        }
    }
}

/// Every URN the operation's options may name: those the engine will see
/// (a pattern that matches none is an error), that is the stack, the
/// resources of the prior program (the base) and, for an update or a
/// preview, of the next, with the default providers they use.
fn urns(prior: &ProgramSpec, next: &ProgramSpec, kind: OpKind) -> Vec<Urn> {
    let mut out = vec![stack()];
    let runs_next = matches!(kind, OpKind::Update | OpKind::Preview);
    let specs = if runs_next {
        &[prior, next][..]
    } else {
        &[prior][..]
    };
    for spec in specs {
        for r in &spec.resources {
            let provider = (r.kind == Kind::Custom && r.provider.is_none())
                .then(|| default_provider(r.package, r.version));
            for u in [Some(spec.urn_of(&r.name)), provider].into_iter().flatten() {
                if !out.contains(&u) {
                    out.push(u);
                }
            }
        }
    }
    out
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            OpKind::Update => "update",
            OpKind::Preview => "preview",
            OpKind::Refresh => "refresh",
            OpKind::Destroy => "destroy",
        };
        write!(f, "{kind}")?;
        let list = |l: &[Urn]| l.iter().map(Urn::to_string).collect::<Vec<_>>().join(" ");
        if let Some(t) = &self.targets {
            write!(f, " --target [{}]", list(t))?;
        }
        if !self.excludes.is_empty() {
            write!(f, " --exclude [{}]", list(&self.excludes))?;
        }
        if !self.replace.is_empty() {
            write!(f, " --replace [{}]", list(&self.replace))?;
        }
        write!(f, " --parallel {}", self.parallel)?;
        if self.continue_on_error {
            write!(f, " --continue-on-error")?;
        }
        Ok(())
    }
}

/// The IDs of the objects in `snapshot` that Converge may leave behind on
/// purpose: retained on delete, or deleted with another resource (the mock
/// cloud does not cascade).
pub fn outside_ids(snapshot: &Snapshot) -> Vec<String> {
    snapshot
        .resources
        .iter()
        .filter(|r| r.custom && (r.retain_on_delete || r.deleted_with.is_some()))
        .filter_map(|r| r.id.clone())
        .collect()
}

/// A fixture's world: the stack, the cloud, the providers.
#[derive(Debug)]
pub struct World {
    pub lifecycle: Lifecycle,
    pub cloud: Arc<MockCloud>,
    seed: u64,
}

/// Runs the fixture's prior program with well-behaved providers on an
/// empty stack, then applies its drift.
///
/// # Panics
/// If the prior program fails or a check fails.
pub async fn run_prior(fixture: &Fixture) -> World {
    set_phase("the prior update");
    let cloud = MockCloud::new();
    let loader = Behaviour::calm(fixture.seed).loader(&cloud, None);
    let mut w = Lifecycle::new(Arc::clone(&cloud), Arc::new(loader));
    w.options = Operation::update().options();
    let r = w.up(&fixture.prior.program()).await;
    if let Some(e) = &r.error {
        panic!("the prior program failed with well-behaved providers: {e}");
    }
    for d in &fixture.drift {
        let (Drift::Delete(name) | Drift::Change(name)) = d;
        let Some(id) = w.resource(name).and_then(|r| r.id.clone()) else {
            continue;
        };
        match d {
            Drift::Delete(_) => {
                let _ = cloud.remove(&id);
            }
            Drift::Change(_) => {
                let mut props = cloud.get(&id).map(|o| o.properties).unwrap_or_default();
                props.insert("v".to_owned(), PropertyValue::from("drifted"));
                let _ = cloud.set_properties(&id, props);
            }
        }
    }
    World {
        lifecycle: w,
        cloud,
        seed: fixture.seed,
    }
}

impl World {
    /// Runs `op` (with `program` for updates and previews) against
    /// providers behaving as `behaviour` says; checks it and keeps its
    /// snapshot.
    pub async fn operate(
        &mut self,
        program: &ProgramSpec,
        op: &Operation,
        behaviour: &Behaviour,
    ) -> OperationResult {
        let w = &mut self.lifecycle;
        for id in outside_ids(&w.snapshot) {
            if !w.outside.contains(&id) {
                w.outside.push(id);
            }
        }
        w.loader = Arc::new(behaviour.loader(&self.cloud, None));
        w.options = op.options();
        match op.kind {
            OpKind::Update => w.up(&program.program()).await,
            OpKind::Preview => w.preview(&program.program()).await,
            OpKind::Refresh => w.refresh().await,
            OpKind::Destroy => w.destroy().await,
        }
    }

    /// An untargeted update of `program` with well-behaved providers.
    pub async fn recover(&mut self, program: &ProgramSpec) -> OperationResult {
        set_phase("the recovery update");
        let calm = Behaviour::calm(self.seed);
        self.operate(program, &Operation::update(), &calm).await
    }
}

/// Runs a whole fixture; returns the result of its operation.
///
/// # Panics
/// When an invariant breaks: a journal prefix that does not replay to a
/// valid snapshot, or an object in the cloud the state does not track.
pub async fn run(fixture: &Fixture) -> OperationResult {
    let mut world = run_prior(fixture).await;
    set_phase("the operation");
    let result = world
        .operate(&fixture.next, &fixture.operation, &fixture.behaviour)
        .await;
    if fixture.recover {
        world.recover(&fixture.next).await;
    }
    set_phase("");
    result
}

thread_local! {
    static PHASE: std::cell::Cell<&'static str> = const { std::cell::Cell::new("") };
}

/// Names the phase this thread is in, for [`phase`]. [`run_prior`] and
/// [`World::recover`] set theirs.
pub fn set_phase(phase: &'static str) {
    PHASE.with(|p| p.set(phase));
}

/// The phase of [`run`] this thread was in when it last stopped: the phase
/// that panicked, after a panic.
pub fn phase() -> &'static str {
    PHASE.with(std::cell::Cell::get)
}

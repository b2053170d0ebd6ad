//! Policy packs (seed 000's analyzers): for every step kind — create,
//! same, update, replace — `Check`, then `Remediate`, then `Analyze`, then
//! the step — the provider receives the
//! remediated inputs — for every registration (components, providers and
//! the stack too), and `AnalyzeStack` once the steps are done; a
//! mandatory violation fails an update before its resource is touched,
//! leaving the state byte-identical.

use std::sync::Arc;

use async_trait::async_trait;
use converge_engine::{EngineError, StepOp};
use converge_plugin::policy::{
    AnalyzedResource, Analyzer, AnalyzerError, EnforcementLevel, PackInfo, PolicyDiagnostic,
    PolicyInfo, Remediation, StackResource,
};
use converge_plugin::CheckResponse;
use converge_testkit::{custom, program, register_stack, TestProgram};

use super::*;

/// A pack that logs each call with the cloud's create/update/delete
/// counts at that moment, sets `fixed: yes` on every resource, and
/// reports `v: bad` as a mandatory violation and `v: meh` as an advisory
/// one.
#[derive(Debug)]
struct MockPack {
    info: PackInfo,
    log: Log,
    cloud: Arc<MockCloud>,
    /// Whether `Analyze` must see remediated inputs (imports are not
    /// remediated).
    remediated: bool,
    /// Whether every resource's calls are logged, not only `Thing`s'.
    every_type: bool,
}

impl MockPack {
    fn new(log: Log, cloud: Arc<MockCloud>) -> MockPack {
        let policy = |name: &str, level, stack| PolicyInfo {
            name: name.to_owned(),
            description: String::new(),
            enforcement_level: level,
            config_schema: None,
            stack,
        };
        MockPack {
            info: PackInfo {
                name: "mock".to_owned(),
                version: "1.0.0".to_owned(),
                policies: vec![
                    policy("fix", EnforcementLevel::Remediate, false),
                    policy("no-bad", EnforcementLevel::Mandatory, false),
                    policy("stack", EnforcementLevel::Advisory, true),
                    policy("off", EnforcementLevel::Disabled, false),
                ],
                initial_config: Default::default(),
            },
            log,
            cloud,
            remediated: true,
            every_type: false,
        }
    }

    fn note_resource(&self, call: &str, resource: &AnalyzedResource) {
        if self.every_type {
            self.note(call, &format!("{} {}", resource.type_token, resource.name));
        } else if resource.type_token == T {
            self.note(call, &resource.name);
        }
    }

    fn note(&self, call: &str, name: &str) {
        let c = self.cloud.counts();
        self.log.lock().unwrap().push(format!(
            "{call} {name} c{} u{} d{}",
            c.creates, c.updates, c.deletes
        ));
    }

    fn diagnostic(&self, policy: &str, level: EnforcementLevel) -> PolicyDiagnostic {
        PolicyDiagnostic {
            policy_name: policy.to_owned(),
            pack_name: "mock".to_owned(),
            pack_version: "1.0.0".to_owned(),
            description: String::new(),
            message: format!("{policy} says no"),
            enforcement_level: level,
            urn: None,
            severity: None,
        }
    }
}

#[async_trait]
impl Analyzer for MockPack {
    fn info(&self) -> &PackInfo {
        &self.info
    }

    async fn remediate(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<Remediation>, AnalyzerError> {
        self.note_resource("remediate", resource);
        let mut properties = resource.properties.clone();
        properties.insert("fixed".to_owned(), s("yes"));
        Ok(vec![Remediation {
            policy_name: "fix".to_owned(),
            pack_name: "mock".to_owned(),
            pack_version: "1.0.0".to_owned(),
            description: String::new(),
            properties: Some(properties),
            diagnostic: None,
        }])
    }

    async fn analyze(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError> {
        self.note_resource("analyze", resource);
        // (Only `Thing`s are imported; the rest is always remediated.)
        let remediated = self.remediated || resource.type_token != T;
        assert_eq!(
            resource.properties.get("fixed"),
            remediated.then(|| s("yes")).as_ref(),
            "Analyze sees the remediated inputs, and an import's as adopted"
        );
        Ok(match resource.properties.get("v") {
            Some(v) if *v == s("bad") => {
                vec![self.diagnostic("no-bad", EnforcementLevel::Mandatory)]
            }
            Some(v) if *v == s("meh") => {
                vec![self.diagnostic("no-bad", EnforcementLevel::Advisory)]
            }
            _ => Vec::new(),
        })
    }

    async fn analyze_stack(
        &self,
        resources: &[StackResource],
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError> {
        let names: Vec<&str> = resources
            .iter()
            .filter(|r| r.resource.type_token == T)
            .map(|r| r.resource.name.as_str())
            .collect();
        self.note("stack", &names.join(","));
        Ok(Vec::new())
    }
}

fn thing(v: &'static str, r: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        reg(&m, &stack, custom(T, "a", inputs(&[("v", v), ("r", r)]))).await?;
        Ok(())
    })
}

/// A world whose provider logs `Check` to `log` and replaces on `r`, with
/// the mock pack.
fn policed() -> (Lifecycle, Arc<MockCloud>, Log) {
    policed_with(true)
}

fn policed_with(remediated: bool) -> (Lifecycle, Arc<MockCloud>, Log) {
    let log = log();
    let checks = log.clone();
    let prov = provider().replace_on_changes(["r"]).on_check(move |req| {
        checks
            .lock()
            .unwrap()
            .push(format!("check {}", req.urn.name()));
        Ok(CheckResponse {
            inputs: req.news,
            failures: vec![],
        })
    });
    let (mut w, cloud) = world(prov);
    let mut pack = MockPack::new(log.clone(), cloud.clone());
    pack.remediated = remediated;
    w.options.analyzers = vec![Arc::new(pack)];
    (w, cloud, log)
}

/// The snapshot as `converge stack export` writes it.
fn exported(snapshot: &converge_state::Snapshot) -> Vec<u8> {
    converge_state::checkpoint::write_deployment(
        snapshot,
        converge_state::secrets::SecretsMode::Opaque,
    )
    .unwrap()
}

fn take(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

#[tokio::test]
async fn check_then_remediate_then_analyze_then_the_step_for_every_kind() {
    let (mut w, cloud, log) = policed();
    let expect = |c: usize, u: usize, d: usize| {
        vec![
            "check a".to_owned(),
            format!("remediate a c{c} u{u} d{d}"),
            format!("analyze a c{c} u{u} d{d}"),
        ]
    };
    // Create: the pack ran before the object existed; the provider got the
    // remediated inputs.
    let r = w.up(&thing("1", "1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Create]);
    let mut seen = take(&log);
    assert_eq!(
        seen.pop().unwrap(),
        "stack a c1 u0 d0",
        "AnalyzeStack comes last"
    );
    assert_eq!(seen, expect(0, 0, 0));
    assert_eq!(cloud.objects()[0].properties.get("fixed"), Some(&s("yes")));
    assert_eq!(
        w.resource("a").unwrap().inputs.get("fixed"),
        Some(&s("yes"))
    );

    // Same: the remediated inputs are what was recorded, so nothing changes.
    let r = w.up(&thing("1", "1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Same]);
    let mut seen = take(&log);
    assert_eq!(seen.pop().unwrap(), "stack a c1 u0 d0");
    assert_eq!(seen, expect(1, 0, 0));

    // Update: analyzed before the update.
    let r = w.up(&thing("2", "1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    let mut seen = take(&log);
    assert_eq!(seen.pop().unwrap(), "stack a c1 u1 d0");
    assert_eq!(seen, expect(1, 0, 0));

    // Replace: analyzed before the replacement is created.
    let r = w.up(&thing("2", "2")).await;
    expect_ok(&r);
    assert!(ops_of(&r, "a").contains(&StepOp::CreateReplacement));
    let mut seen = take(&log);
    assert_eq!(seen.pop().unwrap(), "stack a c2 u1 d1");
    // The replacement's inputs are checked again without old inputs, as
    // Pulumi does: the remediated ones, after the analysis.
    let mut replaced = expect(1, 1, 0);
    replaced.push("check a".to_owned());
    assert_eq!(seen, replaced);
    assert_eq!(cloud.objects()[0].properties.get("fixed"), Some(&s("yes")));
}

#[tokio::test]
async fn a_mandatory_violation_leaves_the_state_byte_identical() {
    let (mut w, cloud, log) = policed();
    expect_ok(&w.up(&thing("1", "1")).await);
    let before = exported(&w.snapshot);
    let counts = cloud.counts();
    take(&log);

    // An update stops before the violating resource's step.
    let r = w.up(&thing("bad", "1")).await;
    match &r.error {
        Some(EngineError::PolicyViolation { urn, violations }) => {
            assert!(urn.as_ref().unwrap().as_str().ends_with("::a"));
            assert!(
                violations[0].contains("mock@v1.0.0 no-bad"),
                "{violations:?}"
            );
        }
        other => panic!("expected a policy violation, got {other:?}"),
    }
    assert_eq!(exported(&w.snapshot), before);
    assert_eq!(
        cloud.counts(),
        counts,
        "the provider was asked to change something"
    );
    assert!(
        !take(&log).iter().any(|l| l.starts_with("stack")),
        "AnalyzeStack runs after an update that succeeded only"
    );

    // A preview goes on to show everything, then fails.
    let r = w.preview(&thing("bad", "1")).await;
    assert!(matches!(r.error, Some(EngineError::PolicyViolation { .. })));
    // An advisory violation is reported and the update goes on.
    let r = w.up(&thing("meh", "1")).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
}

#[tokio::test]
async fn a_recorded_state_is_analyzed_without_the_program_and_left_as_it_was() {
    let (mut w, cloud, log) = policed();
    expect_ok(&w.up(&thing("meh", "1")).await);
    let before = exported(&w.snapshot);
    let counts = cloud.counts();
    take(&log);
    let pack: Arc<dyn Analyzer> = Arc::new(MockPack::new(log.clone(), cloud.clone()));
    let reports = converge_engine::analyze_snapshot(&[pack], &w.snapshot)
        .await
        .unwrap();
    // `Analyze` on each custom resource's recorded inputs, then
    // `AnalyzeStack`; no `Check`, no `Remediate`, no step.
    assert_eq!(take(&log), vec!["analyze a c1 u0 d0", "stack a c1 u0 d0"]);
    assert_eq!(reports.len(), 1);
    let report = &reports[0];
    assert_eq!(
        (report.pack.as_str(), report.version.as_str()),
        ("mock", "1.0.0")
    );
    assert!(report.remediations.is_empty());
    assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    let v = &report.violations[0];
    assert_eq!(v.policy, "no-bad");
    assert_eq!(v.level, EnforcementLevel::Advisory);
    assert!(v.urn.as_ref().unwrap().as_str().ends_with("::a"));
    assert_eq!(exported(&w.snapshot), before);
    assert_eq!(cloud.counts(), counts);
}

#[tokio::test]
async fn a_disabled_policy_is_not_listed_as_passed() {
    let (mut w, _cloud, _log) = policed();
    let (events, mut rx) = converge_engine::EventSink::channel();
    w.events = events;
    expect_ok(&w.up(&thing("1", "1")).await);
    let mut summaries = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let converge_engine::EngineEvent::PolicyAnalyzeSummary { urn, passed, .. } = event {
            // `a`'s and the stack policies' (the stack resource and the
            // default provider are judged too).
            if urn.as_ref().is_none_or(|u| u.name() == "a") {
                summaries.push((urn.is_some(), passed));
            }
        }
    }
    assert_eq!(
        summaries,
        vec![
            (true, vec!["fix".to_owned(), "no-bad".to_owned()]),
            (false, vec!["stack".to_owned()]),
        ],
        "a resource's and the stack's verdicts list the policies evaluated, not the disabled one"
    );
}

/// stack + Thing `a` importing `id`, its inputs the program's (`v`) or,
/// with `ImportInputs::Read`, the object's.
fn importing(v: &'static str, id: String, how: converge_engine::ImportInputs) -> TestProgram {
    program(move |m| {
        let (id, how) = (id.clone(), how.clone());
        async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(T, "a", inputs(&[("v", v), ("r", "1")]));
            g.options.import_id = Some(id);
            g.options.import_inputs = how;
            reg(&m, &stack, g).await?;
            Ok(())
        }
    })
}

/// Only the stack and the default provider are recorded: no `a`, no
/// interrupted operation.
fn adopted_nothing(w: &Lifecycle) {
    assert!(w.resource("a").is_none(), "the object was adopted");
    assert!(w.snapshot.pending_operations.is_empty());
    assert!(w.snapshot.resources.iter().all(|r| r.type_token != T));
}

const OUTSIDE: &str = "urn:pulumi:test::proj::pkg:index:Thing::outside";

#[tokio::test]
async fn an_import_is_analyzed_as_adopted_and_a_mandatory_violation_adopts_nothing() {
    use converge_engine::ImportInputs;
    let (mut w, cloud, log) = policed_with(false);
    let read = || ImportInputs::Read { properties: None };
    // `converge import`: the object's own inputs are judged; it is not
    // adopted, and nothing is recorded.
    let bad = w.insert_outside(OUTSIDE, "pkg", inputs(&[("v", "bad"), ("r", "1")]));
    let r = w.up(&importing("1", bad.clone(), read())).await;
    match &r.error {
        Some(EngineError::PolicyViolation { urn, violations }) => {
            assert!(urn.as_ref().unwrap().as_str().ends_with("::a"));
            assert!(violations[0].contains("no-bad"), "{violations:?}");
        }
        other => panic!("expected a policy violation, got {other:?}"),
    }
    adopted_nothing(&w);
    let seen = take(&log);
    assert!(seen.iter().any(|l| l.starts_with("analyze a")), "{seen:?}");
    assert!(
        !seen.iter().any(|l| l.starts_with("remediate")),
        "an import is not remediated: {seen:?}"
    );
    // A preview shows the violation, then fails.
    let r = w.preview(&importing("1", bad, read())).await;
    assert!(matches!(r.error, Some(EngineError::PolicyViolation { .. })));
    take(&log);

    // A compliant object is adopted, then the stack is analyzed with it.
    let good = w.insert_outside(OUTSIDE, "pkg", inputs(&[("v", "1"), ("r", "1")]));
    let r = w.up(&importing("1", good, read())).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Import]);
    assert_eq!(
        take(&log),
        vec!["check a", "analyze a c0 u0 d0", "stack a c0 u0 d0"],
        "Check, then Analyze, then the import, then AnalyzeStack"
    );
    assert_eq!(cloud.counts().updates, 0);
}

#[tokio::test]
async fn a_programs_import_is_analyzed_on_the_inputs_the_program_asks_for() {
    use converge_engine::ImportInputs;
    let (mut w, cloud, log) = policed_with(false);
    // The object is compliant; the program would make it violate: the
    // import fails before anything is recorded or changed.
    let id = w.insert_outside(OUTSIDE, "pkg", inputs(&[("v", "1"), ("r", "1")]));
    let r = w
        .up(&importing("bad", id.clone(), ImportInputs::Program))
        .await;
    assert!(
        matches!(r.error, Some(EngineError::PolicyViolation { .. })),
        "{:?}",
        r.error
    );
    adopted_nothing(&w);
    assert_eq!(cloud.counts().updates, 0);
    take(&log);
    // An advisory one is reported, and the import and its update go on.
    let r = w.up(&importing("meh", id, ImportInputs::Program)).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update, StepOp::Import]);
    assert!(take(&log).contains(&"analyze a c0 u0 d0".to_owned()));
    assert_eq!(cloud.counts().updates, 1);
}

/// stack + component `box` (its `v` given) + Thing `a` inside it.
fn boxed(v: &'static str) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut b = converge_testkit::component("pkg:index:Box", "box");
        b.inputs = inputs(&[("v", v)]);
        let b = reg(&m, &stack, b).await?;
        reg(
            &m,
            &b.urn,
            custom(T, "a", inputs(&[("v", "1"), ("r", "1")])),
        )
        .await?;
        Ok(())
    })
}

#[tokio::test]
async fn every_registration_is_judged_components_providers_and_the_stack_included() {
    let (mut w, cloud, log) = policed();
    let pack = MockPack {
        every_type: true,
        ..MockPack::new(log.clone(), cloud.clone())
    };
    w.options.analyzers = vec![Arc::new(pack)];
    expect_ok(&w.up(&boxed("1")).await);
    let analyzed: Vec<String> = take(&log)
        .into_iter()
        .filter_map(|l| {
            let rest = l.strip_prefix("analyze ")?;
            let (ty, rest) = rest.split_once(' ')?;
            Some(format!("{ty} {}", rest.split(' ').next()?))
        })
        .collect();
    for expected in [
        "pulumi:pulumi:Stack proj-test",
        "pkg:index:Box box",
        "pulumi:providers:pkg default",
        "pkg:index:Thing a",
    ] {
        assert!(
            analyzed.iter().any(|a| a == expected),
            "{expected} was not analyzed: {analyzed:?}"
        );
    }
    // The component's remediated inputs are what the state records.
    assert_eq!(
        w.resource("box").unwrap().inputs.get("fixed"),
        Some(&s("yes"))
    );

    // A mandatory violation on a component stops the update there: the
    // component keeps its recorded state and nothing inside it changes.
    let before = exported(&w.snapshot);
    let counts = cloud.counts();
    let r = w.up(&boxed("bad")).await;
    match &r.error {
        Some(EngineError::PolicyViolation { urn, .. }) => {
            assert!(urn.as_ref().unwrap().as_str().ends_with("::box"), "{urn:?}");
        }
        other => panic!("expected a policy violation, got {other:?}"),
    }
    assert_eq!(exported(&w.snapshot), before);
    assert_eq!(cloud.counts(), counts);
}

/// A pack whose `Analyze` fails on `Thing`s (its policy code raised).
#[derive(Debug)]
struct FailingPack(PackInfo);

#[async_trait]
impl Analyzer for FailingPack {
    fn info(&self) -> &PackInfo {
        &self.0
    }

    async fn remediate(&self, _: &AnalyzedResource) -> Result<Vec<Remediation>, AnalyzerError> {
        Ok(Vec::new())
    }

    async fn analyze(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError> {
        if resource.type_token != T {
            return Ok(Vec::new());
        }
        Err(AnalyzerError::Call {
            pack: "failing@v2.0.0".to_owned(),
            call: "Analyze",
            message: "it raised".to_owned(),
        })
    }

    async fn analyze_stack(
        &self,
        _: &[StackResource],
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError> {
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn a_pack_that_fails_is_reported_as_failed_and_nothing_changes() {
    let (mut w, cloud, _log) = policed();
    let failing = FailingPack(PackInfo {
        name: "failing".to_owned(),
        version: "2.0.0".to_owned(),
        policies: Vec::new(),
        initial_config: Default::default(),
    });
    w.options.analyzers.push(Arc::new(failing));
    let (events, mut rx) = converge_engine::EventSink::channel();
    w.events = events;
    let result = w.up(&thing("1", "1")).await;
    let error = result.error.as_ref().expect("the update fails");
    assert!(error.to_string().contains("it raised"), "{error}");
    assert_eq!(cloud.counts().creates, 0, "nothing was created");
    let mut reports = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let converge_engine::EngineEvent::Policies(r) = event {
            reports = r;
        }
    }
    let verdicts: Vec<(String, Option<String>)> =
        reports.into_iter().map(|r| (r.pack, r.error)).collect();
    assert_eq!(
        verdicts,
        vec![
            ("mock".to_owned(), None),
            (
                "failing".to_owned(),
                Some("policy pack failing@v2.0.0: Analyze failed: it raised".to_owned())
            ),
        ]
    );
}

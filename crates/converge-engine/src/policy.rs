//! Policy packs in the deployment (seed 000: after `Check`, "the step
//! generator will invoke any analyzers that have been configured").
//!
//! For every registration that reaches a step (custom resources,
//! providers, components and the stack alike, as in Pulumi), after
//! `Check` and before the step is decided: each pack's
//! `Remediate`, in the order the packs were given (each remediation sees
//! the inputs the one before left, and the result is what the provider
//! then diffs and receives), then each pack's `Analyze` on the final
//! inputs. An import is judged by `Analyze` alone, on the inputs it is
//! adopted with (the object exists as it is: nothing to remediate). Once
//! the operation's steps are done, each pack's `AnalyzeStack` on the
//! resulting state's resources.
//!
//! Enforcement: an advisory violation is reported and the operation goes
//! on; a mandatory one in an update fails the registration before its
//! step (the resource is not touched), and in a preview is reported and
//! fails the preview once everything was shown; a mandatory stack
//! violation fails the operation after it ran. A pack that cannot answer
//! fails the operation as a mandatory violation would.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use converge_model::{ResourceState, Urn};
use converge_plugin::policy::{
    AnalyzedOptions, AnalyzedProvider, AnalyzedResource, Analyzer, EnforcementLevel,
    PolicyDiagnostic, StackResource,
};
use converge_state::Snapshot;

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::{EngineEvent, PackReport, PolicyRemediation, PolicyViolation, Severity};
use crate::goal::ResourceGoal;

/// What the packs reported during an operation.
#[derive(Debug, Default)]
pub(crate) struct PolicyLog {
    inner: Mutex<LogInner>,
}

#[derive(Debug, Default)]
struct LogInner {
    /// By pack, in the order the packs were given.
    reports: Vec<PackReport>,
    /// A preview's mandatory violations, which fail it at the end.
    mandatory: Vec<String>,
}

impl PolicyLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, LogInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn report<'a>(inner: &'a mut LogInner, analyzer: &dyn Analyzer) -> &'a mut PackReport {
        let info = analyzer.info();
        let at = match inner
            .reports
            .iter()
            .position(|r| r.pack == info.name && r.version == info.version)
        {
            Some(at) => at,
            None => {
                inner.reports.push(PackReport {
                    pack: info.name.clone(),
                    version: info.version.clone(),
                    violations: Vec::new(),
                    remediations: Vec::new(),
                    error: None,
                });
                inner.reports.len() - 1
            }
        };
        &mut inner.reports[at]
    }

    /// Every pack's report; a pack that reported nothing is listed too.
    pub fn reports(&self, analyzers: &[Arc<dyn Analyzer>]) -> Vec<PackReport> {
        let mut inner = self.lock();
        for a in analyzers {
            PolicyLog::report(&mut inner, a.as_ref());
        }
        inner.reports.clone()
    }

    /// `result` of a call to `analyzer`; a failure is recorded on the
    /// pack's report (so it is not listed as passed) and returned.
    fn noted<T>(
        &self,
        analyzer: &dyn Analyzer,
        result: Result<T, converge_plugin::policy::AnalyzerError>,
    ) -> Result<T, EngineError> {
        result.map_err(|e| {
            let mut inner = self.lock();
            let report = PolicyLog::report(&mut inner, analyzer);
            report.error.get_or_insert_with(|| e.to_string());
            EngineError::from(e)
        })
    }

    /// The mandatory violations a preview went on past.
    pub fn mandatory(&self) -> Vec<String> {
        self.lock().mandatory.clone()
    }
}

/// `name@vversion policy: message`, as a violation is named in errors.
fn describe(v: &PolicyViolation) -> String {
    let place = v
        .urn
        .as_ref()
        .map(|u| format!(" ({u})"))
        .unwrap_or_default();
    let message = v.message.replace('\n', " ");
    format!("{}@v{} {}{place}: {message}", v.pack, v.version, v.policy)
}

fn violation(diagnostic: PolicyDiagnostic, urn: Option<&Urn>) -> PolicyViolation {
    let urn = diagnostic
        .urn
        .as_deref()
        .and_then(|u| Urn::parse(u).ok())
        .or_else(|| urn.cloned());
    PolicyViolation {
        pack: diagnostic.pack_name,
        version: diagnostic.pack_version,
        policy: diagnostic.policy_name,
        // A remediation policy whose remediation did not fix what it
        // checks counts as mandatory.
        level: match diagnostic.enforcement_level {
            EnforcementLevel::Remediate => EnforcementLevel::Mandatory,
            level => level,
        },
        message: diagnostic.message,
        urn,
        severity: diagnostic.severity,
    }
}

/// Records and reports `diagnostics` of `analyzer`; the mandatory ones
/// are returned, described.
fn report(
    d: &Deployment,
    analyzer: &dyn Analyzer,
    urn: Option<&Urn>,
    stack: bool,
    diagnostics: Vec<PolicyDiagnostic>,
) -> Vec<String> {
    let info = analyzer.info();
    let mut failed: Vec<String> = Vec::new();
    let mut mandatory = Vec::new();
    for diagnostic in diagnostics {
        let v = violation(diagnostic, urn);
        if !failed.contains(&v.policy) {
            failed.push(v.policy.clone());
        }
        if v.level == EnforcementLevel::Mandatory {
            mandatory.push(describe(&v));
        }
        d.events.send(EngineEvent::PolicyViolation(v.clone()));
        let mut inner = d.policies.lock();
        PolicyLog::report(&mut inner, analyzer).violations.push(v);
    }
    let passed = info
        .policies
        .iter()
        .filter(|p| {
            p.stack == stack
                && p.enforcement_level != EnforcementLevel::Disabled
                && !failed.contains(&p.name)
        })
        .map(|p| p.name.clone())
        .collect();
    d.events.send(EngineEvent::PolicyAnalyzeSummary {
        urn: urn.cloned(),
        pack: info.name.clone(),
        version: info.version.clone(),
        passed,
        failed,
    });
    mandatory
}

/// A resource as the packs see it: `properties` are `state`'s inputs,
/// its provider is the one registered in this deployment.
fn analyzed(d: &Deployment, state: &ResourceState, options: AnalyzedOptions) -> AnalyzedResource {
    let provider = state.provider.as_ref().and_then(|reference| {
        let p = d.progress();
        let r = p.registered.get(&reference.urn)?;
        Some(AnalyzedProvider {
            urn: reference.urn.to_string(),
            type_token: r.state.type_token.clone(),
            name: reference.urn.name().to_owned(),
            properties: r.state.inputs.clone(),
        })
    });
    AnalyzedResource {
        urn: state.urn.to_string(),
        type_token: state.type_token.clone(),
        name: state.urn.name().to_owned(),
        properties: state.inputs.clone(),
        options,
        provider,
    }
}

/// A registration's options as the packs see them.
fn goal_options(goal: &ResourceGoal) -> AnalyzedOptions {
    AnalyzedOptions {
        protect: goal.options.protect,
        ignore_changes: goal.options.ignore_changes.clone(),
        delete_before_replace: goal.options.delete_before_replace,
        additional_secret_outputs: goal.options.additional_secret_outputs.clone(),
        aliases: Vec::new(),
        parent: goal.parent.as_ref().map(ToString::to_string),
    }
}

/// A recorded resource's options as the packs see them.
fn state_options(r: &ResourceState) -> AnalyzedOptions {
    AnalyzedOptions {
        protect: r.protect,
        ignore_changes: r.ignore_changes.clone(),
        delete_before_replace: None,
        additional_secret_outputs: r.additional_secret_outputs.clone(),
        aliases: Vec::new(),
        parent: r.parent.as_ref().map(ToString::to_string),
    }
}

/// `Remediate` then `Analyze` on a resource's checked inputs, before its
/// step: the remediated inputs replace `state.inputs`; a mandatory
/// violation fails an update's registration here.
pub(crate) async fn check_resource(
    d: &Deployment,
    state: &mut ResourceState,
    goal: &ResourceGoal,
) -> Result<(), EngineError> {
    if d.opts.analyzers.is_empty() {
        return Ok(());
    }
    let mut resource = analyzed(d, state, goal_options(goal));
    for analyzer in &d.opts.analyzers {
        let remediations = d
            .policies
            .noted(analyzer.as_ref(), analyzer.remediate(&resource).await)?;
        for remediation in remediations {
            if let Some(note) = &remediation.diagnostic {
                d.events.diagnostic(
                    Severity::Warning,
                    Some(&state.urn),
                    format!(
                        "policy {}@v{} {}: {note}",
                        remediation.pack_name, remediation.pack_version, remediation.policy_name
                    ),
                );
            }
            let Some(after) = remediation.properties else {
                continue;
            };
            let before = std::mem::replace(&mut resource.properties, after.clone());
            if before == after {
                continue;
            }
            let event = PolicyRemediation {
                pack: remediation.pack_name,
                version: remediation.pack_version,
                policy: remediation.policy_name,
                urn: state.urn.clone(),
                before,
                after,
            };
            d.events.send(EngineEvent::PolicyRemediation(event.clone()));
            let mut inner = d.policies.lock();
            PolicyLog::report(&mut inner, analyzer.as_ref())
                .remediations
                .push(event);
        }
    }
    state.inputs = resource.properties.clone();
    analyze(d, &state.urn, &resource).await
}

/// `Analyze` alone on an imported resource, whose inputs are what the
/// object has (`converge import`) or what the program asks of it: an
/// object that exists is judged as it is, not remediated. A mandatory
/// violation fails the import before anything is recorded, so the stack
/// never adopts an object its policies forbid.
pub(crate) async fn check_import(d: &Deployment, state: &ResourceState) -> Result<(), EngineError> {
    if d.opts.analyzers.is_empty() {
        return Ok(());
    }
    let resource = analyzed(d, state, state_options(state));
    analyze(d, &state.urn, &resource).await
}

/// Each pack's `Analyze` on `resource`, reported; a mandatory violation
/// fails an update here and a preview at its end.
async fn analyze(
    d: &Deployment,
    urn: &Urn,
    resource: &AnalyzedResource,
) -> Result<(), EngineError> {
    let mut mandatory = Vec::new();
    for analyzer in &d.opts.analyzers {
        let diagnostics = d
            .policies
            .noted(analyzer.as_ref(), analyzer.analyze(resource).await)?;
        mandatory.extend(report(d, analyzer.as_ref(), Some(urn), false, diagnostics));
    }
    if mandatory.is_empty() {
        return Ok(());
    }
    if d.opts.preview {
        d.policies.lock().mandatory.extend(mandatory);
        return Ok(());
    }
    Err(EngineError::PolicyViolation {
        urn: Some(urn.clone()),
        violations: mandatory,
    })
}

/// A resource of a state as the packs see it, with `properties` (its
/// inputs for `Analyze`, its outputs for `AnalyzeStack`) and its provider
/// found among `by_urn`.
fn recorded(
    r: &ResourceState,
    by_urn: &BTreeMap<&Urn, &ResourceState>,
    properties: &converge_model::PropertyMap,
) -> AnalyzedResource {
    let provider = r.provider.as_ref().and_then(|reference| {
        let p = by_urn.get(&reference.urn)?;
        Some(AnalyzedProvider {
            urn: p.urn.to_string(),
            type_token: p.type_token.clone(),
            name: p.urn.name().to_owned(),
            properties: p.inputs.clone(),
        })
    });
    AnalyzedResource {
        urn: r.urn.to_string(),
        type_token: r.type_token.clone(),
        name: r.urn.name().to_owned(),
        properties: properties.clone(),
        options: state_options(r),
        provider,
    }
}

/// The live resources of `snapshot` and each by URN.
fn live(snapshot: &Snapshot) -> Vec<&ResourceState> {
    snapshot.resources.iter().filter(|r| !r.delete).collect()
}

/// What `AnalyzeStack` receives: every live resource of the state, with
/// its outputs, parent, dependencies and provider.
fn stack_resources(snapshot: &Snapshot) -> Vec<StackResource> {
    let live = live(snapshot);
    let by_urn: BTreeMap<&Urn, &ResourceState> = live.iter().map(|r| (&r.urn, *r)).collect();
    live.iter()
        .map(|r| StackResource {
            resource: recorded(r, &by_urn, &r.outputs),
            parent: r.parent.as_ref().map(ToString::to_string),
            dependencies: r.dependencies.iter().map(ToString::to_string).collect(),
            property_dependencies: r
                .property_dependencies
                .iter()
                .map(|(k, v)| (k.clone(), v.iter().map(ToString::to_string).collect()))
                .collect(),
        })
        .collect()
}

/// Where a stack policy's violation is reported, as Pulumi places it: the
/// resource it names if that resource is in the stack, else the root
/// stack resource (the first resource when there is none).
fn place_stack_diagnostics(snapshot: &Snapshot, diagnostics: &mut [PolicyDiagnostic]) {
    let live = live(snapshot);
    let root = live
        .iter()
        .find(|r| r.urn.is_stack() && r.parent.is_none())
        .or_else(|| live.first())
        .map(|r| r.urn.to_string());
    for diagnostic in diagnostics {
        let named = diagnostic
            .urn
            .as_deref()
            .is_some_and(|u| live.iter().any(|r| r.urn.as_str() == u));
        if !named {
            diagnostic.urn = root.clone();
        }
    }
}

/// `AnalyzeStack` on the resources of `snapshot` (the operation's
/// result): their outputs, parents, dependencies and providers.
pub(crate) async fn check_stack(d: &Deployment, snapshot: &Snapshot) -> Result<(), EngineError> {
    if d.opts.analyzers.is_empty() {
        return Ok(());
    }
    let resources = stack_resources(snapshot);
    let mut mandatory = Vec::new();
    for analyzer in &d.opts.analyzers {
        let mut diagnostics = d
            .policies
            .noted(analyzer.as_ref(), analyzer.analyze_stack(&resources).await)?;
        place_stack_diagnostics(snapshot, &mut diagnostics);
        mandatory.extend(report(d, analyzer.as_ref(), None, true, diagnostics));
    }
    if mandatory.is_empty() {
        Ok(())
    } else {
        Err(EngineError::PolicyViolation {
            urn: None,
            violations: mandatory,
        })
    }
}

/// A stack's existing state judged by `analyzers` without running its
/// program (`converge policy analyze`): each pack's `Analyze` on every
/// live resource — its inputs as recorded — then its `AnalyzeStack` on
/// all of them. Nothing is remediated: the
/// state is only read. Returns each pack's violations, in the order the
/// packs were given.
pub async fn analyze_snapshot(
    analyzers: &[Arc<dyn Analyzer>],
    snapshot: &Snapshot,
) -> Result<Vec<PackReport>, EngineError> {
    let live = live(snapshot);
    let by_urn: BTreeMap<&Urn, &ResourceState> = live.iter().map(|r| (&r.urn, *r)).collect();
    let stack = stack_resources(snapshot);
    let mut reports = Vec::new();
    for analyzer in analyzers {
        let info = analyzer.info();
        let mut violations = Vec::new();
        for r in &live {
            let resource = recorded(r, &by_urn, &r.inputs);
            for diagnostic in analyzer.analyze(&resource).await? {
                violations.push(violation(diagnostic, Some(&r.urn)));
            }
        }
        let mut diagnostics = analyzer.analyze_stack(&stack).await?;
        place_stack_diagnostics(snapshot, &mut diagnostics);
        for diagnostic in diagnostics {
            violations.push(violation(diagnostic, None));
        }
        reports.push(PackReport {
            pack: info.name.clone(),
            version: info.version.clone(),
            violations,
            remediations: Vec::new(),
            error: None,
        });
    }
    Ok(reports)
}

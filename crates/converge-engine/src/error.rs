//! Why an operation or a step failed.

use converge_model::{ProviderReferenceError, TimeoutError, Urn, UrnError};
use converge_plugin::{CheckFailure, ProviderError, RegistryError};

use converge_state::journal::ReplayError;

use crate::events::StepOp;
use crate::journaler::JournalError;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EngineError {
    #[error("the program failed: {0}")]
    Program(String),
    #[error("{op} of {urn} failed: {source}")]
    Step {
        op: StepOp,
        urn: Urn,
        #[source]
        source: ProviderError,
    },
    /// A resource hook failed (or is not registered): a before hook's
    /// failure fails its step.
    #[error("{urn}: {kind} {source}")]
    Hook {
        urn: Urn,
        kind: crate::hooks::HookKind,
        #[source]
        source: crate::hooks::HookError,
    },
    #[error("construct of {type_token} {name:?} failed: {source}")]
    Construct {
        type_token: String,
        name: String,
        #[source]
        source: ProviderError,
    },
    #[error("{urn}: {source}")]
    Provider {
        urn: Urn,
        #[source]
        source: RegistryError,
    },
    #[error("{urn}: invalid inputs: {}", failures.iter().map(|f| if f.property.is_empty() { f.reason.clone() } else { format!("{}: {}", f.property, f.reason) }).collect::<Vec<_>>().join("; "))]
    CheckFailed {
        urn: Urn,
        failures: Vec<CheckFailure>,
    },
    #[error("resource {urn} is protected: it cannot be {action}; remove the protect option and run an update first, or run `converge state unprotect {urn}`")]
    Protected { urn: Urn, action: &'static str },
    #[error("replacing {urn} deletes it before creating its replacement (delete-before-replace), and {dependent}, which depends on it and would be replaced with it, is not part of this update: add `--target {dependent}` or `--target-dependents` (or drop its `--exclude`); nothing was deleted")]
    ReplacementDependentNotTargeted { urn: Urn, dependent: Urn },
    /// `up --plan`: a registration or step the saved plan does not allow.
    #[error("resource {urn} violates plan: {message}")]
    PlanViolation { urn: Urn, message: String },
    /// `up --plan`: steps of the saved plan the update never took.
    #[error("the update did not take every planned step: {}", .0.iter().map(|(u, s)| format!("{u} ({s})")).collect::<Vec<_>>().join(", "))]
    PlannedStepsNotRun(Vec<(Urn, String)>),
    /// Mandatory policies a resource violates: it is not touched (in an
    /// update), or the preview fails once it has shown everything.
    #[error("{} mandatory policy violation(s): {}", violations.len(), violations.join("; "))]
    PolicyViolation {
        urn: Option<Urn>,
        violations: Vec<String>,
    },
    /// A policy pack that could not answer.
    #[error("{0}")]
    Analyzer(#[from] converge_plugin::policy::AnalyzerError),
    #[error("duplicate resource URN {0}: a program may register each resource once")]
    DuplicateUrn(Urn),
    /// Two registrations reach one old resource (by URN or through
    /// aliases); `holder` reached it first.
    #[error("resources {holder} and {urn} both take the place of the existing resource {old} (by URN or alias): only one registration may; remove the alias from one of them")]
    OldResourceClaimed { urn: Urn, holder: Urn, old: Urn },
    /// A `stateMigrations` callback failed or returned a state Converge
    /// refuses; nothing was changed.
    #[error("state migration of {urn} failed: {message}")]
    StateMigration { urn: Urn, message: String },
    #[error("resource {urn} has aliases matching several existing resources: {}", found.iter().map(|u| u.to_string()).collect::<Vec<_>>().join(", "))]
    AmbiguousAliases { urn: Urn, found: Vec<Urn> },
    /// The program's inputs differ from the object being imported in
    /// properties that force a replacement: importing would destroy it.
    #[error("import of {urn} failed: the program's inputs differ from the existing object in {}, which would replace it; change the program to match the object (or remove the import option to create a new one)", keys.join(", "))]
    ImportReplaces { urn: Urn, keys: Vec<String> },
    /// A resource imported earlier whose program still names its import ID
    /// would be replaced (Pulumi's rule).
    #[error("resource {urn} would be replaced (changes in {}), but previously-imported resources that still specify an ID may not be replaced; remove the `import` option from the program", keys.join(", "))]
    ImportedReplace { urn: Urn, keys: Vec<String> },
    #[error("import of {urn} failed: no object with ID {id} exists")]
    ImportNotFound { urn: Urn, id: String },
    /// A registration's `customTimeouts` holds something that is not a
    /// duration.
    #[error("resource {urn}: {source}")]
    BadCustomTimeout {
        urn: Urn,
        #[source]
        source: TimeoutError,
    },
    /// A provider call outlasted the resource's custom timeout for it.
    #[error("{op} of {urn} timed out: the provider's {call} took longer than customTimeouts.{key} ({timeout})")]
    TimedOut {
        op: StepOp,
        urn: Urn,
        /// The provider method: `Read`.
        call: &'static str,
        /// The `customTimeouts` key: `read`.
        key: &'static str,
        /// The timeout as the program wrote it.
        timeout: String,
    },
    #[error("{0}")]
    InvalidUrn(#[from] UrnError),
    #[error("{0}")]
    InvalidProviderReference(#[from] ProviderReferenceError),
    #[error("{urn} depends on {dependency}, which is not in this deployment")]
    UnknownDependency { urn: Urn, dependency: Urn },
    #[error(
        "{urn} depends on {dependency}, which {}; target {dependency} too, or leave {urn} out (--exclude)",
        if *exists {
            "is left out of this update while what it depends on changes"
        } else {
            "does not exist and is not targeted"
        }
    )]
    DependencyNotTargeted {
        urn: Urn,
        dependency: Urn,
        /// The dependency has an old state, kept as it is.
        exists: bool,
    },
    #[error("{0}")]
    Journal(#[from] JournalError),
    #[error("skipped {0}: an earlier step failed")]
    Cancelled(Urn),
    /// With `continue_on_error`: a registration that depends on a resource
    /// that failed (or was itself skipped) is not run.
    #[error("skipped {urn}: it depends on {dependency}, which failed")]
    DependencyFailed { urn: Urn, dependency: Urn },
    /// With `continue_on_error`: every failure of the operation, when there
    /// was more than one.
    #[error("{} resources failed:{}", .0.len(), .0.iter().map(|e| format!("\n  - {e}")).collect::<String>())]
    Failures(Vec<EngineError>),
    /// The user cancelled the operation before this step started.
    #[error("{0} was not started: the operation was cancelled")]
    NotStarted(Urn),
    /// The user stopped the operation while this work was under way: it
    /// was no longer waited for.
    #[error("stopped waiting: the operation was cancelled")]
    Stopped,
    /// The operation's error when the user's interruption changed what it
    /// did: some steps did not run (and, once `stopped`, some that were
    /// under way were abandoned and are pending operations in the state).
    #[error("{}", if *stopped {
        "the operation was cancelled and stopped before the operations in flight ended: those are recorded as pending operations; check their objects in your cloud, then run `converge refresh` to settle interrupted updates and deletes, `converge refresh --clear-pending-creates` to forget interrupted creates, or `converge refresh --import-pending-creates URN,ID` to adopt one whose object does exist, then run the command again"
    } else {
        "the operation was cancelled: the steps under way finished and are recorded; no other step was started"
    })]
    Interrupted { stopped: bool },
    #[error("the journal does not replay onto the deployment's base: {0}")]
    Replay(#[source] Box<ReplayError>),
    #[error("outputs for {0}, which was not registered")]
    OutputsOfUnregistered(Urn),
    #[error(
        "cannot delete {urn}: {user} depends on it and is not being deleted; target {user} too"
    )]
    DependentNotTargeted { urn: Urn, user: Urn },
    #[error(
        "no resource {} '{pattern}' found (--{flag}); `converge stack export` lists the stack's resource URNs",
        if *glob { "matching" } else { "named" }
    )]
    NoResourceMatches {
        flag: &'static str,
        pattern: String,
        glob: bool,
    },
    #[error("a deletion task panicked or was cancelled")]
    DeletionTask,
    #[error("the schema of package {package}: {source}")]
    Schema {
        package: String,
        #[source]
        source: RegistryError,
    },
    #[error("invoke {token}: {}", invoke_failure(token, source))]
    Invoke {
        token: String,
        #[source]
        source: ProviderError,
    },
    #[error("call {token}: {source}")]
    Call {
        token: String,
        #[source]
        source: ProviderError,
    },
    #[error("pulumi:pulumi:getResource: the argument \"urn\" must be a string")]
    GetResourceArgument,
    #[error("pulumi:pulumi:getResource: {0}")]
    GetResourceUrn(#[source] UrnError),
    #[error("pulumi:pulumi:getResource: unknown resource {0}")]
    UnknownResource(Urn),
    #[error(
        "the invoke depends on {0}, which this program has not registered: \
         name only resources the program created as an invoke's dependencies"
    )]
    UnknownInvokeDependency(Urn),
    /// `RegisterPackage` of a package name the program already registered
    /// as another package: a program's parameterized packages have
    /// distinct names.
    #[error("package {package} is registered twice, as {first} and as {second}; a program's packages must have distinct names")]
    PackageConflict {
        package: String,
        first: String,
        second: String,
    },
}

impl EngineError {
    /// The resource this error is about, if it is about one.
    pub fn urn(&self) -> Option<&Urn> {
        match self {
            EngineError::Step { urn, .. }
            | EngineError::Hook { urn, .. }
            | EngineError::Provider { urn, .. }
            | EngineError::CheckFailed { urn, .. }
            | EngineError::Protected { urn, .. }
            | EngineError::PlanViolation { urn, .. }
            | EngineError::DuplicateUrn(urn)
            | EngineError::OldResourceClaimed { urn, .. }
            | EngineError::AmbiguousAliases { urn, .. }
            | EngineError::StateMigration { urn, .. }
            | EngineError::ImportReplaces { urn, .. }
            | EngineError::ImportedReplace { urn, .. }
            | EngineError::ImportNotFound { urn, .. }
            | EngineError::BadCustomTimeout { urn, .. }
            | EngineError::TimedOut { urn, .. }
            | EngineError::UnknownDependency { urn, .. }
            | EngineError::DependencyNotTargeted { urn, .. }
            | EngineError::Cancelled(urn)
            | EngineError::NotStarted(urn)
            | EngineError::DependencyFailed { urn, .. }
            | EngineError::DependentNotTargeted { urn, .. } => Some(urn),
            EngineError::PolicyViolation { urn, .. } => urn.as_ref(),
            _ => None,
        }
    }
}

/// Why an invoke failed, as its error says it: a provider that implements
/// no functions at all has no function of that name either.
fn invoke_failure(token: &str, source: &ProviderError) -> String {
    match source {
        ProviderError::Unimplemented("Invoke") => {
            let package = token.split(':').next().unwrap_or(token);
            format!("no such function: the provider of package `{package}` has no functions")
        }
        other => other.to_string(),
    }
}

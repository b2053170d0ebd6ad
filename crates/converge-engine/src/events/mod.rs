//! The event stream of an operation, for the CLI to render. The engine
//! never prints.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use converge_model::{PropertyDiff, ResourceState, Urn};
use tokio::sync::mpsc;

pub mod digest;
pub mod pulumi;

/// What a step does.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum StepOp {
    Same,
    Create,
    Update,
    Delete,
    /// A replacement was decided (the summary line of a replace).
    Replace,
    /// Create the replacement of a replaced resource.
    CreateReplacement,
    /// Delete the original of a replaced resource.
    DeleteReplaced,
    Read,
    Import,
    Refresh,
    /// Forget a resource whose object a delete-before-replace removed and
    /// that the program no longer declares.
    RemovePendingReplace,
}

impl StepOp {
    pub fn as_str(self) -> &'static str {
        match self {
            StepOp::Same => "same",
            StepOp::Create => "create",
            StepOp::Update => "update",
            StepOp::Delete => "delete",
            StepOp::Replace => "replace",
            StepOp::CreateReplacement => "create-replacement",
            StepOp::DeleteReplaced => "delete-replaced",
            StepOp::Read => "read",
            StepOp::Import => "import",
            StepOp::Refresh => "refresh",
            StepOp::RemovePendingReplace => "remove-pending-replace",
        }
    }
}

impl fmt::Display for StepOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Debug,
    Info,
    Warning,
    Error,
}

/// One event of an operation.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    StepStarted {
        op: StepOp,
        urn: Urn,
        /// The state the step starts from (none for a create).
        old: Option<Arc<ResourceState>>,
        /// The state it aims at: the planned inputs, outputs as far as
        /// known (none for a delete or a refresh).
        new: Option<Arc<ResourceState>>,
        /// Property path → change, for updates and replacements.
        diff: BTreeMap<String, PropertyDiff>,
    },
    StepFinished {
        op: StepOp,
        urn: Urn,
        /// The state before the step; `None` for a Same step, whose `new`
        /// is the old state carried over.
        old: Option<Arc<ResourceState>>,
        new: Option<Arc<ResourceState>>,
        /// Property path → change, for updates and replacements.
        diff: BTreeMap<String, PropertyDiff>,
        /// `None` when the step succeeded.
        error: Option<String>,
    },
    Diagnostic {
        severity: Severity,
        urn: Option<Urn>,
        message: String,
    },
    /// A policy's violation, reported by a pack's `Analyze` (with the
    /// resource) or `AnalyzeStack`.
    PolicyViolation(PolicyViolation),
    /// A remediation policy rewrote a resource's inputs before its step.
    PolicyRemediation(PolicyRemediation),
    /// One pack's verdict on one resource (`Analyze`) or on the stack
    /// (`AnalyzeStack`, no URN): which of its policies passed or failed.
    PolicyAnalyzeSummary {
        urn: Option<Urn>,
        pack: String,
        version: String,
        passed: Vec<String>,
        failed: Vec<String>,
    },
    /// Every violation and remediation of the operation, grouped by pack
    /// (`name@version`); sent just before the summary when packs ran.
    Policies(Vec<PackReport>),
    /// The last event of an operation: how many steps of each kind ran,
    /// and the error, if it failed.
    Summary {
        counts: BTreeMap<StepOp, usize>,
        error: Option<String>,
    },
}

pub use converge_plugin::policy::{EnforcementLevel, PolicySeverity};

/// One policy violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyViolation {
    pub pack: String,
    pub version: String,
    pub policy: String,
    pub level: EnforcementLevel,
    pub message: String,
    /// The resource at fault (`None`: the stack as a whole).
    pub urn: Option<Urn>,
    /// The severity the pack gave it, if any.
    pub severity: Option<PolicySeverity>,
}

/// One remediation: the inputs before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRemediation {
    pub pack: String,
    pub version: String,
    pub policy: String,
    pub urn: Urn,
    pub before: converge_model::PropertyMap,
    pub after: converge_model::PropertyMap,
}

/// What one pack did in an operation.
#[derive(Debug, Clone, PartialEq)]
pub struct PackReport {
    pub pack: String,
    pub version: String,
    pub violations: Vec<PolicyViolation>,
    pub remediations: Vec<PolicyRemediation>,
    /// Why the pack could not judge (its policy code failed, its process
    /// died): the operation failed with it, and the pack did not pass.
    pub error: Option<String>,
}

/// What a step starts with, as [`EngineEvent::StepStarted`] reports it
/// (borrowed: the event takes copies).
#[derive(Debug, Clone, Copy, Default)]
pub struct StepStart<'a> {
    pub old: Option<&'a ResourceState>,
    pub new: Option<&'a ResourceState>,
    pub diff: Option<&'a BTreeMap<String, PropertyDiff>>,
}

/// Where events go. Sending never blocks the engine: a dropped receiver
/// just loses events.
#[derive(Debug, Clone, Default)]
pub struct EventSink {
    tx: Option<mpsc::UnboundedSender<EngineEvent>>,
    /// `StepStarted` events carry the step's states and diff.
    step_states: bool,
}

impl EventSink {
    /// A sink and the receiver to read its events from.
    pub fn channel() -> (EventSink, mpsc::UnboundedReceiver<EngineEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let sink = EventSink {
            tx: Some(tx),
            step_states: false,
        };
        (sink, rx)
    }

    /// A sink that drops everything.
    pub fn discard() -> EventSink {
        EventSink::default()
    }

    /// This sink, its `StepStarted` events carrying the step's old and
    /// new states and diff, for a reader that writes Pulumi's
    /// `resourcePreEvent` metadata. Without, they carry none, which
    /// spares the engine a copy of each state at each step's start.
    pub fn with_step_states(mut self) -> EventSink {
        self.step_states = true;
        self
    }

    /// Whether `StepStarted` events should carry the step's states.
    pub fn wants_step_states(&self) -> bool {
        self.tx.is_some() && self.step_states
    }

    pub fn send(&self, event: EngineEvent) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(event);
        }
    }

    pub fn diagnostic(&self, severity: Severity, urn: Option<&Urn>, message: impl Into<String>) {
        self.send(EngineEvent::Diagnostic {
            severity,
            urn: urn.cloned(),
            message: message.into(),
        });
    }
}

/// `text` without ANSI escape sequences. Converge's output has no colour,
/// and a diagnostic's text is not only shown on terminals: the escapes
/// Node.js writes into the stack traces a program reports would show as
/// `^[[90m`.
pub fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte.
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

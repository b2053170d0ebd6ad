//! Rendering an operation's events: plain lines (logs, CI, pipes) or a live
//! display in a terminal. The rendering of each event is a pure function of
//! the event (and its elapsed time), so it is snapshot-tested.

mod finished;
pub mod live;
pub mod values;

use std::collections::BTreeMap;
use std::time::Duration;

use converge_engine::{EngineEvent, Severity, StepOp};
use converge_model::Urn;

use finished::FinishedStep;

/// What the display shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct DisplayOptions {
    /// Show each changed step's properties: old → new values.
    pub diff: bool,
    /// Steps are planned, not performed (preview).
    pub preview: bool,
    /// Show what secrets hold instead of `[secret]`.
    pub show_secrets: bool,
    /// Show debug-level diagnostics too (`--debug`).
    pub debug: bool,
    /// `--show-sames`: a line for each unchanged resource too.
    pub show_sames: bool,
    /// `--show-reads`: the read steps of resources the program reads
    /// (`get`, `read`) rather than manages.
    pub show_reads: bool,
    /// `--show-replacement-steps`: a replacement as its create-replacement
    /// and delete-original steps, rather than one replace line.
    pub show_replacement_steps: bool,
    /// `--show-policy-remediations`: under each remediation, the inputs it
    /// changed (old => new).
    pub show_policy_remediations: bool,
}

/// Writes a line to stdout; a closed stdout loses the line instead of
/// stopping the operation that prints it. While a [`HeldLines`] lives,
/// the line waits for it.
pub fn say(line: impl std::fmt::Display) {
    use std::io::Write;
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    match held.as_mut() {
        Some(buffer) => {
            let _ = writeln!(buffer, "{line}");
        }
        None => {
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        }
    }
}

/// Lines said while a [`HeldLines`] lives.
static HELD: std::sync::Mutex<Option<Vec<u8>>> = std::sync::Mutex::new(None);

/// Holds the lines [`say`] writes until it is dropped, then writes them to
/// stdout at once (stdout writes each line on its own otherwise).
#[must_use]
pub struct HeldLines(());

/// Starts holding lines; see [`HeldLines`].
pub fn hold_lines() -> HeldLines {
    let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
    held.get_or_insert_with(Vec::new);
    HeldLines(())
}

impl Drop for HeldLines {
    fn drop(&mut self) {
        use std::io::Write;
        let held = HELD.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(buffer) = held.filter(|b| !b.is_empty()) {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(&buffer).and_then(|()| out.flush());
        }
    }
}

/// The symbol Pulumi users know for each step.
pub fn symbol(op: StepOp) -> &'static str {
    match op {
        StepOp::Same => " ",
        StepOp::Create => "+",
        StepOp::Update => "~",
        StepOp::Delete => "-",
        StepOp::Replace => "+-",
        StepOp::CreateReplacement => "++",
        StepOp::DeleteReplaced => "--",
        StepOp::Read => ">",
        StepOp::Import => "=",
        StepOp::Refresh => "~",
        StepOp::RemovePendingReplace => "-",
    }
}

fn progressive(op: StepOp, preview: bool) -> &'static str {
    if preview {
        return match op {
            StepOp::Same => "unchanged",
            StepOp::Create => "create",
            StepOp::Update => "update",
            StepOp::Delete => "delete",
            StepOp::Replace => "replace",
            StepOp::CreateReplacement => "create replacement",
            StepOp::DeleteReplaced => "delete original",
            StepOp::Read => "read",
            StepOp::Import => "import",
            StepOp::Refresh => "refresh",
            StepOp::RemovePendingReplace => "discard",
        };
    }
    match op {
        StepOp::Same => "unchanged",
        StepOp::Create => "creating",
        StepOp::Update => "updating",
        StepOp::Delete => "deleting",
        StepOp::Replace => "replacing",
        StepOp::CreateReplacement => "creating replacement",
        StepOp::DeleteReplaced => "deleting original",
        StepOp::Read => "reading",
        StepOp::Import => "importing",
        StepOp::Refresh => "refreshing",
        StepOp::RemovePendingReplace => "discarding",
    }
}

fn done(op: StepOp) -> &'static str {
    match op {
        StepOp::Same => "unchanged",
        StepOp::Create => "created",
        StepOp::Update => "updated",
        StepOp::Delete => "deleted",
        StepOp::Replace => "replaced",
        StepOp::CreateReplacement => "created replacement",
        StepOp::DeleteReplaced => "deleted original",
        StepOp::Read => "read",
        StepOp::Import => "imported",
        StepOp::Refresh => "refreshed",
        StepOp::RemovePendingReplace => "discarded",
    }
}

/// A step event of a default provider (`pulumi:providers:<pkg>` named
/// `default…`), which the engine adds rather than the program: Pulumi's
/// display leaves them out, and so does this one, unless the step failed.
pub fn is_internal(event: &EngineEvent) -> bool {
    let urn = match event {
        EngineEvent::StepStarted { urn, .. } => urn,
        EngineEvent::StepFinished {
            urn, error: None, ..
        } => urn,
        _ => return false,
    };
    urn.is_default_provider()
}

/// Whether the display shows a step event, as Pulumi's decides: an
/// unchanged resource only with `--show-sames`, a read only with
/// `--show-reads`, a replacement's create-replacement and delete-original
/// steps only with `--show-replacement-steps` (else the replacement's
/// creation finishing is its one replace line). A failed step always
/// shows. Other events always show.
pub fn shown(event: &EngineEvent, opts: DisplayOptions) -> bool {
    let (op, finished) = match event {
        EngineEvent::StepStarted { op, .. } => (*op, false),
        EngineEvent::StepFinished { error: Some(_), .. } => return true,
        EngineEvent::StepFinished { op, .. } => (*op, true),
        _ => return true,
    };
    match op {
        StepOp::Same => opts.show_sames,
        StepOp::Read => opts.show_reads,
        StepOp::CreateReplacement => opts.show_replacement_steps || finished,
        StepOp::DeleteReplaced => opts.show_replacement_steps,
        _ => true,
    }
}

/// `type name` of a URN, as the display names resources.
pub fn label(urn: &Urn) -> String {
    format!("{} {}", urn.type_token(), urn.name())
}

fn elapsed_suffix(elapsed: Option<Duration>) -> String {
    match elapsed {
        Some(d) if d.as_secs() >= 1 => format!(" ({}s)", d.as_secs()),
        _ => String::new(),
    }
}

/// The plain lines for one event. Steps the options hide ([`shown`]) and
/// debug diagnostics (unless `--debug`) print nothing (the summary
/// counts the steps).
pub fn render(event: &EngineEvent, elapsed: Option<Duration>, opts: DisplayOptions) -> Vec<String> {
    if !shown(event, opts) {
        return Vec::new();
    }
    match event {
        EngineEvent::StepStarted { op, urn, .. } => {
            if *op == StepOp::Same || opts.preview {
                return Vec::new();
            }
            vec![format!(
                " {:<2} {} {}...",
                symbol(*op),
                label(urn),
                progressive(*op, false)
            )]
        }
        EngineEvent::StepFinished {
            op,
            urn,
            old,
            new,
            diff,
            error,
        } => {
            if let Some(e) = error {
                return vec![format!(
                    " {:<2} {} **{} failed**: {e}",
                    symbol(*op),
                    label(urn),
                    progressive(*op, true)
                )];
            }
            let step = FinishedStep {
                op: *op,
                old: old.as_deref(),
                new: new.as_deref(),
                diff,
            };
            step.render(urn, elapsed, opts)
        }
        EngineEvent::Diagnostic {
            severity,
            urn,
            message,
        } => {
            let prefix = match severity {
                Severity::Debug if opts.debug => "debug",
                Severity::Debug => return Vec::new(),
                Severity::Info => "info",
                Severity::Warning => "warning",
                Severity::Error => "error",
            };
            let place = urn
                .as_ref()
                .map(|u| format!(" {}", label(u)))
                .unwrap_or_default();
            vec![format!("{prefix}{place}: {message}")]
        }
        // The operation's error is the command's: `main` prints it, once.
        // A failed preview shows no counts, as in Pulumi: they would not
        // describe the changes the whole program asks for, only those
        // made up to the error.
        EngineEvent::Summary { error: Some(_), .. } if opts.preview => Vec::new(),
        EngineEvent::Summary { counts, .. } => summary(counts, opts),
        // Violations and remediations are shown together, by pack, at
        // the end.
        EngineEvent::PolicyViolation(_)
        | EngineEvent::PolicyRemediation(_)
        | EngineEvent::PolicyAnalyzeSummary { .. } => Vec::new(),
        EngineEvent::Policies(reports) => {
            let changes = opts.show_policy_remediations.then_some(values::ValueStyle {
                show_secrets: opts.show_secrets,
            });
            policies(reports, changes)
        }
    }
}

/// The "Policies:" section: each pack (`name@vversion`) with its
/// violations (level, policy, resource, message) and remediations, each
/// remediation with the inputs it changed when `changes` says how to show
/// them.
pub fn policies(
    reports: &[converge_engine::events::PackReport],
    changes: Option<values::ValueStyle>,
) -> Vec<String> {
    let mut lines = vec![String::new(), "Policies:".to_owned()];
    for r in reports {
        let mandatory = r
            .violations
            .iter()
            .any(|v| v.level == converge_engine::events::EnforcementLevel::Mandatory);
        let verdict = if r.error.is_some() {
            "could not run (see the error below)"
        } else if mandatory {
            "failed"
        } else if r.violations.is_empty() {
            "passed"
        } else {
            "passed with warnings"
        };
        lines.push(format!("    {}@v{}: {verdict}", r.pack, r.version));
        for v in &r.violations {
            let place = v
                .urn
                .as_ref()
                .map(|u| format!("  ({})", label(u)))
                .unwrap_or_default();
            let severity = v
                .severity
                .map(|s| format!(", {s} severity"))
                .unwrap_or_default();
            lines.push(format!(
                "        - [{}{severity}]  {}{place}",
                v.level, v.policy
            ));
            for line in v.message.lines() {
                lines.push(format!("          {line}"));
            }
        }
        for m in &r.remediations {
            lines.push(format!(
                "        - [remediated]  {}  ({})",
                m.policy,
                label(&m.urn)
            ));
            if let Some(style) = changes {
                for line in values::diff_lines(&m.before, &m.after, style) {
                    lines.push(format!("        {line}"));
                }
            }
        }
    }
    lines
}

/// The closing summary: the change summary's counts by kind (a
/// replacement counts once, as `replaced`; see `Plan::counts`).
pub fn summary(counts: &BTreeMap<StepOp, usize>, opts: DisplayOptions) -> Vec<String> {
    let mut lines = vec![String::new(), "Resources:".to_owned()];
    let mut changed = false;
    for (op, n) in counts {
        if *op == StepOp::Same || *n == 0 {
            continue;
        }
        changed = true;
        let verb = if opts.preview {
            format!("to {}", progressive(*op, true))
        } else {
            done(*op).to_owned()
        };
        // The symbol in two columns: `+ 1 created`, `+-1 replaced`.
        lines.push(format!("    {:<2}{n} {verb}", symbol(*op).trim()));
    }
    let same = counts.get(&StepOp::Same).copied().unwrap_or(0);
    if same > 0 {
        lines.push(format!("    {same} unchanged"));
    } else if !changed {
        lines.push("    no changes".to_owned());
    }
    lines
}

#[cfg(test)]
mod tests;

//! Rendering an operation's events: plain lines (logs, CI, pipes) or a live
//! display in a terminal. The rendering of each event is a pure function of
//! the event (and its elapsed time), so it is snapshot-tested.

pub mod live;

use std::collections::BTreeMap;
use std::time::Duration;

use converge_engine::{EngineEvent, Severity, StepOp};
use converge_model::Urn;

/// What the display shows.
#[derive(Debug, Clone, Copy, Default)]
pub struct DisplayOptions {
    /// Show which properties changed.
    pub diff: bool,
    /// Steps are planned, not performed (preview).
    pub preview: bool,
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

/// The plain lines for one event. Same steps and debug diagnostics print
/// nothing (the summary counts them).
pub fn render(event: &EngineEvent, elapsed: Option<Duration>, opts: DisplayOptions) -> Vec<String> {
    match event {
        EngineEvent::StepStarted { op, urn } => {
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
            diff,
            error,
            ..
        } => {
            if let Some(e) = error {
                return vec![format!(
                    " {:<2} {} **{} failed**: {e}",
                    symbol(*op),
                    label(urn),
                    progressive(*op, true)
                )];
            }
            if *op == StepOp::Same {
                return Vec::new();
            }
            let verb = if opts.preview {
                progressive(*op, true)
            } else {
                done(*op)
            };
            let mut line = format!(
                " {:<2} {} {}{}",
                symbol(*op),
                label(urn),
                verb,
                elapsed_suffix(elapsed)
            );
            if !diff.is_empty() && !opts.diff {
                let keys: Vec<&str> = diff
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !k.is_empty())
                    .collect();
                if !keys.is_empty() {
                    line.push_str(&format!(" [diff: {}]", keys.join(", ")));
                }
            }
            let mut lines = vec![line];
            if opts.diff {
                for (path, change) in diff {
                    let kind = format!("{:?}", change.kind);
                    let mark = if change.kind.is_replace() {
                        " (forces replacement)"
                    } else {
                        ""
                    };
                    lines.push(format!("        {} {path}{mark}", diff_symbol(&kind)));
                }
            }
            lines
        }
        EngineEvent::Diagnostic {
            severity,
            urn,
            message,
        } => {
            let prefix = match severity {
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
        EngineEvent::Summary { counts, error } => summary(counts, error.as_deref(), opts),
    }
}

fn diff_symbol(kind: &str) -> &'static str {
    if kind.starts_with("Add") {
        "+"
    } else if kind.starts_with("Delete") {
        "-"
    } else {
        "~"
    }
}

/// The closing summary: counts by kind.
pub fn summary(
    counts: &BTreeMap<StepOp, usize>,
    error: Option<&str>,
    opts: DisplayOptions,
) -> Vec<String> {
    let mut lines = vec![String::new(), "Resources:".to_owned()];
    let mut changed = false;
    for (op, n) in counts {
        if matches!(
            op,
            StepOp::Same | StepOp::CreateReplacement | StepOp::DeleteReplaced
        ) {
            continue;
        }
        changed = true;
        let verb = if opts.preview {
            format!("to {}", progressive(*op, true))
        } else {
            done(*op).to_owned()
        };
        lines.push(format!("    {} {n} {verb}", symbol(*op).trim()));
    }
    let replaced = counts.get(&StepOp::CreateReplacement).copied().unwrap_or(0);
    if replaced > 0 && !counts.contains_key(&StepOp::Replace) {
        changed = true;
        let verb = if opts.preview {
            "to replace"
        } else {
            "replaced"
        };
        lines.push(format!("    +- {replaced} {verb}"));
    }
    let same = counts.get(&StepOp::Same).copied().unwrap_or(0);
    if same > 0 {
        lines.push(format!("    {same} unchanged"));
    } else if !changed {
        lines.push("    no changes".to_owned());
    }
    if let Some(e) = error {
        lines.push(String::new());
        lines.push(format!("error: {e}"));
    }
    lines
}

#[cfg(test)]
mod tests;

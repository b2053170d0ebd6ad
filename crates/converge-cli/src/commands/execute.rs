//! One engine operation as the commands that change or preview a stack
//! run it (`preview`, `up`, `refresh`, `destroy`, `import`): the engine on
//! this thread, its events rendered by a task beside it — the one stream
//! that feeds the display and, with `--event-log`, the event log.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;

use converge_engine::events::digest::Digest;
use converge_engine::events::pulumi::{PulumiEventOptions, PulumiEvents};
use converge_engine::{
    DeploymentOptions, EngineEvent, EventSink, OperationContext, OperationResult, Program,
};
use converge_state::Snapshot;

use crate::commands::deploy::Operation;
use crate::display::live::{Display, LiveDisplay};
use crate::display::DisplayOptions;
use crate::event_log::EventLog;
use crate::providers::Providers;

pub(crate) struct ExecuteParams<'a> {
    pub base: Arc<Snapshot>,
    pub providers: &'a Providers,
    pub options: DeploymentOptions,
    pub program: Option<&'a dyn Program>,
    pub sink: Arc<dyn converge_engine::JournalSink>,
    pub display: DisplayOptions,
    pub json: bool,
    /// `--event-log`: where the operation's events also go.
    pub event_log: Option<EventLog>,
    /// The stack's configuration as the event log's prelude and `--json`
    /// show it (secrets as `[secret]` unless revealed).
    pub config: Arc<BTreeMap<String, String>>,
}

/// Runs one engine operation while a task renders its events; returns its
/// result and the lines of its closing summary, for the caller to print
/// after whatever comes first (the stack's outputs).
pub(crate) async fn execute(op: Operation, p: ExecuteParams<'_>) -> Executed {
    let (events, mut rx) = EventSink::channel();
    p.providers.log().attach(events.clone());
    let interactive = std::io::stdout().is_terminal();
    let mut display = if p.json {
        Display::Quiet
    } else if interactive {
        Display::Live(LiveDisplay::new())
    } else {
        Display::Plain(Default::default())
    };
    let display_options = p.display;
    let shows = !p.json;
    let event_log = p.event_log;
    if let Some(log) = &event_log {
        log.prelude(&p.config, p.options.preview);
    }
    // `--json`: Pulumi's digest, folded from the same events in Pulumi's
    // form.
    let mut digest = p.json.then(|| {
        (
            PulumiEvents::new(PulumiEventOptions {
                show_secrets: p.display.show_secrets,
            }),
            Digest::new((*p.config).clone()),
        )
    });
    let renderer = tokio::spawn(async move {
        let mut errors_shown = false;
        while let Some(first) = rx.recv().await {
            // What became ready with the event goes first: above all the
            // program's answer, which a program that registers one resource
            // after another waits for (this runtime has one thread, and the
            // event is sent before the answer).
            tokio::task::yield_now().await;
            // The events already waiting are shown with one write: a line
            // a write made 10,000-resource operations spend a third of
            // their time in write(2).
            let _held = crate::display::hold_lines();
            let mut next = Some(first);
            while let Some(event) = next {
                if let Some(log) = &event_log {
                    log.record(&event);
                }
                if let Some((translator, digest)) = &mut digest {
                    for e in translator.translate(&event) {
                        digest.add(&e);
                    }
                }
                if matches!(event, EngineEvent::Summary { .. }) {
                    let digest = digest.map(|(_, d)| d.to_json());
                    return (
                        display.summary(&event, display_options),
                        errors_shown,
                        digest,
                    );
                }
                errors_shown |= shows
                    && matches!(
                        event,
                        EngineEvent::Diagnostic {
                            severity: converge_engine::Severity::Error,
                            ..
                        }
                    );
                display.handle(&event, display_options);
                next = rx.try_recv().ok();
            }
        }
        (Vec::new(), errors_shown, None)
    });
    let ctx = OperationContext {
        base: p.base,
        loader: p.providers.loader(),
        sink: p.sink,
        events,
        options: p.options,
    };
    let result = match (op, p.program) {
        (Operation::Refresh, _) => converge_engine::refresh(ctx).await,
        (Operation::Destroy, _) => converge_engine::destroy(ctx).await,
        (_, Some(program)) if ctx.options.preview => converge_engine::preview(ctx, program).await,
        (_, Some(program)) => converge_engine::update(ctx, program).await,
        (_, None) => converge_engine::update(ctx, &converge_engine::EmptyProgram).await,
    };
    let (summary, errors_shown, digest) = renderer.await.unwrap_or_default();
    Executed {
        result,
        summary,
        errors_shown,
        digest,
    }
}

/// An operation's result, with what its display showed.
pub(crate) struct Executed {
    pub result: OperationResult,
    /// The closing summary, for the caller to print.
    pub summary: Vec<String>,
    /// The display showed an error diagnostic (the program's own report of
    /// its failure, say).
    errors_shown: bool,
    /// With `--json`: the operation in Pulumi's digest shape.
    pub digest: Option<serde_json::Value>,
}

impl Executed {
    /// The operation's error for `main` to print: a failed program whose
    /// error the display already showed is not shown twice.
    pub(crate) fn error(&self) -> Option<anyhow::Error> {
        match self.result.error.as_ref()? {
            converge_engine::EngineError::Program(_) if self.errors_shown => Some(anyhow::anyhow!(
                "the program failed (its error is shown above)"
            )),
            _ => None,
        }
    }
}

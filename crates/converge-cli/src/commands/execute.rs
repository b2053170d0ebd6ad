//! The rendering of an engine operation's events, and one operation run
//! with it (`import`; `preview`, `up`, `refresh` and `destroy` go
//! through `converge_engine::driver`, which starts a [`Renderer`] for
//! each phase): the engine on this thread, its events rendered by a task
//! beside it — the one stream that feeds the display, the event log
//! (`--event-log`) and, with `--json`, Pulumi's digest.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;

use converge_engine::driver::{run_operation, OperationKind};
use converge_engine::events::digest::Digest;
use converge_engine::events::pulumi::{PulumiEventOptions, PulumiEvents};
use converge_engine::{
    DeploymentOptions, EngineEvent, EventSink, OperationContext, OperationResult, Program,
};
use converge_state::Snapshot;

use crate::display::live::{Display, LiveDisplay};
use crate::display::DisplayOptions;
use crate::event_log::EventLog;
use crate::providers::Providers;

/// How a phase's events are rendered.
#[derive(Debug, Clone)]
pub(crate) struct RenderOptions {
    pub display: DisplayOptions,
    /// `--json`: no display; Pulumi's digest instead.
    pub json: bool,
    /// `--suppress-outputs`: the digest shows no stack outputs (the root
    /// stack's inputs and outputs left empty, as in Pulumi).
    pub suppress_outputs: bool,
    /// `--event-log`: where the events also go.
    pub event_log: Option<EventLog>,
    /// `--json` of an update, refresh or destroy: the events streamed to
    /// stdout, one a line, instead of the digest.
    pub json_events: Option<EventLog>,
    /// The stack's configuration as the event log's prelude and `--json`
    /// show it (secrets as `[secret]` unless revealed).
    pub config: Arc<BTreeMap<String, String>>,
    /// `--suppress-progress`: no spinners in a terminal, the plain lines
    /// only.
    pub suppress_progress: bool,
    /// Keep each step's detailed diff, for the confirmation prompt's
    /// `details` answer.
    pub details: bool,
    /// How the phase joins its neighbours in the event log.
    pub join: PhaseJoin,
}

/// A phase that is part of one operation with its neighbours (`--refresh`'s
/// refresh and the update after it): Pulumi's event stream has one
/// prelude and one summary for the whole.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PhaseJoin {
    /// The phase continues the one before: no prelude of its own.
    pub continues_previous: bool,
    /// Another phase follows this one if it succeeds: no summary of its
    /// own unless it failed.
    pub continued_by_next: bool,
}

/// The task rendering one operation's events.
#[derive(Debug)]
pub(crate) struct Renderer {
    task: tokio::task::JoinHandle<Rendered>,
}

/// What a renderer showed.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    /// The closing summary, for the caller to print.
    pub summary: Vec<String>,
    /// The display showed an error diagnostic (the program's own report of
    /// its failure, say).
    errors_shown: bool,
    /// With `--json`: the operation in Pulumi's digest shape.
    pub digest: Option<serde_json::Value>,
    /// With [`RenderOptions::details`]: each step's lines as `--diff`
    /// shows them.
    pub details: Vec<String>,
}

impl Renderer {
    /// Starts rendering the events of an operation about to run (it
    /// plans, with `display.preview`); the sink to give the engine.
    pub(crate) fn start(providers: &Providers, options: RenderOptions) -> (EventSink, Renderer) {
        let (events, mut rx) = EventSink::channel();
        // Pulumi's events (`--event-log`, `--json`'s digest) show each
        // step's states from its start.
        let events = match options.event_log.is_some() || options.json {
            true => events.with_step_states(),
            false => events,
        };
        providers.log().attach(events.clone());
        let interactive = std::io::stdout().is_terminal() && !options.suppress_progress;
        let mut display = if options.json {
            Display::Quiet
        } else if interactive {
            Display::Live(LiveDisplay::new())
        } else {
            Display::Plain(Default::default())
        };
        let display_options = options.display;
        let shows = !options.json;
        let logs: Vec<EventLog> = [options.event_log, options.json_events.clone()]
            .into_iter()
            .flatten()
            .collect();
        let join = options.join;
        if !join.continues_previous {
            for log in &logs {
                log.prelude(&options.config, display_options.preview);
            }
        }
        // `--json`: Pulumi's digest, folded from the same events in
        // Pulumi's form.
        let mut digest = (options.json && options.json_events.is_none()).then(|| {
            (
                PulumiEvents::new(PulumiEventOptions {
                    show_secrets: display_options.show_secrets,
                }),
                Digest::new((*options.config).clone())
                    .suppressing_stack_outputs(options.suppress_outputs),
            )
        });
        let keep_details = options.details;
        let task = tokio::spawn(async move {
            let mut errors_shown = false;
            let mut details = Vec::new();
            while let Some(first) = rx.recv().await {
                // What became ready with the event goes first: above all
                // the program's answer, which a program that registers one
                // resource after another waits for (this runtime has one
                // thread, and the event is sent before the answer).
                tokio::task::yield_now().await;
                // The events already waiting are shown with one write: a
                // line a write made 10,000-resource operations spend a
                // third of their time in write(2).
                let _held = crate::display::hold_lines();
                let mut next = Some(first);
                while let Some(event) = next {
                    let continued = join.continued_by_next
                        && matches!(event, EngineEvent::Summary { error: None, .. });
                    if !continued {
                        for log in &logs {
                            log.record(&event);
                        }
                    }
                    if let Some((translator, digest)) = &mut digest {
                        for e in translator.translate(&event) {
                            digest.add(&e);
                        }
                    }
                    if matches!(event, EngineEvent::Summary { .. }) {
                        return Rendered {
                            summary: display.summary(&event, display_options),
                            errors_shown,
                            digest: digest.map(|(_, d)| d.to_json()),
                            details,
                        };
                    }
                    if keep_details
                        && matches!(event, EngineEvent::StepFinished { .. })
                        && !crate::display::is_internal(&event)
                        && crate::display::shown(&event, display_options)
                    {
                        let diff = DisplayOptions {
                            diff: true,
                            ..display_options
                        };
                        details.extend(crate::display::render(&event, None, diff));
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
            Rendered {
                errors_shown,
                details,
                ..Rendered::default()
            }
        });
        (events, Renderer { task })
    }

    /// Waits for the operation's last event to be rendered.
    pub(crate) async fn finish(self) -> Rendered {
        self.task.await.unwrap_or_default()
    }
}

impl Rendered {
    /// The operation's error for `main` to print: a failed program whose
    /// error the display already showed is not shown twice.
    pub(crate) fn error(&self, result: &OperationResult) -> Option<anyhow::Error> {
        match result.error.as_ref()? {
            converge_engine::EngineError::Program(_) if self.errors_shown => Some(anyhow::anyhow!(
                "the program failed (its error is shown above)"
            )),
            _ => None,
        }
    }
}

pub(crate) struct ExecuteParams<'a> {
    pub base: Arc<Snapshot>,
    pub providers: &'a Providers,
    pub options: DeploymentOptions,
    pub program: Option<&'a dyn Program>,
    pub sink: Arc<dyn converge_engine::JournalSink>,
    pub render: RenderOptions,
}

/// Runs one engine operation of `kind` while a task renders its events;
/// returns its result and what the renderer showed, for the caller to
/// print after whatever comes first (the stack's outputs).
pub(crate) async fn execute(kind: OperationKind, p: ExecuteParams<'_>) -> Executed {
    let (events, renderer) = Renderer::start(p.providers, p.render);
    let ctx = OperationContext {
        base: p.base,
        loader: p.providers.loader(),
        sink: p.sink,
        events,
        options: p.options,
    };
    let result = run_operation(kind, ctx, p.program).await;
    let rendered = renderer.finish().await;
    Executed { result, rendered }
}

/// An operation's result, with what its display showed.
pub(crate) struct Executed {
    pub result: OperationResult,
    pub rendered: Rendered,
}

impl Executed {
    /// See [`Rendered::error`].
    pub(crate) fn error(&self) -> Option<anyhow::Error> {
        self.rendered.error(&self.result)
    }
}

//! The live display in a terminal: a spinner line per resource in flight,
//! with its elapsed time; finished steps scroll above.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use converge_engine::{EngineEvent, StepOp};
use converge_model::Urn;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

use super::{label, render, symbol, DisplayOptions};

/// Where rendered lines go.
#[derive(Debug)]
pub enum Display {
    /// One line per event on stdout.
    Plain(Timings),
    /// Spinners in a terminal.
    Live(LiveDisplay),
    /// Nothing while running (`--json` prints at the end).
    Quiet,
}

/// Start times (and kinds) of steps in flight, for elapsed times.
#[derive(Debug, Default)]
pub struct Timings {
    started: HashMap<Urn, (Instant, StepOp)>,
}

impl Timings {
    /// The elapsed time of a finished step, and the kind it started as.
    fn elapsed(&mut self, event: &EngineEvent) -> (Option<Duration>, Option<StepOp>) {
        match event {
            EngineEvent::StepStarted { urn, op, .. } => {
                self.started.insert(urn.clone(), (Instant::now(), *op));
                (None, None)
            }
            EngineEvent::StepFinished { urn, .. } => match self.started.remove(urn) {
                Some((t, op)) => (Some(t.elapsed()), Some(op)),
                None => (None, None),
            },
            _ => (None, None),
        }
    }
}

#[derive(Debug)]
pub struct LiveDisplay {
    bars: MultiProgress,
    in_flight: HashMap<Urn, ProgressBar>,
    timings: Timings,
}

impl LiveDisplay {
    pub fn new() -> Self {
        LiveDisplay {
            bars: MultiProgress::new(),
            in_flight: HashMap::new(),
            timings: Timings::default(),
        }
    }
}

impl Display {
    /// The lines of the closing summary, for the caller to print when it
    /// chooses; nothing in `--json` mode.
    pub fn summary(&mut self, event: &EngineEvent, opts: DisplayOptions) -> Vec<String> {
        match self {
            Display::Quiet => Vec::new(),
            Display::Plain(_) => render(event, None, opts),
            Display::Live(live) => {
                for (_, bar) in live.in_flight.drain() {
                    bar.finish_and_clear();
                }
                render(event, None, opts)
            }
        }
    }

    pub fn handle(&mut self, event: &EngineEvent, opts: DisplayOptions) {
        if super::is_internal(event) {
            return;
        }
        match self {
            Display::Quiet => {}
            Display::Plain(timings) => {
                let (elapsed, started_as) = timings.elapsed(event);
                // A refresh printed its `refreshing...` line: one that
                // found nothing changed closes it as unchanged, shown or
                // not, so that no line is left open.
                let opts = match event {
                    EngineEvent::StepFinished {
                        op: StepOp::Same, ..
                    } if !opts.preview && started_as == Some(StepOp::Refresh) => DisplayOptions {
                        show_sames: true,
                        ..opts
                    },
                    _ => opts,
                };
                for line in render(event, elapsed, opts) {
                    super::say(line);
                }
            }
            Display::Live(live) => live.handle(event, opts),
        }
    }
}

impl LiveDisplay {
    /// Lines above the spinners: the spinners step aside while they print.
    fn print(&self, lines: Vec<String>) {
        if lines.is_empty() {
            return;
        }
        self.bars.suspend(|| {
            for line in lines {
                super::say(line);
            }
        });
    }

    fn handle(&mut self, event: &EngineEvent, opts: DisplayOptions) {
        let (elapsed, _) = self.timings.elapsed(event);
        match event {
            EngineEvent::StepStarted { op, urn, .. }
                if !opts.preview && *op != StepOp::Same && super::shown(event, opts) =>
            {
                let bar = self.bars.add(ProgressBar::new_spinner());
                let style = ProgressStyle::with_template(" {spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
                bar.set_style(style);
                bar.set_message(format!("{:<2} {}", symbol(*op), label(urn)));
                bar.enable_steady_tick(Duration::from_millis(120));
                // A replacement's steps share its URN: the replace
                // spinner gives way to the create-replacement one.
                if let Some(earlier) = self.in_flight.insert(urn.clone(), bar) {
                    earlier.finish_and_clear();
                    self.bars.remove(&earlier);
                }
            }
            EngineEvent::StepFinished { urn, .. } => {
                if let Some(bar) = self.in_flight.remove(urn) {
                    bar.finish_and_clear();
                    self.bars.remove(&bar);
                }
                self.print(render(event, elapsed, opts));
            }
            _ => {
                self.print(render(event, elapsed, opts));
            }
        }
    }
}

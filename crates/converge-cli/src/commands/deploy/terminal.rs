//! The operation commands' terminal front end: the operation driver's
//! phases shown as headers and rendered events, the preview's output
//! changes and summary, and the confirmation prompt.

use anyhow::Result;
use converge_engine::driver::{FrontEnd, Phase};
use converge_engine::OperationResult;
use converge_state::Snapshot;

use super::{print_digest, print_lines, print_output_changes, report_interrupted, Operation};
use crate::args::OperationArgs;
use crate::commands::confirm::confirm_with_details;
use crate::commands::execute::{PhaseJoin, RenderOptions, Rendered, Renderer};
use crate::context::Context;
use crate::display::{say, DisplayOptions};
use crate::interrupts::check_not_cancelled;
use crate::providers::Providers;

/// The command as the operation driver's front-end: a header and a
/// renderer for each phase, the preview's output changes and summary,
/// the confirmation prompt.
pub(super) struct Terminal<'a> {
    pub(super) ctx: &'a Context,
    pub(super) args: &'a OperationArgs,
    pub(super) op: Operation,
    /// `--json` of an update, refresh or destroy: its events, streamed
    /// to stdout (a preview phase before it prints its digest instead,
    /// as Pulumi's does).
    pub(super) json_events: Option<crate::event_log::EventLog>,
    pub(super) stack: &'a str,
    pub(super) providers: &'a Providers,
    pub(super) render: RenderOptions,
    pub(super) needs_confirmation: bool,
    /// The running phase's renderer.
    pub(super) renderer: Option<Renderer>,
    /// What the last phase showed (the operation's summary and digest
    /// are printed after its outputs, once the drive is done).
    pub(super) rendered: Option<Rendered>,
    /// When the operation itself started.
    pub(super) started: Option<std::time::Instant>,
    /// The last phase's header (a phase that follows under the same
    /// header prints none).
    pub(super) header_shown: Option<&'static str>,
}

#[async_trait::async_trait]
impl FrontEnd for Terminal<'_> {
    type Error = anyhow::Error;

    fn start(&mut self, phase: Phase) -> converge_engine::EventSink {
        // `--refresh`'s refreshes show under the header of what they
        // come before, as Pulumi shows them: one "Previewing update" and
        // one "Updating", each with the refresh's steps first.
        let header = match phase {
            Phase::RefreshPreview | Phase::Preview => self.op.preview_header(),
            Phase::Refresh => self.op.verb(),
            Phase::Operation => {
                self.started = Some(std::time::Instant::now());
                self.op.verb()
            }
        };
        let repeated = self.header_shown.replace(header) == Some(header);
        if !self.args.json && !repeated {
            say(format!("{header} ({}):", self.stack));
            if self.args.show_config {
                print_config(&self.render.config);
            }
        }
        let (events, renderer) = Renderer::start(
            self.providers,
            RenderOptions {
                display: DisplayOptions {
                    preview: phase.previews(),
                    ..self.render.display
                },
                // The prompt's `details` are the preview's steps.
                details: self.render.details && phase == Phase::Preview,
                json_events: self
                    .streams(phase)
                    .then(|| self.json_events.clone())
                    .flatten(),
                join: PhaseJoin {
                    continues_previous: repeated,
                    continued_by_next: matches!(phase, Phase::RefreshPreview | Phase::Refresh),
                },
                ..self.render.clone()
            },
        );
        self.renderer = Some(renderer);
        events
    }

    async fn end(&mut self, phase: Phase, base: &Snapshot, result: &OperationResult) -> Result<()> {
        let rendered = match self.renderer.take() {
            Some(renderer) => renderer.finish().await,
            None => Rendered::default(),
        };
        match phase {
            // The refresh's steps were shown; the summary that follows
            // is the operation's.
            Phase::RefreshPreview | Phase::Refresh => {}
            Phase::Preview => {
                // A preview that failed (its program, a provider) never
                // saw the stack's outputs: no changes to them are shown.
                // One its policies failed ran to the end (a preview goes on
                // past mandatory violations to show them all).
                let finished = matches!(
                    result.error,
                    None | Some(converge_engine::EngineError::PolicyViolation { .. })
                );
                if !self.args.json && !self.args.suppress_outputs && finished {
                    print_output_changes(base, &result.snapshot, self.args.show_secrets);
                }
                // `up --json`'s preview: its digest, before the update's
                // events stream (the preview command prints its own).
                if self.args.json && self.op != Operation::Preview && !self.streams(phase) {
                    print_digest(rendered.digest.as_ref())?;
                }
                print_lines(&rendered.summary);
                if let Some(e) = rendered.error(result) {
                    return Err(e);
                }
            }
            Phase::Operation => report_interrupted(base, result),
        }
        self.rendered = Some(rendered);
        Ok(())
    }

    async fn confirm(&mut self, _preview: Option<&OperationResult>) -> Result<()> {
        if self.needs_confirmation {
            let details = self
                .rendered
                .as_mut()
                .map(|r| std::mem::take(&mut r.details))
                .unwrap_or_default();
            confirm_with_details(self.op.question(), details).await?;
        }
        check_not_cancelled(&self.ctx.interrupts)?;
        Ok(())
    }
}

impl Terminal<'_> {
    /// Whether `phase`'s events stream to stdout (`--json`): an
    /// operation's own phases do, a preview's only when the command is a
    /// streaming preview.
    fn streams(&self, phase: Phase) -> bool {
        self.json_events.is_some() && (!phase.previews() || self.op == Operation::Preview)
    }
}

/// `--show-config`: the stack's configuration under the header, as
/// Pulumi's prelude shows it (each value's text, secrets as `[secret]`
/// unless revealed).
fn print_config(config: &std::collections::BTreeMap<String, String>) {
    say("Configuration:");
    for (key, value) in config {
        say(format!("    {key}: {value}"));
    }
}

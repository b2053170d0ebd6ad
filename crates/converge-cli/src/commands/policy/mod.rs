//! `converge policy new | analyze`: policy packs on the client — a new
//! pack from a built-in template, and a stack's existing state judged by
//! packs without running its program; `converge policy publish | enable |
//! disable | ls`: the organization's packs on a state service
//! (`service`).

use anyhow::Result;
use clap::Subcommand;

use crate::context::Context;

pub mod analyze;
pub mod new;
pub mod service;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Create a policy pack from a built-in template (`python`,
    /// `typescript`) and install its dependencies.
    New(new::PolicyNewArgs),
    /// Judge a stack's existing state (or an exported one, `--file`) with
    /// policy packs, without running its program; fails on a mandatory
    /// violation.
    Analyze(analyze::PolicyAnalyzeArgs),
    #[command(flatten)]
    Service(service::PolicyServiceCommand),
}

pub async fn run(ctx: &Context, cmd: PolicyCommand) -> Result<()> {
    match cmd {
        PolicyCommand::New(args) => new::run(args),
        PolicyCommand::Analyze(args) => analyze::run(ctx, args).await,
        PolicyCommand::Service(cmd) => service::run(ctx, cmd).await,
    }
}

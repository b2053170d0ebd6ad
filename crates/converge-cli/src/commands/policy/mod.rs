//! `converge policy new | analyze`: policy packs on the client — a new
//! pack from a built-in template, and a stack's existing state judged by
//! packs without running its program.

use anyhow::Result;
use clap::Subcommand;

use crate::context::Context;

pub mod new;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Create a policy pack from a built-in template (`python`,
    /// `typescript`) and install its dependencies.
    New(new::PolicyNewArgs),
}

pub async fn run(_ctx: &Context, cmd: PolicyCommand) -> Result<()> {
    match cmd {
        PolicyCommand::New(args) => new::run(args),
    }
}

//! `converge`: the command-line tool.

mod args;
mod atomic_write;
mod commands;
mod context;
mod display;
mod home;
mod passphrase;
mod program;
mod project;
mod providers;
mod remote;
mod stack_settings;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};
use crate::commands::deploy::Operation;
use crate::context::Context;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let ctx = Context::new(&cli.global)?;
    match cli.command {
        Command::Login { url, local, token } => {
            commands::login::login(&ctx, url, local, token).await
        }
        Command::Serve(args) => commands::serve::run(&ctx, args).await,
        Command::Logout => commands::login::logout(&ctx),
        Command::Whoami { verbose } => commands::login::whoami(&ctx, verbose),
        Command::Stack(cmd) => commands::stack::run(&ctx, cmd).await,
        Command::Config(args) => commands::config::run(&ctx, args).await,
        Command::Preview(args) => commands::deploy::run(&ctx, Operation::Preview, args).await,
        Command::Up(args) => commands::deploy::run(&ctx, Operation::Up, args).await,
        Command::Refresh(args) => commands::deploy::run(&ctx, Operation::Refresh, args).await,
        Command::Destroy(args) => commands::deploy::run(&ctx, Operation::Destroy, args).await,
        Command::Cancel { stack, yes } => commands::cancel::run(&ctx, stack, yes).await,
    }
}

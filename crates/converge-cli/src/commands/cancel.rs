//! `converge cancel`: ends the update holding a stack — breaks its lock
//! (a state service's update lease, or a file backend's lock file), for a
//! process that is gone. On a state service, the cancelled update's
//! journal is compacted onto the checkpoint by the service.

use std::io::{IsTerminal, Write};

use anyhow::{bail, Result};

use crate::args::StackArg;
use crate::context::Context;

pub async fn run(ctx: &Context, stack: StackArg, yes: bool) -> Result<()> {
    let project = ctx.project()?;
    let backend = ctx.backend(Some(&project))?;
    let stack = ctx.resolve_stack(&project, stack.stack.as_deref())?;
    let held = backend.list_locks(&stack).await?;
    if held.is_empty() {
        println!("Stack {} has no update in progress", stack.stack);
        return Ok(());
    }
    for lock in &held {
        println!(
            "Update of {} by {} ({})",
            stack.stack,
            lock.info.describe(),
            lock.location
        );
    }
    if !yes {
        let interactive = !ctx.non_interactive
            && std::io::stdin().is_terminal()
            && std::io::stdout().is_terminal();
        if !interactive {
            bail!("--yes must be passed to cancel when running non-interactively");
        }
        print!("Cancel it? Only do so if that process is gone. [yes/no] ");
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if !matches!(answer.trim(), "yes" | "y") {
            bail!("confirmation declined, not cancelling");
        }
    }
    let broken = backend.break_locks(&stack).await?;
    println!("Cancelled {broken} update(s) of stack {}", stack.stack);
    Ok(())
}

//! `converge cancel`: show who holds a stack's lock and break it.
//!
//! Pulumi's `cancel` stops a running update on its service. On Converge's
//! backends an update is its lock (a lock file, a lease in an object store,
//! an update lease on a state service): cancelling breaks it, so the next
//! update can start. The holder, if it is still alive, loses its lease and
//! fails at its next write; the update journal it left is compacted into
//! the checkpoint at once, as after a crash.

use std::io::IsTerminal;

use anyhow::{bail, Result};

use crate::args::StackArg;
use crate::context::Context;

pub async fn run(ctx: &Context, stack: StackArg, yes: bool) -> Result<()> {
    let project = ctx.project()?;
    let backend: std::sync::Arc<dyn converge_backend::Backend> =
        std::sync::Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, stack.stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let held = backend.list_locks(&stack).await?;
    if held.is_empty() {
        println!(
            "No update is running on stack {}: nothing to cancel.",
            stack.stack
        );
        return Ok(());
    }
    println!("Stack {} is locked by:", stack.stack);
    for h in &held {
        println!("    {} ({})", h.info.describe(), h.location);
    }
    if !yes {
        if ctx.non_interactive || !std::io::stdin().is_terminal() {
            bail!(
                "cancelling the update on stack {} needs confirmation: pass --yes",
                stack.stack
            );
        }
        crate::prompt::confirm(
            "Cancelling breaks the lock; make sure that update is not running any more. \
             Cancel it?",
            "confirmation declined; the lock was kept",
        )?;
    }
    let broken = backend.break_locks(&stack).await?;
    println!(
        "Cancelled: broke {broken} lock(s) on stack {}.",
        stack.stack
    );
    // The cancelled update's journal, if it left one, is compacted into
    // the checkpoint now that its writer is provably gone.
    crate::commands::stack::current_checkpoint(ctx, &backend, &stack).await?;
    Ok(())
}

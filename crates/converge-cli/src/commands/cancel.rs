//! `converge cancel`: stop the update running on a stack.
//!
//! Pulumi's `cancel` stops a running update on its service. On Converge's
//! backends an update is its lock (a lock file, a lease in an object store,
//! an update lease on a state service).
//!
//! - An update of **this host** that still runs is interrupted as Ctrl-C
//!   would: it is sent `SIGINT`, finishes and records the steps under way,
//!   and releases its lock; `cancel` waits for that. Its lock is never
//!   broken under it, so no object it made goes unrecorded.
//! - Any other holder (another host, a process that is gone) has its lock
//!   broken, so the next update can start. A holder that is still alive
//!   elsewhere finds its lock gone at its next write and stops writing
//!   (`LockFence`; a state service refuses its lease), and the update
//!   journal it left is compacted into the checkpoint at once, as after a
//!   crash.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use converge_backend::{runs_here, Backend, HeldLock, LockInfo, StackRef};

use crate::args::StackArg;
use crate::context::Context;

/// How long an interrupted update of this host is given to record its
/// steps under way and release its lock: its own `--cancel-timeout`
/// (30 seconds by default) and the time to write the state.
const STOP_WAIT: Duration = Duration::from_secs(90);

/// How often the lock is looked at while waiting.
const POLL: Duration = Duration::from_millis(100);

pub async fn run(ctx: &Context, stack: StackArg, yes: bool) -> Result<()> {
    let project = ctx.project()?;
    let backend: std::sync::Arc<dyn Backend> = std::sync::Arc::from(ctx.backend(Some(&project))?);
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
    let me = LockInfo::current();
    let running_here: Vec<&HeldLock> = held
        .iter()
        .filter(|h| runs_here(&h.info, &me) && is_an_update(h.info.pid))
        .collect();
    if !yes {
        if ctx.non_interactive || !std::io::stdin().is_terminal() {
            bail!(
                "cancelling the update on stack {} needs confirmation: pass --yes",
                stack.stack
            );
        }
        let question = if running_here.is_empty() {
            "Cancelling breaks the lock; make sure that update is not running any more. \
             Cancel it?"
        } else {
            "Cancelling interrupts that update as Ctrl-C would. Cancel it?"
        };
        crate::prompt::confirm(question, "confirmation declined; the lock was kept")?;
    }
    if !running_here.is_empty() {
        return interrupt(backend.as_ref(), &stack, &running_here).await;
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

/// Interrupts the updates of this host that hold `stack`, as Ctrl-C
/// would, and waits until their locks are released.
async fn interrupt(backend: &dyn Backend, stack: &StackRef, running: &[&HeldLock]) -> Result<()> {
    for h in running {
        signal_interrupt(h.info.pid)?;
        println!(
            "Interrupted the update of pid {} on this host; waiting for it to record its \
             steps under way and release the lock...",
            h.info.pid
        );
    }
    let deadline = Instant::now() + STOP_WAIT;
    loop {
        let still: Vec<HeldLock> = backend
            .list_locks(stack)
            .await?
            .into_iter()
            .filter(|h| running.iter().any(|r| r.info == h.info))
            .collect();
        if still.is_empty() {
            println!(
                "Cancelled: the update stopped and released stack {}.",
                stack.stack
            );
            return Ok(());
        }
        if Instant::now() >= deadline {
            let pid = still[0].info.pid;
            bail!(
                "the update of pid {pid} still holds stack {} after {} seconds; it is still \
                 recording its steps under way. Wait for it, or interrupt it again \
                 (`kill -INT {pid}`: a second interrupt stops it at once, leaving its \
                 operations under way pending)",
                stack.stack,
                STOP_WAIT.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether process `pid` of this host is a Converge (or Pulumi) process,
/// and so the update that took the lock, rather than an unrelated process
/// that reused the pid of one that is gone.
fn is_an_update(pid: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    let name = std::path::Path::new(std::ffi::OsStr::new(
        std::str::from_utf8(argv0).unwrap_or_default(),
    ))
    .file_name()
    .and_then(|n| n.to_str())
    .unwrap_or_default()
    .to_owned();
    name.contains("converge") || name.contains("pulumi")
}

#[cfg(unix)]
fn signal_interrupt(pid: u32) -> Result<()> {
    use rustix::process::{kill_process, Pid, Signal};
    let Some(target) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        bail!("the lock names pid {pid}, which is not a process id");
    };
    kill_process(target, Signal::INT)
        .map_err(|e| anyhow::anyhow!("cannot interrupt the update of pid {pid} on this host: {e}"))
}

#[cfg(not(unix))]
fn signal_interrupt(pid: u32) -> Result<()> {
    bail!("cannot interrupt the update of pid {pid} on this platform: stop it in its terminal")
}

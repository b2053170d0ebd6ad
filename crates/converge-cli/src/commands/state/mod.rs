//! `converge state delete | protect | unprotect | rename | taint |
//! untaint | move | repair`: edits of a stack's state that touch no cloud
//! object (Pulumi's `pulumi state`). `move` edits two stacks
//! (`moving.rs`); `repair` loads a state that fails verification
//! (`repair.rs`).
//!
//! Each command takes the stack's lock through `StackState::lock`, edits a
//! copy of the base with `converge_state::surgery` (which refuses, with the
//! state unchanged, any edit that would break an integrity rule), and
//! commits the result as one Write journal entry with
//! `LockedStack::edit_base` and `commit_changes`. Secrets stay ciphertext:
//! no passphrase is needed.

mod delete;
mod moving;
mod protect;
mod rename;
mod repair;
mod taint;

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_engine::{StackState, StackStateError};
use converge_model::Urn;
use converge_state::Snapshot;

use crate::args::StateCommand;
use crate::context::Context;

pub async fn run(ctx: &Context, cmd: StateCommand) -> Result<()> {
    match cmd {
        StateCommand::Delete {
            urns,
            stack,
            all,
            force,
            target_dependents,
            yes,
        } => {
            delete::run(
                ctx,
                stack.stack,
                delete::DeleteArgs {
                    urns,
                    all,
                    force,
                    target_dependents,
                    yes,
                },
            )
            .await
        }
        StateCommand::Protect(args) => protect::run(ctx, args, protect::Mark::Protect).await,
        StateCommand::Unprotect(args) => protect::run(ctx, args, protect::Mark::Unprotect).await,
        StateCommand::Taint(args) => taint::run(ctx, args, taint::Mark::Taint).await,
        StateCommand::Untaint(args) => taint::run(ctx, args, taint::Mark::Untaint).await,
        StateCommand::Rename {
            urn,
            new_name,
            stack,
            yes,
        } => {
            confirm_at_terminal(ctx, &format!("Rename {urn} to {new_name:?}?"), yes)?;
            rename::run(ctx, stack.stack, &urn, &new_name).await
        }
        StateCommand::Move(args) => moving::run(ctx, args).await,
        StateCommand::Repair { stack, yes } => repair::run(ctx, stack.stack, yes).await,
    }
}

/// Parses the URNs the user typed; each must be an exact URN.
fn parse_urns(urns: &[String]) -> Result<Vec<Urn>> {
    urns.iter()
        .map(|u| {
            Urn::parse(u).with_context(|| {
                format!("{u:?} is not a URN (list them with `converge stack export`)")
            })
        })
        .collect()
}

/// Locks the stack `name` (the current one by default), lets `edit` change
/// a copy of its state, and commits the copy when it differs. The lock is
/// released whatever happens; on an error the state is unchanged.
async fn edit_state<T>(
    ctx: &Context,
    name: Option<&str>,
    edit: impl FnOnce(&mut Snapshot) -> Result<T>,
) -> Result<T> {
    let project = ctx.project()?;
    let backend = ctx.backend(Some(&project))?;
    let stack = ctx.resolve_stack(&project, name)?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    crate::service_policy::declare_state_edit(backend.as_ref(), &stack);
    let mut locked = StackState::new(Arc::from(backend), stack)
        .lock(ctx.lock_info())
        .await?;
    let result = async {
        let mut snapshot = locked.base().clone();
        let value = edit(&mut snapshot)?;
        if &snapshot != locked.base() {
            locked.edit_base(snapshot)?;
            held(locked.commit_changes().await)?;
        }
        Ok(value)
    }
    .await;
    locked.release().await?;
    result
}

/// Asks `question` at a terminal unless `yes`, as Pulumi's state edits do;
/// without a terminal (scripts, CI) the edit goes ahead. Fails when the
/// answer is not yes.
fn confirm_at_terminal(ctx: &Context, question: &str, yes: bool) -> Result<()> {
    if yes || ctx.non_interactive || !std::io::stdin().is_terminal() {
        return Ok(());
    }
    confirm(ctx, question, false)
}

/// Asks `question` unless `yes`; fails when the answer is not yes or no
/// one can answer.
fn confirm(ctx: &Context, question: &str, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    if ctx.non_interactive || !std::io::stdin().is_terminal() {
        bail!("this needs confirmation: pass --yes");
    }
    crate::prompt::confirm(question, "confirmation declined; the state is unchanged")
}

/// The result of [`converge_engine::LockedStack::commit_changes`], with a
/// change that holds although the checkpoint could not be rewritten (its
/// journal entry is durable, and every later command replays it) shown as
/// a warning and taken as made: reporting it as a failure would have the
/// user redo a change that is already there.
pub(crate) fn held(result: Result<(), StackStateError>) -> Result<(), StackStateError> {
    match result {
        Err(e) if e.change_holds() => {
            eprintln!("warning: {e}");
            Ok(())
        }
        other => other,
    }
}

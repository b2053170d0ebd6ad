//! `converge state protect | unprotect URN… | --all`.

use anyhow::Result;
use converge_state::surgery;

use super::{confirm_at_terminal, edit_state, parse_urns};
use crate::args::ProtectArgs;
use crate::context::Context;

/// Which way the `protect` bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Protect,
    Unprotect,
}

pub async fn run(ctx: &Context, args: ProtectArgs, mark: Mark) -> Result<()> {
    let urns = parse_urns(&args.urns)?;
    let selected = (!args.all).then_some(urns.as_slice());
    let (verb, done) = match mark {
        Mark::Protect => ("Protect", "Protected"),
        Mark::Unprotect => ("Unprotect", "Unprotected"),
    };
    let what = match selected {
        Some(urns) => format!("{} resource(s)", urns.len()),
        None => "every resource of the stack".to_owned(),
    };
    confirm_at_terminal(ctx, &format!("{verb} {what}?"), args.yes)?;
    let changed = edit_state(ctx, args.stack.stack.as_deref(), |snapshot| {
        Ok(surgery::set_protect(
            snapshot,
            selected,
            mark == Mark::Protect,
        )?)
    })
    .await?;
    println!("{done} {changed} resource(s).");
    Ok(())
}

//! `converge state taint | untaint URN…`: mark resources for replacement
//! by the next update (`"taint": true` in their state), or clear the mark.

use anyhow::Result;
use converge_state::surgery;

use super::{confirm_at_terminal, edit_state, parse_urns};
use crate::args::TaintArgs;
use crate::context::Context;

/// Whether resources are tainted or their taint is cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Taint,
    Untaint,
}

pub async fn run(ctx: &Context, args: TaintArgs, mark: Mark) -> Result<()> {
    let urns = parse_urns(&args.urns)?;
    let question = match mark {
        Mark::Taint => format!(
            "Taint {} resource(s)? The next update replaces them.",
            urns.len()
        ),
        Mark::Untaint => format!("Untaint {} resource(s)?", urns.len()),
    };
    confirm_at_terminal(ctx, &question, args.yes)?;
    let changed = edit_state(ctx, args.stack.stack.as_deref(), |snapshot| {
        Ok(surgery::set_taint(snapshot, &urns, mark == Mark::Taint)?)
    })
    .await?;
    match mark {
        Mark::Taint => {
            println!("Tainted {changed} resource(s): the next update replaces them.")
        }
        Mark::Untaint => println!("Untainted {changed} resource(s)."),
    }
    Ok(())
}

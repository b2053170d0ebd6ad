//! `converge state taint | untaint URN…`: mark resources for replacement
//! by the next update (`"taint": true` in their state), or clear the mark.

use anyhow::Result;
use converge_state::surgery;

use super::{edit_state, parse_urns};
use crate::args::TaintArgs;
use crate::context::Context;

pub async fn run(ctx: &Context, args: TaintArgs, taint: bool) -> Result<()> {
    let urns = parse_urns(&args.urns)?;
    let changed = edit_state(ctx, args.stack.stack.as_deref(), |snapshot| {
        Ok(surgery::set_taint(snapshot, &urns, taint)?)
    })
    .await?;
    if taint {
        println!("Tainted {changed} resource(s): the next update replaces them.");
    } else {
        println!("Untainted {changed} resource(s).");
    }
    Ok(())
}

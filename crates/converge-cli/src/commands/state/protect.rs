//! `converge state protect | unprotect URN… | --all`.

use anyhow::Result;
use converge_state::surgery;

use super::{edit_state, parse_urns};
use crate::args::ProtectArgs;
use crate::context::Context;

pub async fn run(ctx: &Context, args: ProtectArgs, protect: bool) -> Result<()> {
    let urns = parse_urns(&args.urns)?;
    let selected = (!args.all).then_some(urns.as_slice());
    let changed = edit_state(ctx, args.stack.stack.as_deref(), |snapshot| {
        Ok(surgery::set_protect(snapshot, selected, protect)?)
    })
    .await?;
    let verb = if protect { "Protected" } else { "Unprotected" };
    println!("{verb} {changed} resource(s).");
    Ok(())
}

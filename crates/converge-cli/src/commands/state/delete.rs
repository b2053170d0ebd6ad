//! `converge state delete URN… | --all`: forget resources.

use anyhow::Result;
use converge_state::surgery::{self, DeleteOptions};

use super::{confirm, edit_state, parse_urns};
use crate::context::Context;

pub struct DeleteArgs {
    pub urns: Vec<String>,
    pub all: bool,
    pub force: bool,
    pub target_dependents: bool,
    pub yes: bool,
}

pub async fn run(ctx: &Context, stack: Option<String>, args: DeleteArgs) -> Result<()> {
    let urns = parse_urns(&args.urns)?;
    let removed = edit_state(ctx, stack.as_deref(), |snapshot| {
        let removed = if args.all {
            surgery::delete_all(snapshot, args.force)?
        } else {
            let options = DeleteOptions {
                force: args.force,
                target_dependents: args.target_dependents,
            };
            surgery::delete(snapshot, &urns, options)?
        };
        println!(
            "This deletes {} resource(s) from the stack's state; their cloud objects \
             are left as they are and no longer managed:",
            removed.len()
        );
        for urn in &removed {
            println!("    {urn}");
        }
        confirm(ctx, "Delete them from the state?", args.yes)?;
        Ok(removed)
    })
    .await?;
    println!(
        "Deleted {} resource(s) from the stack's state.",
        removed.len()
    );
    Ok(())
}

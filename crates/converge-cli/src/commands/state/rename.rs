//! `converge state rename URN NEW_NAME`.

use anyhow::Result;
use converge_model::Urn;
use converge_state::surgery;

use super::{edit_state, parse_urns};
use crate::context::Context;

pub async fn run(ctx: &Context, stack: Option<String>, urn: &str, new_name: &str) -> Result<()> {
    let urn: Urn = parse_urns(&[urn.to_owned()])?.remove(0);
    let renamed = edit_state(ctx, stack.as_deref(), |snapshot| {
        Ok(surgery::rename(snapshot, &urn, new_name)?)
    })
    .await?;
    println!("Renamed {urn} to {renamed}.");
    println!(
        "Rename it in the program too (or give it an alias of the old name): otherwise the \
         next update creates a resource of the old name and deletes this one."
    );
    Ok(())
}

//! `converge state repair [--yes]`: fixes a state that fails integrity
//! verification where that is safe (order, references to resources that
//! are gone), shows what it changes and asks; names what it cannot fix
//! and fails, the state unchanged. The stack loads without the integrity
//! check other commands make; the repaired state is verified before it is
//! written.

use anyhow::{bail, Result};
use converge_model::DependencyKind;
use converge_state::integrity;
use converge_state::surgery;

use super::{confirm, edit_state};
use crate::context::Context;

pub async fn run(ctx: &Context, stack: Option<String>, yes: bool) -> Result<()> {
    let repaired = edit_state(ctx, stack.as_deref(), |snapshot| {
        let problems = integrity::verify_all(snapshot);
        if problems.is_empty() {
            println!("The stack's state is valid; there is nothing to repair.");
            return Ok(false);
        }
        let report = surgery::repair(snapshot);
        if !report.unfixable.is_empty() {
            let lines: Vec<String> = report
                .unfixable
                .iter()
                .map(|e| format!("  - {e}"))
                .collect();
            bail!(
                "the stack's state cannot be repaired safely; nothing was changed. What remains \
                 broken after putting resources in order and dropping references to missing \
                 ones:\n{}\nFix these by hand: `converge stack export --file state.json`, edit \
                 it, `converge stack import --file state.json`.",
                lines.join("\n")
            );
        }
        println!("The stack's state fails integrity verification:");
        for e in &problems {
            println!("  - {e}");
        }
        println!();
        if !report.moved.is_empty() {
            println!("These resources are put after what they refer to:");
            for (urn, from, to) in &report.moved {
                println!("  - {urn} (from position {from} to {to})");
            }
        }
        if !report.dropped.is_empty() {
            println!("These references to resources not in the state are removed:");
            for b in &report.dropped {
                let what = match (b.kind, &b.property) {
                    (DependencyKind::PropertyDependency, Some(key)) => {
                        format!("property dependency ({key})")
                    }
                    (DependencyKind::DeletedWith, _) => "deletedWith".to_owned(),
                    _ => "dependency".to_owned(),
                };
                println!("  - {}: {what} on {}", b.urn, b.on);
            }
        }
        confirm(ctx, "Write the repaired state?", yes)?;
        Ok(true)
    })
    .await?;
    if repaired {
        println!("Repaired the stack's state.");
    }
    Ok(())
}

//! `converge stack` without a subcommand: the current stack as Pulumi's
//! `pulumi stack` shows it — when it was last updated, its resources as a
//! tree of parents and children, its outputs — or, with `--show-name`,
//! only its name (what scripts ask for).

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use converge_backend::Backend;
use converge_model::{ResourceState, Urn};

use super::output::{self, OutputOptions};
use crate::args::StackShowArgs;
use crate::context::Context;
use crate::table::Table;

pub async fn run(ctx: &Context, args: StackShowArgs) -> Result<()> {
    let project = ctx.project()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, args.stack.stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    if args.show_name {
        println!("{}", stack.stack);
        return Ok(());
    }
    let checkpoint = super::current_checkpoint(ctx, &backend, &stack).await?;
    println!("Current stack is {}:", stack.stack);
    if backend.as_service().is_some() {
        println!(
            "    Owner: {}",
            crate::context::stack_organization(backend.as_ref(), &stack)
        );
    }
    let Some(snapshot) = checkpoint.latest.as_ref() else {
        println!("    No updates yet; run `converge up`");
        println!();
        println!(
            "Use `converge stack select` to change stack; `converge stack ls` lists known ones"
        );
        return Ok(());
    };
    let when = &snapshot.manifest.time;
    println!(
        "    Last updated: {} ({when})",
        super::ls::relative(when, time::OffsetDateTime::now_utc())
    );
    let live: Vec<&ResourceState> = snapshot.resources.iter().filter(|r| !r.delete).collect();
    println!("Current stack resources ({}):", live.len());
    if live.is_empty() {
        println!("    No resources currently in this stack");
    } else {
        print_tree(&live, &args);
    }
    println!();
    output::run(
        ctx,
        Some(stack.to_string()),
        OutputOptions {
            name: None,
            json: false,
            shell: false,
            show_secrets: args.show_secrets,
        },
    )
    .await?;
    println!();
    println!("Use `converge stack select` to change stack; `converge stack ls` lists known ones");
    Ok(())
}

/// The resources as a tree under their parents (in state order), each
/// row `TYPE NAME`, with its URN and ID below it when asked for.
fn print_tree(live: &[&ResourceState], args: &StackShowArgs) {
    let present: std::collections::BTreeSet<&Urn> = live.iter().map(|r| &r.urn).collect();
    let mut children: BTreeMap<Option<&Urn>, Vec<&ResourceState>> = BTreeMap::new();
    for r in live {
        let parent = r.parent.as_ref().filter(|p| present.contains(p));
        children.entry(parent).or_default().push(r);
    }
    let mut rows: Vec<(String, &ResourceState)> = Vec::new();
    walk(&children, None, "", &mut rows, true);
    let mut table = Table::new(["TYPE", "NAME"]);
    let mut details: Vec<Vec<String>> = Vec::new();
    for (prefix, r) in &rows {
        table.row([format!("{prefix}{}", r.type_token), r.urn.name().to_owned()]);
        let mut extra = Vec::new();
        if args.show_urns {
            extra.push(format!("URN: {}", r.urn));
        }
        if args.show_ids {
            if let Some(id) = r.id.as_deref().filter(|id| !id.is_empty()) {
                extra.push(format!("ID: {id}"));
            }
        }
        details.push(extra);
    }
    let text = table.to_string();
    let mut lines = text.lines();
    if let Some(header) = lines.next() {
        println!("    {header}");
    }
    for (line, extra) in lines.zip(details) {
        println!("    {line}");
        for e in extra {
            println!("        {e}");
        }
    }
}

/// Depth-first: each child of `parent` with its tree prefix.
fn walk<'a>(
    children: &BTreeMap<Option<&Urn>, Vec<&'a ResourceState>>,
    parent: Option<&Urn>,
    indent: &str,
    rows: &mut Vec<(String, &'a ResourceState)>,
    root: bool,
) {
    let Some(list) = children.get(&parent) else {
        return;
    };
    for (i, r) in list.iter().enumerate() {
        let last = i + 1 == list.len();
        let (prefix, next) = if root {
            (String::new(), String::new())
        } else if last {
            (format!("{indent}└─ "), format!("{indent}   "))
        } else {
            (format!("{indent}├─ "), format!("{indent}│  "))
        };
        rows.push((prefix, r));
        walk(children, Some(&r.urn), &next, rows, false);
    }
}

//! `converge state move URN… --source STACK --dest STACK
//! [--include-parents] [--yes]`: resources from one stack to another.
//!
//! Both stacks are locked (in name order) and verified, the move is
//! computed by `converge_state::surgery::move_resources` on copies of both
//! bases, and committed as a Write entry on each: the destination first, so
//! that the resources are always tracked somewhere; if the source cannot be
//! saved, the destination is put back. A change in a stack's journal is
//! made even when its checkpoint cannot be rewritten (`held`). Secrets stay ciphertext unless the
//! moved resources hold some and the two stacks have different keys: then
//! both are decrypted and the destination encrypts them with its own key.

use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, StackRef};
use converge_engine::{LockedStack, StackState};
use converge_model::{DependencyKind, Urn};
use converge_state::surgery::{self, BrokenDependency, MoveOptions, MoveReport};
use converge_state::Snapshot;

use super::{confirm, held, parse_urns};
use crate::args::MoveArgs;
use crate::context::Context;
use crate::project::Project;
use crate::secrets::stack::open_recorded;
use crate::secrets::{stack_secrets, StackSecrets};
use crate::stack_settings::StackSettings;

pub async fn run(ctx: &Context, args: MoveArgs) -> Result<()> {
    if args.source.is_none() && args.dest.is_none() {
        bail!("pass --source or --dest (or both): the other defaults to the current stack");
    }
    let urns = parse_urns(&args.urns)?;
    let project = ctx.project()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let source = stack_ref(ctx, &project, args.source.as_deref())?;
    let dest = stack_ref(ctx, &project, args.dest.as_deref())?;
    if source == dest {
        bail!("the source and destination stacks are the same stack, {source}");
    }
    ctx.require_stack(backend.as_ref(), &source).await?;
    ctx.require_stack(backend.as_ref(), &dest).await?;

    // One order for every process, so two moves between the same stacks
    // contend for the same lock first.
    let (first, second) = if source.to_string() <= dest.to_string() {
        (&source, &dest)
    } else {
        (&dest, &source)
    };
    crate::service_policy::declare_state_edit(backend.as_ref(), &source);
    crate::service_policy::declare_state_edit(backend.as_ref(), &dest);
    let first = StackState::new(backend.clone(), first.clone())
        .lock(ctx.lock_info())
        .await?;
    let second = match StackState::new(backend.clone(), second.clone())
        .lock(ctx.lock_info())
        .await
    {
        Ok(s) => s,
        Err(e) => {
            first.release().await?;
            return Err(e.into());
        }
    };
    let (mut src, mut dst) = if first.stack() == &source {
        (first, second)
    } else {
        (second, first)
    };
    let result = move_locked(ctx, &project, &mut src, &mut dst, &urns, &args).await;
    let released = (src.release().await, dst.release().await);
    result?;
    released.0?;
    released.1?;
    Ok(())
}

/// The stack a user named (any project of the backend), or the current one.
fn stack_ref(ctx: &Context, project: &Project, name: Option<&str>) -> Result<StackRef> {
    match name {
        Some(n) => Ok(StackRef::parse(n, &project.name)?),
        None => ctx.resolve_stack(project, None),
    }
}

async fn move_locked(
    ctx: &Context,
    project: &Project,
    src: &mut LockedStack,
    dst: &mut LockedStack,
    urns: &[Urn],
    args: &MoveArgs,
) -> Result<()> {
    let (source, dest) = (src.stack().clone(), dst.stack().clone());
    src.verify()
        .context("the source stack's state fails integrity verification (`converge state repair` may fix it)")?;
    dst.verify()
        .context("the destination stack's state fails integrity verification (`converge state repair` may fix it)")?;
    let options = MoveOptions {
        include_parents: args.include_parents,
        dest_stack: &dest.stack,
        dest_project: &dest.project,
    };
    let attempt = |src: &LockedStack, dst: &LockedStack| {
        let (mut s, mut d) = (src.base().clone(), dst.base().clone());
        surgery::move_resources(&mut s, &mut d, urns, options).map(|report| (s, d, report))
    };
    let (mut s, mut d, mut report) = attempt(src, dst)?;
    if carries_secrets(src.base(), &report.moved)
        && src.base().secrets_providers != dst.base().secrets_providers
    {
        // Re-encrypt: plaintext in memory only, each side written with its
        // own key.
        let src_secrets = crypter(ctx, project, &source, src.base(), false).await?;
        let dst_secrets = crypter(ctx, project, &dest, dst.base(), true).await?;
        src.decrypt(src_secrets.crypter).await?;
        dst.decrypt(dst_secrets.crypter).await?;
        dst.set_secrets_providers(dst_secrets.provider);
        (s, d, report) = attempt(src, dst)?;
    }

    show_plan(&source, &dest, &report);
    confirm(ctx, "Do you want to perform this move?", args.yes)?;

    let original_dest = dst.base().clone();
    dst.edit_base(d)?;
    held(dst.commit_changes().await)
        .context("cannot save the destination stack; nothing was moved")?;
    let saved = async {
        src.edit_base(s)?;
        held(src.commit_changes().await)
    }
    .await;
    if let Err(e) = saved {
        let restored = async {
            dst.edit_base(original_dest)?;
            held(dst.commit_changes().await)
        }
        .await;
        return match restored {
            Ok(()) => Err(anyhow::Error::new(e).context(
                "cannot save the source stack; the destination stack was put back, so nothing \
                 was moved",
            )),
            Err(_) => {
                let commands: Vec<String> = report
                    .moved
                    .iter()
                    .rev()
                    .map(|u| format!("    converge state delete --stack {source} '{u}' --yes"))
                    .collect();
                Err(anyhow::Error::new(e).context(format!(
                    "cannot save the source stack, nor put the destination stack back: the \
                     resources are now in both; forget them in the source with\n{}",
                    commands.join("\n")
                )))
            }
        };
    }
    println!(
        "Moved {} resource(s) from {source} to {dest}.",
        report.moved.len()
    );
    Ok(())
}

/// Whether any of the resources `urns` holds a secret.
fn carries_secrets(snapshot: &Snapshot, urns: &[Urn]) -> bool {
    snapshot
        .resources
        .iter()
        .filter(|r| urns.contains(&r.urn))
        .flat_map(|r| r.inputs.values().chain(r.outputs.values()))
        .any(|v| v.contains_secrets())
}

/// The crypter of `stack`: through its settings file when it is a stack
/// of this project (made when `create` allows), else from the secrets
/// provider its state records (a passphrase salt or a `cloud` data key).
async fn crypter(
    ctx: &Context,
    project: &Project,
    stack: &StackRef,
    base: &Snapshot,
    create: bool,
) -> Result<StackSecrets> {
    let recorded = base.secrets_providers.as_ref();
    if stack.project == project.name {
        let mut settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
        return stack_secrets(&mut settings, recorded, ctx.passphrase_options(), create)
            .await
            .with_context(|| format!("stack {stack}"));
    }
    let Some(recorded) = recorded else {
        bail!(
            "stack {stack} has no secrets provider, so the secrets being moved cannot be \
             encrypted for it: run `converge state move` from its project's directory"
        );
    };
    open_recorded(
        recorded,
        ctx.passphrase_options(),
        &format!("stack {stack}"),
    )
    .await
}

fn show_plan(source: &StackRef, dest: &StackRef, report: &MoveReport) {
    for urn in &report.not_found {
        println!("warning: resource {urn} is not in the source stack {source}");
    }
    println!("Planning to move the following resources from {source} to {dest}:");
    println!();
    for urn in &report.moved {
        println!("  - {urn}");
    }
    println!();
    if !report.copied_providers.is_empty() {
        println!("Their providers are copied to {dest} (and stay in {source}):");
        for urn in &report.copied_providers {
            println!("  - {urn}");
        }
        println!();
    }
    if !report.broken_in_source.is_empty() {
        println!(
            "These dependencies of resources staying in {source} on resources moving to \
             {dest} are removed:"
        );
        print_broken(&report.broken_in_source);
    }
    if !report.broken_in_dest.is_empty() {
        println!(
            "These dependencies of resources moving to {dest} on resources staying in \
             {source} are removed:"
        );
        print_broken(&report.broken_in_dest);
    }
    if !report.broken_in_source.is_empty() || !report.broken_in_dest.is_empty() {
        println!(
            "The programs of both stacks must pass these values another way (stack outputs \
             and a StackReference, or configuration)."
        );
        println!();
    }
}

fn print_broken(broken: &[BrokenDependency]) {
    for b in broken {
        match (b.kind, &b.property) {
            (DependencyKind::PropertyDependency, Some(key)) => println!(
                "  - {} ({key}) has a property dependency on {}",
                b.urn, b.on
            ),
            (DependencyKind::DeletedWith, _) => {
                println!("  - {} is marked as deleted with {}", b.urn, b.on)
            }
            _ => println!("  - {} has a dependency on {}", b.urn, b.on),
        }
    }
    println!();
}

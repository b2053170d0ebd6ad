//! `converge stack rename NEW`: the stack's state moved into the new name
//! under its lock — every URN rewritten, stored under the new name with
//! its history and tags in one backend operation
//! (`LockedStack::rename`) — then `Pulumi.<old>.yaml` renamed to
//! `Pulumi.<new>.yaml` and the new name selected.

use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, StackRef};
use converge_engine::StackState;

use crate::context::Context;
use crate::project::Project;

pub(super) async fn run(ctx: &Context, new_name: &str, name: Option<&str>) -> Result<()> {
    let project = ctx.project()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, name)?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let mut to = StackRef::parse(new_name, &project.name)?;
    if new_name.split('/').count() < 3 {
        to.organization = stack.organization.clone();
    }
    if to == stack {
        bail!("stack {} already has that name", stack.stack);
    }
    if backend.stack_exists(&to).await? {
        bail!(
            "a stack named {} already exists in {}",
            shown(&to, &project),
            backend.url()
        );
    }
    let old_config = project.stack_config_file(&stack.stack);
    let new_config = project.stack_config_file(&to.stack);
    if old_config != new_config && new_config.exists() && old_config.exists() {
        bail!(
            "{} already exists: move it away first, so that renaming stack {} does not \
             overwrite it",
            new_config.display(),
            stack.stack
        );
    }
    crate::service_policy::declare_state_edit(backend.as_ref(), &stack);
    crate::service_policy::declare_state_edit(backend.as_ref(), &to);
    StackState::new(backend.clone(), stack.clone())
        .lock(ctx.lock_info())
        .await?
        .rename(&to)
        .await
        .with_context(|| format!("stack {} was not renamed", stack.stack))?;
    if old_config != new_config && old_config.exists() {
        if let Err(e) = std::fs::rename(&old_config, &new_config) {
            // Put the stack back under its old name: nothing changes.
            let back = StackState::new(backend.clone(), to.clone())
                .lock(ctx.lock_info())
                .await?
                .rename(&stack)
                .await;
            let e = anyhow::Error::new(e).context(format!(
                "cannot rename {} to {}",
                old_config.display(),
                new_config.display()
            ));
            return Err(match back {
                Ok(()) => e.context(format!("stack {} was not renamed", stack.stack)),
                Err(b) => e.context(format!(
                    "stack {} was renamed to {}, and renaming it back failed too ({b}); \
                     rename {} by hand",
                    stack.stack,
                    to.stack,
                    old_config.display()
                )),
            });
        }
    }
    let selected = if to.project == project.name {
        Some(to.stack.as_str())
    } else {
        None
    };
    ctx.home
        .select_stack(&project.name, &project.dir, selected)?;
    println!(
        "Renamed {} to {}",
        shown(&stack, &project),
        shown(&to, &project)
    );
    if to.project != project.name {
        println!(
            "note: stack {} is now in project {}: change `name` in Pulumi.yaml to {} \
             (or run from a directory of project {}) to work on it",
            to.stack, to.project, to.project, to.project
        );
    }
    Ok(())
}

/// A stack's name as Pulumi shows it: short in its own project, else
/// `org/project/stack`.
fn shown(stack: &StackRef, project: &Project) -> String {
    if stack.project == project.name {
        stack.stack.clone()
    } else {
        stack.to_string()
    }
}

//! `converge stack tag get | ls | rm | set`, and the built-in tags every
//! update records, as Pulumi sets them: `pulumi:project`,
//! `pulumi:runtime`, `pulumi:description` from `Pulumi.yaml`, and the
//! stack configuration's `pulumi:tags` object. The backend stores them
//! (`TagStore`: Pulumi's `<stack>.pulumi-tags` beside a DIY checkpoint,
//! the service's tag routes).

use anyhow::{bail, Context as _, Result};
use converge_backend::{Backend, StackRef, StackTags};

use crate::args::{TagArgs, TagCommand};
use crate::context::Context;
use crate::project::Project;
use crate::stack_settings::StackSettings;

/// The tags Pulumi derives from the project at every update.
const PROJECT_TAGS: [&str; 3] = ["pulumi:project", "pulumi:runtime", "pulumi:description"];

/// The stack configuration key whose object of strings becomes tags.
const TAGS_CONFIG_KEY: &str = "pulumi:tags";

pub(super) async fn run(ctx: &Context, args: TagArgs) -> Result<()> {
    let project = ctx.project()?;
    let backend = ctx.backend(Some(&project))?;
    let stack = ctx.resolve_stack(&project, args.stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let builtin = environment_tags(&project, &stack)?;
    let mut stored = backend.load_tags(&stack).await?;
    let mut shown = stored.clone();
    shown.extend(builtin.clone());
    match args.command {
        TagCommand::Get { name } => match shown.get(&name) {
            Some(v) => println!("{v}"),
            None => bail!("stack tag '{name}' not found for stack '{}'", stack.stack),
        },
        TagCommand::Ls { json: true } => {
            println!("{}", serde_json::to_string_pretty(&shown)?);
        }
        TagCommand::Ls { json: false } => print!("{}", table(&shown)),
        TagCommand::Rm { name } => {
            refuse_builtin(&name, &builtin)?;
            stored.remove(&name);
            backend.save_tags(&stack, &stored).await?;
        }
        TagCommand::Set { name, value } => {
            validate(&name, &value)?;
            refuse_builtin(&name, &builtin)?;
            stored.insert(name, value);
            backend.save_tags(&stack, &stored).await?;
        }
    }
    Ok(())
}

/// Pulumi's longest tag name and value, in bytes (as Go counts).
const MAX_NAME_LEN: usize = 40;
const MAX_VALUE_LEN: usize = 256;

/// Pulumi's rules for a tag: a name of 1 to 40 letters, digits, `-`, `_`,
/// `.` or `:`; a value of at most 256 bytes.
fn validate(name: &str, value: &str) -> Result<()> {
    if name.is_empty() {
        bail!("invalid stack tag \"\": a tag name cannot be empty");
    }
    if name.len() > MAX_NAME_LEN {
        bail!("stack tag {name:?} is too long (max length {MAX_NAME_LEN} characters)");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
    {
        bail!(
            "stack tag {name:?} may only contain alphanumerics, hyphens, underscores, periods, \
             or colons"
        );
    }
    if value.len() > MAX_VALUE_LEN {
        bail!(
            "stack tag {name:?} value is too long (max length {MAX_VALUE_LEN} characters, \
             this one has {})",
            value.len()
        );
    }
    Ok(())
}

fn refuse_builtin(name: &str, builtin: &StackTags) -> Result<()> {
    if PROJECT_TAGS.contains(&name) {
        bail!(
            "stack tag '{name}' is set from Pulumi.yaml at every update; change the \
             project file instead"
        );
    }
    if builtin.contains_key(name) {
        bail!(
            "stack tag '{name}' is set from the stack's `{TAGS_CONFIG_KEY}` configuration at \
             every update; change it with `converge config set --path '{TAGS_CONFIG_KEY}.{name}'`"
        );
    }
    Ok(())
}

/// The tags the project and the stack's configuration give the stack
/// (none for a stack of another project).
fn environment_tags(project: &Project, stack: &StackRef) -> Result<StackTags> {
    let mut tags = StackTags::new();
    if stack.project != project.name {
        return Ok(tags);
    }
    tags.insert("pulumi:project".into(), project.name.clone());
    if let Some(runtime) = project.runtime() {
        tags.insert("pulumi:runtime".into(), runtime.to_owned());
    }
    if let Some(d) = project.description() {
        tags.insert("pulumi:description".into(), d.to_owned());
    }
    let settings = StackSettings::load(&project.stack_config_file(&stack.stack))?;
    if let Some(value) = settings.config().get(TAGS_CONFIG_KEY) {
        let object = value
            .as_mapping()
            .with_context(|| format!("{TAGS_CONFIG_KEY} must be an object of strings"))?;
        for (k, v) in object {
            let (Some(k), Some(v)) = (k.as_str(), v.as_str()) else {
                bail!("{TAGS_CONFIG_KEY} must be an object of strings");
            };
            tags.insert(k.to_owned(), v.to_owned());
        }
    }
    Ok(tags)
}

/// Stores the built-in tags with the stack's own (as Pulumi does at every
/// update and at `stack init`); writes only when they changed.
pub async fn record_builtin(
    backend: &dyn Backend,
    stack: &StackRef,
    project: &Project,
) -> Result<()> {
    if stack.project != project.name {
        return Ok(());
    }
    let builtin = environment_tags(project, stack)?;
    let mut tags = backend.load_tags(stack).await?;
    let before = tags.clone();
    tags.extend(builtin);
    if tags != before {
        backend.save_tags(stack, &tags).await?;
    }
    Ok(())
}

/// Pulumi's two-column table, sorted by name.
fn table(tags: &StackTags) -> String {
    let w = tags.keys().map(String::len).max().unwrap_or(0).max(4);
    let mut out = format!("{:<w$}  VALUE\n", "NAME");
    for (k, v) in tags {
        out.push_str(&format!("{k:<w$}  {v}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_follow_pulumis_rules() {
        assert!(validate("env", "dev").is_ok());
        assert!(validate("a-b_c.d:e", "").is_ok());
        assert!(validate(&"n".repeat(40), &"v".repeat(256)).is_ok());
        let err = |n: &str, v: &str| validate(n, v).unwrap_err().to_string();
        assert!(err("", "x").contains("invalid stack tag"));
        assert!(err(&"n".repeat(41), "x").contains("too long (max length 40"));
        assert!(err("has space", "x").contains("may only contain"));
        assert!(err("slash/y", "x").contains("may only contain"));
        assert!(err("ok", &"v".repeat(257)).contains("value is too long (max length 256"));
    }

    #[test]
    fn the_table_is_sorted_and_aligned() {
        let mut t = StackTags::new();
        t.insert("pulumi:project".into(), "app".into());
        t.insert("env".into(), "dev".into());
        assert_eq!(
            table(&t),
            "NAME            VALUE\nenv             dev\npulumi:project  app\n"
        );
    }
}

//! `converge stack graph FILE`: the stack's resources and the edges
//! between them (dependencies, parents) as a Graphviz DOT file, with
//! Pulumi's flags. Read from the latest state, as Pulumi's is.

use std::collections::HashMap;
use std::fmt::Write as _;

use anyhow::{Context as _, Result};
use converge_model::{DependencyKind, ResourceState};

use crate::args::GraphArgs;
use crate::context::Context;

pub async fn run(ctx: &Context, args: GraphArgs) -> Result<()> {
    let project = ctx.project()?;
    let backend: std::sync::Arc<dyn converge_backend::Backend> =
        std::sync::Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, args.stack.stack.as_deref())?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let checkpoint = super::current_checkpoint(ctx, &backend, &stack).await?;
    let resources: Vec<&ResourceState> = checkpoint
        .latest
        .as_ref()
        .map(|s| s.resources.iter().filter(|r| !r.delete).collect())
        .unwrap_or_default();
    let dot = render(&resources, &args);
    std::fs::write(&args.file, dot)
        .with_context(|| format!("cannot write {}", args.file.display()))?;
    println!("wrote stack dependency graph to `{}`", args.file.display());
    Ok(())
}

/// The DOT text: a node per resource (labelled with its URN, or its name
/// with `--short-node-name`), an edge from each resource to each resource
/// it depends on and to its parent, each kind in its colour.
fn render(resources: &[&ResourceState], args: &GraphArgs) -> String {
    let node: HashMap<&converge_model::Urn, usize> = resources
        .iter()
        .enumerate()
        .map(|(i, r)| (&r.urn, i))
        .collect();
    let mut out = String::from("strict digraph {\n");
    if let Some(fragment) = &args.dot_fragment {
        let _ = writeln!(out, "    {fragment}");
    }
    for (i, r) in resources.iter().enumerate() {
        let label = if args.short_node_name {
            r.urn.name().to_owned()
        } else {
            r.urn.to_string()
        };
        let _ = writeln!(out, "    Resource{i} [label=\"{}\"];", quoted(&label));
    }
    for (i, r) in resources.iter().enumerate() {
        let mut seen = std::collections::HashSet::new();
        for (kind, target) in r.all_dependencies() {
            let color = match kind {
                DependencyKind::Parent if !args.ignore_parent_edges => &args.parent_edge_color,
                DependencyKind::Dependency | DependencyKind::PropertyDependency
                    if !args.ignore_dependency_edges =>
                {
                    &args.dependency_edge_color
                }
                _ => continue,
            };
            let Some(j) = node.get(target) else { continue };
            if seen.insert((kind == DependencyKind::Parent, *j)) {
                let _ = writeln!(
                    out,
                    "    Resource{i} -> Resource{j} [color = \"{}\"];",
                    quoted(color)
                );
            }
        }
    }
    out.push_str("}\n");
    out
}

/// `text` inside a DOT double-quoted string.
fn quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;
    use converge_model::Urn;

    fn resource(name: &str, parent: Option<&str>, deps: &[&str]) -> ResourceState {
        let urn = |n: &str| Urn::parse(&format!("urn:pulumi:dev::p::pkg:index:T::{n}")).unwrap();
        let mut r = ResourceState::new(urn(name), true);
        r.parent = parent.map(urn);
        r.dependencies = deps.iter().map(|d| urn(d)).collect();
        r
    }

    fn args(extra: &[&str]) -> GraphArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            graph: GraphArgs,
        }
        let mut argv = vec!["graph", "out.dot"];
        argv.extend_from_slice(extra);
        Wrap::parse_from(argv).graph
    }

    #[test]
    fn edges_go_from_a_resource_to_what_it_depends_on_and_to_its_parent() {
        let (a, b, c) = (
            resource("a", None, &[]),
            resource("b\"q", None, &["a"]),
            resource("c", Some("a"), &["b\"q", "gone"]),
        );
        let all = [&a, &b, &c];
        let dot = render(&all, &args(&[]));
        assert!(
            dot.starts_with("strict digraph {\n") && dot.ends_with("}\n"),
            "{dot}"
        );
        assert!(dot.contains("Resource0 [label=\"urn:pulumi:dev::p::pkg:index:T::a\"];"));
        assert!(
            dot.contains("[label=\"urn:pulumi:dev::p::pkg:index:T::b\\\"q\"]"),
            "{dot}"
        );
        assert!(
            dot.contains("Resource1 -> Resource0 [color = \"#246C60\"];"),
            "{dot}"
        );
        assert!(
            dot.contains("Resource2 -> Resource1 [color = \"#246C60\"];"),
            "{dot}"
        );
        assert!(
            dot.contains("Resource2 -> Resource0 [color = \"#AA6639\"];"),
            "{dot}"
        );
        assert_eq!(
            dot.matches("->").count(),
            3,
            "no edge to what is not in the stack"
        );

        let dot = render(
            &all,
            &args(&[
                "--ignore-parent-edges",
                "--short-node-name",
                "--dot-fragment",
                "rankdir=LR;",
            ]),
        );
        assert!(dot.contains("    rankdir=LR;\n"), "{dot}");
        assert!(dot.contains("Resource0 [label=\"a\"];"), "{dot}");
        assert!(!dot.contains("#AA6639"), "{dot}");
        let dot = render(
            &all,
            &args(&["--ignore-dependency-edges", "--parent-edge-color", "red"]),
        );
        assert_eq!(dot.matches("->").count(), 1, "{dot}");
        assert!(
            dot.contains("Resource2 -> Resource0 [color = \"red\"];"),
            "{dot}"
        );
    }
}

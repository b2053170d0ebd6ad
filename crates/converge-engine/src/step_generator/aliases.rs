//! A registration's aliases: the URNs its old state may be found under.
//!
//! One rule for every program (YAML in-process, the SDKs over gRPC, a
//! component provider registering through the monitor), as Pulumi's SDKs
//! compute it (`all_aliases` in the Python SDK):
//!
//! - each alias of the registration, as a URN (a spec's missing parts are
//!   the registration's current ones; a spec naming a parent that was
//!   itself found under other URNs — its aliases — also yields the URN
//!   under each of those, as Pulumi's engine takes the old URN of a
//!   renamed alias parent);
//! - for each alias of its parent (all of them: the parent's own and those
//!   it inherited), the registration under that former parent, with its
//!   own type and name and with the type and name of each of its aliases.
//!   A name that starts with the parent's name (`<parent>-suffix`, the
//!   usual way to name children) gets the former parent's name instead of
//!   that prefix.
//!
//! Deduplicated, in that order, never the registration's own URN. The
//! result is recorded, so the registration's children inherit it in turn.

use std::collections::HashSet;

use converge_model::Urn;

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::goal::{Alias, AliasParent, ResourceGoal};

/// The aliases of the registration `goal`, whose URN is `urn`.
pub(crate) fn resolve(
    d: &Deployment,
    goal: &ResourceGoal,
    urn: &Urn,
) -> Result<Vec<Urn>, EngineError> {
    let mut own = Vec::new();
    for alias in &goal.options.aliases {
        own.extend(alias_urns(d, goal, alias)?);
    }
    let mut out = own.clone();
    if let Some(parent) = &goal.parent {
        let parent_aliases = d.progress().aliases_of(parent);
        for parent_alias in &parent_aliases {
            out.push(inherited_child_alias(
                &goal.type_token,
                &goal.name,
                parent.name(),
                parent_alias,
            )?);
            for alias in &own {
                out.push(inherited_child_alias(
                    alias.type_token(),
                    alias.name(),
                    parent.name(),
                    parent_alias,
                )?);
            }
        }
    }
    let mut seen = HashSet::new();
    out.retain(|u| u != urn && seen.insert(u.clone()));
    Ok(out)
}

/// One alias as URNs: the URN it names, and for a spec whose parent is
/// given, the same under each alias of that parent.
fn alias_urns(d: &Deployment, goal: &ResourceGoal, alias: &Alias) -> Result<Vec<Urn>, EngineError> {
    let spec = match alias {
        Alias::Urn(urn) => return Ok(vec![urn.clone()]),
        Alias::Spec(spec) => spec,
    };
    let parents: Vec<Option<Urn>> = match &spec.parent {
        AliasParent::Current => vec![goal.parent.clone()],
        AliasParent::None => vec![None],
        AliasParent::Urn(p) => std::iter::once(p.clone())
            .chain(d.progress().aliases_of(p))
            .map(Some)
            .collect(),
    };
    let urn_under = |parent: &Option<Urn>| {
        Urn::for_resource(
            spec.stack.as_deref().unwrap_or(&d.opts.stack),
            spec.project.as_deref().unwrap_or(&d.opts.project),
            parent.as_ref(),
            spec.type_token.as_deref().unwrap_or(&goal.type_token),
            spec.name.as_deref().unwrap_or(&goal.name),
        )
    };
    Ok(parents.iter().map(urn_under).collect::<Result<_, _>>()?)
}

/// The URN a child named `child_name` of type `child_type` had when its
/// parent (now named `parent_name`) had the URN `parent_alias`.
fn inherited_child_alias(
    child_type: &str,
    child_name: &str,
    parent_name: &str,
    parent_alias: &Urn,
) -> Result<Urn, EngineError> {
    let name = match child_name.strip_prefix(parent_name) {
        Some(suffix) => format!("{}{suffix}", parent_alias.name()),
        None => child_name.to_owned(),
    };
    Ok(Urn::for_resource(
        parent_alias.stack(),
        parent_alias.project(),
        Some(parent_alias),
        child_type,
        &name,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urn(s: &str) -> Urn {
        Urn::parse(s).unwrap()
    }

    #[test]
    fn a_child_moves_with_its_renamed_parent_and_keeps_a_derived_name() {
        let old_parent = urn("urn:pulumi:s::p::my:index:Old::app");
        let same = inherited_child_alias("pkg:index:Thing", "t", "web", &old_parent).unwrap();
        assert_eq!(
            same.as_str(),
            "urn:pulumi:s::p::my:index:Old$pkg:index:Thing::t"
        );
        let derived =
            inherited_child_alias("pkg:index:Thing", "web-bucket", "web", &old_parent).unwrap();
        assert_eq!(
            derived.as_str(),
            "urn:pulumi:s::p::my:index:Old$pkg:index:Thing::app-bucket"
        );
    }
}

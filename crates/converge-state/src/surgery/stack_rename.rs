//! `stack rename`: every URN of a snapshot moved into a new stack name
//! (and, optionally, project), as Pulumi's stack rename rewrites them.

use converge_model::{ResourceState, Urn};

use super::SurgeryError;
use crate::integrity;
use crate::Snapshot;

/// Rewrites every URN in `snapshot` — each resource's own, its parent,
/// dependencies, property dependencies, deletedWith, provider reference,
/// aliases and `viewOf`, in resources and pending operations — into stack
/// `stack` of project `project`. The stack resource's name, Pulumi's
/// `<project>-<stack>`, follows. Types and names are kept, so children
/// keep their parents' qualified types. Refuses (the snapshot unchanged) a
/// snapshot that fails integrity verification before or after, and a
/// name that makes no valid URN.
pub fn rename_stack(
    snapshot: &mut Snapshot,
    stack: &str,
    project: &str,
) -> Result<(), SurgeryError> {
    integrity::verify(snapshot)?;
    let mut edited = snapshot.clone();
    for r in &mut edited.resources {
        rewrite(r, stack, project)?;
    }
    for p in &mut edited.pending_operations {
        rewrite(&mut p.resource, stack, project)?;
    }
    integrity::verify(&edited)?;
    *snapshot = edited;
    Ok(())
}

/// `urn` in stack `stack` of project `project`.
fn moved(urn: &Urn, stack: &str, project: &str) -> Result<Urn, SurgeryError> {
    let name = if urn.is_stack() {
        format!("{project}-{stack}")
    } else {
        urn.name().to_owned()
    };
    Urn::new(stack, project, urn.parent_type(), urn.type_token(), &name).map_err(|e| {
        SurgeryError::InvalidStackName {
            stack: format!("{project}/{stack}"),
            reason: e.to_string(),
        }
    })
}

fn rewrite(r: &mut ResourceState, stack: &str, project: &str) -> Result<(), SurgeryError> {
    let mv = |u: &mut Urn| -> Result<(), SurgeryError> {
        *u = moved(u, stack, project)?;
        Ok(())
    };
    mv(&mut r.urn)?;
    if let Some(p) = &mut r.parent {
        mv(p)?;
    }
    if let Some(p) = &mut r.provider {
        mv(&mut p.urn)?;
    }
    for d in &mut r.dependencies {
        mv(d)?;
    }
    for d in r.property_dependencies.values_mut().flatten() {
        mv(d)?;
    }
    if let Some(w) = &mut r.deleted_with {
        mv(w)?;
    }
    for a in &mut r.aliases {
        mv(a)?;
    }
    if let Some(v) = &mut r.view_of {
        mv(v)?;
    }
    for w in &mut r.replace_with {
        mv(w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::sample;
    use super::*;
    use crate::PendingOperation;

    #[test]
    fn every_urn_moves_and_the_stack_resource_is_renamed() {
        let mut s = sample();
        let b = s.resources[3].clone();
        s.pending_operations.push(PendingOperation {
            resource: b,
            kind: crate::snapshot::OperationType::Updating,
        });
        rename_stack(&mut s, "prod", "demo").unwrap();
        for r in &s.resources {
            assert_eq!(r.urn.stack(), "prod", "{}", r.urn);
            for u in r
                .parent
                .iter()
                .chain(&r.dependencies)
                .chain(&r.deleted_with)
            {
                assert_eq!(u.stack(), "prod", "{u}");
            }
            for u in r.property_dependencies.values().flatten() {
                assert_eq!(u.stack(), "prod", "{u}");
            }
            if let Some(p) = &r.provider {
                assert_eq!(p.urn.stack(), "prod");
            }
        }
        assert_eq!(
            s.resources[0].urn.as_str(),
            "urn:pulumi:prod::demo::pulumi:pulumi:Stack::demo-prod"
        );
        let c = s.resources.iter().find(|r| r.urn.name() == "c").unwrap();
        assert_eq!(
            c.urn.as_str(),
            "urn:pulumi:prod::demo::my:index:Comp$random:index:RandomPet::c"
        );
        assert_eq!(s.pending_operations[0].resource.urn.stack(), "prod");
    }

    #[test]
    fn a_new_project_renames_every_project_part() {
        let mut s = sample();
        rename_stack(&mut s, "dev", "other").unwrap();
        assert!(s.resources.iter().all(|r| r.urn.project() == "other"));
        assert_eq!(s.resources[0].urn.name(), "other-dev");
    }

    #[test]
    fn an_impossible_name_changes_nothing() {
        let mut s = sample();
        let before = s.clone();
        assert!(matches!(
            rename_stack(&mut s, "a::b", "demo"),
            Err(SurgeryError::InvalidStackName { .. })
        ));
        assert_eq!(s, before);
    }
}

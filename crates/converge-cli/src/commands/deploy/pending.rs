//! Pending operations, which an interrupted update leaves in the state:
//! reported before an operation and after one the user stopped; and
//! `refresh --import-pending-creates URN,ID[,URN,ID…]`, which adopts the
//! creates whose objects do exist before the refresh — each becomes a
//! resource of the state with the ID the user found, and the refresh then
//! reads it as any other.

use anyhow::{bail, Result};
use converge_engine::{LockedStack, OperationResult};
use converge_model::Urn;
use converge_state::{OperationType, Snapshot};

/// Before an operation: the pending operations the state holds, and what
/// to do about each kind.
pub(crate) fn report_pending(base: &Snapshot) {
    if base.pending_operations.is_empty() {
        return;
    }
    eprintln!(
        "warning: {} operation(s) were interrupted by an earlier update that did not finish; \
         the objects they name may or may not exist:",
        base.pending_operations.len()
    );
    for p in &base.pending_operations {
        eprintln!("    {} {}", p.kind, p.resource.urn);
    }
    eprintln!(
        "  check them in your cloud; then run `converge refresh --clear-pending-creates` to forget \
         interrupted creates, `converge refresh --import-pending-creates URN,ID` to adopt one whose \
         object does exist, or `converge refresh` to settle interrupted updates and deletes"
    );
}

/// After an operation the user stopped: the operations it left in flight,
/// which the state now records as pending (the base's own were reported
/// before it ran).
pub(crate) fn report_interrupted(base: &Snapshot, result: &OperationResult) {
    if !matches!(
        result.error,
        Some(converge_engine::EngineError::Interrupted { stopped: true })
    ) {
        return;
    }
    let left: Vec<_> = result
        .snapshot
        .pending_operations
        .iter()
        .filter(|p| {
            !base
                .pending_operations
                .iter()
                .any(|b| b.kind == p.kind && b.resource.urn == p.resource.urn)
        })
        .collect();
    if left.is_empty() {
        return;
    }
    eprintln!(
        "\n{} operation(s) were still under way when Converge stopped waiting; the objects they \
         name may or may not exist, and the state records them as pending:",
        left.len()
    );
    for p in left {
        eprintln!("    {} {}", p.kind, p.resource.urn);
    }
}

/// The flag's values, in pairs: a pending create's URN and the ID of the
/// object it made.
pub(super) fn parse(values: &[String]) -> Result<Vec<(Urn, String)>> {
    if !values.len().is_multiple_of(2) {
        bail!(
            "--import-pending-creates takes pairs, URN,ID[,URN,ID…]: {} value(s) given",
            values.len()
        );
    }
    values
        .chunks(2)
        .map(|pair| {
            let urn = Urn::parse(&pair[0]).map_err(|e| {
                anyhow::anyhow!("--import-pending-creates: {:?} is not a URN: {e}", pair[0])
            })?;
            if pair[1].is_empty() {
                bail!("--import-pending-creates: the ID of {urn} is empty");
            }
            Ok((urn, pair[1].clone()))
        })
        .collect()
}

/// Turns each named pending create into a resource of the base with its
/// ID (after every resource the base holds, so what it needs comes
/// first); a URN no pending create names is refused before anything
/// changes. Returns how many were adopted.
pub(super) fn adopt(locked: &mut LockedStack, imports: &[(Urn, String)]) -> Result<usize> {
    let mut snapshot = locked.base().clone();
    for (urn, id) in imports {
        let Some(at) = snapshot
            .pending_operations
            .iter()
            .position(|p| p.kind == OperationType::Creating && &p.resource.urn == urn)
        else {
            bail!(
                "--import-pending-creates: the state has no pending create of {urn} \
                 (`converge stack export` shows its pending_operations)"
            );
        };
        // The create completed after all (a later update made the object
        // and recorded it): the state already tracks one, and a second
        // copy of the URN would be two live resources.
        if let Some(live) = snapshot
            .resources
            .iter()
            .find(|r| &r.urn == urn && !r.delete)
        {
            bail!(
                "--import-pending-creates: {urn} is already in the stack's state with ID {}; \
                 its pending create is left over from an interrupted operation. Clear it with \
                 `converge refresh --clear-pending-creates` (if the interrupted create made \
                 another object, delete that one by hand), or adopt that other object under \
                 a different name with `converge import`",
                live.id.as_deref().unwrap_or("(none)")
            );
        }
        let mut resource = snapshot.pending_operations.remove(at).resource;
        resource.id = Some(id.clone());
        snapshot.resources.push(resource);
    }
    locked.edit_base(snapshot)?;
    Ok(imports.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_in_pairs_of_a_urn_and_an_id() {
        let urn = "urn:pulumi:dev::p::random:index/randomString:RandomString::s";
        let pairs = parse(&[urn.to_owned(), "abc".to_owned()]).unwrap();
        assert_eq!(pairs[0].0.as_str(), urn);
        assert_eq!(pairs[0].1, "abc");
        assert!(parse(&[urn.to_owned()]).is_err());
        assert!(parse(&["nope".to_owned(), "abc".to_owned()]).is_err());
        assert!(parse(&[urn.to_owned(), String::new()]).is_err());
    }
}

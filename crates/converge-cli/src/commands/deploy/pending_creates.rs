//! `refresh --import-pending-creates URN,ID[,URN,ID…]`: creates an
//! interrupted update left pending whose objects do exist are adopted
//! before the refresh — each becomes a resource of the state with the ID
//! the user found, and the refresh then reads it as any other.

use anyhow::{bail, Result};
use converge_engine::LockedStack;
use converge_model::Urn;
use converge_state::OperationType;

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

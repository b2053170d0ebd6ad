//! Per-property dependency maps: the wire's `map<string, Message{urns}>`
//! from and to `property → URNs`.

use std::collections::{BTreeMap, HashMap};

use converge_model::Urn;

/// Property → URNs, as the wire's map of one-field messages (`make` wraps
/// a list of URN strings in the message type).
pub fn dependency_map<T>(
    deps: &BTreeMap<String, Vec<Urn>>,
    make: impl Fn(Vec<String>) -> T,
) -> HashMap<String, T> {
    deps.iter()
        .map(|(k, urns)| {
            (
                k.clone(),
                make(urns.iter().map(ToString::to_string).collect()),
            )
        })
        .collect()
}

//! Output values in a program's invoke and call arguments
//! (`invokeOutputValues`, `callOutputValues`): the resources each one
//! depends on join what the invoke waits for, or the argument's
//! dependencies the component provider is told of. The arguments
//! themselves reach the provider as plain values (or secrets, or
//! unknowns).

use std::collections::{BTreeMap, BTreeSet};

use converge_model::{PropertyValue, Urn};
use converge_proto::{unmarshal_properties, MarshalOptions};
use tonic::Status;

use super::goals;

/// By top-level argument: the resources the output values in it depend
/// on (arguments without any are left out).
pub(crate) fn argument_dependencies(
    args: Option<&prost_types::Struct>,
) -> Result<BTreeMap<String, BTreeSet<Urn>>, Status> {
    let Some(args) = args else {
        return Ok(BTreeMap::new());
    };
    let values = unmarshal_properties(args, MarshalOptions::full())
        .map_err(|e| goals::invalid("args", e))?;
    let mut out = BTreeMap::new();
    for (key, value) in &values {
        let mut found = BTreeSet::new();
        dependencies_in(value, &mut found);
        if !found.is_empty() {
            out.insert(key.clone(), found);
        }
    }
    Ok(out)
}

/// Adds the dependencies of every output value in `value` to `out`.
fn dependencies_in(value: &PropertyValue, out: &mut BTreeSet<Urn>) {
    match value {
        PropertyValue::Output(o) => {
            out.extend(o.dependencies.iter().cloned());
            if let Some(element) = &o.element {
                dependencies_in(element, out);
            }
        }
        PropertyValue::Secret(inner) => dependencies_in(inner, out),
        PropertyValue::Array(items) => items.iter().for_each(|v| dependencies_in(v, out)),
        PropertyValue::Object(map) => map.values().for_each(|v| dependencies_in(v, out)),
        _ => {}
    }
}

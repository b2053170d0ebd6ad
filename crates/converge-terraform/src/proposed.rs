//! The proposed new state (seed 004): Terraform Core's merge of the
//! configuration and the prior state that a provider plans from. An
//! attribute the configuration sets takes the configuration's value; a
//! computed attribute it leaves null keeps the prior state's value (so an
//! optional+computed value the provider chose stays chosen); nested
//! blocks merge element by element (lists by index, maps by key; set
//! elements have no identity to match and take the configuration's
//! value).

use converge_model::{PropertyMap, PropertyValue};

use crate::schema::{Block, Nesting};

/// The proposed new state of `block` from `config` and `prior` (`None`
/// when creating).
pub fn proposed_new(
    block: &Block,
    prior: Option<&PropertyMap>,
    config: &PropertyMap,
) -> PropertyMap {
    let mut out = PropertyMap::new();
    let null = PropertyValue::Null;
    for (name, a) in &block.attributes {
        let c = config.get(name).unwrap_or(&null);
        let p = prior.and_then(|m| m.get(name)).unwrap_or(&null);
        let v = if a.computed && matches!(c, PropertyValue::Null) {
            p.clone()
        } else {
            c.clone()
        };
        out.insert(name.clone(), v);
    }
    for (name, nb) in &block.blocks {
        let c = config.get(name).unwrap_or(&null);
        let p = prior.and_then(|m| m.get(name));
        let object = |cv: &PropertyValue, pv: Option<&PropertyValue>| match cv {
            PropertyValue::Object(cm) => {
                let pm = match pv {
                    Some(PropertyValue::Object(pm)) => Some(pm),
                    _ => None,
                };
                PropertyValue::Object(proposed_new(&nb.block, pm, cm))
            }
            other => other.clone(),
        };
        let v = match (nb.nesting, c) {
            (Nesting::Single | Nesting::Group, cv) => object(cv, p),
            (Nesting::List, PropertyValue::Array(items)) => PropertyValue::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, cv)| {
                        let pv = match p {
                            Some(PropertyValue::Array(pa)) => pa.get(i),
                            _ => None,
                        };
                        object(cv, pv)
                    })
                    .collect(),
            ),
            (Nesting::Set, PropertyValue::Array(items)) => {
                PropertyValue::Array(items.iter().map(|cv| object(cv, None)).collect())
            }
            (Nesting::Map, PropertyValue::Object(items)) => PropertyValue::Object(
                items
                    .iter()
                    .map(|(k, cv)| {
                        let pv = match p {
                            Some(PropertyValue::Object(pm)) => pm.get(k),
                            _ => None,
                        };
                        (k.clone(), object(cv, pv))
                    })
                    .collect(),
            ),
            (_, other) => other.clone(),
        };
        out.insert(name.clone(), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use converge_plugin::terraform::values::CtyType;

    use super::*;
    use crate::schema::Attribute;

    fn attr(required: bool, optional: bool, computed: bool) -> Attribute {
        Attribute {
            ty: CtyType::String,
            required,
            optional,
            computed,
            sensitive: false,
        }
    }

    fn s(v: &str) -> PropertyValue {
        PropertyValue::from(v)
    }

    #[test]
    fn config_wins_and_computed_nulls_keep_the_prior_value() {
        let mut block = Block::default();
        block
            .attributes
            .insert("name".into(), attr(true, false, false));
        block
            .attributes
            .insert("note".into(), attr(false, true, true));
        block
            .attributes
            .insert("id".into(), attr(false, false, true));
        block
            .attributes
            .insert("label".into(), attr(false, true, false));
        let prior: PropertyMap = [
            ("name".into(), s("old")),
            ("note".into(), s("chosen")),
            ("id".into(), s("i-1")),
            ("label".into(), s("was")),
        ]
        .into();
        let config: PropertyMap = [("name".into(), s("new"))].into();
        let proposed = proposed_new(&block, Some(&prior), &config);
        assert_eq!(proposed["name"], s("new"));
        assert_eq!(proposed["note"], s("chosen"));
        assert_eq!(proposed["id"], s("i-1"));
        // Optional, not computed: removed from the config means null.
        assert_eq!(proposed["label"], PropertyValue::Null);
        let created = proposed_new(&block, None, &config);
        assert_eq!(created["id"], PropertyValue::Null);
    }
}

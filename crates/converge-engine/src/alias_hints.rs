//! A hint for an alias that names nothing: a new resource whose aliases
//! found no old state is created, and the old resource the alias was
//! meant for is deleted — a replacement of a real object that the
//! preview shows only as a create beside a delete. When an alias of such
//! a new resource is one slip away from the URN of a resource of its type
//! that this operation deletes, the new resource gets a warning naming
//! both, so the preview says what went wrong.

use std::collections::HashSet;

use converge_model::Urn;

use crate::deployment::Deployment;
use crate::events::Severity;

/// Warns on each new resource one of whose aliases is one slip away from
/// a URN in `deleted`.
pub(crate) fn warn<'a>(d: &Deployment, deleted: impl Iterator<Item = &'a Urn>) {
    let deleted: Vec<&Urn> = deleted.collect();
    if deleted.is_empty() {
        return;
    }
    let hints = {
        let p = d.progress();
        let found: HashSet<Urn> = p.renames().into_iter().map(|(_, to)| to).collect();
        let old: HashSet<&Urn> = d.base.resources.iter().map(|r| &r.urn).collect();
        let mut hints = Vec::new();
        for (urn, aliases) in p.aliased() {
            if found.contains(urn) || old.contains(urn) {
                continue;
            }
            let closest = aliases
                .iter()
                .flat_map(|alias| {
                    deleted
                        .iter()
                        .filter(|gone| gone.type_token() == urn.type_token())
                        .map(move |gone| (slips(alias, gone), alias, *gone))
                })
                .filter_map(|(n, alias, gone)| Some((n?, alias, gone)))
                .min_by_key(|(n, _, _)| *n);
            if let Some((_, alias, gone)) = closest {
                hints.push((
                    urn.clone(),
                    format!(
                        "its alias {alias} names no resource of the stack, so it is created \
                         anew while {gone}, of the same type, is deleted: if the alias meant \
                         that resource, correct it"
                    ),
                ));
            }
        }
        hints
    };
    for (urn, message) in hints {
        d.events.diagnostic(Severity::Warning, Some(&urn), message);
    }
}

/// How many edits turn `alias` into `gone`, if few enough to be a slip: at
/// most a third of `gone`'s name (at least one).
fn slips(alias: &Urn, gone: &Urn) -> Option<usize> {
    let n = strsim::osa_distance(alias.as_str(), gone.as_str());
    let limit = (gone.name().chars().count() / 3).max(1);
    (n <= limit).then_some(n)
}

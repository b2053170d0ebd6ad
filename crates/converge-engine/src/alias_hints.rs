//! A hint for an alias that names nothing: a new resource whose aliases
//! found no old state is created, and the old resource the alias was
//! meant for is deleted — a replacement of a real object that the
//! preview shows only as a create beside a delete. When an alias of such
//! a new resource is one slip away from the URN of a resource of its type
//! that this operation deletes, the new resource gets a warning naming
//! both, so the preview says what went wrong.
//!
//! The hint is advice, so its cost is bounded: deleted URNs are grouped by
//! type once, a pair whose lengths differ by more than a slip is never
//! compared, a comparison sees only what lies between the pair's common
//! prefix and suffix (for URNs of one type, about the names), and an
//! operation makes at most [`COMPARISONS`] comparisons. A refactor that
//! creates and deletes thousands of resources of one type with unrelated
//! aliases stops looking after that many and says so in a debug message.

use std::collections::{HashMap, HashSet};

use converge_model::Urn;

use crate::deployment::Deployment;
use crate::events::Severity;

/// The most alias–URN comparisons one operation makes for its hints.
pub(crate) const COMPARISONS: usize = 50_000;

/// Warns on each new resource one of whose aliases is one slip away from
/// a URN in `deleted`.
pub(crate) fn warn<'a>(d: &Deployment, deleted: impl Iterator<Item = &'a Urn>) {
    let mut by_type: HashMap<&str, Vec<&Urn>> = HashMap::new();
    for urn in deleted {
        by_type.entry(urn.type_token()).or_default().push(urn);
    }
    if by_type.is_empty() {
        return;
    }
    let hints = {
        let p = d.progress();
        let found: HashSet<Urn> = p.renames().into_iter().map(|(_, to)| to).collect();
        let old: HashSet<&Urn> = d.base.resources.iter().map(|r| &r.urn).collect();
        let mut budget = Budget::new(COMPARISONS);
        let mut hints = Vec::new();
        for (urn, aliases) in p.aliased() {
            if found.contains(urn) || old.contains(urn) {
                continue;
            }
            let Some(gone) = by_type.get(urn.type_token()) else {
                continue;
            };
            if let Some((alias, gone)) = closest(aliases, gone, &mut budget) {
                hints.push((
                    Some(urn.clone()),
                    format!(
                        "its alias {alias} names no resource of the stack, so it is created \
                         anew while {gone}, of the same type, is deleted: if the alias meant \
                         that resource, correct it"
                    ),
                ));
            }
            if budget.spent() {
                break;
            }
        }
        if budget.spent() {
            hints.push((
                None,
                format!(
                    "stopped looking for misspelled aliases after {COMPARISONS} comparisons: \
                     too many new resources beside deleted ones"
                ),
            ));
        }
        hints
    };
    for (urn, message) in hints {
        let severity = if urn.is_some() {
            Severity::Warning
        } else {
            Severity::Debug
        };
        d.events.diagnostic(severity, urn.as_ref(), message);
    }
}

/// Comparisons left to make.
struct Budget {
    left: usize,
}

impl Budget {
    fn new(comparisons: usize) -> Self {
        Self { left: comparisons }
    }

    /// Takes one comparison, if any is left.
    fn take(&mut self) -> bool {
        let ok = self.left > 0;
        self.left = self.left.saturating_sub(1);
        ok
    }

    fn spent(&self) -> bool {
        self.left == 0
    }
}

/// The alias and deleted URN closest to each other, if one is a slip away
/// from the other, within `budget`.
fn closest<'a>(
    aliases: &'a [Urn],
    gone: &[&'a Urn],
    budget: &mut Budget,
) -> Option<(&'a Urn, &'a Urn)> {
    let mut best: Option<(usize, &Urn, &Urn)> = None;
    for alias in aliases {
        for &g in gone {
            let limit = slip_limit(g);
            if alias.as_str().len().abs_diff(g.as_str().len()) > limit {
                continue;
            }
            if !budget.take() {
                return best.map(|(_, a, g)| (a, g));
            }
            let n = distance(alias.as_str(), g.as_str());
            if n <= limit && best.is_none_or(|(m, _, _)| n < m) {
                best = Some((n, alias, g));
            }
        }
    }
    best.map(|(_, a, g)| (a, g))
}

/// The most edits that are still a slip in a URN named `gone`: a third of
/// its name, at least one.
fn slip_limit(gone: &Urn) -> usize {
    (gone.name().chars().count() / 3).max(1)
}

/// The edits (with transpositions) that turn `a` into `b`, computed on
/// what lies between their common prefix and suffix.
fn distance(a: &str, b: &str) -> usize {
    let prefix: usize = a
        .char_indices()
        .zip(b.chars())
        .take_while(|((_, x), y)| x == y)
        .map(|((_, x), _)| x.len_utf8())
        .sum();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix: usize = a
        .chars()
        .rev()
        .zip(b.chars().rev())
        .take_while(|(x, y)| x == y)
        .map(|(x, _)| x.len_utf8())
        .sum();
    strsim::osa_distance(&a[..a.len() - suffix], &b[..b.len() - suffix])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urn(name: &str) -> Urn {
        Urn::parse(&format!(
            "urn:pulumi:dev::app::random:index/randomPet:RandomPet::{name}"
        ))
        .unwrap()
    }

    #[test]
    fn trimming_the_common_ends_keeps_the_distance() {
        for (a, b) in [
            ("database", "databsae"),
            ("web-01", "web-10"),
            ("aaab", "aab"),
            ("abcabc", "abc"),
            ("x", "y"),
            ("same", "same"),
            ("é-db", "e-db"),
        ] {
            assert_eq!(distance(a, b), strsim::osa_distance(a, b), "{a} / {b}");
        }
    }

    proptest::proptest! {
        #[test]
        fn trimming_never_changes_the_distance(a in "[abé-]{0,8}", b in "[abé-]{0,8}") {
            proptest::prop_assert_eq!(distance(&a, &b), strsim::osa_distance(&a, &b));
        }
    }

    #[test]
    fn the_closest_slip_is_found() {
        let aliases = vec![urn("databsae"), urn("cache")];
        let gone = [urn("web"), urn("database"), urn("databases")];
        let gone: Vec<&Urn> = gone.iter().collect();
        let (alias, found) = closest(&aliases, &gone, &mut Budget::new(COMPARISONS)).unwrap();
        assert_eq!((alias.name(), found.name()), ("databsae", "database"));
    }

    #[test]
    fn many_unrelated_aliases_stop_at_the_budget() {
        let aliases: Vec<Urn> = (0..1_000).map(|i| urn(&format!("old-{i:05}"))).collect();
        let gone: Vec<Urn> = (0..1_000).map(|i| urn(&format!("new-{i:05}"))).collect();
        let gone: Vec<&Urn> = gone.iter().collect();
        let mut budget = Budget::new(COMPARISONS);
        let mut made = 0;
        for alias in &aliases {
            let before = budget.left;
            closest(std::slice::from_ref(alias), &gone, &mut budget);
            made += before - budget.left;
            if budget.spent() {
                break;
            }
        }
        assert_eq!(made, COMPARISONS);
        assert!(budget.spent());
    }

    #[test]
    fn urns_of_very_different_lengths_are_not_compared() {
        let aliases = vec![urn("a")];
        let gone = [urn("a-very-long-resource-name")];
        let gone: Vec<&Urn> = gone.iter().collect();
        let mut budget = Budget::new(10);
        assert!(closest(&aliases, &gone, &mut budget).is_none());
        assert_eq!(budget.left, 10);
    }
}

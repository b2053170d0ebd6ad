//! Value rules (seeds 003/004): known planned values must hold and
//! unknowns may become anything (the second plan against the first, the
//! new state against the planned one); the new state is wholly known; the
//! planned state fills in only computed values.

use std::collections::BTreeSet;

use converge_model::{PathElement, PropertyMap, PropertyPath, PropertyValue};

/// A value broke a rule; names the property path. Values are shown short,
/// secrets as `[secret]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueViolation {
    #[error("{path}: planned {planned}, but got {actual}")]
    Changed {
        path: PropertyPath,
        planned: String,
        actual: String,
    },
    #[error("{path}: planned {planned}, but it is absent")]
    Missing { path: PropertyPath, planned: String },
    #[error("{path}: not in the plan, but got {actual}")]
    Unplanned { path: PropertyPath, actual: String },
    #[error("{path}: still unknown in the new state")]
    Unknown { path: PropertyPath },
    #[error(
        "{path}: the planned state sets {planned}, which is neither the configuration's value nor a computed one"
    )]
    NotComputed { path: PropertyPath, planned: String },
}

impl ValueViolation {
    pub fn path(&self) -> &PropertyPath {
        match self {
            ValueViolation::Changed { path, .. }
            | ValueViolation::Missing { path, .. }
            | ValueViolation::Unplanned { path, .. }
            | ValueViolation::Unknown { path }
            | ValueViolation::NotComputed { path, .. } => path,
        }
    }
}

/// Whether a key on one side only is a violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRule {
    Allowed,
    Violation,
}

/// How [`check_known_values`] treats keys present on one side only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compare {
    /// A known planned key the actual value lacks.
    pub missing: KeyRule,
    /// An actual key the plan lacks (a null one is never a violation).
    pub unplanned: KeyRule,
}

impl Compare {
    /// Every attribute planned and nothing else (seed 003's apply rule,
    /// with a schema's full objects).
    pub const EXACT: Compare = Compare {
        missing: KeyRule::Violation,
        unplanned: KeyRule::Violation,
    };
    /// Only the keys both sides have (outputs of providers without a
    /// schema, whose planned state is partial).
    pub const SHARED: Compare = Compare {
        missing: KeyRule::Allowed,
        unplanned: KeyRule::Allowed,
    };
}

fn bare(v: &PropertyValue) -> &PropertyValue {
    v.unwrapped()
}

fn is_secret(v: &PropertyValue) -> bool {
    v.is_secret()
}

/// A short rendering for messages: never a secret's text.
pub(crate) fn show(v: &PropertyValue) -> String {
    if is_secret(v) {
        return "[secret]".to_owned();
    }
    match bare(v) {
        PropertyValue::Null => "null".to_owned(),
        PropertyValue::Bool(b) => b.to_string(),
        PropertyValue::Number(n) => n.to_string(),
        PropertyValue::String(s) if s.chars().count() > 60 => {
            format!("{:?}…", s.chars().take(60).collect::<String>())
        }
        PropertyValue::String(s) => format!("{s:?}"),
        PropertyValue::Array(a) => format!("an array of {}", a.len()),
        PropertyValue::Object(m) => format!("an object of {} keys", m.len()),
        PropertyValue::Unknown => "an unknown value".to_owned(),
        other => other.kind_name().to_owned(),
    }
}

fn child(path: &PropertyPath, element: PathElement) -> PropertyPath {
    let mut elements = path.elements().to_vec();
    elements.push(element);
    PropertyPath::new(elements)
}

fn key(path: &PropertyPath, k: &str) -> PropertyPath {
    child(path, PathElement::Key(k.to_owned()))
}

/// Every known value of `planned` holds in `actual`; an unknown planned
/// value accepts anything (including absence). Keys on one side only
/// follow `compare`.
pub fn check_known_values(
    planned: &PropertyMap,
    actual: &PropertyMap,
    compare: Compare,
) -> Vec<ValueViolation> {
    let mut out = Vec::new();
    maps(&PropertyPath::default(), planned, actual, compare, &mut out);
    out
}

fn maps(
    path: &PropertyPath,
    planned: &PropertyMap,
    actual: &PropertyMap,
    compare: Compare,
    out: &mut Vec<ValueViolation>,
) {
    for (k, p) in planned {
        let here = key(path, k);
        match actual.get(k) {
            Some(a) => values(&here, p, a, compare, out),
            None => {
                let known = !matches!(bare(p), PropertyValue::Unknown | PropertyValue::Null);
                if known && compare.missing == KeyRule::Violation {
                    out.push(ValueViolation::Missing {
                        path: here,
                        planned: show(p),
                    });
                }
            }
        }
    }
    if compare.unplanned == KeyRule::Violation {
        for (k, a) in actual {
            if !planned.contains_key(k) && !matches!(bare(a), PropertyValue::Null) {
                out.push(ValueViolation::Unplanned {
                    path: key(path, k),
                    actual: show(a),
                });
            }
        }
    }
}

fn values(
    path: &PropertyPath,
    planned: &PropertyValue,
    actual: &PropertyValue,
    compare: Compare,
    out: &mut Vec<ValueViolation>,
) {
    match (bare(planned), bare(actual)) {
        (PropertyValue::Unknown, _) => {}
        (PropertyValue::Object(p), PropertyValue::Object(a)) => maps(path, p, a, compare, out),
        (PropertyValue::Array(p), PropertyValue::Array(a)) if p.len() == a.len() => {
            for (i, (pv, av)) in p.iter().zip(a).enumerate() {
                values(&child(path, PathElement::Index(i)), pv, av, compare, out);
            }
        }
        (p, a) if p == a => {}
        _ => out.push(ValueViolation::Changed {
            path: path.clone(),
            planned: show(planned),
            actual: show(actual),
        }),
    }
}

/// The new state must be wholly known: every unknown is named.
pub fn check_wholly_known(state: &PropertyMap) -> Vec<ValueViolation> {
    fn walk(path: &PropertyPath, v: &PropertyValue, out: &mut Vec<ValueViolation>) {
        match bare(v) {
            PropertyValue::Unknown => out.push(ValueViolation::Unknown { path: path.clone() }),
            PropertyValue::Object(m) => {
                for (k, v) in m {
                    walk(&key(path, k), v, out);
                }
            }
            PropertyValue::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(&child(path, PathElement::Index(i)), v, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (k, v) in state {
        walk(&key(&PropertyPath::default(), k), v, &mut out);
    }
    out
}

/// The planned state may fill in only computed values (seed 003,
/// PlanResourceChange): an attribute the configuration sets keeps the
/// configuration's value (or the prior state's, for a change that is not
/// significant); one it leaves null may be set only if `is_computed` says
/// the schema computes it. Nested objects are checked attribute by
/// attribute.
pub fn planned_fills_only_computed(
    config: &PropertyMap,
    prior: Option<&PropertyMap>,
    planned: &PropertyMap,
    is_computed: &dyn Fn(&PropertyPath) -> bool,
) -> Vec<ValueViolation> {
    let mut out = Vec::new();
    fill(
        &PropertyPath::default(),
        config,
        prior,
        planned,
        is_computed,
        &mut out,
    );
    out
}

fn fill(
    path: &PropertyPath,
    config: &PropertyMap,
    prior: Option<&PropertyMap>,
    planned: &PropertyMap,
    is_computed: &dyn Fn(&PropertyPath) -> bool,
    out: &mut Vec<ValueViolation>,
) {
    let keys: BTreeSet<&String> = config.keys().chain(planned.keys()).collect();
    let null = PropertyValue::Null;
    for k in keys {
        let here = key(path, k);
        let c = config.get(k).unwrap_or(&null);
        let p = planned.get(k).unwrap_or(&null);
        let before = prior.and_then(|m| m.get(k));
        match (bare(c), bare(p)) {
            // The configuration is not known yet: anything may follow.
            (PropertyValue::Unknown, _) => {}
            (PropertyValue::Null, PropertyValue::Null) => {}
            (PropertyValue::Null, _) => {
                if !is_computed(&here) {
                    out.push(ValueViolation::NotComputed {
                        path: here,
                        planned: show(p),
                    });
                }
            }
            (PropertyValue::Object(cm), PropertyValue::Object(pm)) => {
                let prior_map = before.and_then(|b| match bare(b) {
                    PropertyValue::Object(m) => Some(m),
                    _ => None,
                });
                fill(&here, cm, prior_map, pm, is_computed, out);
            }
            (cv, pv) => {
                let kept_prior = before.is_some_and(|b| bare(b) == pv);
                if cv != pv && !kept_prior {
                    out.push(ValueViolation::Changed {
                        path: here,
                        planned: show(c),
                        actual: show(p),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, PropertyValue)]) -> PropertyMap {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    fn s(v: &str) -> PropertyValue {
        PropertyValue::from(v)
    }

    fn paths(v: &[ValueViolation]) -> Vec<String> {
        v.iter().map(|x| x.path().to_string()).collect()
    }

    #[test]
    fn known_planned_values_must_hold_and_unknowns_may_be_anything() {
        let planned = m(&[
            ("name", s("a")),
            ("id", PropertyValue::Unknown),
            (
                "nested",
                PropertyValue::Object(m(&[("x", s("1")), ("y", PropertyValue::Unknown)])),
            ),
        ]);
        let holds = m(&[
            ("name", s("a")),
            ("id", s("i-123")),
            (
                "nested",
                PropertyValue::Object(m(&[("x", s("1")), ("y", s("anything"))])),
            ),
        ]);
        assert_eq!(check_known_values(&planned, &holds, Compare::EXACT), vec![]);
        let broken = m(&[
            ("name", s("b")),
            ("id", s("i-123")),
            ("nested", PropertyValue::Object(m(&[("x", s("2"))]))),
        ]);
        let v = check_known_values(&planned, &broken, Compare::EXACT);
        assert_eq!(paths(&v), vec!["name", "nested.x"]);
        assert!(
            v[0].to_string().contains("planned \"a\", but got \"b\""),
            "{}",
            v[0]
        );
    }

    #[test]
    fn missing_and_unplanned_keys_follow_the_comparison() {
        let planned = m(&[("a", s("1")), ("later", PropertyValue::Unknown)]);
        let actual = m(&[("b", s("2")), ("nothing", PropertyValue::Null)]);
        let exact = check_known_values(&planned, &actual, Compare::EXACT);
        assert_eq!(paths(&exact), vec!["a", "b"]);
        assert!(matches!(exact[0], ValueViolation::Missing { .. }));
        assert!(matches!(exact[1], ValueViolation::Unplanned { .. }));
        assert_eq!(
            check_known_values(&planned, &actual, Compare::SHARED),
            vec![]
        );
    }

    #[test]
    fn arrays_compare_by_element_and_length() {
        let planned = m(&[(
            "list",
            PropertyValue::Array(vec![s("a"), PropertyValue::Unknown]),
        )]);
        let same_len = m(&[("list", PropertyValue::Array(vec![s("x"), s("b")]))]);
        assert_eq!(
            paths(&check_known_values(&planned, &same_len, Compare::EXACT)),
            vec!["list[0]"]
        );
        let longer = m(&[("list", PropertyValue::Array(vec![s("a"), s("b"), s("c")]))]);
        assert_eq!(
            paths(&check_known_values(&planned, &longer, Compare::EXACT)),
            vec!["list"]
        );
    }

    #[test]
    fn secrets_compare_by_value_and_never_show_it() {
        let planned = m(&[("pw", PropertyValue::secret(s("hunter2")))]);
        let same = m(&[("pw", PropertyValue::secret(s("hunter2")))]);
        assert_eq!(check_known_values(&planned, &same, Compare::EXACT), vec![]);
        let other = m(&[("pw", PropertyValue::secret(s("swordfish")))]);
        let v = check_known_values(&planned, &other, Compare::EXACT);
        let text = v[0].to_string();
        assert!(text.contains("[secret]"), "{text}");
        assert!(
            !text.contains("hunter2") && !text.contains("swordfish"),
            "{text}"
        );
    }

    #[test]
    fn the_new_state_must_be_wholly_known() {
        let known = m(&[("a", PropertyValue::Array(vec![s("x")]))]);
        assert_eq!(check_wholly_known(&known), vec![]);
        let partial = m(&[
            ("a", PropertyValue::Array(vec![PropertyValue::Unknown])),
            (
                "b",
                PropertyValue::Object(m(&[("c", PropertyValue::Unknown)])),
            ),
        ]);
        assert_eq!(paths(&check_wholly_known(&partial)), vec!["a[0]", "b.c"]);
    }

    #[test]
    fn the_planned_state_fills_in_only_computed_values() {
        let computed = |p: &PropertyPath| p.to_string() == "arn";
        let config = m(&[("name", s("web")), ("size", PropertyValue::Null)]);
        let fine = m(&[
            ("name", s("web")),
            ("arn", PropertyValue::Unknown),
            ("size", PropertyValue::Null),
        ]);
        assert_eq!(
            planned_fills_only_computed(&config, None, &fine, &computed),
            vec![]
        );
        let known_computed = m(&[("name", s("web")), ("arn", s("arn:1"))]);
        assert_eq!(
            planned_fills_only_computed(&config, None, &known_computed, &computed),
            vec![]
        );
        let bad = m(&[("name", s("WEB")), ("size", s("large"))]);
        let v = planned_fills_only_computed(&config, None, &bad, &computed);
        assert_eq!(paths(&v), vec!["name", "size"]);
        assert!(matches!(v[1], ValueViolation::NotComputed { .. }));
    }

    #[test]
    fn the_planned_state_may_keep_the_prior_value_of_a_configured_attribute() {
        let never = |_: &PropertyPath| false;
        let config = m(&[("policy", s("{\"a\": 1}"))]);
        let prior = m(&[("policy", s("{\"a\":1}"))]);
        let planned = m(&[("policy", s("{\"a\":1}"))]);
        assert_eq!(
            planned_fills_only_computed(&config, Some(&prior), &planned, &never),
            vec![]
        );
        assert_eq!(
            paths(&planned_fills_only_computed(
                &config, None, &planned, &never
            )),
            vec!["policy"]
        );
    }

    #[test]
    fn an_unknown_configuration_value_accepts_any_plan() {
        let never = |_: &PropertyPath| false;
        let config = m(&[("name", PropertyValue::Unknown)]);
        let planned = m(&[("name", s("whatever"))]);
        assert_eq!(
            planned_fills_only_computed(&config, None, &planned, &never),
            vec![]
        );
    }
}

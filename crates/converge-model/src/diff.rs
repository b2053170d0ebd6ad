//! Detailed diffs (seed 001, "Detailed Diffs"): a map from [`PropertyPath`]s
//! to the kind of change at each, as providers return them and as the engine
//! computes them when a provider does not.
//!
//! A detailed diff is a `BTreeMap<PropertyPath, PropertyDiff>`: keyed by the
//! parsed path rather than its printed form, so that entries sort by
//! structure (`l[2]` before `l[10]`, a path before the paths inside it) and
//! patterns such as `ignoreChanges` entries match against elements, not text.

use std::collections::BTreeMap;

use crate::path::{peel, PathElement, PropertyPath};
use crate::{PropertyMap, PropertyValue};

/// How one property differs, and whether the change forces a replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiffKind {
    Add,
    AddReplace,
    Delete,
    DeleteReplace,
    Update,
    UpdateReplace,
}

impl DiffKind {
    pub fn is_replace(self) -> bool {
        matches!(
            self,
            DiffKind::AddReplace | DiffKind::DeleteReplace | DiffKind::UpdateReplace
        )
    }

    /// The same change, requiring replacement.
    pub fn with_replace(self) -> Self {
        match self {
            DiffKind::Add | DiffKind::AddReplace => DiffKind::AddReplace,
            DiffKind::Delete | DiffKind::DeleteReplace => DiffKind::DeleteReplace,
            DiffKind::Update | DiffKind::UpdateReplace => DiffKind::UpdateReplace,
        }
    }
}

/// One entry of a detailed diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PropertyDiff {
    pub kind: DiffKind,
    /// True if the old value was read from the resource's old inputs, false
    /// if from its old outputs (state).
    pub input_diff: bool,
}

/// The most specific paths at which `new` differs from `old`.
///
/// - A key present (and not null) on one side only is an `Add` or `Delete`:
///   a null value counts as absent, as in Pulumi.
/// - Objects are compared key by key and arrays index by index; extra
///   elements are `Add`s or `Delete`s at their index.
/// - Anything else that differs is an `Update` at its path, including a
///   change of type, a value becoming or ceasing to be secret, and an unknown
///   on either side (two unknowns are the same).
/// - Secrets and known outputs are compared by what they hold (so the paths
///   go inside them); an output's dependencies are not part of its value.
/// - Numbers compare by value, NaN equal to NaN, so that a value never
///   differs from itself.
///
/// Every entry has `input_diff: false`: this function does not know where
/// `old` came from, and a caller diffing old inputs sets the flag.
pub fn diff_objects(old: &PropertyMap, new: &PropertyMap) -> BTreeMap<PropertyPath, PropertyDiff> {
    let mut differ = Differ::default();
    differ.maps(old, new);
    differ.out
}

#[derive(Default)]
struct Differ {
    at: Vec<PathElement>,
    out: BTreeMap<PropertyPath, PropertyDiff>,
}

impl Differ {
    fn record(&mut self, kind: DiffKind) {
        let diff = PropertyDiff {
            kind,
            input_diff: false,
        };
        self.out.insert(PropertyPath::new(self.at.clone()), diff);
    }

    fn at(
        &mut self,
        element: PathElement,
        old: Option<&PropertyValue>,
        new: Option<&PropertyValue>,
    ) {
        self.at.push(element);
        match (old, new) {
            (Some(old), Some(new)) => self.values(old, new),
            (Some(_), None) => self.record(DiffKind::Delete),
            (None, Some(_)) => self.record(DiffKind::Add),
            (None, None) => {}
        }
        self.at.pop();
    }

    fn maps(&mut self, old: &PropertyMap, new: &PropertyMap) {
        let present = |v: &&PropertyValue| !matches!(v, PropertyValue::Null);
        let added = new.keys().filter(|k| !old.contains_key(*k));
        for k in old.keys().chain(added) {
            let (o, n) = (old.get(k).filter(present), new.get(k).filter(present));
            self.at(PathElement::Key(k.clone()), o, n);
        }
    }

    fn values(&mut self, old: &PropertyValue, new: &PropertyValue) {
        let (o, n) = (peel(old), peel(new));
        match (o.value, n.value) {
            (None, None) => {}
            (None, Some(_)) | (Some(_), None) => self.record(DiffKind::Update),
            (Some(_), Some(_)) if o.secret != n.secret => self.record(DiffKind::Update),
            (Some(PropertyValue::Object(a)), Some(PropertyValue::Object(b))) => self.maps(a, b),
            (Some(PropertyValue::Array(a)), Some(PropertyValue::Array(b))) => {
                for i in 0..a.len().max(b.len()) {
                    self.at(PathElement::Index(i), a.get(i), b.get(i));
                }
            }
            (Some(a), Some(b)) if same_leaf(a, b) => {}
            (Some(_), Some(_)) => self.record(DiffKind::Update),
        }
    }
}

/// Equality of two values that are neither wrappers nor containers.
fn same_leaf(a: &PropertyValue, b: &PropertyValue) -> bool {
    match (a, b) {
        (PropertyValue::Number(x), PropertyValue::Number(y)) => x == y || x.is_nan() && y.is_nan(),
        (PropertyValue::ResourceReference(x), PropertyValue::ResourceReference(y)) => {
            let same_id = match (&x.id, &y.id) {
                (Some(a), Some(b)) => {
                    let mut differ = Differ::default();
                    differ.values(a, b);
                    differ.out.is_empty()
                }
                (a, b) => a.is_none() && b.is_none(),
            };
            x.urn == y.urn && x.package_version == y.package_version && same_id
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{Asset, OutputValue, ResourceReference, Urn};
    use DiffKind::{Add, Delete, Update};
    use PropertyValue::{Array, Null, Number, Unknown};

    fn obj<const N: usize>(entries: [(&str, PropertyValue); N]) -> PropertyValue {
        PropertyValue::Object(map(entries))
    }

    fn map<const N: usize>(entries: [(&str, PropertyValue); N]) -> PropertyMap {
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    fn output(element: Option<PropertyValue>, secret: bool) -> PropertyValue {
        PropertyValue::Output(Box::new(OutputValue {
            element: element.map(Box::new),
            secret,
            dependencies: vec![Urn::parse("urn:pulumi:s::p::t:m:T::n").unwrap()],
        }))
    }

    /// Diffs `{v: old}` against `{v: new}` and compares the printed paths.
    fn check(old: PropertyValue, new: PropertyValue, expected: &[(&str, DiffKind)]) {
        let diff = diff_objects(&map([("v", old.clone())]), &map([("v", new.clone())]));
        let actual: Vec<(String, DiffKind)> =
            diff.iter().map(|(p, d)| (p.to_string(), d.kind)).collect();
        let expected: Vec<(String, DiffKind)> =
            expected.iter().map(|(p, k)| (p.to_string(), *k)).collect();
        assert_eq!(actual, expected, "old: {old:?}\nnew: {new:?}");
        assert!(diff.values().all(|d| !d.input_diff));
    }

    #[test]
    fn objects_are_diffed_key_by_key() {
        let old = obj([("a", 1.0.into()), ("b", "x".into()), ("n", Null)]);
        let new = obj([
            ("a", 2.0.into()),
            ("c", true.into()),
            ("n", Null),
            ("m", Null),
        ]);
        check(old.clone(), old.clone(), &[]);
        check(old, new, &[("v.a", Update), ("v.b", Delete), ("v.c", Add)]);
        check(Null, 1.0.into(), &[("v", Add)]);
        check(1.0.into(), Null, &[("v", Delete)]);
        let nested = |x: f64| obj([("a", obj([("b", x.into()), ("c", "k".into())]))]);
        check(nested(1.0), nested(2.0), &[("v.a.b", Update)]);
        let dotted = |x: f64| obj([("kubernetes.io/role", x.into())]);
        check(
            dotted(1.0),
            dotted(2.0),
            &[(r#"v["kubernetes.io/role"]"#, Update)],
        );
    }

    #[test]
    fn arrays_are_diffed_index_by_index() {
        let nums = |xs: &[f64]| Array(xs.iter().map(|x| Number(*x)).collect());
        check(
            nums(&[1.0, 2.0, 3.0]),
            nums(&[1.0, 5.0]),
            &[("v[1]", Update), ("v[2]", Delete)],
        );
        check(nums(&[1.0]), nums(&[1.0, 2.0]), &[("v[1]", Add)]);
        check(Array(vec![]), Array(vec![Null]), &[("v[0]", Add)]);
        check(Array(vec![Null]), nums(&[1.0]), &[("v[0]", Update)]);
        let items = |n: f64| Array(vec![obj([("n", 0.0.into())]), obj([("n", n.into())])]);
        check(items(0.0), items(1.0), &[("v[1].n", Update)]);
        let long: Vec<f64> = (0..11).map(f64::from).collect();
        let mut changed = long.clone();
        changed[2] = 20.0;
        changed[10] = 100.0;
        check(
            nums(&long),
            nums(&changed),
            &[("v[2]", Update), ("v[10]", Update)],
        );
    }

    #[test]
    fn a_change_of_type_is_an_update_where_it_happens() {
        check(obj([("a", 1.0.into())]), "a".into(), &[("v", Update)]);
        check(Array(vec![]), obj([]), &[("v", Update)]);
        check(1.0.into(), "1".into(), &[("v", Update)]);
        check(
            obj([("a", Array(vec![]))]),
            obj([("a", obj([]))]),
            &[("v.a", Update)],
        );
    }

    #[test]
    fn secrets_compare_by_content_and_secretness() {
        let s = PropertyValue::secret;
        check(s(1.0.into()), s(1.0.into()), &[]);
        check(s(1.0.into()), s(2.0.into()), &[("v", Update)]);
        check(1.0.into(), s(1.0.into()), &[("v", Update)]);
        check(s(1.0.into()), 1.0.into(), &[("v", Update)]);
        let inner = |x: f64| s(obj([("x", x.into()), ("y", 1.0.into())]));
        check(inner(1.0), inner(2.0), &[("v.x", Update)]);
        check(s(s(1.0.into())), s(1.0.into()), &[]);
    }

    #[test]
    fn unknowns_and_outputs() {
        check(1.0.into(), Unknown, &[("v", Update)]);
        check(Unknown, Unknown, &[]);
        check(output(None, false), Unknown, &[]);
        check(
            obj([("a", 1.0.into())]),
            output(None, false),
            &[("v", Update)],
        );
        check(output(Some(1.0.into()), false), 1.0.into(), &[]);
        let secret_one = PropertyValue::secret(1.0.into());
        check(output(Some(1.0.into()), true), secret_one, &[]);
        check(output(Some(1.0.into()), true), 1.0.into(), &[("v", Update)]);
        let inside = |x: f64| output(Some(obj([("x", x.into())])), false);
        check(inside(1.0), inside(2.0), &[("v.x", Update)]);
    }

    #[test]
    fn leaves_compare_by_value() {
        check(Number(f64::NAN), Number(f64::NAN), &[]);
        check(Number(0.0), Number(-0.0), &[]);
        let asset = |t: &str| PropertyValue::Asset(Box::new(Asset::from_text(t)));
        check(asset("a"), asset("a"), &[]);
        check(asset("a"), asset("b"), &[("v", Update)]);
        let reference = |id: PropertyValue| {
            PropertyValue::ResourceReference(Box::new(ResourceReference {
                urn: Urn::parse("urn:pulumi:s::p::t:m:T::n").unwrap(),
                id: Some(Box::new(id)),
                package_version: "1.0.0".into(),
            }))
        };
        check(
            reference(Number(f64::NAN)),
            reference(Number(f64::NAN)),
            &[],
        );
        check(
            reference("a".into()),
            reference("b".into()),
            &[("v", Update)],
        );
    }

    #[test]
    fn replace_variants() {
        for (kind, replace) in [
            (Add, DiffKind::AddReplace),
            (Delete, DiffKind::DeleteReplace),
            (Update, DiffKind::UpdateReplace),
        ] {
            assert!(!kind.is_replace() && replace.is_replace());
            assert_eq!(
                (kind.with_replace(), replace.with_replace()),
                (replace, replace)
            );
        }
    }

    fn value() -> impl Strategy<Value = PropertyValue> {
        let leaf = prop_oneof![
            Just(Null),
            Just(Unknown),
            any::<bool>().prop_map(PropertyValue::Bool),
            prop::sample::select(vec![0.0, -0.0, 1.0, f64::NAN]).prop_map(Number),
            "[ab]".prop_map(PropertyValue::String),
            "[ab]".prop_map(|t| PropertyValue::Asset(Box::new(Asset::from_text(t)))),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Array),
                prop::collection::btree_map("[a-c]", inner.clone(), 0..4)
                    .prop_map(|m| PropertyValue::Object(m.into())),
                inner.clone().prop_map(PropertyValue::secret),
                (prop::option::of(inner), any::<bool>()).prop_map(|(e, s)| output(e, s)),
            ]
        })
    }

    fn property_map() -> impl Strategy<Value = PropertyMap> {
        prop::collection::btree_map("[a-c]", value(), 0..4).prop_map(PropertyMap::from)
    }

    proptest! {
        #[test]
        fn a_map_does_not_differ_from_itself(m in property_map()) {
            prop_assert!(diff_objects(&m, &m).is_empty());
        }

        #[test]
        fn reported_paths_exist_and_are_most_specific(
            old in property_map(),
            new in property_map(),
        ) {
            let diff = diff_objects(&old, &new);
            // Some(true): a value other than null; Some(false): null; None: nothing.
            let at = |m: &PropertyMap, p: &PropertyPath| p.get(m).map(|v| !matches!(v, Null));
            for (path, d) in &diff {
                let (o, n) = (at(&old, path), at(&new, path));
                // An array element is there or not; a null property counts as absent.
                let ok = match (d.kind, path.elements().last()) {
                    (Add, Some(PathElement::Index(_))) => o.is_none() && n.is_some(),
                    (Delete, Some(PathElement::Index(_))) => o.is_some() && n.is_none(),
                    (Add, _) => o != Some(true) && n == Some(true),
                    (Delete, _) => o == Some(true) && n != Some(true),
                    _ => o.is_some() && n.is_some(),
                };
                prop_assert!(ok, "{:?} at {}: {:?} -> {:?}", d.kind, path, o, n);
                for other in diff.keys() {
                    prop_assert!(other == path || !path.contains(other), "{} and {}", path, other);
                }
            }
        }
    }
}

use proptest::prelude::*;

use super::*;
use crate::OutputValue;
use PathElement::{Index, Key, Wildcard};

fn p(s: &str) -> PropertyPath {
    PropertyPath::parse(s).unwrap()
}

fn key(k: &str) -> PathElement {
    Key(k.to_owned())
}

fn obj<const N: usize>(entries: [(&str, PropertyValue); N]) -> PropertyValue {
    PropertyValue::Object(map(entries))
}

fn map<const N: usize>(entries: [(&str, PropertyValue); N]) -> PropertyMap {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

fn n(x: f64) -> PropertyValue {
    PropertyValue::Number(x)
}

#[test]
fn parses_pulumi_syntax_and_prints_it_canonically() {
    let cases = [
        ("a", "a"),
        (r#"a.b[0]["key.with.dots"]"#, r#"a.b[0]["key.with.dots"]"#),
        ("a[*]", "a[*]"),
        ("a.*", "a[*]"),
        ("*.x", "[*].x"),
        ("[0]", "[0]"),
        (r#"["k"]"#, "k"),
        (r#"a["b"].c"#, "a.b.c"),
        (r#"["quoted \" escapes"]"#, r#"["quoted \" escapes"]"#),
        (r#"["a\b"]"#, r#"["a\\b"]"#),
        (r#"["a\\b"]"#, r#"["a\\b"]"#),
        ("a.[0]", "a[0]"),
        ("a[007]", "a[7]"),
        ("a-b.c d", r#"["a-b"]["c d"]"#),
        ("a.0", "a.0"),
        (r#"["*"]"#, r#"["*"]"#),
        (r#"[""]"#, r#"[""]"#),
        (r#"x["]["]"#, r#"x["]["]"#),
    ];
    for (input, printed) in cases {
        assert_eq!(p(input).to_string(), printed, "{input}");
    }
    let path = p(r#"a.b[0]["key.with.dots"][*]"#);
    let expected = [key("a"), key("b"), Index(0), key("key.with.dots"), Wildcard];
    assert_eq!(path.elements(), expected);
    assert_eq!(p(r#"["*"]"#).elements(), [key("*")]);
    assert_eq!(p("*").elements(), [Wildcard]);
    assert!(p("a[*].b").has_wildcards() && !p("a[1].b").has_wildcards());
}

#[test]
fn malformed_paths_are_refused_with_a_column() {
    use PropertyPathErrorKind as K;
    let cases = [
        ("", 1, K::Empty),
        (".a", 1, K::LeadingDot),
        ("a.", 2, K::TrailingDot),
        ("a..b", 3, K::EmptyKey),
        ("a[0", 2, K::UnterminatedBracket),
        (r#"a["b"#, 3, K::UnterminatedQuote),
        (r#"a["b""#, 2, K::UnterminatedBracket),
        (r#"a["b"x]"#, 6, K::ExpectedClosingBracket),
        ("a[]", 3, K::BadIndex(String::new())),
        ("a[-1]", 3, K::BadIndex("-1".into())),
        ("a[b]", 3, K::BadIndex("b".into())),
        ("a[99999999999999999999999]", 3, K::BadIndex("9".repeat(23))),
        ("a[0]b", 5, K::UnexpectedCharacter('b')),
        ("a]", 2, K::UnexpectedCharacter(']')),
        (r#"a"b"#, 2, K::UnexpectedCharacter('"')),
    ];
    for (input, column, kind) in cases {
        let err = PropertyPath::parse(input).unwrap_err();
        assert_eq!((err.column, &err.kind), (column, &kind), "{input:?}");
    }
    let err = PropertyPath::parse("tags..name").unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"invalid property path "tags..name" at column 6: empty property name between two '.'"#
    );
}

#[test]
fn wildcards_match_keys_and_indices() {
    let cases = [
        ("a", "a", true, true),
        ("a", "a.b", false, true),
        ("a.b", "a", false, false),
        ("a[*]", "a[3]", true, true),
        ("a[*]", "a.x", true, true),
        ("a.*.c", "a.b.c.d", false, true),
        ("[*]", "anything[0]", false, true),
        ("a[0]", "a[1]", false, false),
        ("a[0]", r#"a["0"]"#, false, false),
        (r#"a["*"]"#, "a.x", false, false),
        ("a.x", "a[*]", false, false),
    ];
    for (pattern, path, matches, contains) in cases {
        let (pattern, path) = (p(pattern), p(path));
        assert_eq!(pattern.matches(&path), matches, "{pattern} matches {path}");
        assert_eq!(
            pattern.contains(&path),
            contains,
            "{pattern} contains {path}"
        );
    }
}

fn sample() -> PropertyMap {
    map([
        (
            "a",
            obj([("b", PropertyValue::Array(vec![n(1.0), n(2.0)]))]),
        ),
        ("s", PropertyValue::secret(obj([("x", n(3.0))]))),
        (
            "o",
            PropertyValue::Output(Box::new(OutputValue {
                element: Some(Box::new(obj([("y", n(4.0))]))),
                ..OutputValue::default()
            })),
        ),
        ("u", PropertyValue::Output(Box::default())),
        ("z", PropertyValue::Null),
    ])
}

#[test]
fn get_enters_secrets_and_outputs() {
    let m = sample();
    let cases = [
        ("a.b[1]", Some(n(2.0))),
        ("s.x", Some(n(3.0))),
        ("o.y", Some(n(4.0))),
        ("a.b[2]", None),
        ("a.b.c", None),
        ("a[0]", None),
        ("u.k", None),
        ("a.b[*]", None),
        ("missing", None),
        ("z", Some(PropertyValue::Null)),
    ];
    for (path, expected) in cases {
        assert_eq!(p(path).get(&m).cloned(), expected, "{path}");
    }
    assert!(matches!(p("s").get(&m), Some(PropertyValue::Secret(_))));
    assert_eq!(PropertyPath::new(vec![Index(0)]).get(&m), None);
    let array = PropertyValue::Array(vec![n(7.0)]);
    assert_eq!(p("[0]").get_value(&array), Some(&n(7.0)));
    assert_eq!(PropertyPath::default().get_value(&array), Some(&array));
}

#[test]
fn set_creates_what_is_missing() {
    let mut m = sample();
    p("new.deep[2].k").set(&mut m, n(9.0)).unwrap();
    let created = PropertyValue::Array(vec![
        PropertyValue::Null,
        PropertyValue::Null,
        obj([("k", n(9.0))]),
    ]);
    assert_eq!(m["new"], obj([("deep", created)]));
    p("a.b[3]").set(&mut m, n(5.0)).unwrap();
    assert_eq!(
        p("a.b").get(&m),
        Some(&PropertyValue::Array(vec![
            n(1.0),
            n(2.0),
            PropertyValue::Null,
            n(5.0)
        ]))
    );
    p("s.x").set(&mut m, n(6.0)).unwrap();
    assert_eq!(m["s"], PropertyValue::secret(obj([("x", n(6.0))])));
    p("z.w").set(&mut m, n(7.0)).unwrap();
    assert_eq!(m["z"], obj([("w", n(7.0))]));
    p("a").set(&mut m, n(8.0)).unwrap();
    assert_eq!(m["a"], n(8.0));
}

#[test]
fn set_refuses_type_mismatches_and_changes_nothing() {
    let mut m = sample();
    let before = m.clone();
    let err = p("a.b.c.d").set(&mut m, n(1.0)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot set a value at a.b.c.d: a.b is array, not object"
    );
    assert!(matches!(
        p("u.k").set(&mut m, n(1.0)),
        Err(PathSetError::TypeMismatch { .. })
    ));
    assert!(matches!(
        p("a[*]").set(&mut m, n(1.0)),
        Err(PathSetError::Wildcard { .. })
    ));
    let err = PropertyPath::new(vec![Index(0)])
        .set(&mut m, n(1.0))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot set a value at [0]: the root is array, not object"
    );
    assert_eq!(
        PropertyPath::default().set(&mut m, n(1.0)),
        Err(PathSetError::Empty)
    );
    let huge = format!("a.b[{}]", usize::MAX);
    let err = p(&huge).set(&mut m, n(1.0)).unwrap_err();
    assert!(matches!(
        err,
        PathSetError::IndexTooLarge {
            index: usize::MAX,
            ..
        }
    ));
    assert!(p("x[70000]").set(&mut m, n(1.0)).is_err());
    assert_eq!(m, before);
}

#[test]
fn delete_removes_keys_and_nulls_array_elements() {
    let mut m = sample();
    assert_eq!(p("a.b[0]").delete(&mut m), Some(n(1.0)));
    assert_eq!(
        p("a.b").get(&m),
        Some(&PropertyValue::Array(vec![PropertyValue::Null, n(2.0)]))
    );
    assert_eq!(p("s.x").delete(&mut m), Some(n(3.0)));
    assert_eq!(m["s"], PropertyValue::secret(obj([])));
    assert_eq!(p("o.missing").delete(&mut m), None);
    assert_eq!(p("a.b[9]").delete(&mut m), None);
    assert_eq!(p("a[*]").delete(&mut m), None);
    assert!(p("z").delete(&mut m).is_some() && !m.contains_key("z"));
}

/// Resets `path` in `new` from `old`; returns the new map or the error.
fn reset(path: &str, old: &PropertyMap, new: &PropertyMap) -> Result<PropertyMap, PathResetError> {
    let mut new = new.clone();
    p(path).reset(old, &mut new)?;
    Ok(new)
}

#[test]
fn reset_carries_old_values_over() {
    let old = map([
        ("a", n(1.0)),
        ("t", obj([("x", n(1.0)), ("y", n(2.0))])),
        (
            "l",
            PropertyValue::Array(vec![obj([("n", n(1.0))]), obj([("n", n(2.0))])]),
        ),
        ("s", PropertyValue::secret(obj([("x", n(1.0))]))),
    ]);
    let new = map([
        ("a", n(2.0)),
        ("b", n(3.0)),
        ("t", obj([("x", n(5.0)), ("z", n(3.0))])),
        (
            "l",
            PropertyValue::Array(vec![
                obj([("n", n(9.0)), ("m", n(0.0))]),
                obj([("n", n(8.0))]),
            ]),
        ),
        ("s", obj([("x", n(2.0))])),
    ]);
    let ok = |path| reset(path, &old, &new).unwrap();
    assert_eq!(ok("a")["a"], n(1.0));
    assert!(!ok("b").contains_key("b"));
    assert_eq!(ok("t.x")["t"], obj([("x", n(1.0)), ("z", n(3.0))]));
    assert_eq!(
        ok("t.y")["t"],
        obj([("x", n(5.0)), ("y", n(2.0)), ("z", n(3.0))])
    );
    assert_eq!(ok("t.*")["t"], old["t"]);
    assert_eq!(ok("*"), old);
    let l = ok("l[*].n");
    assert_eq!(
        p("l[0]").get(&l),
        Some(&obj([("n", n(1.0)), ("m", n(0.0))]))
    );
    assert_eq!(p("l[1].n").get(&l), Some(&n(2.0)));
    assert_eq!(p("l[1]").get(&ok("l[1]")), Some(&obj([("n", n(2.0))])));
    assert_eq!(ok("l[5]"), new);
    assert_eq!(ok("nope.deeper"), new);
    assert_eq!(ok("s.x")["s"], obj([("x", PropertyValue::secret(n(1.0)))]));
}

#[test]
fn reset_refuses_paths_present_on_one_side_only() {
    let old = map([
        ("t", obj([("x", n(1.0))])),
        ("l", PropertyValue::Array(vec![n(1.0)])),
        ("w", PropertyValue::Array(vec![n(1.0)])),
    ]);
    let new = map([
        ("l", PropertyValue::Array(vec![n(1.0), n(2.0)])),
        ("v", n(1.0)),
        ("w", obj([("k", n(1.0))])),
    ]);
    let cases = [
        ("t.x", "t", "it is missing from the new value"),
        ("l[*]", "l", "the arrays have different lengths"),
        (
            "l[1]",
            "l",
            "the index exists in only one of the old and new arrays",
        ),
        ("t[0]", "t", "it is missing from the new value"),
        ("w[0]", "w", "it is an array on one side only"),
        ("w.k.j", "w", "it is an object on one side only"),
        (
            "v[*].x",
            "v",
            "a wildcard needs an object or an array on both sides",
        ),
    ];
    for (path, at, reason) in cases {
        let err = reset(path, &old, &new).unwrap_err();
        assert_eq!(
            (err.at.to_string().as_str(), err.reason),
            (at, reason),
            "{path}"
        );
    }
    let err = reset("t.x", &old, &new).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot reset t.x to its old value: at t, it is missing from the new value"
    );
}

fn element() -> impl Strategy<Value = PathElement> {
    prop_oneof![
        any::<String>().prop_map(Key),
        "[a-z_*.\\[\\]\"\\\\ ]{0,4}".prop_map(Key),
        any::<usize>().prop_map(Index),
        Just(Wildcard),
    ]
}

proptest! {
    #[test]
    fn printing_then_parsing_round_trips(elements in prop::collection::vec(element(), 1..6)) {
        let path = PropertyPath::new(elements);
        prop_assert_eq!(PropertyPath::parse(&path.to_string()), Ok(path));
    }

    #[test]
    fn parsing_any_string_never_panics_and_is_canonical(s in "[a-z0-9.\\[\\]\"*\\\\]{0,12}") {
        if let Ok(path) = PropertyPath::parse(&s) {
            prop_assert_eq!(PropertyPath::parse(&path.to_string()), Ok(path));
        }
    }

    #[test]
    fn a_value_set_can_be_read_back(elements in prop::collection::vec(element(), 1..5)) {
        let path = PropertyPath::new(elements.into_iter().map(|e| match e {
            Index(i) => Index(i % 4),
            other => other,
        }).collect());
        let mut m = sample();
        match path.set(&mut m, n(42.0)) {
            Ok(()) => prop_assert_eq!(path.get(&m), Some(&n(42.0))),
            Err(_) => prop_assert_eq!(m, sample()),
        }
    }
}

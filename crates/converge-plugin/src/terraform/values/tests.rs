use converge_model::{Asset, PropertyMap, PropertyValue};
use proptest::prelude::*;

use super::*;

fn ty(text: &str) -> CtyType {
    CtyType::from_json(text.as_bytes()).unwrap()
}

fn obj(entries: &[(&str, PropertyValue)]) -> PropertyValue {
    PropertyValue::Object(
        entries
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    )
}

fn s(text: &str) -> PropertyValue {
    PropertyValue::string(text)
}

fn n(x: f64) -> PropertyValue {
    PropertyValue::Number(x)
}

#[test]
fn encodes_the_bytes_cty_writes() {
    let cases: &[(&str, PropertyValue, &str)] = &[
        (r#""string""#, s("hi"), "a26869"),
        (r#""number""#, n(1.0), "01"),
        (r#""number""#, n(-1.0), "ff"),
        (r#""number""#, n(1.5), "cb3ff8000000000000"),
        (r#""bool""#, PropertyValue::Bool(true), "c3"),
        (r#""string""#, PropertyValue::Null, "c0"),
        (r#""string""#, PropertyValue::Unknown, "d40000"),
        (
            r#"["list","number"]"#,
            PropertyValue::Array(vec![n(1.0), n(2.0)]),
            "920102",
        ),
        // Every attribute, in name order; a missing one is nil.
        (
            r#"["object",{"b":"bool","a":"string","c":"number"}]"#,
            obj(&[("b", PropertyValue::Bool(false)), ("a", s("x"))]),
            "83a161a178a162c2a163c0",
        ),
        (r#"["map","number"]"#, obj(&[("k", n(3.0))]), "81a16b03"),
        // Dynamic: [type JSON as bytes, value].
        (r#""dynamic""#, n(1.0), "92c408226e756d6265722201"),
        (r#""dynamic""#, PropertyValue::Unknown, "d40000"),
        // cty's conversions of primitives.
        (r#""string""#, n(2.0), "a132"),
        (r#""number""#, s("7"), "07"),
        (r#""bool""#, s("true"), "c3"),
    ];
    for (type_json, value, hex_bytes) in cases {
        let bytes = encode_msgpack(value, &ty(type_json)).unwrap();
        assert_eq!(hex::encode(&bytes), *hex_bytes, "{type_json} {value:?}");
    }
}

#[test]
fn decodes_unknowns_nulls_and_numbers_in_every_form() {
    let number = ty(r#""number""#);
    for (hex_bytes, expected) in [
        ("d40000", PropertyValue::Unknown),
        ("d40c00", PropertyValue::Unknown), // refined unknown
        ("c70000", PropertyValue::Unknown), // ext 8 with an empty payload
        ("c0", PropertyValue::Null),
        ("cd0400", n(1024.0)),
        ("cf8000000000000000", n(9_223_372_036_854_775_808.0)),
        ("ca3fc00000", n(1.5)),
        ("a3312e35", n(1.5)), // big numbers come as decimal text
    ] {
        let bytes = hex::decode(hex_bytes).unwrap();
        assert_eq!(
            decode_msgpack(&bytes, &number).unwrap(),
            expected,
            "{hex_bytes}"
        );
    }
    // A dynamic value whose type is sent as a string rather than bytes.
    let bytes = hex::decode("92a822737472696e6722a26869").unwrap();
    assert_eq!(decode_msgpack(&bytes, &CtyType::Dynamic).unwrap(), s("hi"));
    // Attributes left out decode as null.
    let bytes = hex::decode("81a161a178").unwrap();
    assert_eq!(
        decode_msgpack(&bytes, &ty(r#"["object",{"a":"string","b":"bool"}]"#)).unwrap(),
        obj(&[("a", s("x")), ("b", PropertyValue::Null)])
    );
}

#[test]
fn refuses_values_with_no_cty_form_naming_the_path_not_the_value() {
    let t = ty(r#"["object",{"tags":["map","string"]}]"#);
    let value = obj(&[("tags", obj(&[("pw", PropertyValue::secret(s("hunter2")))]))]);
    let err = encode_msgpack(&value, &t).unwrap_err().to_string();
    assert_eq!(
        err,
        "at tags[\"pw\"]: secret values cannot be sent to a Terraform provider; \
         the adapter must unwrap secrets before encoding (a bug in Converge)"
    );
    assert!(!err.contains("hunter2"));

    let asset = PropertyValue::Asset(Box::new(Asset::from_text("x")));
    let err = encode_msgpack(&asset, &CtyType::String).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the value: asset values cannot"),
        "{err}"
    );
}

#[test]
fn says_what_does_not_fit_the_type() {
    let t = ty(r#"["object",{"a":["list","number"],"t":["tuple",["bool"]]}]"#);
    let cases = [
        (
            obj(&[("b", n(1.0))]),
            "the value: unexpected attribute \"b\"; the type has \"a\", \"t\"",
        ),
        (
            obj(&[("a", PropertyValue::Array(vec![n(1.0), s("x")]))]),
            "at a[1]: expected \"number\", found a string that is not a number",
        ),
        (
            obj(&[("t", PropertyValue::Array(vec![]))]),
            "at t: expected a tuple of 1 element(s), found 0",
        ),
        (
            obj(&[("a", n(1.0))]),
            "at a: expected [\"list\",\"number\"], found number",
        ),
        (n(1.0), "the value: expected [\"object\""),
    ];
    for (value, message) in cases {
        let err = encode_msgpack(&value, &t).unwrap_err().to_string();
        assert!(err.starts_with(message), "{err}\n  wanted: {message}");
    }
    let err = encode_msgpack(&n(f64::NAN), &CtyType::Number).unwrap_err();
    assert!(err.to_string().contains("not finite"), "{err}");
}

#[test]
fn refuses_malformed_or_mistyped_msgpack() {
    for (hex_bytes, t, message) in [
        ("", r#""string""#, "malformed msgpack value"),
        ("92", r#"["list","bool"]"#, "malformed msgpack value"),
        (
            "c0c0",
            r#""string""#,
            "malformed msgpack value: 1 byte(s) after the value",
        ),
        (
            "01",
            r#""string""#,
            "the value: expected \"string\", found an integer",
        ),
        (
            "81a17801",
            r#"["object",{"y":"number"}]"#,
            "unexpected attribute \"x\"",
        ),
        (
            "810101",
            r#"["map","number"]"#,
            "found a key that is an integer",
        ),
        ("d40100", r#""bool""#, "found extension type 1"),
        ("92c403626164c0", r#""dynamic""#, "invalid cty type bad"),
    ] {
        let bytes = hex::decode(hex_bytes).unwrap();
        let err = decode_msgpack(&bytes, &ty(t)).unwrap_err().to_string();
        assert!(
            err.contains(message),
            "{hex_bytes}: {err}\n  wanted: {message}"
        );
    }
    // Deep nesting is refused, not a stack overflow.
    let mut deep = vec![0x91u8; 100_000];
    deep.push(0xc0);
    assert!(decode_msgpack(&deep, &CtyType::Dynamic).is_err());
}

#[test]
fn decodes_json_values() {
    let t = ty(
        r#"["object",{"n":"number","l":["set","string"],"d":"dynamic","m":["map","bool"],"o":"string"}]"#,
    );
    let json = br#"{"n":"12.5","l":["a","b"],"d":{"value":[1,"x"],"type":["tuple",["number","string"]]},"m":{"k":true}}"#;
    assert_eq!(
        decode_json(json, &t).unwrap(),
        obj(&[
            ("n", n(12.5)),
            ("l", PropertyValue::Array(vec![s("a"), s("b")])),
            ("d", PropertyValue::Array(vec![n(1.0), s("x")])),
            ("m", obj(&[("k", PropertyValue::Bool(true))])),
            ("o", PropertyValue::Null),
        ])
    );
    for (json, message) in [
        (&b"{"[..], "malformed JSON value"),
        (br#"{"zz":1}"#, "unexpected attribute \"zz\""),
        (br#"{"n":true}"#, "at n: expected \"number\", found a bool"),
        (
            br#"{"d":{"value":1}}"#,
            "at d: expected \"dynamic\", found an object without",
        ),
    ] {
        let err = decode_json(json, &t).unwrap_err().to_string();
        assert!(err.contains(message), "{err}\n  wanted: {message}");
    }
}

#[test]
fn a_dynamic_value_uses_msgpack_then_json_then_null() {
    let t = CtyType::String;
    let both = DynamicValue {
        msgpack: hex::decode("a161").unwrap(),
        json: b"\"b\"".to_vec(),
    };
    assert_eq!(decode_dynamic_value(&both, &t).unwrap(), s("a"));
    let json = DynamicValue {
        msgpack: vec![],
        json: b"\"b\"".to_vec(),
    };
    assert_eq!(decode_dynamic_value(&json, &t).unwrap(), s("b"));
    assert_eq!(
        decode_dynamic_value(&DynamicValue::default(), &t).unwrap(),
        PropertyValue::Null
    );
    let encoded = encode_dynamic_value(&s("a"), &t).unwrap();
    assert_eq!(encoded.msgpack, hex::decode("a161").unwrap());
}

fn arb_type() -> impl Strategy<Value = CtyType> {
    let leaf = prop_oneof![
        Just(CtyType::String),
        Just(CtyType::Number),
        Just(CtyType::Bool),
        Just(CtyType::Dynamic),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| CtyType::List(Box::new(t))),
            inner.clone().prop_map(|t| CtyType::Set(Box::new(t))),
            inner.clone().prop_map(|t| CtyType::Map(Box::new(t))),
            prop::collection::vec(inner.clone(), 0..4).prop_map(CtyType::Tuple),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4).prop_map(|attributes| {
                CtyType::Object {
                    attributes,
                    optional: Default::default(),
                }
            }),
        ]
    })
}

fn arb_number() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<i64>().prop_map(|i| i as f64),
        any::<i32>().prop_map(f64::from),
        prop::num::f64::NORMAL | prop::num::f64::SUBNORMAL | prop::num::f64::ZERO,
    ]
}

/// Dynamic values: anything with a cty form.
fn arb_any() -> impl Strategy<Value = PropertyValue> {
    let leaf = prop_oneof![
        Just(PropertyValue::Null),
        Just(PropertyValue::Unknown),
        any::<bool>().prop_map(PropertyValue::Bool),
        arb_number().prop_map(PropertyValue::Number),
        ".{0,8}".prop_map(PropertyValue::String),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(PropertyValue::Array),
            prop::collection::btree_map(".{0,4}", inner, 0..3)
                .prop_map(|m| PropertyValue::Object(m.into())),
        ]
    })
}

fn arb_value(t: &CtyType) -> BoxedStrategy<PropertyValue> {
    let known = match t {
        CtyType::String => ".{0,8}".prop_map(PropertyValue::String).boxed(),
        CtyType::Number => arb_number().prop_map(PropertyValue::Number).boxed(),
        CtyType::Bool => any::<bool>().prop_map(PropertyValue::Bool).boxed(),
        CtyType::Dynamic => return arb_any().boxed(),
        CtyType::List(e) | CtyType::Set(e) => prop::collection::vec(arb_value(e), 0..3)
            .prop_map(PropertyValue::Array)
            .boxed(),
        CtyType::Map(e) => prop::collection::btree_map(".{0,4}", arb_value(e), 0..3)
            .prop_map(|m| PropertyValue::Object(m.into()))
            .boxed(),
        CtyType::Tuple(elements) => elements
            .iter()
            .map(arb_value)
            .collect::<Vec<_>>()
            .prop_map(PropertyValue::Array)
            .boxed(),
        CtyType::Object { attributes, .. } => attributes
            .iter()
            .map(|(name, t)| (Just(name.clone()), arb_value(t)))
            .collect::<Vec<_>>()
            .prop_map(|entries| PropertyValue::Object(entries.into_iter().collect::<PropertyMap>()))
            .boxed(),
    };
    prop_oneof![
        1 => Just(PropertyValue::Null),
        1 => Just(PropertyValue::Unknown),
        8 => known,
    ]
    .boxed()
}

proptest! {
    #[test]
    fn msgpack_round_trips((t, value) in arb_type().prop_flat_map(|t| {
        let values = arb_value(&t);
        (Just(t), values)
    })) {
        let bytes = encode_msgpack(&value, &t).unwrap();
        prop_assert_eq!(decode_msgpack(&bytes, &t).unwrap(), value);
    }

    #[test]
    fn types_round_trip_through_json(t in arb_type()) {
        let text = t.to_json().to_string();
        prop_assert_eq!(CtyType::from_json(text.as_bytes()).unwrap(), t);
    }
}

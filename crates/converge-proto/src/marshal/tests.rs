use converge_model::{
    Archive, ArchiveMember, Asset, OutputValue, PropertyMap, PropertyValue, ResourceReference, Urn,
};
use proptest::prelude::*;
use prost::Message;
use prost_types::{value::Kind, ListValue, Struct, Value};
use serde_json::json;

use super::*;

const FULL: MarshalOptions = MarshalOptions::full();

fn urn(name: &str) -> Urn {
    Urn::new("dev", "proj", None, "pkg:index:Thing", name).unwrap()
}

fn object(entries: Vec<(&str, PropertyValue)>) -> PropertyValue {
    PropertyValue::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

fn reference(name: &str, id: Option<PropertyValue>) -> PropertyValue {
    PropertyValue::ResourceReference(Box::new(ResourceReference {
        urn: urn(name),
        id: id.map(Box::new),
        package_version: String::new(),
    }))
}

/// The wire form of a value as JSON, for readable expectations.
fn to_json(value: &Value) -> serde_json::Value {
    match &value.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => json!(b),
        Some(Kind::NumberValue(n)) => json!(n),
        Some(Kind::StringValue(s)) => json!(s),
        Some(Kind::ListValue(list)) => list.values.iter().map(to_json).collect(),
        Some(Kind::StructValue(s)) => s
            .fields
            .iter()
            .map(|(k, v)| (k.clone(), to_json(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
    }
}

/// The wire value of a JSON document.
fn from_json(value: &serde_json::Value) -> Value {
    let kind = match value {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(items) => Kind::ListValue(ListValue {
            values: items.iter().map(from_json).collect(),
        }),
        serde_json::Value::Object(map) => Kind::StructValue(Struct {
            fields: map.iter().map(|(k, v)| (k.clone(), from_json(v))).collect(),
        }),
    };
    Value { kind: Some(kind) }
}

/// Checks the wire form of `value` under `opts`, and what reading that wire
/// form back with the same options gives.
fn check(
    value: PropertyValue,
    opts: MarshalOptions,
    wire: serde_json::Value,
    read_back: PropertyValue,
) {
    let marshalled = marshal_value(&value, opts).unwrap().expect("value kept");
    assert_eq!(to_json(&marshalled), wire);
    let unmarshalled = unmarshal_value(&marshalled, opts).unwrap();
    assert_eq!(unmarshalled, Some(read_back));
}

fn read(
    wire: serde_json::Value,
    opts: MarshalOptions,
) -> Result<Option<PropertyValue>, MarshalError> {
    unmarshal_value(&from_json(&wire), opts)
}

#[test]
fn special_values_have_pulumis_wire_forms() {
    let secret = PropertyValue::secret("s3cret".into());
    check(
        secret.clone(),
        FULL,
        json!({SIG_KEY: SECRET_SIG, "value": "s3cret"}),
        secret,
    );

    let custom = PropertyValue::ResourceReference(Box::new(ResourceReference {
        urn: urn("a"),
        id: Some(Box::new("i-123".into())),
        package_version: "1.2.3".to_owned(),
    }));
    check(
        custom.clone(),
        FULL,
        json!({SIG_KEY: RESOURCE_REFERENCE_SIG, "urn": urn("a").as_str(), "id": "i-123",
               "packageVersion": "1.2.3"}),
        custom,
    );
    let component = reference("c", None);
    check(
        component.clone(),
        FULL,
        json!({SIG_KEY: RESOURCE_REFERENCE_SIG, "urn": urn("c").as_str()}),
        component,
    );

    let text = PropertyValue::Asset(Box::new(Asset::from_text("hello")));
    check(
        text.clone(),
        FULL,
        json!({SIG_KEY: ASSET_SIG, "text": "hello",
               "hash": "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}),
        text,
    );
    let archive = PropertyValue::Archive(Box::new(Archive {
        assets: Some(
            [
                (
                    "f".to_owned(),
                    ArchiveMember::Asset(Asset::from_path("./f")),
                ),
                (
                    "d".to_owned(),
                    ArchiveMember::Archive(Archive {
                        uri: Some("https://x/y.zip".to_owned()),
                        ..Archive::default()
                    }),
                ),
            ]
            .into(),
        ),
        ..Archive::default()
    }));
    check(
        archive.clone(),
        FULL,
        json!({SIG_KEY: ARCHIVE_SIG, "assets": {
            "f": {SIG_KEY: ASSET_SIG, "path": "./f"},
            "d": {SIG_KEY: ARCHIVE_SIG, "uri": "https://x/y.zip"},
        }}),
        archive,
    );

    let output = PropertyValue::Output(Box::new(OutputValue {
        element: Some(Box::new(1.0.into())),
        secret: true,
        dependencies: vec![urn("a")],
    }));
    check(
        output.clone(),
        FULL,
        json!({SIG_KEY: OUTPUT_VALUE_SIG, "value": 1.0, "secret": true,
               "dependencies": [urn("a").as_str()]}),
        output,
    );
    let unknown_output = PropertyValue::Output(Box::default());
    check(
        unknown_output.clone(),
        FULL,
        json!({SIG_KEY: OUTPUT_VALUE_SIG}),
        unknown_output,
    );
    check(
        PropertyValue::Unknown,
        FULL,
        json!(UNKNOWN_STRING),
        PropertyValue::Unknown,
    );
}

#[test]
fn kinds_the_peer_does_not_accept_are_downgraded() {
    let plain = MarshalOptions {
        keep_unknowns: true,
        ..MarshalOptions::default()
    };
    check(
        PropertyValue::secret("x".into()),
        plain,
        json!("x"),
        "x".into(),
    );
    check(
        reference("a", Some("i-1".into())),
        plain,
        json!("i-1"),
        "i-1".into(),
    );
    check(
        reference("c", None),
        plain,
        json!(urn("c").as_str()),
        urn("c").as_str().into(),
    );
    check(
        reference("a", Some(PropertyValue::Unknown)),
        plain,
        json!(UNKNOWN_STRING),
        PropertyValue::Unknown,
    );

    let secret_output = PropertyValue::Output(Box::new(OutputValue {
        element: Some(Box::new("v".into())),
        secret: true,
        dependencies: vec![urn("a")],
    }));
    let secrets_only = MarshalOptions {
        keep_secrets: true,
        ..plain
    };
    check(
        secret_output.clone(),
        secrets_only,
        json!({SIG_KEY: SECRET_SIG, "value": "v"}),
        PropertyValue::secret("v".into()),
    );
    check(secret_output, plain, json!("v"), "v".into());
    check(
        PropertyValue::Output(Box::default()),
        plain,
        json!(UNKNOWN_STRING),
        PropertyValue::Unknown,
    );
}

#[test]
fn unknowns_that_are_not_kept_are_left_out() {
    let opts = MarshalOptions {
        keep_unknowns: false,
        ..FULL
    };
    let props: PropertyMap = [
        ("known".to_owned(), "k".into()),
        ("unknown".to_owned(), PropertyValue::Unknown),
        (
            "secret".to_owned(),
            PropertyValue::secret(PropertyValue::Unknown),
        ),
        (
            "list".to_owned(),
            PropertyValue::Array(vec![1.0.into(), PropertyValue::Unknown, 2.0.into()]),
        ),
    ]
    .into();
    let wire = marshal_properties(&props, opts).unwrap();
    let wire_json = to_json(&Value {
        kind: Some(Kind::StructValue(wire)),
    });
    // Like Pulumi: keys dropped, and the array element dropped too.
    assert_eq!(wire_json, json!({"known": "k", "list": [1.0, 2.0]}));
    assert_eq!(marshal_value(&PropertyValue::Unknown, opts), Ok(None));

    // Reading, an unknown array element becomes null, keys are dropped.
    let read_back = read(
        json!({"a": UNKNOWN_STRING, "l": [1.0, UNKNOWN_STRING]}),
        opts,
    )
    .unwrap();
    assert_eq!(
        read_back,
        Some(object(vec![(
            "l",
            PropertyValue::Array(vec![1.0.into(), PropertyValue::Null])
        )]))
    );
}

#[test]
fn reading_accepts_what_other_peers_send() {
    // Extra keys (Node.js's __pulumiAsset) are ignored.
    assert_eq!(
        read(
            json!({SIG_KEY: ASSET_SIG, "path": "a.txt", "__pulumiAsset": true}),
            FULL
        ),
        Ok(Some(PropertyValue::Asset(Box::new(Asset::from_path(
            "a.txt"
        )))))
    );
    // Typed unknown sentinels of older peers.
    assert_eq!(
        read(json!("dd056dcd-154b-4c76-9bd3-c8f88648b5ff"), FULL),
        Ok(Some(PropertyValue::Unknown))
    );
    // An empty ID is an unknown ID, as the Pulumi engine records it.
    assert_eq!(
        read(
            json!({SIG_KEY: RESOURCE_REFERENCE_SIG, "urn": urn("a").as_str(), "id": ""}),
            FULL
        ),
        Ok(Some(reference("a", Some(PropertyValue::Unknown))))
    );
    // An ID wrapped in an output value.
    assert_eq!(
        read(
            json!({SIG_KEY: RESOURCE_REFERENCE_SIG, "urn": urn("a").as_str(),
                   "id": {SIG_KEY: OUTPUT_VALUE_SIG, "value": "i-9"}}),
            FULL
        ),
        Ok(Some(reference("a", Some("i-9".into()))))
    );
    // An unset kind reads as null.
    assert_eq!(
        unmarshal_value(&Value::default(), FULL),
        Ok(Some(PropertyValue::Null))
    );
}

#[test]
fn errors_name_the_property_path() {
    let bad = json!({"a": {"b": [0, {SIG_KEY: "nope"}]}});
    let err = read(bad, FULL).unwrap_err();
    assert_eq!(err.path().to_string(), "a.b[1]");
    assert_eq!(
        err.to_string(),
        "property a.b[1]: unrecognized signature \"nope\""
    );

    let err = read(json!({SIG_KEY: SECRET_SIG}), FULL).unwrap_err();
    assert_eq!(
        err.to_string(),
        "top-level value: malformed secret: missing value"
    );

    let err = read(
        json!({"r": {SIG_KEY: RESOURCE_REFERENCE_SIG, "urn": "not-a-urn"}}),
        FULL,
    )
    .unwrap_err();
    assert!(matches!(err, MarshalError::InvalidUrn { .. }), "{err}");
    assert_eq!(err.path().to_string(), "r");

    let err = read(json!({SIG_KEY: OUTPUT_VALUE_SIG, "secret": "yes"}), FULL).unwrap_err();
    assert_eq!(
        err.to_string(),
        "top-level value: malformed output value: secret is a string, not a bool"
    );

    let strict = MarshalOptions {
        reject_unknowns: true,
        reject_assets: true,
        ..FULL
    };
    let props: PropertyMap = [("x y".to_owned(), PropertyValue::Unknown)].into();
    let err = marshal_properties(&props, strict).unwrap_err();
    assert_eq!(
        err.to_string(),
        "property [\"x y\"]: unexpected unknown value"
    );
    let asset = PropertyValue::Array(vec![PropertyValue::Asset(Box::new(Asset::from_text("t")))]);
    let err = marshal_value(&asset, strict).unwrap_err();
    assert_eq!(err.to_string(), "property [0]: unexpected asset");
}

#[test]
fn nulls_and_internal_keys_can_be_skipped() {
    let opts = MarshalOptions {
        skip_nulls: true,
        skip_internal_keys: true,
        ..FULL
    };
    let props: PropertyMap = [
        ("a".to_owned(), PropertyValue::Null),
        ("__defaults".to_owned(), PropertyValue::Array(vec![])),
        ("b".to_owned(), object(vec![("__inner", true.into())])),
    ]
    .into();
    let wire = marshal_properties(&props, opts).unwrap();
    assert_eq!(
        to_json(&Value {
            kind: Some(Kind::StructValue(wire.clone()))
        }),
        json!({"b": {}})
    );
    let read_back = unmarshal_properties(&wire, opts).unwrap();
    assert_eq!(read_back, [("b".to_owned(), object(vec![]))].into());
}

// ---- property tests ----

fn arb_string() -> impl Strategy<Value = String> {
    // Wide enough to include quotes, unicode and empty strings; random
    // strings never collide with the signature or unknown sentinels.
    prop_oneof![Just(String::new()), "[a-z]{1,6}", any::<String>()]
}

fn arb_urn() -> impl Strategy<Value = Urn> {
    "[a-z][a-z0-9-]{0,7}".prop_map(|name| urn(&name))
}

fn arb_asset() -> impl Strategy<Value = Asset> {
    (
        prop_oneof![Just(String::new()), "[0-9a-f]{64}"],
        proptest::option::of(arb_string()),
        proptest::option::of(arb_string()),
        proptest::option::of(arb_string()),
    )
        .prop_map(|(hash, text, path, uri)| Asset {
            hash,
            text,
            path,
            uri,
        })
}

fn arb_archive() -> impl Strategy<Value = Archive> {
    let leaf = (
        prop_oneof![Just(String::new()), "[0-9a-f]{64}"],
        proptest::option::of(arb_string()),
        proptest::option::of(arb_string()),
    )
        .prop_map(|(hash, path, uri)| Archive {
            hash,
            assets: None,
            path,
            uri,
        });
    leaf.prop_recursive(2, 8, 4, |inner| {
        proptest::collection::btree_map(
            arb_string(),
            prop_oneof![
                arb_asset().prop_map(ArchiveMember::Asset),
                inner.prop_map(ArchiveMember::Archive),
            ],
            0..4,
        )
        .prop_map(|assets| Archive {
            assets: Some(assets),
            ..Archive::default()
        })
    })
}

fn arb_value() -> impl Strategy<Value = PropertyValue> {
    let leaf = prop_oneof![
        Just(PropertyValue::Null),
        any::<bool>().prop_map(PropertyValue::Bool),
        // Finite numbers: NaN is not equal to itself.
        any::<f64>()
            .prop_filter("finite", |n| n.is_finite())
            .prop_map(PropertyValue::Number),
        arb_string().prop_map(PropertyValue::String),
        Just(PropertyValue::Unknown),
        arb_asset().prop_map(|a| PropertyValue::Asset(Box::new(a))),
        arb_archive().prop_map(|a| PropertyValue::Archive(Box::new(a))),
        (
            arb_urn(),
            proptest::option::of(prop_oneof![
                "[a-z0-9-]{1,12}".prop_map(PropertyValue::String),
                Just(PropertyValue::Unknown),
            ]),
            prop_oneof![Just(String::new()), "[0-9]\\.[0-9]\\.[0-9]"],
        )
            .prop_map(|(urn, id, package_version)| {
                PropertyValue::ResourceReference(Box::new(ResourceReference {
                    urn,
                    id: id.map(Box::new),
                    package_version,
                }))
            }),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(PropertyValue::Array),
            proptest::collection::btree_map(arb_string(), inner.clone(), 0..6)
                .prop_map(|m| PropertyValue::Object(m.into())),
            inner.clone().prop_map(PropertyValue::secret),
            (
                proptest::option::of(inner),
                any::<bool>(),
                proptest::collection::vec(arb_urn(), 0..3),
            )
                .prop_map(|(element, secret, dependencies)| {
                    PropertyValue::Output(Box::new(OutputValue {
                        element: element.map(Box::new),
                        secret,
                        dependencies,
                    }))
                }),
        ]
    })
}

/// True if `value` holds a kind of value the options say to downgrade.
fn holds_downgraded_kind(value: &PropertyValue, opts: MarshalOptions) -> bool {
    match value {
        PropertyValue::Unknown => !opts.keep_unknowns,
        PropertyValue::Secret(inner) => !opts.keep_secrets || holds_downgraded_kind(inner, opts),
        PropertyValue::ResourceReference(_) => !opts.keep_resources,
        PropertyValue::Output(o) => {
            !opts.keep_output_values
                || o.element
                    .as_ref()
                    .is_some_and(|e| holds_downgraded_kind(e, opts))
        }
        PropertyValue::Array(items) => items.iter().any(|v| holds_downgraded_kind(v, opts)),
        PropertyValue::Object(map) => map.values().any(|v| holds_downgraded_kind(v, opts)),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn full_options_round_trip(props in proptest::collection::btree_map(arb_string(), arb_value(), 0..6)) {
        let props = PropertyMap::from(props);
        let wire = marshal_properties(&props, FULL).unwrap();
        // Through the protobuf encoding too.
        let wire = Struct::decode(wire.encode_to_vec().as_slice()).unwrap();
        prop_assert_eq!(unmarshal_properties(&wire, FULL).unwrap(), props);
    }

    #[test]
    fn values_round_trip(value in arb_value()) {
        let wire = marshal_value(&value, FULL).unwrap().expect("nothing is left out");
        prop_assert_eq!(unmarshal_value(&wire, FULL).unwrap(), Some(value));
    }

    #[test]
    fn downgraded_kinds_never_reach_the_peer(
        value in arb_value(),
        keep in proptest::array::uniform4(any::<bool>()),
    ) {
        let [keep_unknowns, keep_secrets, keep_resources, keep_output_values] = keep;
        let opts = MarshalOptions {
            keep_unknowns,
            keep_secrets,
            keep_resources,
            keep_output_values,
            ..MarshalOptions::default()
        };
        let props: PropertyMap = [("v".to_owned(), value)].into();
        let wire = marshal_properties(&props, opts).unwrap();
        // What the peer sees, read with everything kept.
        let seen = unmarshal_properties(&wire, FULL).unwrap();
        prop_assert!(!holds_downgraded_kind(&PropertyValue::Object(seen.clone()), opts), "{seen:?}");
        // Reading with the same options downgrades the same way.
        let full_wire = marshal_properties(&props, FULL).unwrap();
        let read = unmarshal_properties(&full_wire, opts).unwrap();
        prop_assert!(!holds_downgraded_kind(&PropertyValue::Object(read.clone()), opts), "{read:?}");
    }
}

//! Property values against the Pulumi Python SDK's own serializer and
//! deserializer (`tests/sdk_values.py`): Converge reads what the SDK sends,
//! and the SDK reads what Converge sends, for every kind of value the SDK
//! can produce without a running engine.

use crate::common;

use converge_model::{
    Archive, ArchiveMember, Asset, OutputValue, PropertyMap, PropertyValue, ResourceReference, Urn,
};
use converge_proto::{marshal_properties, unmarshal_properties, MarshalOptions};
use prost::Message;
use prost_types::Struct;
use serde_json::json;

const FULL: MarshalOptions = MarshalOptions::full();

fn map(entries: Vec<(&str, PropertyValue)>) -> PropertyMap {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

fn text(text: &str) -> PropertyValue {
    PropertyValue::Asset(Box::new(Asset {
        text: Some(text.to_owned()),
        ..Asset::default()
    }))
}

fn output(element: Option<PropertyValue>, secret: bool) -> PropertyValue {
    PropertyValue::Output(Box::new(OutputValue {
        element: element.map(Box::new),
        secret,
        dependencies: Vec::new(),
    }))
}

fn urn(name: &str) -> Urn {
    Urn::new("dev", "proj", None, "pkg:index:Thing", name).unwrap()
}

#[test]
fn converge_reads_what_the_python_sdk_sends() {
    let Some(python) = common::sdk_python("reading the Python SDK's property values") else {
        return;
    };
    let stdout = common::run_script(&python, "sdk_values.py", &["serialize"]);
    let sent: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    let read = |name: &str| {
        let bytes = hex::decode(sent[name].as_str().unwrap()).unwrap();
        unmarshal_properties(&Struct::decode(bytes.as_slice()).unwrap(), FULL).unwrap()
    };

    // The SDK leaves out top-level nulls.
    let common = vec![
        ("bool", true.into()),
        ("number", 1.5.into()),
        ("string", "s".into()),
        (
            "list",
            PropertyValue::Array(vec![1.0.into(), "a".into(), PropertyValue::Null]),
        ),
        (
            "object",
            PropertyValue::Object(map(vec![("k", "v".into())])),
        ),
        ("text", text("hello")),
        (
            "file",
            PropertyValue::Asset(Box::new(Asset::from_path("./f.txt"))),
        ),
        (
            "remote",
            PropertyValue::Asset(Box::new(Asset::from_uri("https://example.com/a"))),
        ),
        (
            "archive",
            PropertyValue::Archive(Box::new(Archive {
                assets: Some(
                    [
                        (
                            "a".to_owned(),
                            ArchiveMember::Asset(Asset {
                                text: Some("x".to_owned()),
                                ..Asset::default()
                            }),
                        ),
                        (
                            "d".to_owned(),
                            ArchiveMember::Archive(Archive {
                                path: Some("./dir".to_owned()),
                                ..Archive::default()
                            }),
                        ),
                    ]
                    .into(),
                ),
                ..Archive::default()
            })),
        ),
        (
            "remoteArchive",
            PropertyValue::Archive(Box::new(Archive {
                uri: Some("https://example.com/a.zip".to_owned()),
                ..Archive::default()
            })),
        ),
    ];

    let mut plain = common.clone();
    plain.extend([
        ("secret", PropertyValue::secret("s3cret".into())),
        ("unknown", PropertyValue::Unknown),
        (
            "secretUnknown",
            PropertyValue::secret(PropertyValue::Unknown),
        ),
    ]);
    assert_eq!(read("plain"), map(plain));

    let mut outputs = common;
    outputs.extend([
        ("secret", output(Some("s3cret".into()), true)),
        ("unknown", output(None, false)),
        ("secretUnknown", output(None, true)),
    ]);
    assert_eq!(read("output_values"), map(outputs));
}

#[test]
fn the_python_sdk_reads_what_converge_sends() {
    let Some(python) = common::sdk_python("the Python SDK reading Converge's property values")
    else {
        return;
    };
    let props = map(vec![
        ("bool", false.into()),
        ("number", 2.5.into()),
        ("null", PropertyValue::Null),
        (
            "list",
            PropertyValue::Array(vec!["x".into(), PropertyValue::Unknown]),
        ),
        (
            "object",
            PropertyValue::Object(map(vec![("k", 1.0.into())])),
        ),
        ("secret", PropertyValue::secret("s3cret".into())),
        ("unknown", PropertyValue::Unknown),
        (
            "text",
            PropertyValue::Asset(Box::new(Asset::from_text("hi"))),
        ),
        (
            "archive",
            PropertyValue::Archive(Box::new(Archive {
                assets: Some(
                    [(
                        "f".to_owned(),
                        ArchiveMember::Asset(Asset::from_path("./f")),
                    )]
                    .into(),
                ),
                ..Archive::default()
            })),
        ),
        (
            "remoteArchive",
            PropertyValue::Archive(Box::new(Archive {
                uri: Some("https://example.com/a.zip".to_owned()),
                ..Archive::default()
            })),
        ),
        // The SDK has no class registered for these types, so a program sees
        // the ID of a custom resource and the URN of a component.
        (
            "custom",
            PropertyValue::ResourceReference(Box::new(ResourceReference {
                urn: urn("a"),
                id: Some(Box::new("i-1".into())),
                package_version: "1.0.0".to_owned(),
            })),
        ),
        (
            "component",
            PropertyValue::ResourceReference(Box::new(ResourceReference {
                urn: urn("c"),
                id: None,
                package_version: String::new(),
            })),
        ),
        (
            "output",
            PropertyValue::Output(Box::new(OutputValue {
                element: Some(Box::new(3.0.into())),
                secret: true,
                dependencies: vec![urn("a")],
            })),
        ),
        ("unknownOutput", output(None, false)),
    ]);
    let wire = marshal_properties(&props, FULL).unwrap().encode_to_vec();
    let stdout = common::run_script(
        &python,
        "sdk_values.py",
        &["deserialize", &hex::encode(wire)],
    );
    let seen: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(
        seen,
        json!({
            "bool": false,
            "number": 2.5,
            // The SDK drops null properties when reading.
            "list": ["x", {"unknown": true}],
            "object": {"k": 1.0},
            "secret": {"secret": "s3cret"},
            "unknown": {"unknown": true},
            "text": {"asset": {"text": "hi"}},
            "archive": {"archive": {"assets": {"f": {"asset": {"path": "./f"}}}}},
            "remoteArchive": {"archive": {"uri": "https://example.com/a.zip"}},
            "custom": "i-1",
            "component": urn("c").as_str(),
            "output": {"output": {"known": true, "secret": true, "value": 3.0}},
            "unknownOutput": {"output": {"known": false, "secret": false, "value": null}},
        })
    );
}

//! Converge's `DynamicValue` codec against the `tf` framework's own msgpack
//! encoder and decoder (PyPI's `tf`, an independent tfplugin6
//! implementation): what the framework writes decodes to the value it
//! meant, and what Converge writes the framework reads back as that value.
//!
//! Needs `CONVERGE_TEST_TF_PYTHON` (`scripts/test` sets it); skipped, loudly,
//! without it outside CI.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::terraform::values::{decode_dynamic_value, encode_msgpack, CtyType};
use converge_proto::tfplugin6::DynamicValue;
use serde_json::{json, Value};

/// One case the script prints.
struct Case {
    name: String,
    type_json: String,
    value: Value,
    hex: String,
}

impl Case {
    fn from_json(case: &Value) -> Case {
        let text = |key: &str| {
            case[key]
                .as_str()
                .expect("the script prints strings")
                .to_owned()
        };
        Case {
            name: text("name"),
            type_json: text("type"),
            value: case["value"].clone(),
            hex: text("hex"),
        }
    }
}

#[test]
fn the_tf_framework_and_converge_read_each_others_values() {
    let Some(python) = tf_python() else { return };
    let cases: Vec<Value> =
        serde_json::from_slice(&run(&python, "encode", b"")).expect("the script prints JSON");
    let cases: Vec<Case> = cases.iter().map(Case::from_json).collect();
    assert!(cases.len() >= 10, "too few cases: {}", cases.len());

    let mut ours = BTreeMap::new();
    for case in &cases {
        let ty = CtyType::from_json(case.type_json.as_bytes())
            .unwrap_or_else(|e| panic!("{}: the framework's type: {e}", case.name));
        let expected = property_value(&case.value);
        let theirs = DynamicValue {
            msgpack: hex::decode(&case.hex).unwrap(),
            json: Vec::new(),
        };
        let decoded = decode_dynamic_value(&theirs, &ty)
            .unwrap_or_else(|e| panic!("{}: decoding the framework's bytes: {e}", case.name));
        assert_eq!(
            decoded, expected,
            "{}: the framework's bytes {}",
            case.name, case.hex
        );

        let bytes = encode_msgpack(&expected, &ty)
            .unwrap_or_else(|e| panic!("{}: encoding: {e}", case.name));
        ours.insert(case.name.clone(), hex::encode(bytes));
    }

    let read_back: BTreeMap<String, Value> = serde_json::from_slice(&run(
        &python,
        "decode",
        serde_json::to_string(&ours).unwrap().as_bytes(),
    ))
    .expect("the script prints JSON");
    for case in &cases {
        assert_eq!(
            read_back[&case.name], case.value,
            "{}: the framework read Converge's bytes {} differently",
            case.name, ours[&case.name]
        );
    }
}

/// The model value a case's JSON stands for (unknown is `{"$unknown": true}`).
fn property_value(value: &Value) -> PropertyValue {
    match value {
        Value::Null => PropertyValue::Null,
        Value::Bool(b) => PropertyValue::Bool(*b),
        Value::Number(n) => PropertyValue::Number(n.as_f64().unwrap()),
        Value::String(s) => PropertyValue::String(s.clone()),
        Value::Array(items) => PropertyValue::Array(items.iter().map(property_value).collect()),
        Value::Object(map) if map.get("$unknown") == Some(&json!(true)) => PropertyValue::Unknown,
        Value::Object(map) => PropertyValue::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), property_value(v)))
                .collect::<PropertyMap>(),
        ),
    }
}

fn tf_python() -> Option<OsString> {
    if let Some(python) = std::env::var_os("CONVERGE_TEST_TF_PYTHON") {
        return Some(python);
    }
    if std::env::var_os("CI").is_some() {
        panic!("CONVERGE_TEST_TF_PYTHON is not set: run scripts/test, which installs PyPI's tf");
    }
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!! SKIPPED: DynamicValue msgpack was NOT checked against the tf framework.\n\
         !!!!! Set CONVERGE_TEST_TF_PYTHON to a Python with `tf` installed, or run scripts/test.\n"
    );
    None
}

fn run(python: &OsString, mode: &str, stdin: &[u8]) -> Vec<u8> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tf_values.py");
    let mut child = Command::new(python)
        .arg(&script)
        .arg(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {python:?} {}: {e}", script.display()));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{} {mode} failed ({}):\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

//! go-plugin's `plugin` package (`proto/plugin/`) must match the
//! descriptors PyPI's `tf` ships (tf/gen/grpc_controller_pb2.py,
//! tf/gen/grpc_stdio_pb2.py): messages, fields, enums, services, methods and
//! imports, exactly. Not compared: file paths, file options, comments and
//! `json_name`. Skipped when `CONVERGE_TEST_TF_PYTHON` is unset, except in
//! CI (scripts/test sets it).

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use prost::Message;
use prost_types::{FileDescriptorProto, FileDescriptorSet};

/// The file with its incidental parts cleared.
fn essentials(mut file: FileDescriptorProto) -> FileDescriptorProto {
    file.name = None;
    file.options = None;
    file.source_code_info = None;
    for message in &mut file.message_type {
        for field in &mut message.field {
            field.json_name = None;
        }
    }
    file
}

#[test]
fn our_plugin_package_matches_pypi_tf() {
    let Some(python) = std::env::var_os("CONVERGE_TEST_TF_PYTHON") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set CONVERGE_TEST_TF_PYTHON"
        );
        eprintln!("skipped: CONVERGE_TEST_TF_PYTHON is not set");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tf_plugin_descriptors.py");
    let output = std::process::Command::new(python)
        .arg(&script)
        .output()
        .expect("the tf interpreter runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let theirs: BTreeMap<String, String> = serde_json::from_slice(&output.stdout).unwrap();

    let ours = FileDescriptorSet::decode(converge_proto::FILE_DESCRIPTOR_SET).unwrap();
    let ours: BTreeMap<String, FileDescriptorProto> = ours
        .file
        .into_iter()
        .filter(|f| f.package() == "plugin")
        .map(|f| (f.name().rsplit('/').next().unwrap().to_owned(), f))
        .collect();
    assert_eq!(
        ours.keys().collect::<Vec<_>>(),
        theirs.keys().collect::<Vec<_>>()
    );
    for (name, encoded) in &theirs {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        let theirs = essentials(FileDescriptorProto::decode(bytes.as_slice()).unwrap());
        let ours = essentials(ours[name].clone());
        assert_eq!(ours, theirs, "{name} differs from PyPI tf's");
    }
}

//! The compatibility test: every message, field, enum value, service and
//! method that Converge's `.proto` files define must match the schema
//! embedded in the published Pulumi Python SDK, exactly (names, numbers,
//! types, labels, oneofs, map entries, proto3 `optional`, reserved numbers
//! and names, streaming flags, and the file each lives in).
//!
//! The SDK's schema is read by `tests/sdk_descriptors.py` with the Python
//! interpreter named by `CONVERGE_TEST_PYTHON` (`scripts/test` sets it to a
//! virtualenv with the pinned `pulumi` wheel). Ours is the descriptor set the
//! build script compiled. Both are flattened into the same keyed form.
//!
//! Not compared: comments, `go_package` and other file options, and the
//! `deprecated` option (deprecated fields are kept and noted in comments, so
//! that code which must still set them for old peers compiles without
//! warnings).
//!
//! The SDK has more than we define, on purpose. In SDK 3.272.0 we leave out
//! the services Analyzer, Converter, Events, ResourceStatus, LanguageTest,
//! codegen.Loader and codegen.Mapper with their messages (analyzer.proto,
//! converter.proto, events.proto, resource_status.proto, testing/language.proto,
//! codegen/loader.proto, codegen/mapper.proto). The test prints every
//! top-level element we leave out (see it with `-- --nocapture`), so a new
//! SDK's additions are visible.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use prost::Message;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto, FileDescriptorSet};
use serde_json::{json, Value};

type Flat = BTreeMap<String, Value>;

#[test]
fn our_schema_matches_the_pulumi_sdk() {
    let Some(sdk) = sdk_schema() else { return };
    let ours = our_schema();
    assert!(
        ours.len() > 1000,
        "our schema looks empty: {} elements",
        ours.len()
    );

    let mut problems = Vec::new();
    for (key, our_facts) in &ours {
        match sdk.get(key) {
            None => problems.push(format!("{key}: we define it, the SDK does not")),
            Some(sdk_facts) if sdk_facts != our_facts => problems.push(format!(
                "{key}: differs\n    ours: {our_facts}\n    SDK:  {sdk_facts}"
            )),
            Some(_) => {}
        }
    }
    let mut left_out = Vec::new();
    for key in sdk.keys().filter(|key| !ours.contains_key(*key)) {
        match container_of(key) {
            Some(container) if ours.contains_key(&container) => {
                problems.push(format!("{key}: the SDK has it in {container}, we do not"))
            }
            Some(container) if sdk.contains_key(&container) => {} // inside something we leave out
            _ => left_out.push(key.as_str()),
        }
    }

    println!(
        "compared {} elements of ours with {} of the SDK; left out on purpose:",
        ours.len(),
        sdk.len()
    );
    for key in &left_out {
        println!("  {key}");
    }
    assert!(
        problems.is_empty(),
        "{} difference(s) from the Pulumi SDK:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

/// The container whose definition must list `key` too: a field's, enum
/// value's or method's parent, or the message a nested type is declared in.
fn container_of(key: &str) -> Option<String> {
    let (kind, name) = key.split_once(' ')?;
    let (parent, _) = name.rsplit_once('.')?;
    Some(match kind {
        "field" | "message" | "enum" => format!("message {parent}"),
        "value" => format!("enum {parent}"),
        "method" => format!("service {parent}"),
        _ => return None,
    })
}

/// The SDK's flattened schema, or `None` when no interpreter is configured
/// outside CI.
fn sdk_schema() -> Option<Flat> {
    let python = common::sdk_python("the pulumirpc schema")?;
    let stdout = common::run_script(&python, "sdk_descriptors.py", &[]);
    Some(serde_json::from_slice(&stdout).expect("the script prints a JSON object"))
}

/// Our flattened schema: the files of the compiled descriptor set that come
/// from `proto/` (not the Google well-known types protox supplies).
fn our_schema() -> Flat {
    let set = FileDescriptorSet::decode(converge_proto::FILE_DESCRIPTOR_SET)
        .expect("the build script wrote a valid descriptor set");
    let proto_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
    let mut out = Flat::new();
    for file in &set.file {
        // go-plugin's `plugin` package is checked against PyPI's tf, not here.
        if proto_dir.join(file.name()).is_file() && file.package() != "plugin" {
            add_file(&mut out, file);
        }
    }
    out
}

fn add_file(out: &mut Flat, file: &FileDescriptorProto) {
    let scope = match file.package() {
        "" => String::new(),
        package => format!(".{package}"),
    };
    out.insert(
        format!("file {}", file.name()),
        json!({"package": file.package()}),
    );
    for message in &file.message_type {
        add_message(out, file.name(), &scope, message);
    }
    for e in &file.enum_type {
        add_enum(out, file.name(), &scope, e);
    }
    for service in &file.service {
        let full = format!("{scope}.{}", service.name());
        out.insert(format!("service {full}"), json!({"file": file.name()}));
        for method in &service.method {
            out.insert(
                format!("method {full}.{}", method.name()),
                json!({
                    "input": method.input_type(),
                    "output": method.output_type(),
                    "client_streaming": method.client_streaming(),
                    "server_streaming": method.server_streaming(),
                }),
            );
        }
    }
}

fn add_message(out: &mut Flat, file: &str, scope: &str, message: &DescriptorProto) {
    let full = format!("{scope}.{}", message.name());
    let oneofs: Vec<&str> = message.oneof_decl.iter().map(|o| o.name()).collect();
    let mut reserved_names: Vec<&str> = message.reserved_name.iter().map(String::as_str).collect();
    reserved_names.sort_unstable();
    out.insert(
        format!("message {full}"),
        json!({
            "file": file,
            "map_entry": message.options.as_ref().is_some_and(|o| o.map_entry()),
            "oneofs": oneofs,
            "reserved_ranges": merged(message.reserved_range.iter().map(|r| (r.start(), r.end()))),
            "reserved_names": reserved_names,
        }),
    );
    for field in &message.field {
        let oneof = field.oneof_index.map(|i| oneofs[i as usize]);
        out.insert(
            format!("field {full}.{}", field.name()),
            json!({
                "number": field.number(),
                "label": field.label().as_str_name(),
                "type": field.r#type().as_str_name(),
                "type_name": field.type_name(),
                "oneof": oneof,
                "proto3_optional": field.proto3_optional(),
            }),
        );
    }
    for nested in &message.nested_type {
        add_message(out, file, &full, nested);
    }
    for e in &message.enum_type {
        add_enum(out, file, &full, e);
    }
}

fn add_enum(out: &mut Flat, file: &str, scope: &str, e: &EnumDescriptorProto) {
    let full = format!("{scope}.{}", e.name());
    let mut reserved_names: Vec<&str> = e.reserved_name.iter().map(String::as_str).collect();
    reserved_names.sort_unstable();
    out.insert(
        format!("enum {full}"),
        json!({
            "file": file,
            // Enum ranges include their end; make them end-exclusive.
            "reserved_ranges": merged(e.reserved_range.iter().map(|r| (r.start(), r.end() + 1))),
            "reserved_names": reserved_names,
        }),
    );
    for value in &e.value {
        out.insert(
            format!("value {full}.{}", value.name()),
            json!({"number": value.number()}),
        );
    }
}

/// End-exclusive ranges, sorted and with touching ranges joined (as the
/// Python side does).
fn merged(ranges: impl Iterator<Item = (i32, i32)>) -> Vec<[i32; 2]> {
    let mut ranges: Vec<(i32, i32)> = ranges.collect();
    ranges.sort_unstable();
    let mut out: Vec<[i32; 2]> = Vec::new();
    for (start, end) in ranges {
        match out.last_mut() {
            Some(last) if start <= last[1] => last[1] = last[1].max(end),
            _ => out.push([start, end]),
        }
    }
    out
}

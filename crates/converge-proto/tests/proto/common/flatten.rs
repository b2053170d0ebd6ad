//! The flat, keyed form of a protobuf schema that the descriptor tests
//! compare: `tests/descriptor_flat.py` builds the same form from a Python
//! package's descriptors. Keys name one element each (`message .pkg.Name`,
//! `field .pkg.Name.field`, ...), values hold the facts that decide wire
//! compatibility.

use std::collections::BTreeMap;
use std::path::Path;

use prost::Message;
use prost_types::{DescriptorProto, EnumDescriptorProto, FileDescriptorProto, FileDescriptorSet};
use serde_json::{json, Value};

pub type Flat = BTreeMap<String, Value>;

/// Our flattened schema: the files of the compiled descriptor set that come
/// from `proto/` (not the Google well-known types protox supplies) and whose
/// name `wanted` accepts.
pub fn our_schema(wanted: impl Fn(&str) -> bool) -> Flat {
    let set = FileDescriptorSet::decode(converge_proto::FILE_DESCRIPTOR_SET)
        .expect("the build script wrote a valid descriptor set");
    let proto_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("proto");
    let mut out = Flat::new();
    for file in &set.file {
        if proto_dir.join(file.name()).is_file() && wanted(file.name()) {
            add_file(&mut out, file);
        }
    }
    out
}

/// Compares `ours` with `theirs`: every element we define must be theirs
/// too with the same facts, and every element of theirs inside something
/// we define must be ours. Returns the problems and the top-level elements
/// of theirs we leave out.
pub fn compare<'a>(ours: &Flat, theirs: &'a Flat) -> (Vec<String>, Vec<&'a str>) {
    let mut problems = Vec::new();
    for (key, our_facts) in ours {
        match theirs.get(key) {
            None => problems.push(format!("{key}: we define it, they do not")),
            Some(their_facts) if their_facts != our_facts => problems.push(format!(
                "{key}: differs\n    ours:   {our_facts}\n    theirs: {their_facts}"
            )),
            Some(_) => {}
        }
    }
    let mut left_out = Vec::new();
    for key in theirs.keys().filter(|key| !ours.contains_key(*key)) {
        match container_of(key) {
            Some(container) if ours.contains_key(&container) => {
                problems.push(format!("{key}: they have it in {container}, we do not"))
            }
            Some(container) if theirs.contains_key(&container) => {} // inside something we leave out
            _ => left_out.push(key.as_str()),
        }
    }
    (problems, left_out)
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

/// Asserts that our `.proto` file `our_file` matches `theirs` (a schema
/// flattened from their file `their_file`, described as `who` in
/// messages) exactly, both ways, after their file's name is replaced by
/// ours in keys and facts.
pub fn assert_file_matches(our_file: &str, their_file: &str, theirs: Flat, who: &str) {
    let ours = our_schema(|file| file == our_file);
    assert!(
        ours.len() > 200,
        "our {our_file} schema looks empty: {} elements",
        ours.len()
    );
    let theirs: Flat = theirs
        .into_iter()
        .map(|(key, mut facts)| {
            let key = match key.strip_prefix("file ") {
                Some(f) if f == their_file => format!("file {our_file}"),
                _ => key,
            };
            if let Some(file) = facts.get_mut("file") {
                if file == their_file {
                    *file = Value::from(our_file);
                }
            }
            (key, facts)
        })
        .collect();
    let (mut problems, left_out) = compare(&ours, &theirs);
    problems.extend(
        left_out
            .iter()
            .map(|key| format!("{key}: {who} has it, we do not")),
    );
    println!(
        "compared {} elements of ours with {} of {who}",
        ours.len(),
        theirs.len()
    );
    assert!(
        problems.is_empty(),
        "{} difference(s) from {who} (theirs):\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

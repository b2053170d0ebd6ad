//! "The cloud": a JSON file of objects that tests can read.
//!
//! ```json
//! {"next": 3, "objects": {"thing-1": {"urn": "...", "properties": {...}}}, "log": ["create thing-1"]}
//! ```
//!
//! Properties are kept in their wire form (`google.protobuf.Struct` as
//! JSON, secrets as signature objects). Writes are atomic (temp + rename).

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use prost_types::{value::Kind, ListValue, Struct, Value};
use serde::Deserialize;
use serde_json::{json, Map, Value as Json};

/// One object.
#[derive(Debug, Clone, PartialEq)]
pub struct CloudObject {
    pub urn: String,
    pub properties: Map<String, Json>,
}

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cloud {
    pub next: u64,
    pub objects: BTreeMap<String, CloudObject>,
    pub log: Vec<String>,
}

fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

impl Cloud {
    /// Reads the file; a missing file is an empty cloud.
    pub fn load(path: &Path) -> io::Result<Cloud> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Cloud::default()),
            Err(e) => return Err(e),
        };
        // Objects may hold values nested past serde_json's default
        // recursion limit (128); the plugin's threads have the stack.
        let mut de = serde_json::Deserializer::from_str(&text);
        de.disable_recursion_limit();
        let doc = Json::deserialize(&mut de).map_err(|e| invalid(e.to_string()))?;
        let mut cloud = Cloud {
            next: doc["next"].as_u64().unwrap_or(0),
            ..Cloud::default()
        };
        if let Some(objects) = doc["objects"].as_object() {
            for (id, o) in objects {
                let object = CloudObject {
                    urn: o["urn"].as_str().unwrap_or_default().to_owned(),
                    properties: o["properties"].as_object().cloned().unwrap_or_default(),
                };
                cloud.objects.insert(id.clone(), object);
            }
        }
        if let Some(log) = doc["log"].as_array() {
            cloud.log = log
                .iter()
                .filter_map(|l| l.as_str().map(str::to_owned))
                .collect();
        }
        Ok(cloud)
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> io::Result<()> {
        let objects: Map<String, Json> = self
            .objects
            .iter()
            .map(|(id, o)| {
                let v = json!({"urn": o.urn, "properties": Json::Object(o.properties.clone())});
                (id.clone(), v)
            })
            .collect();
        let doc = json!({"next": self.next, "objects": objects, "log": self.log});
        let text = serde_json::to_string_pretty(&doc).map_err(|e| invalid(e.to_string()))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)
    }

    /// A property of an object as a string, if it is one.
    pub fn property(&self, id: &str, key: &str) -> Option<&str> {
        self.objects.get(id)?.properties.get(key)?.as_str()
    }
}

/// A `Struct` as a JSON object.
pub fn struct_to_json(s: &Struct) -> Map<String, Json> {
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), value_to_json(v)))
        .collect()
}

/// A JSON object as a `Struct`.
pub fn json_to_struct(m: &Map<String, Json>) -> Struct {
    Struct {
        fields: m
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect(),
    }
}

fn value_to_json(v: &Value) -> Json {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => Json::Null,
        Some(Kind::BoolValue(b)) => Json::Bool(*b),
        Some(Kind::NumberValue(n)) => {
            serde_json::Number::from_f64(*n).map_or(Json::Null, Json::Number)
        }
        Some(Kind::StringValue(s)) => Json::String(s.clone()),
        Some(Kind::ListValue(l)) => Json::Array(l.values.iter().map(value_to_json).collect()),
        Some(Kind::StructValue(s)) => Json::Object(struct_to_json(s)),
    }
}

fn json_to_value(j: &Json) -> Value {
    let kind = match j {
        Json::Null => Kind::NullValue(0),
        Json::Bool(b) => Kind::BoolValue(*b),
        Json::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Json::String(s) => Kind::StringValue(s.clone()),
        Json::Array(a) => Kind::ListValue(ListValue {
            values: a.iter().map(json_to_value).collect(),
        }),
        Json::Object(m) => Kind::StructValue(json_to_struct(m)),
    };
    Value { kind: Some(kind) }
}

//! What the provider's configuration looked like when it arrived
//! (`CheckConfig`'s news, `Configure`'s args and variables), written to the
//! cloud's log (`checkConfig <json>`, `configureArgs <json>`) so that tests can check what the engine sends: values as
//! JSON with every secret shown as `{"secret": "[redacted]"}` (the shape,
//! never the secret), and the variables whose argument is secret redacted
//! likewise.

use std::collections::HashMap;

use prost_types::{value::Kind as V, Struct, Value};
use serde_json::{json, Value as Json};

const SIG_KEY: &str = "4dabf18193072939515e22adb298388d";
const SECRET_SIG: &str = "1b47061264138c4ac30d75fd1eb44270";

fn is_secret(s: &Struct) -> bool {
    matches!(
        s.fields.get(SIG_KEY).and_then(|v| v.kind.as_ref()),
        Some(V::StringValue(sig)) if sig == SECRET_SIG
    )
}

fn describe(v: &Value) -> Json {
    match &v.kind {
        None | Some(V::NullValue(_)) => Json::Null,
        Some(V::BoolValue(b)) => json!(b),
        Some(V::NumberValue(n)) => json!(n),
        Some(V::StringValue(s)) => json!(s),
        Some(V::ListValue(l)) => Json::Array(l.values.iter().map(describe).collect()),
        Some(V::StructValue(s)) if is_secret(s) => json!({"secret": "[redacted]"}),
        Some(V::StructValue(s)) => describe_struct(s),
    }
}

fn describe_struct(s: &Struct) -> Json {
    Json::Object(
        s.fields
            .iter()
            .map(|(k, v)| (k.clone(), describe(v)))
            .collect(),
    )
}

/// `checkConfig <json>`: the news as they arrived.
pub fn check_config_entry(news: &Option<Struct>) -> String {
    let news = news.as_ref().map(describe_struct).unwrap_or(Json::Null);
    format!("checkConfig {news}")
}

/// `configureArgs <json>`: `{"args": …, "variables": …}` as they arrived.
pub fn configure_entry(args: &Option<Struct>, variables: &HashMap<String, String>) -> String {
    let secret_keys: Vec<&String> = args
        .iter()
        .flat_map(|a| a.fields.iter())
        .filter(|(_, v)| matches!(&v.kind, Some(V::StructValue(s)) if is_secret(s)))
        .map(|(k, _)| k)
        .collect();
    let variables: serde_json::Map<String, Json> = variables
        .iter()
        .map(|(k, v)| {
            let secret = secret_keys
                .iter()
                .any(|key| k.rsplit(':').next() == Some(key.as_str()));
            let shown = if secret {
                json!("[redacted]")
            } else {
                json!(v)
            };
            (k.clone(), shown)
        })
        .collect();
    let args = args.as_ref().map(describe_struct).unwrap_or(Json::Null);
    format!(
        "configureArgs {}",
        json!({"args": args, "variables": variables})
    )
}

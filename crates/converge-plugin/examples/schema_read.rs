//! Reading a large package schema (`GetSchema`'s answer): prints one JSON
//! object per line. Run in release mode:
//! `cargo run --release -p converge-plugin --example schema_read`.
//!
//! The schema is generated with the proportions of a large provider's
//! (`SCHEMA_RESOURCES` resources of 30 properties, twice as many object
//! types of 10, a function per three resources; every property with a
//! description of a few hundred characters). Rows, each the median of
//! `BENCH_RUNS` (default 5) reads:
//!
//! - `schema_tokens_only`: the text parsed as a JSON value and the keys of
//!   `resources` and `functions` taken — what reading a schema cost when
//!   only its tokens were kept;
//! - `schema_read`: [`PackageSchema::from_text`], tokens and every
//!   member's properties.

use std::collections::BTreeSet;
use std::time::Instant;

use converge_plugin::PackageSchema;
use serde_json::{json, Map, Value};

fn description(i: usize) -> String {
    format!(
        "{i}: {}",
        "Describes what this property holds and when. ".repeat(7)
    )
}

fn properties(n: usize, seed: usize, types: usize) -> Value {
    let mut m = Map::new();
    for p in 0..n {
        let ty = match p % 5 {
            0 => json!({"type": "string"}),
            1 => json!({"type": "array", "items": {"type": "string"}}),
            2 => json!({"type": "object", "additionalProperties": {"type": "string"}}),
            3 => {
                json!({"$ref": format!("#/types/big:index/type{}:Type{}", (seed + p) % types, (seed + p) % types)})
            }
            _ => json!({"type": "integer"}),
        };
        let mut ty = ty.as_object().cloned().unwrap_or_default();
        ty.insert("description".into(), description(p).into());
        m.insert(format!("property{p}"), Value::Object(ty));
    }
    Value::Object(m)
}

fn schema(resources: usize) -> String {
    let types_n = resources * 2;
    let types: Map<String, Value> = (0..types_n)
        .map(|t| {
            (
                format!("big:index/type{t}:Type{t}"),
                json!({"type": "object", "description": description(t),
                       "properties": properties(10, t, types_n)}),
            )
        })
        .collect();
    let members: Map<String, Value> = (0..resources)
        .map(|r| {
            (
                format!("big:index/res{r}:Res{r}"),
                json!({"description": description(r).repeat(20),
                       "properties": properties(30, r, types_n),
                       "inputProperties": properties(20, r, types_n),
                       "requiredInputs": ["property0"]}),
            )
        })
        .collect();
    let functions: Map<String, Value> = (0..resources / 3)
        .map(|f| {
            (
                format!("big:index/getRes{f}:getRes{f}"),
                json!({"description": description(f).repeat(10),
                       "inputs": {"properties": properties(5, f, types_n)},
                       "outputs": {"type": "object", "properties": properties(15, f, types_n)}}),
            )
        })
        .collect();
    json!({
        "name": "big", "version": "1.0.0",
        "language": {"nodejs": {"packageName": "@big/big"}},
        "types": types, "resources": members, "functions": functions,
    })
    .to_string()
}

fn tokens_only(text: &str) -> usize {
    let v: Value = serde_json::from_str(text).expect("the schema is JSON");
    let keys = |section: &str| -> BTreeSet<String> {
        v.get(section)
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    keys("resources").len() + keys("functions").len()
}

fn median_ms(runs: usize, mut f: impl FnMut()) -> (f64, Vec<f64>) {
    let mut all: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    let shown = all.clone();
    all.sort_by(f64::total_cmp);
    (all[all.len() / 2], shown)
}

fn main() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let runs = env("BENCH_RUNS", 5).max(1);
    let resources = env("SCHEMA_RESOURCES", 1500);
    let text = schema(resources);
    let (ms, runs_ms) = median_ms(runs, || {
        std::hint::black_box(tokens_only(&text));
    });
    println!(
        "{}",
        json!({"row": "schema_tokens_only", "resources": resources, "bytes": text.len(),
               "ms": ms, "runs_ms": runs_ms})
    );
    let (ms, runs_ms) = median_ms(runs, || {
        let s = PackageSchema::from_text(&text).expect("the schema reads");
        assert_eq!(s.shapes.resources.len(), resources);
        std::hint::black_box(s);
    });
    println!(
        "{}",
        json!({"row": "schema_read", "resources": resources, "bytes": text.len(),
               "ms": ms, "runs_ms": runs_ms})
    );
}

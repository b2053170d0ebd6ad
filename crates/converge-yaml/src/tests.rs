use std::collections::BTreeMap;

use serde_norway::Value;

use super::*;

/// `levels` levels of `width` aliases, each level a list of aliases of the
/// level before: `width^levels` nodes in a file of a few hundred bytes.
pub(crate) fn alias_bomb(levels: usize, width: usize) -> String {
    let mut text = format!("l0: &l0 [{}]\n", vec!["\"lol\""; width].join(", "));
    for level in 1..levels {
        let aliases = vec![format!("*l{}", level - 1); width].join(", ");
        text.push_str(&format!("l{level}: &l{level} [{aliases}]\n"));
    }
    text
}

fn nested(depth: usize) -> String {
    let mut text = String::from("top:\n");
    for level in 1..depth {
        text.push_str(&format!("{}k{level}:\n", "  ".repeat(level)));
    }
    text.push_str(&format!("{}leaf\n", "  ".repeat(depth)));
    text
}

#[test]
fn an_alias_bomb_is_refused_where_it_goes_past_the_allowance() {
    let text = alias_bomb(9, 9);
    let e = from_str::<Value>("Pulumi.yaml", &text).unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Aliases), "{e}");
    // The sixth level's aliases (66,430 nodes each) are the first to go
    // past it.
    assert_eq!((e.line, e.column), (6, 10), "{e}");
    let message = e.to_string();
    assert!(
        message.starts_with("Pulumi.yaml:6:10: the document contains excessive aliasing"),
        "{message}"
    );
    // A quadratic one too: many aliases of one large list.
    let big: Vec<String> = (0..5_000).map(|i| i.to_string()).collect();
    let text = format!(
        "a: &a [{}]\nb: [{}]\n",
        big.join(", "),
        vec!["*a"; 5_000].join(", ")
    );
    let e = check("f.yaml", &text).unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Aliases), "{e}");
}

#[test]
fn aliases_within_the_allowance_read_as_copies() {
    let text = "common: &tags {team: web, env: prod}\na: {tags: *tags}\nb: {tags: *tags}\n";
    let doc: BTreeMap<String, Value> = from_str("f.yaml", text).unwrap();
    assert_eq!(doc["a"]["tags"], doc["common"]);
    assert_eq!(doc["b"]["tags"]["team"], Value::from("web"));
    // Five levels of nine: 74,718 nodes, inside the allowance.
    check("f.yaml", &alias_bomb(5, 9)).unwrap();
    // Aliases of small values, many times over: within four per node
    // written out.
    let text: String = std::iter::once("x: &x [1, 2, 3]\n".to_owned())
        .chain((0..40_000).map(|i| format!("k{i}: *x\n")))
        .collect();
    check("f.yaml", &text).unwrap();
}

#[test]
fn nesting_is_bounded_with_aliases_expanded() {
    check("f.yaml", &nested(MAX_YAML_DEPTH)).unwrap();
    let e = check("f.yaml", &nested(MAX_YAML_DEPTH + 1)).unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Depth), "{e}");
    // The first key of the mapping one level too deep.
    assert_eq!(e.line, MAX_YAML_DEPTH + 1, "{e}");
    let flow = format!(
        "{}{}",
        "[".repeat(MAX_YAML_DEPTH + 1),
        "]".repeat(MAX_YAML_DEPTH + 1)
    );
    assert_eq!(
        check("f.yaml", &flow).unwrap_err().limit(),
        Some(Limit::Depth)
    );
    // Each half within the limit, together past it.
    let half = MAX_YAML_DEPTH / 2 + 1;
    let text = format!(
        "a: &a {}{}\nb: {}*a{}\n",
        "[".repeat(half),
        "]".repeat(half),
        "[".repeat(half),
        "]".repeat(half)
    );
    let e = check("f.yaml", &text).unwrap_err();
    assert_eq!((e.limit(), e.line), (Some(Limit::Depth), 2), "{e}");
}

#[test]
fn a_file_too_large_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Pulumi.yaml");
    let file = std::fs::File::create(&path).unwrap();
    // Sparse: the test writes no 64 MiB, and the reader reads none.
    file.set_len(MAX_YAML_BYTES + 1).unwrap();
    let e = load::<Value>(&path).unwrap_err();
    assert_eq!(e.limit(), Some(Limit::Size), "{e}");
    assert!(e.to_string().contains("larger than 67108864 bytes"), "{e}");
    file.set_len(10).unwrap();
    let e = load::<Value>(&path).unwrap_err();
    assert!(matches!(e.kind, YamlErrorKind::Syntax(_)), "{e}");
}

#[test]
fn errors_name_the_file_and_where() {
    let e = from_str::<Value>("Pulumi.dev.yaml", "a: [1, 2\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Pulumi.dev.yaml:2:1: invalid YAML"),
        "{e}"
    );
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Meta {
        version: i64,
    }
    let e = from_str::<Meta>("meta.yaml", "version: x\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "meta.yaml:1:10: version: invalid type: string \"x\", expected i64"
    );
    let e = load::<Value>(Path::new("/nonexistent/Pulumi.yaml")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/Pulumi.yaml: cannot read it: No such file"),
        "{e}"
    );
}

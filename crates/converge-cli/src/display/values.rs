//! Property values as the display shows them: one `key: value` line per
//! property, objects and arrays opened on their own lines, changes as
//! `old => new`, secrets as `[secret]` unless revealed, unknowns as
//! `[unknown]`. Keys starting with `__` (provider bookkeeping such as
//! `__defaults`) are not shown.

use converge_model::{peel, Archive, Asset, PropertyMap, PropertyValue};

/// How values are shown.
#[derive(Debug, Clone, Copy, Default)]
pub struct ValueStyle {
    /// Show what secrets hold instead of `[secret]`.
    pub show_secrets: bool,
}

/// Where nested lines start: the column of the first property's sign.
pub const DETAIL_INDENT: usize = 6;
const STEP: usize = 4;

/// The lines that show how `old` becomes `new`: only what differs.
pub fn diff_lines(old: &PropertyMap, new: &PropertyMap, style: ValueStyle) -> Vec<String> {
    let mut p = Printer {
        style,
        lines: Vec::new(),
    };
    p.diff_maps(DETAIL_INDENT, old, new);
    p.lines
}

/// Every property of `map`, each line marked with `sign` (`+` for what is
/// created, `-` for what is deleted).
pub fn property_lines(sign: char, map: &PropertyMap, style: ValueStyle) -> Vec<String> {
    let mut p = Printer {
        style,
        lines: Vec::new(),
    };
    let keys = shown_keys(map.iter().filter(|(_, v)| present(v)).map(|(k, _)| k));
    let width = key_width(keys.iter().map(|k| k.as_str()));
    for k in keys {
        p.whole(DETAIL_INDENT, sign, &pad(&k, width), &map[&k]);
    }
    p.lines
}

/// A stack output after an update, as Pulumi shows it, indented four
/// spaces: a scalar on the key's line (strings quoted, a masked secret as
/// `[secret]`), a non-empty object or array opened there with its members
/// below, in the preview's form without signs.
pub fn output_lines(key: &str, v: &PropertyValue, style: ValueStyle) -> Vec<String> {
    let mut printer = Printer {
        style,
        lines: Vec::new(),
    };
    printer.whole(2, ' ', key, v);
    printer.lines
}

/// The top-level keys whose values differ, by kind: added, deleted, updated.
pub fn changed_keys(old: &PropertyMap, new: &PropertyMap) -> ChangedKeys {
    let mut out = ChangedKeys::default();
    let keys = shown_keys(
        old.keys()
            .chain(new.keys().filter(|k| !old.contains_key(*k))),
    );
    for k in keys {
        match (
            old.get(k.as_str()).filter(|v| present(v)),
            new.get(k.as_str()).filter(|v| present(v)),
        ) {
            (None, Some(_)) => out.added.push(k),
            (Some(_), None) => out.deleted.push(k),
            (Some(a), Some(b)) if !same(a, b) => out.updated.push(k),
            _ => {}
        }
    }
    out
}

/// Top-level keys grouped by how they change.
#[derive(Debug, Default, PartialEq)]
pub struct ChangedKeys {
    pub added: Vec<String>,
    pub deleted: Vec<String>,
    pub updated: Vec<String>,
}

impl ChangedKeys {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.deleted.is_empty() && self.updated.is_empty()
    }

    /// Pulumi's compact form: `+added-deleted~updated`, names within a
    /// group joined by commas.
    pub fn compact(&self) -> String {
        let mut s = String::new();
        for (sign, keys) in [
            ('+', &self.added),
            ('-', &self.deleted),
            ('~', &self.updated),
        ] {
            if !keys.is_empty() {
                s.push(sign);
                s.push_str(&keys.join(","));
            }
        }
        s
    }
}

struct Printer {
    style: ValueStyle,
    lines: Vec<String>,
}

impl Printer {
    fn line(&mut self, indent: usize, sign: char, text: &str) {
        self.lines.push(format!("{:indent$}{sign} {text}", ""));
    }

    fn close(&mut self, indent: usize, bracket: char) {
        self.lines
            .push(format!("{:w$}{bracket}", "", w = indent + 2));
    }

    /// The changes between two objects, one line (or block) per key.
    fn diff_maps(&mut self, indent: usize, old: &PropertyMap, new: &PropertyMap) {
        let keys = shown_keys(
            old.keys()
                .chain(new.keys().filter(|k| !old.contains_key(*k))),
        );
        let changed: Vec<&String> = keys
            .iter()
            .filter(|k| differs(old.get(k.as_str()), new.get(k.as_str())))
            .collect();
        let width = key_width(changed.iter().map(|k| k.as_str()));
        for k in changed {
            self.diff_entry(indent, &pad(k, width), old.get(k), new.get(k));
        }
    }

    fn diff_entry(
        &mut self,
        indent: usize,
        key: &str,
        old: Option<&PropertyValue>,
        new: Option<&PropertyValue>,
    ) {
        let (old, new) = (old.filter(|v| present(v)), new.filter(|v| present(v)));
        let (old, new) = match (old, new) {
            (None, None) => return,
            (None, Some(n)) => return self.whole(indent, '+', key, n),
            (Some(o), None) => return self.whole(indent, '-', key, o),
            (Some(o), Some(n)) => (o, n),
        };
        let (o, n) = (peel(old), peel(new));
        let hidden = (o.secret || n.secret) && !self.style.show_secrets;
        match (o.value, n.value) {
            (Some(PropertyValue::Object(a)), Some(PropertyValue::Object(b)))
                if !hidden && o.secret == n.secret =>
            {
                self.line(indent, '~', &format!("{key}: {{"));
                self.diff_maps(indent + STEP, a, b);
                self.close(indent, '}');
            }
            (Some(PropertyValue::Array(a)), Some(PropertyValue::Array(b)))
                if !hidden && o.secret == n.secret =>
            {
                self.line(indent, '~', &format!("{key}: ["));
                let labels: Vec<String> = (0..a.len().max(b.len()))
                    .map(|i| format!("[{i}]"))
                    .collect();
                let changed: Vec<usize> = (0..labels.len())
                    .filter(|&i| differs(a.get(i), b.get(i)))
                    .collect();
                let width = key_width(changed.iter().map(|&i| labels[i].as_str()));
                for i in changed {
                    self.diff_entry(indent + STEP, &pad(&labels[i], width), a.get(i), b.get(i));
                }
                self.close(indent, ']');
            }
            _ => {
                let text = format!("{key}: {} => {}", self.scalar(old), self.scalar(new));
                self.line(indent, '~', &text);
            }
        }
    }

    /// A whole value under one sign: scalars on the key's line, objects and
    /// arrays opened there with their members below.
    fn whole(&mut self, indent: usize, sign: char, key: &str, v: &PropertyValue) {
        let p = peel(v);
        if p.secret && !self.style.show_secrets {
            return self.line(indent, sign, &format!("{key}: [secret]"));
        }
        match p.value {
            Some(PropertyValue::Object(m)) if !m.is_empty() => {
                self.line(indent, sign, &format!("{key}: {{"));
                let keys = shown_keys(m.iter().filter(|(_, v)| present(v)).map(|(k, _)| k));
                let width = key_width(keys.iter().map(|k| k.as_str()));
                for k in keys {
                    self.whole(indent + STEP, sign, &pad(&k, width), &m[&k]);
                }
                self.close(indent, '}');
            }
            Some(PropertyValue::Array(items)) if !items.is_empty() => {
                self.line(indent, sign, &format!("{key}: ["));
                let width = format!("[{}]", items.len() - 1).len();
                for (i, item) in items.iter().enumerate() {
                    self.whole(indent + STEP, sign, &pad(&format!("[{i}]"), width), item);
                }
                self.close(indent, ']');
            }
            _ => {
                let text = format!("{key}: {}", self.scalar(v));
                self.line(indent, sign, &text);
            }
        }
    }

    /// A value on one line.
    fn scalar(&self, v: &PropertyValue) -> String {
        let p = peel(v);
        if p.secret && !self.style.show_secrets {
            return "[secret]".to_owned();
        }
        match p.value {
            None => "[unknown]".to_owned(),
            Some(inner) => self.inline(inner),
        }
    }

    fn inline(&self, v: &PropertyValue) -> String {
        match v {
            PropertyValue::Null => "null".to_owned(),
            PropertyValue::Bool(b) => b.to_string(),
            PropertyValue::Number(n) => number(*n),
            PropertyValue::String(s) if s == converge_model::UNKNOWN_STRING => {
                "[unknown]".to_owned()
            }
            PropertyValue::String(s) => quote(s),
            PropertyValue::Array(items) => {
                let parts: Vec<String> = items.iter().map(|i| self.scalar(i)).collect();
                format!("[{}]", parts.join(", "))
            }
            PropertyValue::Object(m) => {
                let parts: Vec<String> = m
                    .iter()
                    .filter(|(k, v)| present(v) && !k.starts_with("__"))
                    .map(|(k, v)| format!("{k}: {}", self.scalar(v)))
                    .collect();
                format!("{{{}}}", parts.join(", "))
            }
            PropertyValue::Asset(a) => asset(a),
            PropertyValue::Archive(a) => archive(a),
            PropertyValue::ResourceReference(r) => r.urn.to_string(),
            PropertyValue::Unknown | PropertyValue::Secret(_) | PropertyValue::Output(_) => {
                self.scalar(v)
            }
        }
    }
}

/// Null counts as absent, as in diffs.
fn present(v: &PropertyValue) -> bool {
    !matches!(v, PropertyValue::Null)
}

fn differs(old: Option<&PropertyValue>, new: Option<&PropertyValue>) -> bool {
    match (old.filter(|v| present(v)), new.filter(|v| present(v))) {
        (None, None) => false,
        (Some(a), Some(b)) => !same(a, b),
        _ => true,
    }
}

/// Equal as the display sees them: wrappers compared by what they hold and
/// whether they are secret; an output's dependencies do not count.
fn same(a: &PropertyValue, b: &PropertyValue) -> bool {
    let (pa, pb) = (peel(a), peel(b));
    if pa.secret != pb.secret {
        return false;
    }
    match (pa.value, pb.value) {
        (None, None) => true,
        // Each child once: a key of both maps compared from `x` only, so
        // a value nested n levels deep costs n comparisons, not 2^n.
        (Some(PropertyValue::Object(x)), Some(PropertyValue::Object(y))) => {
            x.iter().all(|(k, v)| !differs(Some(v), y.get(k.as_str())))
                && y.iter()
                    .filter(|(k, _)| x.get(k.as_str()).is_none())
                    .all(|(_, v)| !differs(None, Some(v)))
        }
        (Some(PropertyValue::Array(x)), Some(PropertyValue::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Sorted, without duplicates and bookkeeping keys.
fn shown_keys<'a>(keys: impl Iterator<Item = &'a String>) -> Vec<String> {
    let set: std::collections::BTreeSet<&String> = keys.filter(|k| !k.starts_with("__")).collect();
    set.into_iter().cloned().collect()
}

fn key_width<'a>(keys: impl Iterator<Item = &'a str>) -> usize {
    keys.map(|k| k.chars().count()).max().unwrap_or(0)
}

fn pad(key: &str, width: usize) -> String {
    format!("{key:<width$}")
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// Integers without a fraction, like JSON numbers users wrote.
fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

fn asset(a: &Asset) -> String {
    if let Some(p) = &a.path {
        format!("asset(file:{p})")
    } else if let Some(u) = &a.uri {
        format!("asset(uri:{u})")
    } else {
        format!("asset(text:{})", short_hash(&a.hash))
    }
}

fn archive(a: &Archive) -> String {
    if let Some(p) = &a.path {
        format!("archive(file:{p})")
    } else if let Some(u) = &a.uri {
        format!("archive(uri:{u})")
    } else {
        let n = a.assets.as_ref().map_or(0, |m| m.len());
        format!("archive(assets:{n}, {})", short_hash(&a.hash))
    }
}

fn short_hash(h: &str) -> &str {
    h.get(..8).unwrap_or(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{"level": {"level": ... bottom}}`, `levels` objects deep.
    fn nested(levels: usize, bottom: &str) -> PropertyValue {
        let mut v = PropertyValue::from(bottom);
        for _ in 0..levels {
            v = PropertyValue::Object([("level".to_owned(), v)].into_iter().collect());
        }
        v
    }

    #[test]
    fn deep_values_are_compared_once_per_level() {
        // Comparing each key from both sides doubled the work at every
        // level: 2^60 comparisons here, which never finished.
        let (a, b) = (nested(60, "a"), nested(60, "b"));
        assert!(same(&a, &a.clone()));
        assert!(!same(&a, &b));
        assert!(differs(Some(&a), Some(&b)));
    }

    fn value(json: &serde_json::Value) -> PropertyValue {
        use serde_json::Value as J;
        match json {
            J::Null => PropertyValue::Null,
            J::Bool(b) => PropertyValue::Bool(*b),
            J::Number(n) => PropertyValue::Number(n.as_f64().unwrap()),
            J::String(s) => PropertyValue::string(s.clone()),
            J::Array(a) => PropertyValue::Array(a.iter().map(value).collect()),
            J::Object(o) => {
                PropertyValue::Object(o.iter().map(|(k, v)| (k.clone(), value(v))).collect())
            }
        }
    }

    fn map(json: serde_json::Value) -> PropertyMap {
        match value(&json) {
            PropertyValue::Object(m) => m,
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn nested_objects_and_arrays_show_old_and_new() {
        let old = map(serde_json::json!({
            "length": 2,
            "keepers": {"env": "dev", "team": "a"},
            "zones": ["a", "b", "c"],
            "same": "x",
            "__defaults": [],
        }));
        let new = map(serde_json::json!({
            "length": 3,
            "keepers": {"env": "prod", "owner": "ops"},
            "zones": ["a", "B"],
            "same": "x",
            "added": {"k": [1, true]},
        }));
        insta::assert_snapshot!(diff_lines(&old, &new, ValueStyle::default()).join("\n"), @r#"
            + added  : {
                + k: [
                    + [0]: 1
                    + [1]: true
                  ]
              }
            ~ keepers: {
                ~ env  : "dev" => "prod"
                + owner: "ops"
                - team : "a"
              }
            ~ length : 2 => 3
            ~ zones  : [
                ~ [1]: "b" => "B"
                - [2]: "c"
              ]
            "#);
    }

    #[test]
    fn secrets_are_masked_unless_shown() {
        let secret = |s: &str| PropertyValue::secret(PropertyValue::string(s));
        let old: PropertyMap = [
            ("password".to_owned(), secret("hunter2")),
            ("user".to_owned(), PropertyValue::string("a")),
            (
                "nested".to_owned(),
                PropertyValue::secret(PropertyValue::Object(map(serde_json::json!({"k": "v1"})))),
            ),
        ]
        .into_iter()
        .collect();
        let new: PropertyMap = [
            ("password".to_owned(), secret("correct horse")),
            ("user".to_owned(), secret("b")),
            (
                "nested".to_owned(),
                PropertyValue::secret(PropertyValue::Object(map(serde_json::json!({"k": "v2"})))),
            ),
        ]
        .into_iter()
        .collect();
        let masked = diff_lines(&old, &new, ValueStyle::default()).join("\n");
        assert!(!masked.contains("hunter2") && !masked.contains("v1") && !masked.contains("\"b\""));
        insta::assert_snapshot!(masked, @r#"
      ~ nested  : [secret] => [secret]
      ~ password: [secret] => [secret]
      ~ user    : "a" => [secret]
        "#);
        let shown = diff_lines(&old, &new, ValueStyle { show_secrets: true }).join("\n");
        insta::assert_snapshot!(shown, @r#"
      ~ nested  : {
          ~ k: "v1" => "v2"
        }
      ~ password: "hunter2" => "correct horse"
      ~ user    : "a" => "b"
        "#);
        let created = property_lines('+', &new, ValueStyle::default()).join("\n");
        insta::assert_snapshot!(created, @r#"
      + nested  : [secret]
      + password: [secret]
      + user    : [secret]
        "#);
    }

    #[test]
    fn unknowns_and_the_compact_form() {
        let old = map(serde_json::json!({"a": 1, "b": "x", "gone": true}));
        let mut new = map(serde_json::json!({"a": 1, "c": 2}));
        new.insert("b".to_owned(), PropertyValue::Unknown);
        insta::assert_snapshot!(diff_lines(&old, &new, ValueStyle::default()).join("\n"), @r#"
      ~ b   : "x" => [unknown]
      + c   : 2
      - gone: true
        "#);
        assert_eq!(changed_keys(&old, &new).compact(), "+c-gone~b");
        assert!(changed_keys(&old, &old).is_empty());
    }
}

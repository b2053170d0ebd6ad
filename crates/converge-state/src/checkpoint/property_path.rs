//! Property paths in messages: `tags.name`, `list[2]`, `["a.b"]`, the
//! syntax Pulumi uses to name a value inside a property map.

/// A step of a property path, for messages.
#[derive(Clone, Copy)]
pub(crate) enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

pub(crate) fn render_path(steps: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in steps {
        match step {
            Step::Key(key) => push_key(&mut out, key),
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// `a.b` for simple keys, `a["b.c"]` otherwise (Pulumi's property paths).
fn push_key(out: &mut String, key: &str) {
    let simple = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '$');
    if simple {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
    } else {
        out.push('[');
        out.push_str(&serde_json::to_string(key).unwrap_or_default());
        out.push(']');
    }
}

/// Joins a path and a path relative to it.
pub(crate) fn join_paths(base: &str, rest: &str) -> String {
    if base.is_empty() || rest.is_empty() || rest.starts_with('[') {
        format!("{base}{rest}")
    } else {
        format!("{base}.{rest}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_pulumi_property_paths() {
        let steps = [
            Step::Key("tags"),
            Step::Key("a.b"),
            Step::Index(2),
            Step::Key("x"),
        ];
        assert_eq!(render_path(&steps), r#"tags["a.b"][2].x"#);
        assert_eq!(join_paths("outputs", "password"), "outputs.password");
        assert_eq!(join_paths("outputs", r#"["a.b"]"#), r#"outputs["a.b"]"#);
    }
}

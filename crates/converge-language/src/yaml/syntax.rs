//! YAML text → a tree of positioned nodes. Built on `saphyr-parser`'s event
//! stream so that every node, and every mapping key, knows its line and
//! column. Plain scalars are resolved with YAML 1.2's core schema; duplicate
//! keys are errors. Every event is counted against `converge_yaml`'s
//! limits before it is acted on, so an alias is refused before the copy
//! it stands for is made.

use std::collections::HashMap;

use converge_yaml::Budget;
use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use super::{Pos, YamlError};

/// A YAML value with its position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub pos: Pos,
    pub kind: NodeKind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeKind {
    Null,
    Bool(bool),
    Number(f64),
    Str(Text),
    Seq(Vec<Node>),
    Map(Vec<(Key, Node)>),
}

/// A string scalar. `column` is the column of the value's first character
/// when the value is, character for character, its source text (one line,
/// no escapes), so that an offset into the value is an offset into the line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Text {
    pub value: String,
    pub column: Option<usize>,
}

impl Text {
    /// The position of the value's `offset`-th character, or `at` (the
    /// scalar's position) when that cannot be known.
    pub fn pos_of(&self, at: Pos, offset: usize) -> Pos {
        match self.column {
            Some(c) => Pos {
                line: at.line,
                column: c + offset,
            },
            None => at,
        }
    }
}

/// A mapping key: always a string, with its position.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Key {
    pub name: String,
    pub pos: Pos,
}

impl Node {
    /// A short name of the node's kind, for messages.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            NodeKind::Null => "null",
            NodeKind::Bool(_) => "a boolean",
            NodeKind::Number(_) => "a number",
            NodeKind::Str(_) => "a string",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "an object",
        }
    }

    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.kind {
            NodeKind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Str(t) => Some(&t.value),
            _ => None,
        }
    }
}

/// Parses `source` (the contents of `file`) into its first document's root
/// node; an empty document is `Null`. A document past one of
/// `converge_yaml`'s limits is one error, naming the limit.
pub(crate) fn parse(file: &str, source: &str) -> Result<Node, Vec<YamlError>> {
    if source.len() as u64 > converge_yaml::MAX_YAML_BYTES {
        return Err(vec![YamlError::at(
            file,
            Pos::default(),
            converge_yaml::Limit::Size.to_string(),
        )]);
    }
    let mut builder = Builder {
        file,
        source: source.chars().collect(),
        parser: Parser::new_from_str(source),
        budget: Budget::new(),
        anchors: HashMap::new(),
        errors: Vec::new(),
    };
    match builder.document() {
        Ok(node) if builder.errors.is_empty() => Ok(node),
        Ok(_) => Err(builder.errors),
        Err(e) => {
            builder.errors.push(e);
            Err(builder.errors)
        }
    }
}

fn pos_of(span: &Span) -> Pos {
    Pos {
        line: span.start.line(),
        column: span.start.col() + 1,
    }
}

struct Builder<'a> {
    file: &'a str,
    source: Vec<char>,
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    budget: Budget,
    anchors: HashMap<usize, Node>,
    errors: Vec<YamlError>,
}

impl<'a> Builder<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Span), YamlError> {
        match self.parser.next() {
            Some(Ok((event, span))) => match self.budget.observe(&event, &span) {
                Ok(()) => Ok((event, span)),
                Err(at) => Err(YamlError::at(
                    self.file,
                    Pos {
                        line: at.line,
                        column: at.column,
                    },
                    at.limit.to_string(),
                )),
            },
            Some(Err(e)) => Err(YamlError::at(
                self.file,
                Pos {
                    line: e.marker().line(),
                    column: e.marker().col() + 1,
                },
                format!("invalid YAML: {}", e.info()),
            )),
            None => Err(YamlError::at(
                self.file,
                Pos { line: 1, column: 1 },
                "invalid YAML: unexpected end of input",
            )),
        }
    }

    fn document(&mut self) -> Result<Node, YamlError> {
        loop {
            let (event, span) = self.next()?;
            match event {
                Event::StreamStart | Event::Nothing => {}
                Event::DocumentStart(_) => break,
                Event::StreamEnd => {
                    return Ok(Node {
                        pos: pos_of(&span),
                        kind: NodeKind::Null,
                    })
                }
                _ => {
                    return Err(self.error(&span, "invalid YAML: expected a document"));
                }
            }
        }
        let (event, span) = self.next()?;
        if matches!(event, Event::DocumentEnd) {
            return Ok(Node {
                pos: pos_of(&span),
                kind: NodeKind::Null,
            });
        }
        self.node(event, span)
    }

    fn error(&self, span: &Span, message: impl Into<String>) -> YamlError {
        YamlError::at(self.file, pos_of(span), message)
    }

    fn node(&mut self, event: Event<'a>, span: Span) -> Result<Node, YamlError> {
        let pos = pos_of(&span);
        match event {
            Event::Alias(id) => self
                .anchors
                .get(&id)
                .map(|n| Node {
                    pos,
                    kind: n.kind.clone(),
                })
                .ok_or_else(|| self.error(&span, "invalid YAML: unknown alias")),
            Event::Scalar(value, style, anchor, tag) => {
                let verbatim = tag
                    .as_ref()
                    .is_some_and(|t| t.is_yaml_core_schema() && t.suffix == "str");
                let kind = if style == ScalarStyle::Plain && !verbatim {
                    match resolve_plain(&value) {
                        NodeKind::Str(mut t) => {
                            t.column = self.exact_column(&span, &value, style);
                            NodeKind::Str(t)
                        }
                        other => other,
                    }
                } else {
                    NodeKind::Str(Text {
                        column: self.exact_column(&span, &value, style),
                        value: value.into_owned(),
                    })
                };
                let node = Node { pos, kind };
                self.remember(anchor, &node);
                Ok(node)
            }
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    items.push(self.node(event, span)?);
                }
                let node = Node {
                    pos,
                    kind: NodeKind::Seq(items),
                };
                self.remember(anchor, &node);
                Ok(node)
            }
            Event::MappingStart(anchor, _) => {
                let node = Node {
                    pos,
                    kind: NodeKind::Map(self.entries()?),
                };
                self.remember(anchor, &node);
                Ok(node)
            }
            _ => Err(self.error(&span, "invalid YAML: unexpected event")),
        }
    }

    fn entries(&mut self) -> Result<Vec<(Key, Node)>, YamlError> {
        let mut entries: Vec<(Key, Node)> = Vec::new();
        // Each key's first position, so a duplicate is found in O(1), not
        // by a scan of the entries so far (a mapping of N keys, such as a
        // program's `resources`, took O(N²)).
        let mut seen: HashMap<String, Pos> = HashMap::new();
        loop {
            let (event, span) = self.next()?;
            if matches!(event, Event::MappingEnd) {
                return Ok(entries);
            }
            // YAML 1.1's merge key: not part of the YAML Pulumi reads, and
            // kept as a literal key `<<` it would change the data silently.
            let merge =
                matches!(&event, Event::Scalar(v, ScalarStyle::Plain, _, None) if v == "<<");
            let key_node = self.node(event, span)?;
            if merge {
                self.errors.push(YamlError::at(
                    self.file,
                    key_node.pos,
                    "YAML merge keys (`<<`) are not supported, as in Pulumi YAML: write the \
                     keys out",
                ));
            }
            let name = match &key_node.kind {
                NodeKind::Str(t) => t.value.clone(),
                NodeKind::Null => "null".to_owned(),
                NodeKind::Bool(b) => b.to_string(),
                NodeKind::Number(n) => super::eval::number_text(*n),
                NodeKind::Seq(_) | NodeKind::Map(_) => {
                    return Err(YamlError::at(
                        self.file,
                        key_node.pos,
                        "mapping keys must be strings",
                    ));
                }
            };
            let key = Key {
                name,
                pos: key_node.pos,
            };
            let (event, span) = self.next()?;
            let value = self.node(event, span)?;
            if let Some(first) = seen.get(&key.name) {
                self.errors.push(YamlError::at(
                    self.file,
                    key.pos,
                    format!(
                        "duplicate key '{}' (first defined at {}:{})",
                        key.name, first.line, first.column
                    ),
                ));
                continue;
            }
            seen.insert(key.name.clone(), key.pos);
            entries.push((key, value));
        }
    }

    fn remember(&mut self, anchor: usize, node: &Node) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
    }

    /// The column of the value's first character if the scalar's value is,
    /// character for character, its source text (after the opening quote
    /// for quoted scalars).
    fn exact_column(&self, span: &Span, value: &str, style: ScalarStyle) -> Option<usize> {
        let skip = match style {
            ScalarStyle::Plain => 0,
            ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => 1,
            ScalarStyle::Literal | ScalarStyle::Folded => return None,
        };
        let start = span.start.index() + skip;
        let n = value.chars().count();
        if value.contains('\n') || start + n > self.source.len() {
            return None;
        }
        self.source[start..start + n]
            .iter()
            .copied()
            .eq(value.chars())
            .then_some(span.start.col() + 1 + skip)
    }
}

/// YAML 1.2 core schema resolution of a plain scalar.
fn resolve_plain(s: &str) -> NodeKind {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return NodeKind::Null,
        "true" | "True" | "TRUE" => return NodeKind::Bool(true),
        "false" | "False" | "FALSE" => return NodeKind::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return NodeKind::Number(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return NodeKind::Number(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return NodeKind::Number(f64::NAN),
        _ => {}
    }
    if let Some(hex) = s.strip_prefix("0x") {
        if let Ok(n) = u64::from_str_radix(hex, 16) {
            return NodeKind::Number(n as f64);
        }
    }
    if let Some(oct) = s.strip_prefix("0o") {
        if let Ok(n) = u64::from_str_radix(oct, 8) {
            return NodeKind::Number(n as f64);
        }
    }
    if is_core_number(s) {
        if let Ok(n) = s.parse::<f64>() {
            return NodeKind::Number(n);
        }
    }
    NodeKind::Str(Text {
        value: s.to_owned(),
        column: None,
    })
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`
fn is_core_number(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - f;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let e = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == e {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(src: &str) -> Node {
        parse("t.yaml", src).unwrap()
    }

    #[test]
    fn scalars_resolve_by_the_core_schema() {
        let n = root("a: 1\nb: '1'\nc: true\nd: ~\ne: 1.5e3\nf: 0x10\ng: hello\n");
        let kinds: Vec<&NodeKind> = n.as_map().unwrap().iter().map(|(_, v)| &v.kind).collect();
        assert_eq!(kinds[0], &NodeKind::Number(1.0));
        assert!(matches!(kinds[1], NodeKind::Str(t) if t.value == "1"));
        assert_eq!(kinds[2], &NodeKind::Bool(true));
        assert_eq!(kinds[3], &NodeKind::Null);
        assert_eq!(kinds[4], &NodeKind::Number(1500.0));
        assert_eq!(kinds[5], &NodeKind::Number(16.0));
        assert!(matches!(kinds[6], NodeKind::Str(t) if t.value == "hello"));
    }

    #[test]
    fn positions_are_one_based_lines_and_columns() {
        let n = root("top:\n  inner: \"x\"\n  list:\n    - a\n");
        let (k, v) = &n.as_map().unwrap()[0];
        assert_eq!(k.pos, Pos { line: 1, column: 1 });
        let entries = v.as_map().unwrap();
        assert_eq!(entries[0].0.pos, Pos { line: 2, column: 3 });
        assert_eq!(
            entries[0].1.pos,
            Pos {
                line: 2,
                column: 10
            }
        );
        match &entries[0].1.kind {
            NodeKind::Str(t) => assert_eq!(t.column, Some(11)),
            other => panic!("{other:?}"),
        }
        match &entries[1].1.kind {
            NodeKind::Seq(items) => assert_eq!(items[0].pos, Pos { line: 4, column: 7 }),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn duplicate_keys_and_bad_yaml_are_errors() {
        let errs = parse("t.yaml", "a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(
            errs[0].to_string(),
            "t.yaml:3:1: duplicate key 'a' (first defined at 1:1)"
        );
        let errs = parse("t.yaml", "a: [1, 2\n").unwrap_err();
        assert!(errs[0].message.starts_with("invalid YAML"), "{}", errs[0]);
    }

    #[test]
    fn duplicates_in_a_large_mapping_name_the_first_definition() {
        let mut text: String = (0..5000).map(|i| format!("k{i}: {i}\n")).collect();
        text.push_str("k0: again\nk4999: again\nk0: thrice\n");
        let errs = parse("t.yaml", &text).unwrap_err();
        let messages: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "t.yaml:5001:1: duplicate key 'k0' (first defined at 1:1)",
                "t.yaml:5002:1: duplicate key 'k4999' (first defined at 5000:1)",
                "t.yaml:5003:1: duplicate key 'k0' (first defined at 1:1)",
            ]
        );
        // Without duplicates every key is kept, in file order.
        let n = root(&text[..text.find("k0: again").unwrap()]);
        let keys: Vec<&str> = n
            .as_map()
            .unwrap()
            .iter()
            .map(|(k, _)| k.name.as_str())
            .collect();
        assert_eq!(keys.len(), 5000);
        assert_eq!((keys[0], keys[4999]), ("k0", "k4999"));
    }

    #[test]
    fn anchors_and_aliases_copy_nodes() {
        let n = root("a: &x {k: v}\nb: *x\n");
        let entries = n.as_map().unwrap();
        assert_eq!(entries[0].1.kind, entries[1].1.kind);
    }

    #[test]
    fn a_merge_key_is_an_error_and_a_quoted_one_is_data() {
        let errors = parse("t.yaml", "base: &b {k: v}\nx:\n  <<: *b\n  y: 1\n").unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!((errors[0].line, errors[0].column), (3, 3));
        assert!(errors[0].message.contains("merge keys"), "{errors:?}");
        let n = root("x:\n  '<<': 1\n");
        assert_eq!(n.as_map().unwrap()[0].1.as_map().unwrap()[0].0.name, "<<");
    }
}

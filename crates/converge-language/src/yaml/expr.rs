//! Expressions: literals, lists, objects, `${…}` interpolations and
//! property accesses, and the builtin `fn::` functions, parsed from
//! positioned YAML nodes (the calls' shapes are `builtins`'). Syntax
//! errors are reported here, with their positions.

use super::builtins;
use super::syntax::{Key, Node, NodeKind, Text};
use super::{Pos, YamlError};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Expr {
    pub pos: Pos,
    pub kind: ExprKind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExprKind {
    Null,
    Bool(bool),
    Number(f64),
    /// A string with no interpolation (escapes already applied).
    String(String),
    /// A string mixing text and interpolations.
    Interpolate(Vec<Part>),
    /// A string that is exactly one `${…}`: the value itself.
    Access(Access),
    List(Vec<Expr>),
    Object(Vec<(Key, Expr)>),
    /// An object with a key that is an interpolation (`"${name}-key"`):
    /// each key is evaluated, as Pulumi YAML evaluates keys.
    DynamicObject(Vec<(Expr, Expr)>),
    Call(Box<Call>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    Text(String),
    Access(Access),
}

/// `${root.prop[0]["key"]}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Access {
    pub pos: Pos,
    pub root: String,
    pub path: Vec<Accessor>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Accessor {
    /// `.name` or `["name"]`.
    Key(String),
    /// `[3]`.
    Index(usize),
}

/// A builtin function call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Call {
    Invoke(Box<Invoke>),
    Secret(Expr),
    Join {
        delimiter: Expr,
        values: Expr,
    },
    Split {
        delimiter: Expr,
        source: Expr,
    },
    Select {
        index: Expr,
        list: Expr,
    },
    ToJson(Expr),
    ToBase64(Expr),
    FromBase64(Expr),
    ReadFile(Expr),
    StringAsset(Expr),
    FileAsset(Expr),
    RemoteAsset(Expr),
    FileArchive(Expr),
    RemoteArchive(Expr),
    AssetArchive(Vec<(Key, Expr)>),
    /// A function of one value (`fn::length`, `fn::sha1`, …).
    Unary(Unary, Expr),
    /// `fn::stackReference: [stack, property]` (deprecated in Pulumi YAML):
    /// one output of another stack.
    StackReference {
        stack: Expr,
        property: Expr,
    },
}

/// The builtins that take one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unary {
    /// The base64 of a file's bytes.
    FileBase64,
    /// The base64 of the SHA-256 of a file's bytes.
    FileBase64Sha256,
    /// The hexadecimal SHA-1 of a string.
    Sha1,
    /// The number of elements of a list or object, or characters of a
    /// string.
    Length,
    /// The one element of a list, `null` for an empty one.
    SingleOrNone,
    /// The value, no longer secret.
    Unsecret,
    /// The name of a resource (its URN's last part).
    ResourceName,
    /// The type token of a resource.
    ResourceType,
}

/// `fn::invoke: {function, arguments, options, return}`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Invoke {
    /// The function's token as written.
    pub function: String,
    /// Where the token is written.
    pub function_pos: Pos,
    pub arguments: Option<Expr>,
    pub provider: Option<Access>,
    pub parent: Option<Access>,
    pub depends_on: Vec<Access>,
    pub version: Option<Expr>,
    /// `return:`, the property of the result to answer, and where it is
    /// written.
    pub ret: Option<Key>,
}

impl Expr {
    fn new(pos: Pos, kind: ExprKind) -> Self {
        Expr { pos, kind }
    }

    /// The kind of a literal, for static type checks; `None` when the
    /// value is only known when the program runs.
    pub fn literal_kind(&self) -> Option<&'static str> {
        match &self.kind {
            ExprKind::Null => Some("null"),
            ExprKind::Bool(_) => Some("a boolean"),
            ExprKind::Number(_) => Some("a number"),
            ExprKind::String(_) | ExprKind::Interpolate(_) => Some("a string"),
            ExprKind::List(_) => Some("a list"),
            ExprKind::Object(_) | ExprKind::DynamicObject(_) => Some("an object"),
            ExprKind::Access(_) | ExprKind::Call(_) => None,
        }
    }

    /// Visits every property access in the expression, function options
    /// included.
    pub fn accesses<'a>(&'a self, out: &mut Vec<&'a Access>) {
        match &self.kind {
            ExprKind::Access(a) => out.push(a),
            ExprKind::Interpolate(parts) => out.extend(parts.iter().filter_map(|p| match p {
                Part::Access(a) => Some(a),
                Part::Text(_) => None,
            })),
            ExprKind::List(items) => items.iter().for_each(|e| e.accesses(out)),
            ExprKind::Object(entries) => entries.iter().for_each(|(_, e)| e.accesses(out)),
            ExprKind::DynamicObject(entries) => entries.iter().for_each(|(k, e)| {
                k.accesses(out);
                e.accesses(out);
            }),
            ExprKind::Call(call) => call.accesses(out),
            ExprKind::Null | ExprKind::Bool(_) | ExprKind::Number(_) | ExprKind::String(_) => {}
        }
    }
}

impl Expr {
    /// Visits every `fn::invoke` in the expression, nested ones included.
    pub fn invokes<'a>(&'a self, out: &mut Vec<&'a Invoke>) {
        match &self.kind {
            ExprKind::List(items) => items.iter().for_each(|e| e.invokes(out)),
            ExprKind::Object(entries) => entries.iter().for_each(|(_, e)| e.invokes(out)),
            ExprKind::DynamicObject(entries) => entries.iter().for_each(|(_, e)| e.invokes(out)),
            ExprKind::Call(call) => {
                if let Call::Invoke(i) = call.as_ref() {
                    out.push(i.as_ref());
                }
                call.operands().into_iter().for_each(|e| e.invokes(out));
            }
            ExprKind::Access(_)
            | ExprKind::Interpolate(_)
            | ExprKind::Null
            | ExprKind::Bool(_)
            | ExprKind::Number(_)
            | ExprKind::String(_) => {}
        }
    }
}

impl Call {
    /// The expressions the call's arguments are made of.
    fn operands(&self) -> Vec<&Expr> {
        match self {
            Call::Invoke(i) => i.arguments.iter().chain(&i.version).collect(),
            Call::Join {
                delimiter: a,
                values: b,
            }
            | Call::Split {
                delimiter: a,
                source: b,
            }
            | Call::Select { index: a, list: b }
            | Call::StackReference {
                stack: a,
                property: b,
            } => vec![a, b],
            Call::Secret(e)
            | Call::ToJson(e)
            | Call::ToBase64(e)
            | Call::FromBase64(e)
            | Call::ReadFile(e)
            | Call::StringAsset(e)
            | Call::FileAsset(e)
            | Call::RemoteAsset(e)
            | Call::FileArchive(e)
            | Call::RemoteArchive(e)
            | Call::Unary(_, e) => vec![e],
            Call::AssetArchive(entries) => entries.iter().map(|(_, e)| e).collect(),
        }
    }

    fn accesses<'a>(&'a self, out: &mut Vec<&'a Access>) {
        for e in self.operands() {
            e.accesses(out);
        }
        // An invoke's options name resources too.
        if let Call::Invoke(i) = self {
            out.extend(i.provider.iter().chain(&i.parent).chain(&i.depends_on));
        }
    }
}

/// Parses expressions of one file, collecting errors and warnings.
pub(crate) struct ExprParser<'a> {
    pub file: &'a str,
    pub errors: &'a mut Vec<YamlError>,
    /// What Pulumi YAML accepts but warns about (a builtin's name or key
    /// written in another case).
    pub warnings: &'a mut Vec<YamlError>,
}

impl ExprParser<'_> {
    pub fn error(&mut self, pos: Pos, message: impl Into<String>) {
        self.errors.push(YamlError::at(self.file, pos, message));
    }

    pub fn warn(&mut self, pos: Pos, message: impl Into<String>) {
        self.warnings.push(YamlError::at(self.file, pos, message));
    }

    pub fn expr(&mut self, node: &Node) -> Expr {
        let kind = match &node.kind {
            NodeKind::Null => ExprKind::Null,
            NodeKind::Bool(b) => ExprKind::Bool(*b),
            NodeKind::Number(n) => ExprKind::Number(*n),
            NodeKind::Str(text) => return self.string(node.pos, text),
            NodeKind::Seq(items) => ExprKind::List(items.iter().map(|n| self.expr(n)).collect()),
            NodeKind::Map(entries) => {
                // `fn::` in any case is reserved for builtins: a key that
                // names none is an error, never literal data.
                if let Some((key, _)) = entries.iter().find(|(k, _)| builtins::is_reserved(&k.name))
                {
                    if entries.len() > 1 {
                        self.error(
                            key.pos,
                            format!("{} must be the only key of its object", key.name),
                        );
                        return Expr::new(node.pos, ExprKind::Null);
                    }
                    return self.call(key, &entries[0].1);
                }
                // A key is an expression as a string value is: `$${`
                // unescapes, `${…}` interpolates.
                let mut keys = Vec::with_capacity(entries.len());
                let mut dynamic = false;
                for (k, _) in entries {
                    if !k.name.contains('$') {
                        keys.push(Expr::new(k.pos, ExprKind::String(k.name.clone())));
                        continue;
                    }
                    let text = Text {
                        value: k.name.clone(),
                        column: Some(k.pos.column),
                    };
                    let key = self.string(k.pos, &text);
                    dynamic |= !matches!(key.kind, ExprKind::String(_));
                    keys.push(key);
                }
                if dynamic {
                    ExprKind::DynamicObject(
                        keys.into_iter()
                            .zip(entries)
                            .map(|(k, (_, v))| (k, self.expr(v)))
                            .collect(),
                    )
                } else {
                    ExprKind::Object(
                        keys.into_iter()
                            .zip(entries)
                            .map(|(k, (key, v))| {
                                let ExprKind::String(name) = k.kind else {
                                    unreachable!("a key without interpolation is a string")
                                };
                                (Key { name, pos: key.pos }, self.expr(v))
                            })
                            .collect(),
                    )
                }
            }
        };
        Expr::new(node.pos, kind)
    }

    /// A string: text, `$${` escapes and `${…}` interpolations.
    fn string(&mut self, pos: Pos, text: &Text) -> Expr {
        let chars: Vec<char> = text.value.chars().collect();
        let mut parts: Vec<Part> = Vec::new();
        let mut buf = String::new();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] == '$' && chars.get(i + 1) == Some(&'$') && chars.get(i + 2) == Some(&'{') {
                buf.push_str("${");
                i += 3;
            } else if chars[i] == '$' && chars.get(i + 1) == Some(&'{') {
                let at = text.pos_of(pos, i);
                match parse_access(&chars, i + 2, at) {
                    Ok((access, next)) => {
                        if !buf.is_empty() {
                            parts.push(Part::Text(std::mem::take(&mut buf)));
                        }
                        parts.push(Part::Access(access));
                        i = next;
                    }
                    Err((offset, message)) => {
                        self.error(text.pos_of(pos, offset), message);
                        return Expr::new(pos, ExprKind::Null);
                    }
                }
            } else {
                buf.push(chars[i]);
                i += 1;
            }
        }
        if !buf.is_empty() {
            parts.push(Part::Text(buf));
        }
        let kind = match parts.len() {
            0 => ExprKind::String(String::new()),
            1 => match parts.pop() {
                Some(Part::Text(t)) => ExprKind::String(t),
                Some(Part::Access(a)) => ExprKind::Access(a),
                None => ExprKind::Null,
            },
            _ => ExprKind::Interpolate(parts),
        };
        Expr::new(pos, kind)
    }

    /// Parses `${…}` as a single resource reference, for options that name
    /// a resource.
    pub fn resource_ref(&mut self, node: &Node, what: &str) -> Option<Access> {
        match self.expr(node).kind {
            ExprKind::Access(a) if a.path.is_empty() => Some(a),
            _ => {
                self.error(
                    node.pos,
                    format!("{what} must name a resource, as ${{name}}"),
                );
                None
            }
        }
    }

    /// A list of resource references (or a single one).
    pub fn resource_refs(&mut self, node: &Node, what: &str) -> Vec<Access> {
        match &node.kind {
            NodeKind::Seq(items) => items
                .iter()
                .filter_map(|n| self.resource_ref(n, what))
                .collect(),
            _ => self.resource_ref(node, what).into_iter().collect(),
        }
    }
}

/// Parses the inside of `${…}` starting at `start` (after `${`); returns
/// the access and the index after the closing `}`, or the offset and text
/// of a syntax error.
fn parse_access(
    chars: &[char],
    start: usize,
    pos: Pos,
) -> Result<(Access, usize), (usize, String)> {
    let stop = |c: char| matches!(c, '.' | '[' | '}');
    let name_end = |from: usize| {
        let mut j = from;
        while j < chars.len() && !stop(chars[j]) {
            j += 1;
        }
        j
    };
    let unterminated = || {
        (
            start - 2,
            "unterminated interpolation: missing '}'".to_owned(),
        )
    };
    let mut i = name_end(start);
    let root: String = chars[start..i].iter().collect();
    if root.trim().is_empty() {
        if chars.get(i) == Some(&'}') {
            return Err((start - 2, "empty interpolation ${}".to_owned()));
        }
        if i >= chars.len() {
            return Err(unterminated());
        }
        return Err((start, "expected a name after '${'".to_owned()));
    }
    if root.trim() != root || root.contains(char::is_whitespace) {
        return Err((start, format!("invalid name '{root}' in interpolation")));
    }
    let mut path = Vec::new();
    loop {
        match chars.get(i) {
            None => return Err(unterminated()),
            Some('}') => {
                return Ok((Access { pos, root, path }, i + 1));
            }
            Some('.') => {
                let end = name_end(i + 1);
                let name: String = chars[i + 1..end].iter().collect();
                if name.is_empty() || name.contains(char::is_whitespace) {
                    return Err((i, "expected a property name after '.'".to_owned()));
                }
                path.push(Accessor::Key(name));
                i = end;
            }
            Some('[') => {
                let (accessor, next) = parse_bracket(chars, i)?;
                path.push(accessor);
                i = next;
            }
            Some(_) => return Err((i, "unexpected character in interpolation".to_owned())),
        }
    }
}

/// `[12]` or `["key"]` at `open`; returns the accessor and the index after
/// `]`.
fn parse_bracket(chars: &[char], open: usize) -> Result<(Accessor, usize), (usize, String)> {
    let mut i = open + 1;
    let expected = || {
        (
            open,
            "expected an index or a quoted key inside '[…]'".to_owned(),
        )
    };
    match chars.get(i) {
        Some('"') => {
            let mut key = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err((open, "unterminated string inside '[…]'".to_owned())),
                    Some('\\') => {
                        key.extend(chars.get(i + 1));
                        i += 2;
                    }
                    Some('"') => break,
                    Some(c) => {
                        key.push(*c);
                        i += 1;
                    }
                }
            }
            if chars.get(i + 1) != Some(&']') {
                return Err((open, "missing ']'".to_owned()));
            }
            Ok((Accessor::Key(key), i + 2))
        }
        Some(c) if c.is_ascii_digit() => {
            let from = i;
            while chars.get(i).is_some_and(char::is_ascii_digit) {
                i += 1;
            }
            let digits: String = chars[from..i].iter().collect();
            if chars.get(i) != Some(&']') {
                return Err((open, "missing ']'".to_owned()));
            }
            let index = digits.parse().map_err(|_| expected())?;
            Ok((Accessor::Index(index), i + 1))
        }
        _ => Err(expected()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::syntax;

    fn parse(src: &str) -> (Expr, Vec<YamlError>) {
        let node = syntax::parse("t.yaml", src).unwrap();
        let mut errors = Vec::new();
        let e = ExprParser {
            file: "t.yaml",
            errors: &mut errors,
            warnings: &mut Vec::new(),
        }
        .expr(&node.as_map().unwrap()[0].1);
        (e, errors)
    }

    #[test]
    fn interpolations_parse_into_parts() {
        let (e, errs) = parse("v: 'a-${b.c[0][\"d.e\"]}-$${x}'\n");
        assert!(errs.is_empty(), "{errs:?}");
        let ExprKind::Interpolate(parts) = e.kind else {
            panic!("{e:?}")
        };
        assert_eq!(parts[0], Part::Text("a-".into()));
        let Part::Access(a) = &parts[1] else { panic!() };
        assert_eq!(a.root, "b");
        assert_eq!(
            a.path,
            vec![
                Accessor::Key("c".into()),
                Accessor::Index(0),
                Accessor::Key("d.e".into())
            ]
        );
        assert_eq!(a.pos, Pos { line: 1, column: 7 });
        assert_eq!(parts[2], Part::Text("-${x}".into()));
    }

    #[test]
    fn a_lone_interpolation_is_an_access() {
        let (e, _) = parse("v: ${res.id}\n");
        assert!(matches!(e.kind, ExprKind::Access(ref a) if a.root == "res"));
    }

    #[test]
    fn bad_interpolations_are_located() {
        for (src, msg) in [
            (
                "v: a ${b\n",
                "t.yaml:1:6: unterminated interpolation: missing '}'",
            ),
            ("v: a ${}\n", "t.yaml:1:6: empty interpolation ${}"),
            (
                "v: ${a.}\n",
                "t.yaml:1:7: expected a property name after '.'",
            ),
            (
                "v: ${a[x]}\n",
                "t.yaml:1:7: expected an index or a quoted key inside '[…]'",
            ),
        ] {
            let (_, errs) = parse(src);
            assert_eq!(errs[0].to_string(), msg, "{src}");
        }
    }
}

//! Expressions: literals, lists, objects, `${…}` interpolations and
//! property accesses, and the builtin `fn::` functions, parsed from
//! positioned YAML nodes. Shape errors (arity, literal argument types,
//! interpolation syntax) are reported here, with their positions.

use super::syntax::{Key, Node, NodeKind, Text};
use super::{did_you_mean, Pos, YamlError};

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
    Join { delimiter: Expr, values: Expr },
    Split { delimiter: Expr, source: Expr },
    Select { index: Expr, list: Expr },
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
    pub ret: Option<String>,
}

/// Every builtin function's name.
pub(crate) const FUNCTIONS: &[&str] = &[
    "fn::invoke",
    "fn::secret",
    "fn::join",
    "fn::split",
    "fn::select",
    "fn::toJSON",
    "fn::toBase64",
    "fn::fromBase64",
    "fn::readFile",
    "fn::stringAsset",
    "fn::fileAsset",
    "fn::remoteAsset",
    "fn::fileArchive",
    "fn::remoteArchive",
    "fn::assetArchive",
];

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
            ExprKind::Object(_) => Some("an object"),
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
            | Call::Select { index: a, list: b } => vec![a, b],
            Call::Secret(e)
            | Call::ToJson(e)
            | Call::ToBase64(e)
            | Call::FromBase64(e)
            | Call::ReadFile(e)
            | Call::StringAsset(e)
            | Call::FileAsset(e)
            | Call::RemoteAsset(e)
            | Call::FileArchive(e)
            | Call::RemoteArchive(e) => vec![e],
            Call::AssetArchive(entries) => entries.iter().map(|(_, e)| e).collect(),
        }
    }

    fn accesses<'a>(&'a self, out: &mut Vec<&'a Access>) {
        match self {
            Call::Invoke(i) => {
                if let Some(a) = &i.arguments {
                    a.accesses(out);
                }
                if let Some(v) = &i.version {
                    v.accesses(out);
                }
                out.extend(i.provider.iter().chain(&i.parent).chain(&i.depends_on));
            }
            Call::Join {
                delimiter: a,
                values: b,
            }
            | Call::Split {
                delimiter: a,
                source: b,
            }
            | Call::Select { index: a, list: b } => {
                a.accesses(out);
                b.accesses(out);
            }
            Call::Secret(e)
            | Call::ToJson(e)
            | Call::ToBase64(e)
            | Call::FromBase64(e)
            | Call::ReadFile(e)
            | Call::StringAsset(e)
            | Call::FileAsset(e)
            | Call::RemoteAsset(e)
            | Call::FileArchive(e)
            | Call::RemoteArchive(e) => e.accesses(out),
            Call::AssetArchive(entries) => entries.iter().for_each(|(_, e)| e.accesses(out)),
        }
    }
}

/// Parses expressions of one file, collecting errors.
pub(crate) struct ExprParser<'a> {
    pub file: &'a str,
    pub errors: &'a mut Vec<YamlError>,
}

impl ExprParser<'_> {
    pub fn error(&mut self, pos: Pos, message: impl Into<String>) {
        self.errors.push(YamlError::at(self.file, pos, message));
    }

    pub fn expr(&mut self, node: &Node) -> Expr {
        let kind = match &node.kind {
            NodeKind::Null => ExprKind::Null,
            NodeKind::Bool(b) => ExprKind::Bool(*b),
            NodeKind::Number(n) => ExprKind::Number(*n),
            NodeKind::Str(text) => return self.string(node.pos, text),
            NodeKind::Seq(items) => ExprKind::List(items.iter().map(|n| self.expr(n)).collect()),
            NodeKind::Map(entries) => {
                if let Some((key, _)) = entries.iter().find(|(k, _)| k.name.starts_with("fn::")) {
                    if entries.len() > 1 {
                        self.error(
                            key.pos,
                            format!("{} must be the only key of its object", key.name),
                        );
                        return Expr::new(node.pos, ExprKind::Null);
                    }
                    return self.call(key, &entries[0].1);
                }
                ExprKind::Object(
                    entries
                        .iter()
                        .map(|(k, v)| (k.clone(), self.expr(v)))
                        .collect(),
                )
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

    fn call(&mut self, key: &Key, arg: &Node) -> Expr {
        let pos = key.pos;
        let name = key.name.as_str();
        let call = match name {
            "fn::invoke" => self.invoke(pos, arg).map(|i| Call::Invoke(Box::new(i))),
            "fn::secret" => Some(Call::Secret(self.expr(arg))),
            "fn::toJSON" => Some(Call::ToJson(self.expr(arg))),
            "fn::join" => self
                .pair(pos, name, arg, ["delimiter", "values"])
                .map(|[d, v]| {
                    self.expect(name, "the delimiter", &d, &["a string"]);
                    self.expect(name, "the values", &v, &["a list"]);
                    Call::Join {
                        delimiter: d,
                        values: v,
                    }
                }),
            "fn::split" => self
                .pair(pos, name, arg, ["delimiter", "source"])
                .map(|[d, s]| {
                    self.expect(name, "the delimiter", &d, &["a string"]);
                    self.expect(name, "the source", &s, &["a string"]);
                    Call::Split {
                        delimiter: d,
                        source: s,
                    }
                }),
            "fn::select" => self.pair(pos, name, arg, ["index", "list"]).map(|[i, l]| {
                self.select_check(name, &i, &l);
                Call::Select { index: i, list: l }
            }),
            "fn::assetArchive" => match &arg.kind {
                NodeKind::Map(entries) => Some(Call::AssetArchive(
                    entries
                        .iter()
                        .map(|(k, v)| (k.clone(), self.expr(v)))
                        .collect(),
                )),
                _ => {
                    self.error(
                        arg.pos,
                        format!(
                            "fn::assetArchive takes an object of assets and archives, not {}",
                            arg.kind_name()
                        ),
                    );
                    None
                }
            },
            "fn::toBase64" | "fn::fromBase64" | "fn::readFile" | "fn::stringAsset"
            | "fn::fileAsset" | "fn::remoteAsset" | "fn::fileArchive" | "fn::remoteArchive" => {
                let e = self.expr(arg);
                self.expect(name, "its argument", &e, &["a string"]);
                Some(match name {
                    "fn::toBase64" => Call::ToBase64(e),
                    "fn::fromBase64" => Call::FromBase64(e),
                    "fn::readFile" => Call::ReadFile(e),
                    "fn::stringAsset" => Call::StringAsset(e),
                    "fn::fileAsset" => Call::FileAsset(e),
                    "fn::remoteAsset" => Call::RemoteAsset(e),
                    "fn::fileArchive" => Call::FileArchive(e),
                    _ => Call::RemoteArchive(e),
                })
            }
            _ => {
                let hint = did_you_mean(name, FUNCTIONS.iter().copied());
                self.error(pos, format!("unknown function {name}{hint}"));
                None
            }
        };
        match call {
            Some(c) => Expr::new(pos, ExprKind::Call(Box::new(c))),
            None => Expr::new(pos, ExprKind::Null),
        }
    }

    /// A two-element argument list.
    fn pair(&mut self, pos: Pos, name: &str, arg: &Node, names: [&str; 2]) -> Option<[Expr; 2]> {
        match &arg.kind {
            NodeKind::Seq(items) if items.len() == 2 => {
                Some([self.expr(&items[0]), self.expr(&items[1])])
            }
            NodeKind::Seq(items) => {
                self.error(
                    pos,
                    format!(
                        "{name} takes 2 arguments, [{}, {}], but got {}",
                        names[0],
                        names[1],
                        items.len()
                    ),
                );
                None
            }
            _ => {
                self.error(
                    pos,
                    format!(
                        "{name} takes a list of 2 arguments, [{}, {}], not {}",
                        names[0],
                        names[1],
                        arg.kind_name()
                    ),
                );
                None
            }
        }
    }

    /// A literal argument must be of one of `kinds`.
    fn expect(&mut self, func: &str, what: &str, e: &Expr, kinds: &[&str]) {
        if let Some(kind) = e.literal_kind() {
            if !kinds.contains(&kind) {
                self.error(
                    e.pos,
                    format!("{func}: {what} must be {}, not {kind}", kinds.join(" or ")),
                );
            }
        }
    }

    fn select_check(&mut self, name: &str, index: &Expr, list: &Expr) {
        self.expect(name, "the index", index, &["a number"]);
        self.expect(name, "the list", list, &["a list"]);
        if let ExprKind::Number(n) = index.kind {
            if n < 0.0 || n.fract() != 0.0 {
                self.error(
                    index.pos,
                    format!(
                        "{name}: the index must be a whole number ≥ 0, not {}",
                        super::eval::number_text(n)
                    ),
                );
            } else if let ExprKind::List(items) = &list.kind {
                if n as usize >= items.len() {
                    self.error(
                        index.pos,
                        format!(
                            "{name}: index {} is out of range for a list of {}",
                            n as usize,
                            items.len()
                        ),
                    );
                }
            }
        }
    }

    fn invoke(&mut self, pos: Pos, arg: &Node) -> Option<Invoke> {
        let Some(entries) = arg.as_map() else {
            self.error(
                arg.pos,
                format!(
                    "fn::invoke takes an object with function, arguments, options and return, not {}",
                    arg.kind_name()
                ),
            );
            return None;
        };
        let mut invoke = Invoke {
            function: String::new(),
            function_pos: arg.pos,
            arguments: None,
            provider: None,
            parent: None,
            depends_on: Vec::new(),
            version: None,
            ret: None,
        };
        let mut has_function = false;
        for (k, v) in entries {
            match k.name.as_str() {
                "function" => match v.as_str() {
                    Some(f) => {
                        has_function = true;
                        invoke.function = f.to_owned();
                        invoke.function_pos = v.pos;
                    }
                    None => self.error(v.pos, "fn::invoke: function must be a string"),
                },
                "arguments" => {
                    let e = self.expr(v);
                    self.expect("fn::invoke", "arguments", &e, &["an object"]);
                    invoke.arguments = Some(e);
                }
                "return" => match v.as_str() {
                    Some(r) => invoke.ret = Some(r.to_owned()),
                    None => self.error(v.pos, "fn::invoke: return must be a string"),
                },
                "options" => self.invoke_options(&mut invoke, v),
                other => {
                    let hint = did_you_mean(other, ["function", "arguments", "options", "return"]);
                    self.error(k.pos, format!("fn::invoke: unknown key '{other}'{hint}"));
                }
            }
        }
        if !has_function {
            self.error(pos, "fn::invoke: missing the function to call");
            return None;
        }
        Some(invoke)
    }

    fn invoke_options(&mut self, invoke: &mut Invoke, node: &Node) {
        let Some(entries) = node.as_map() else {
            self.error(node.pos, "fn::invoke: options must be an object");
            return;
        };
        for (k, v) in entries {
            match k.name.as_str() {
                "provider" => invoke.provider = self.resource_ref(v, "provider"),
                "parent" => invoke.parent = self.resource_ref(v, "parent"),
                "dependsOn" => invoke.depends_on = self.resource_refs(v, "dependsOn"),
                "version" => invoke.version = Some(self.expr(v)),
                other => {
                    let hint = did_you_mean(other, ["provider", "parent", "dependsOn", "version"]);
                    self.error(k.pos, format!("fn::invoke: unknown option '{other}'{hint}"));
                }
            }
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

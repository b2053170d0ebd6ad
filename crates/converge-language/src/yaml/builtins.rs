//! The builtin `fn::` functions: which key names which function, and the
//! shape of each call's arguments.
//!
//! As in Pulumi YAML, the `fn::` prefix, a function's name and the keys
//! of `fn::invoke` (and of its options) match in any case: another
//! spelling than the documented one (`Fn::Secret`, `Function:`) is
//! accepted with a warning. `fn::<pkg>:<function>` and
//! `fn::<pkg>:<module>:<function>` are `fn::invoke` of that token with the
//! object as its arguments. A key starting with `fn::` (any case) that
//! names no function is an error at the key, with the closest name —
//! never literal data, so that a typo cannot turn `fn::secret` into
//! plaintext.

use super::expr::{Call, Expr, ExprKind, ExprParser, Invoke, Unary};
use super::syntax::{Key, Node, NodeKind};
use super::{did_you_mean, suggest, Pos};

/// Every builtin function's name, as documented.
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
    "fn::filebase64",
    "fn::filebase64sha256",
    "fn::sha1",
    "fn::length",
    "fn::singleOrNone",
    "fn::unsecret",
    "fn::pulumiResourceName",
    "fn::pulumiResourceType",
    "fn::stackReference",
];

/// The builtins of one value, by name.
const UNARY: [(&str, Unary); 8] = [
    ("fn::filebase64", Unary::FileBase64),
    ("fn::filebase64sha256", Unary::FileBase64Sha256),
    ("fn::sha1", Unary::Sha1),
    ("fn::length", Unary::Length),
    ("fn::singleOrNone", Unary::SingleOrNone),
    ("fn::unsecret", Unary::Unsecret),
    ("fn::pulumiResourceName", Unary::ResourceName),
    ("fn::pulumiResourceType", Unary::ResourceType),
];

const INVOKE_KEYS: [&str; 4] = ["function", "arguments", "options", "return"];
const INVOKE_OPTIONS: [&str; 4] = ["provider", "parent", "dependsOn", "version"];

/// True for a key reserved for builtins: one starting with `fn::` in any
/// case.
pub(crate) fn is_reserved(key: &str) -> bool {
    key.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("fn::"))
}

/// The documented spelling of the name `written` matches in any case.
pub(crate) fn canonical<'a>(written: &str, names: &[&'a str]) -> Option<&'a str> {
    names
        .iter()
        .copied()
        .find(|n| n.eq_ignore_ascii_case(written))
}

/// `fn::<pkg>:<function>` or `fn::<pkg>:<module>:<function>`: the token.
fn invoke_shorthand(key: &str) -> Option<&str> {
    let token = key.get(4..)?;
    let parts = token.split(':').count();
    ((2..=3).contains(&parts) && token.split(':').all(|p| !p.is_empty())).then_some(token)
}

/// `"; did you mean 'x'?"` over names compared in any case, or nothing.
fn did_you_mean_any_case(written: &str, names: &[&str]) -> String {
    let lower: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
    let found = suggest(
        &written.to_ascii_lowercase(),
        lower.iter().map(String::as_str),
    );
    match found.and_then(|f| canonical(f, names)) {
        Some(name) => format!("; did you mean '{name}'?"),
        None => String::new(),
    }
}

impl ExprParser<'_> {
    /// Warns when `written` is not `documented`'s own spelling.
    pub(crate) fn casing(&mut self, pos: Pos, written: &str, documented: &str) {
        if written != documented {
            self.warn(
                pos,
                format!(
                    "'{written}' is read as '{documented}'; write it so, as Pulumi YAML may \
                     require the documented casing in the future"
                ),
            );
        }
    }

    /// The call `key: arg`, the only entry of its object.
    pub(crate) fn call(&mut self, key: &Key, arg: &Node) -> Expr {
        let pos = key.pos;
        let Some(name) = canonical(&key.name, FUNCTIONS) else {
            if let Some(token) = invoke_shorthand(&key.name) {
                let invoke = self.invoke_shorthand(key, token, arg);
                return call_expr(pos, invoke.map(|i| Call::Invoke(Box::new(i))));
            }
            let mut hint = did_you_mean_any_case(&key.name, FUNCTIONS);
            if hint.is_empty() {
                hint = "; keys starting with fn:: name a builtin function or invoke one as \
                        fn::<pkg>:<module>:<function>"
                    .to_owned();
            }
            self.error(pos, format!("unknown function {}{hint}", key.name));
            return Expr {
                pos,
                kind: ExprKind::Null,
            };
        };
        self.casing(pos, &key.name, name);
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
            _ if UNARY.iter().any(|(n, _)| *n == name) => {
                let unary = UNARY
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, u)| *u)
                    .unwrap_or(Unary::Unsecret);
                let e = self.expr(arg);
                match unary {
                    Unary::FileBase64 | Unary::FileBase64Sha256 | Unary::Sha1 => {
                        self.expect(name, "its argument", &e, &["a string"]);
                    }
                    Unary::Length => {
                        self.expect(
                            name,
                            "its argument",
                            &e,
                            &["a list", "an object", "a string"],
                        );
                    }
                    Unary::SingleOrNone => self.expect(name, "its argument", &e, &["a list"]),
                    Unary::ResourceName | Unary::ResourceType => {
                        if !matches!(&e.kind, ExprKind::Access(a) if a.path.is_empty()) {
                            self.error(
                                e.pos,
                                format!("{name} takes a resource, written ${{name}}"),
                            );
                        }
                    }
                    Unary::Unsecret => {}
                }
                Some(Call::Unary(unary, e))
            }
            "fn::stackReference" => {
                let items = match &arg.kind {
                    NodeKind::Seq(items) if items.len() == 2 => Some(items),
                    _ => None,
                };
                match items {
                    Some(items) => {
                        let stack = self.expr(&items[0]);
                        let property = self.expr(&items[1]);
                        self.expect(name, "the stack name", &stack, &["a string"]);
                        self.expect(name, "the property name", &property, &["a string"]);
                        Some(Call::StackReference { stack, property })
                    }
                    None => {
                        self.error(
                            arg.pos,
                            "fn::stackReference takes a list of two: the stack's name and the \
                             name of its output",
                        );
                        None
                    }
                }
            }
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
            _ => {
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
        };
        call_expr(pos, call)
    }

    /// `fn::<token>: {arguments}` (or nothing): `fn::invoke` of `token`.
    fn invoke_shorthand(&mut self, key: &Key, token: &str, arg: &Node) -> Option<Invoke> {
        let arguments = match &arg.kind {
            NodeKind::Null => None,
            NodeKind::Map(_) => Some(self.expr(arg)),
            _ => {
                self.error(
                    arg.pos,
                    format!(
                        "{}: the arguments of function {token} must be an object, not {}",
                        key.name,
                        arg.kind_name()
                    ),
                );
                return None;
            }
        };
        Some(Invoke {
            function: token.to_owned(),
            function_pos: key.pos,
            arguments,
            provider: None,
            parent: None,
            depends_on: Vec::new(),
            version: None,
            ret: None,
        })
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
            let Some(key) = canonical(&k.name, &INVOKE_KEYS) else {
                let hint = did_you_mean(&k.name, INVOKE_KEYS);
                self.error(k.pos, format!("fn::invoke: unknown key '{}'{hint}", k.name));
                continue;
            };
            self.casing(k.pos, &k.name, key);
            match key {
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
                    Some(r) => {
                        invoke.ret = Some(Key {
                            name: r.to_owned(),
                            pos: v.pos,
                        })
                    }
                    None => self.error(v.pos, "fn::invoke: return must be a string"),
                },
                _ => self.invoke_options(&mut invoke, v),
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
            let Some(option) = canonical(&k.name, &INVOKE_OPTIONS) else {
                let hint = did_you_mean(&k.name, INVOKE_OPTIONS);
                self.error(
                    k.pos,
                    format!("fn::invoke: unknown option '{}'{hint}", k.name),
                );
                continue;
            };
            self.casing(k.pos, &k.name, option);
            match option {
                "provider" => invoke.provider = self.resource_ref(v, "provider"),
                "parent" => invoke.parent = self.resource_ref(v, "parent"),
                "dependsOn" => invoke.depends_on = self.resource_refs(v, "dependsOn"),
                _ => invoke.version = Some(self.expr(v)),
            }
        }
    }
}

fn call_expr(pos: Pos, call: Option<Call>) -> Expr {
    let kind = match call {
        Some(c) => ExprKind::Call(Box::new(c)),
        None => ExprKind::Null,
    };
    Expr { pos, kind }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_in_any_case() {
        assert_eq!(canonical("Fn::Secret", FUNCTIONS), Some("fn::secret"));
        assert_eq!(canonical("FN::TOJSON", FUNCTIONS), Some("fn::toJSON"));
        assert_eq!(canonical("fn::secrets", FUNCTIONS), None);
        assert!(is_reserved("Fn::Anything"));
        assert!(is_reserved("fN::"));
        assert!(!is_reserved("fn:"));
        assert!(!is_reserved("fun::x"));
    }

    #[test]
    fn the_invoke_shorthand_takes_two_or_three_parts() {
        assert_eq!(
            invoke_shorthand("fn::command:local:run"),
            Some("command:local:run")
        );
        assert_eq!(
            invoke_shorthand("Fn::random:randomPick"),
            Some("random:randomPick")
        );
        assert_eq!(invoke_shorthand("fn::secret"), None);
        assert_eq!(invoke_shorthand("fn::a:b:c:d"), None);
        assert_eq!(invoke_shorthand("fn::a::b"), None);
        assert_eq!(invoke_shorthand("fn::a:"), None);
    }

    #[test]
    fn suggestions_ignore_case() {
        assert_eq!(
            did_you_mean_any_case("Fn::Secrte", FUNCTIONS),
            "; did you mean 'fn::secret'?"
        );
        assert_eq!(
            did_you_mean_any_case("FN::TOJSN", FUNCTIONS),
            "; did you mean 'fn::toJSON'?"
        );
        assert_eq!(did_you_mean_any_case("fn::nothinglikeit", FUNCTIONS), "");
    }
}

//! Property names checked against the package schemas, once per run,
//! before anything registers (beside the type tokens: see `tokens`).
//!
//! What is checked, where the schema of the member's package describes it:
//!
//! - every `${res.prop…}` reference: the first property against the
//!   resource type's outputs (`properties`, then `inputProperties`; `id`
//!   and `urn` always exist), each further step against the property's
//!   type — an object type's properties, any key of a map, any index of a
//!   list, nothing of a primitive;
//! - `${v.prop…}` where variable `v` is such a reference, or an
//!   `fn::invoke` (its result as the function's `outputs` describe it;
//!   with `return:`, that property of it), or `fn::secret` of one;
//! - `return:` of `fn::invoke` against the function's result;
//! - the property names `ignoreChanges` and `replaceOnChanges` list
//!   (the first step of each path) against `inputProperties`, and those
//!   `additionalSecretOutputs` lists against the outputs;
//! - a resource's property names against its `inputProperties`, and an
//!   invoke's argument names against the function's `inputs`; literal
//!   objects and lists inside them as deep as their types describe them.
//!
//! Checking stops, accepting what follows, where the shape is not
//! described: `any`, unions, types of other packages, object types without
//! properties, resources whose schema lists no properties, packages
//! without a schema (a plugin without `GetSchema`, the engine's own
//! `pulumi` package: stack references, providers), and a variable whose
//! value is anything else. Terraform providers describe outputs and
//! results, not inputs (their Check refuses unknown inputs itself).
//!
//! Every problem is an error at the place it is written, with the closest
//! name when one is close, else the names there are.

use converge_plugin::schema::{ResourceSpec, Shapes, TypeSpec};

use super::ast::Resource;
use super::expr::{Access, Accessor, Call, Expr, ExprKind};
use super::tokens::{self, Member, Tokens};
use super::validate::Def;
use super::{suggest, Loaded, Pos, YamlError};

/// Checks every property name of the program its schemas describe.
pub(crate) fn check(loaded: &Loaded, tokens: &Tokens) -> Vec<YamlError> {
    let mut c = Checker {
        loaded,
        tokens,
        errors: Vec::new(),
        variables: vec![Memo::New; loaded.template.variables.len()],
    };
    c.inputs();
    c.option_names();
    c.invokes();
    for e in tokens::expressions(loaded) {
        let mut accesses = Vec::new();
        e.accesses(&mut accesses);
        for a in accesses {
            c.access(a, Report::Errors);
        }
    }
    c.errors
}

/// What a value is, as far as its schema says.
#[derive(Debug, Clone)]
enum Shape<'a> {
    /// A resource itself.
    Resource {
        member: &'a Member,
        spec: &'a ResourceSpec,
    },
    /// A value of a described type.
    Value {
        ty: &'a TypeSpec,
        shapes: &'a Shapes,
        /// What the value is, when it is a function's whole result.
        note: Option<String>,
    },
}

/// A variable's shape, computed once.
#[derive(Debug, Clone)]
enum Memo<'a> {
    New,
    Visiting,
    Done(Option<Shape<'a>>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Report {
    Errors,
    /// Only the shape is wanted (the access is checked where it is
    /// written).
    Quiet,
}

struct Checker<'a> {
    loaded: &'a Loaded,
    tokens: &'a Tokens,
    errors: Vec<YamlError>,
    variables: Vec<Memo<'a>>,
}

impl<'a> Checker<'a> {
    fn error(&mut self, pos: Pos, message: String) {
        self.errors
            .push(YamlError::at(&self.loaded.template.file, pos, message));
    }

    /// The resource type of resource `i`, if its schema describes it.
    fn resource(&self, i: usize) -> Option<(&'a Member, &'a ResourceSpec)> {
        let member = self.tokens.resource_member(i)?;
        let spec = member.schema.resource_spec(&member.canonical)?;
        Some((member, spec))
    }

    /// The resources the program declares (not `get`s) whose types their
    /// schemas describe.
    fn described(&self) -> Vec<(&'a Resource, &'a Member, &'a ResourceSpec)> {
        let t = &self.loaded.template;
        let declared = t
            .resources
            .iter()
            .enumerate()
            .filter(|(_, r)| r.get.is_none());
        declared
            .filter_map(|(i, r)| self.resource(i).map(|(member, spec)| (r, member, spec)))
            .collect()
    }

    /// Each resource's property names against its inputs.
    fn inputs(&mut self) {
        for (r, member, spec) in self.described() {
            let Some(inputs) = &spec.inputs else {
                continue;
            };
            for (key, e) in &r.properties {
                match inputs.get(&key.name) {
                    Some(ty) => {
                        self.literal(e, ty, &member.schema.shapes, &key.name);
                    }
                    None => {
                        let hint = hint(&key.name, inputs.keys().map(String::as_str));
                        self.error(
                            key.pos,
                            format!(
                                "resource '{}' ({}) has no input property '{}'{hint}",
                                r.key.name, member.canonical, key.name
                            ),
                        );
                    }
                }
            }
        }
    }

    /// The property names the options `ignoreChanges` and
    /// `replaceOnChanges` (inputs) and `additionalSecretOutputs` (outputs)
    /// list, where written literally: a misspelled one would leave the
    /// option without effect — a replacement it was to prevent, a secret
    /// in plaintext.
    fn option_names(&mut self) {
        for (r, member, spec) in self.described() {
            let o = r.opts();
            let what = |option: &str| {
                format!(
                    "resource '{}' ({}): {option} names",
                    r.key.name, member.canonical
                )
            };
            if let Some(inputs) = &spec.inputs {
                for (option, e) in [
                    ("ignoreChanges", &o.ignore_changes),
                    ("replaceOnChanges", &o.replace_on_changes),
                ] {
                    for (pos, path) in literal_strings(e) {
                        let first = first_segment(path);
                        if first == "*" || inputs.contains_key(first) {
                            continue;
                        }
                        let hint = hint(first, inputs.keys().map(String::as_str));
                        let message = format!(
                            "{} '{path}', but it has no input property '{first}'{hint}",
                            what(option)
                        );
                        self.error(pos, message);
                    }
                }
            }
            if spec.outputs.is_some() {
                for (pos, name) in literal_strings(&o.additional_secret_outputs) {
                    if spec.output(name).is_some() {
                        continue;
                    }
                    let hint = hint(name, spec.output_names());
                    let message = format!(
                        "{} '{name}', but it has no output property '{name}'{hint}",
                        what("additionalSecretOutputs")
                    );
                    self.error(pos, message);
                }
            }
        }
    }

    /// A literal object or list against the type it is given for; `path`
    /// names it in messages.
    fn literal(&mut self, e: &Expr, ty: &'a TypeSpec, shapes: &'a Shapes, path: &str) {
        // Only objects and lists hold names to check.
        let nested = |v: &Expr| matches!(v.kind, ExprKind::Object(_) | ExprKind::List(_));
        match (&e.kind, shapes.resolve(ty)) {
            (ExprKind::Object(entries), TypeSpec::Object(props)) => {
                for (key, v) in entries {
                    match props.get(&key.name) {
                        Some(t) if nested(v) => {
                            self.literal(v, t, shapes, &format!("{path}.{}", key.name));
                        }
                        Some(_) => {}
                        None => {
                            let hint = hint(&key.name, props.keys().map(String::as_str));
                            let msg = format!(
                                "'{path}'{} has no property '{}'{hint}",
                                named(ty),
                                key.name
                            );
                            self.error(key.pos, msg);
                        }
                    }
                }
            }
            (ExprKind::Object(entries), TypeSpec::Map(element)) => {
                for (key, v) in entries.iter().filter(|(_, v)| nested(v)) {
                    self.literal(v, element, shapes, &format!("{path}.{}", key.name));
                }
            }
            (ExprKind::List(items), TypeSpec::Array(element)) => {
                for (n, item) in items.iter().enumerate().filter(|(_, v)| nested(v)) {
                    self.literal(item, element, shapes, &format!("{path}[{n}]"));
                }
            }
            _ => {}
        }
    }

    /// Each `fn::invoke`'s arguments and `return:` against its function.
    fn invokes(&mut self) {
        for invoke in tokens::invokes(self.loaded) {
            let Some(member) = self.tokens.function_member(&invoke.function) else {
                continue;
            };
            let Some(spec) = member.schema.function_spec(&member.canonical) else {
                continue;
            };
            let shapes = &member.schema.shapes;
            if let (Some(inputs), Some(ExprKind::Object(entries))) =
                (&spec.inputs, invoke.arguments.as_ref().map(|e| &e.kind))
            {
                for (key, e) in entries {
                    match inputs.get(&key.name) {
                        Some(ty) => self.literal(e, ty, shapes, &key.name),
                        None => {
                            let hint = hint(&key.name, inputs.keys().map(String::as_str));
                            let msg = format!(
                                "function {} has no argument '{}'{hint}",
                                member.canonical, key.name
                            );
                            self.error(key.pos, msg);
                        }
                    }
                }
            }
            if let Some(ret) = &invoke.ret {
                let subject = || format!("the result of function {}", member.canonical);
                if let Err(msg) = step(shapes, &spec.result, &ret.name, subject) {
                    self.error(ret.pos, msg);
                }
            }
        }
    }

    /// Checks an access (reporting what is wrong if `report`); its shape
    /// if the schema describes it.
    fn access(&mut self, a: &Access, report: Report) -> Option<Shape<'a>> {
        let (root, variable) = match self.loaded.graph.names.get(&a.root)? {
            Def::Resource(i) => {
                let (member, spec) = self.resource(*i)?;
                (Shape::Resource { member, spec }, false)
            }
            Def::Variable(j) => (self.variable(*j)?, true),
        };
        match walk(root, &a.path, &a.root, variable) {
            Ok(shape) => shape,
            Err(msg) => {
                if report == Report::Errors {
                    self.error(a.pos, msg);
                }
                None
            }
        }
    }

    /// The shape of variable `j`'s value.
    fn variable(&mut self, j: usize) -> Option<Shape<'a>> {
        match &self.variables[j] {
            Memo::Done(shape) => return shape.clone(),
            // A cycle (reported by the static checks).
            Memo::Visiting => return None,
            Memo::New => {}
        }
        self.variables[j] = Memo::Visiting;
        let loaded: &'a Loaded = self.loaded;
        let shape = self.expr_shape(&loaded.template.variables[j].expr);
        self.variables[j] = Memo::Done(shape.clone());
        shape
    }

    fn expr_shape(&mut self, e: &'a Expr) -> Option<Shape<'a>> {
        match &e.kind {
            ExprKind::Access(a) => self.access(a, Report::Quiet),
            ExprKind::Call(call) => match call.as_ref() {
                Call::Secret(inner) => self.expr_shape(inner),
                Call::Invoke(invoke) => {
                    let member = self.tokens.function_member(&invoke.function)?;
                    let spec = member.schema.function_spec(&member.canonical)?;
                    let shapes = &member.schema.shapes;
                    match &invoke.ret {
                        None => Some(Shape::Value {
                            ty: &spec.result,
                            shapes,
                            note: Some(format!("the result of {}", member.canonical)),
                        }),
                        Some(ret) => {
                            let ty = step(shapes, &spec.result, &ret.name, String::new).ok()?;
                            Some(Shape::Value {
                                ty,
                                shapes,
                                note: None,
                            })
                        }
                    }
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// Follows `path` from `root` (written as `name`, a variable's if
/// `variable`): the shape at its end (`None` where the schema stops
/// describing it), or the message of the first step that names nothing.
fn walk<'a>(
    root: Shape<'a>,
    path: &[Accessor],
    name: &str,
    variable: bool,
) -> Result<Option<Shape<'a>>, String> {
    if path.is_empty() {
        return Ok(Some(root));
    }
    let label = || match &root {
        Shape::Resource { member, .. } if !variable => {
            format!("resource '{name}' ({})", member.canonical)
        }
        Shape::Resource { .. } => format!("variable '{name}'"),
        Shape::Value {
            note: Some(note), ..
        } => format!("variable '{name}' ({note})"),
        Shape::Value { ty, .. } => format!("variable '{name}'{}", named(ty)),
    };
    let (mut ty, shapes, consumed) = match &root {
        Shape::Resource { member, spec } => match &path[0] {
            Accessor::Key(k) => match spec.output(k) {
                Some(ty) => (ty, &member.schema.shapes, 1),
                None => {
                    let hint = hint(k, spec.output_names());
                    return Err(format!("{} has no property '{k}'{hint}", label()));
                }
            },
            // Indexing a resource is the evaluation's error to report.
            Accessor::Index(_) => return Ok(None),
        },
        Shape::Value { ty, shapes, .. } => (*ty, *shapes, 0),
    };
    // The value at `path[..n]`, of type `ty`, in messages.
    let subject = |n: usize, ty: &TypeSpec| {
        if n == 0 {
            return label();
        }
        let mut written = name.to_owned();
        for accessor in &path[..n] {
            match accessor {
                Accessor::Key(k) => {
                    written.push('.');
                    written.push_str(k);
                }
                Accessor::Index(i) => written.push_str(&format!("[{i}]")),
            }
        }
        format!("'{written}'{}", named(ty))
    };
    for (n, accessor) in path.iter().enumerate().skip(consumed) {
        ty = match (shapes.resolve(ty), accessor) {
            (TypeSpec::Any, _) => return Ok(None),
            (_, Accessor::Key(k)) => step(shapes, ty, k, || subject(n, ty))?,
            (TypeSpec::Array(element), Accessor::Index(_)) => element,
            (other, Accessor::Index(i)) => {
                return Err(format!(
                    "{} is {}; it has no element [{i}]",
                    subject(n, ty),
                    other.noun()
                ))
            }
        };
    }
    Ok(Some(Shape::Value {
        ty,
        shapes,
        note: None,
    }))
}

/// Property `key` of a value of type `ty` (described by `subject`).
fn step<'a>(
    shapes: &'a Shapes,
    ty: &'a TypeSpec,
    key: &str,
    subject: impl FnOnce() -> String,
) -> Result<&'a TypeSpec, String> {
    match shapes.resolve(ty) {
        TypeSpec::Any => Ok(&TypeSpec::Any),
        TypeSpec::Map(element) => Ok(element),
        TypeSpec::Object(props) => props.get(key).ok_or_else(|| {
            let hint = hint(key, props.keys().map(String::as_str));
            format!("{} has no property '{key}'{hint}", subject())
        }),
        other => Err(format!(
            "{} is {}; it has no property '{key}'",
            subject(),
            other.noun()
        )),
    }
}

/// ` (token)` of a named object type, for messages.
/// The plain strings of a literal list option, with their places.
fn literal_strings(e: &Option<Expr>) -> Vec<(Pos, &str)> {
    match e.as_ref().map(|e| &e.kind) {
        Some(ExprKind::List(items)) => items
            .iter()
            .filter_map(|item| match &item.kind {
                ExprKind::String(s) => Some((item.pos, s.as_str())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The top-level property a property path starts with: `tags` of
/// `tags.env` and `tags["env"]`, `a.b` of `["a.b"].c`.
fn first_segment(path: &str) -> &str {
    if let Some(quoted) = path.strip_prefix("[\"") {
        return quoted.split("\"]").next().unwrap_or(quoted);
    }
    path.split(['.', '[']).next().unwrap_or(path)
}

fn named(ty: &TypeSpec) -> String {
    match ty {
        TypeSpec::Named(token) => format!(" ({token})"),
        _ => String::new(),
    }
}

/// `"; did you mean 'x'?"`, else the names there are.
fn hint<'n>(name: &str, names: impl IntoIterator<Item = &'n str>) -> String {
    let names: Vec<&str> = names.into_iter().collect();
    if let Some(close) = suggest(name, names.iter().copied()) {
        return format!("; did you mean '{close}'?");
    }
    const SHOWN: usize = 12;
    match names.len() {
        0 => "; it has none".to_owned(),
        n if n <= SHOWN => format!("; it has {}", names.join(", ")),
        n => format!(
            "; it has {} and {} more",
            names[..SHOWN].join(", "),
            n - SHOWN
        ),
    }
}

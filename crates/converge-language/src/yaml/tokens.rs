//! Type and function tokens, resolved through the package schemas once
//! per run, before anything is registered.
//!
//! A program may write `random:RandomPet`, `random:index:RandomPet` or
//! `random:index/randomPet:RandomPet` for one resource type, and
//! `command:local:run` or `random:randomPick` for functions: each is
//! looked up among the tokens the package's schema declares
//! ([`PackageSchema::resolve`] holds the rule). The schema comes from the
//! provider that would serve the package (the monitor asks the loader:
//! built-ins answer from their own schema, plugins from `GetSchema`,
//! cached per plugin version). A token the schema does not declare is an
//! error at the place it is written, with the closest declared tokens.
//!
//! When there is no schema to ask (the package's provider is not found,
//! will not start, or does not implement `GetSchema`) tokens are used as
//! written, with `pkg:Type` read as `pkg:index:Type`: the registration
//! then reports what is wrong with the provider, as before.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use converge_engine::Monitor;
use converge_model::package_of;
use converge_plugin::{MemberKind, PackageSchema};

use super::expr::{Expr, ExprKind, Invoke};
use super::{Loaded, Pos, YamlError};

/// The package of the engine's own types and functions
/// (`pulumi:pulumi:Stack`, `pulumi:pulumi:getResource`, providers), which
/// have no schema to resolve through.
const ENGINE_PACKAGE: &str = "pulumi";

/// The canonical tokens of one run, and the schemas they were resolved
/// through.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tokens {
    /// Resource index → its member (absent: use the parsed token).
    resources: HashMap<usize, Member>,
    /// Function token as written → its member.
    functions: HashMap<String, Member>,
}

/// A resource type or function the package's schema declares.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub canonical: String,
    pub schema: Arc<PackageSchema>,
}

impl Tokens {
    /// The type resource `index` registers as.
    pub fn resource<'a>(&'a self, index: usize, parsed: &'a str) -> &'a str {
        self.resources
            .get(&index)
            .map_or(parsed, |m| m.canonical.as_str())
    }

    /// The function `written` calls.
    pub fn function<'a>(&'a self, written: &'a str) -> &'a str {
        self.functions
            .get(written)
            .map_or(written, |m| m.canonical.as_str())
    }

    /// Resource `index`'s type in its package's schema, if it has one.
    pub fn resource_member(&self, index: usize) -> Option<&Member> {
        self.resources.get(&index)
    }

    /// Function `written` in its package's schema, if it has one.
    pub fn function_member(&self, written: &str) -> Option<&Member> {
        self.functions.get(written)
    }
}

/// One token to resolve.
struct Use<'a> {
    kind: MemberKind,
    written: &'a str,
    pos: Pos,
    /// The resource it belongs to (resource types only).
    resource: Option<usize>,
}

/// Resolves every resource type and `fn::invoke` function of the program:
/// the tokens, and an error for each token a schema does not declare.
pub(crate) async fn resolve(loaded: &Loaded, monitor: &Monitor) -> (Tokens, Vec<YamlError>) {
    let t = &loaded.template;
    // (package, version) → the tokens to resolve against its schema.
    let mut uses: BTreeMap<(String, Option<String>), Vec<Use<'_>>> = BTreeMap::new();
    for (i, r) in t.resources.iter().enumerate() {
        if r.is_provider() || r.type_written.is_empty() {
            continue;
        }
        let version = literal(r.opts().version.as_ref());
        uses.entry((r.package().to_owned(), version))
            .or_default()
            .push(Use {
                kind: MemberKind::Resource,
                written: &r.type_written,
                pos: r.type_pos,
                resource: Some(i),
            });
    }
    for invoke in invokes(loaded) {
        if invoke.function.is_empty() {
            continue;
        }
        let version = literal(invoke.version.as_ref());
        uses.entry((package_of(&invoke.function).to_owned(), version))
            .or_default()
            .push(Use {
                kind: MemberKind::Function,
                written: &invoke.function,
                pos: invoke.function_pos,
                resource: None,
            });
    }
    uses.retain(|(package, _), _| package != ENGINE_PACKAGE);
    let (schemas, missing) = schemas(monitor, uses.keys().cloned().collect()).await;
    let mut tokens = Tokens::default();
    let mut errors = Vec::new();
    for (key, list) in &uses {
        if let Some(not_found) = missing.get(key) {
            // No provider at all for the package: most often a slip in
            // the type's package, reported where it is written rather than
            // when the provider is loaded, after other resources changed.
            let known: Vec<&str> = schemas.keys().map(|(p, _)| p.as_str()).collect();
            let hint = super::suggest(&key.0, known.iter().copied().chain(BUILT_IN))
                .map(|s| format!("; did you mean '{s}'?"))
                .unwrap_or_default();
            for u in list {
                errors.push(YamlError::at(
                    &t.file,
                    u.pos,
                    format!("'{}': {not_found}{hint}", u.written),
                ));
            }
            continue;
        }
        let Some(schema) = schemas.get(key) else {
            continue;
        };
        for u in list {
            match schema.resolve(u.kind, u.written) {
                Ok(canonical) => {
                    let member = Member {
                        canonical: canonical.to_owned(),
                        schema: Arc::clone(schema),
                    };
                    match u.resource {
                        Some(i) => {
                            tokens.resources.insert(i, member);
                        }
                        None => {
                            tokens.functions.insert(u.written.to_owned(), member);
                        }
                    }
                }
                Err(unknown) => errors.push(YamlError::at(&t.file, u.pos, unknown.to_string())),
            }
        }
    }
    (tokens, errors)
}

/// The packages of Converge's built-in providers, for "did you mean".
const BUILT_IN: [&str; 3] = ["random", "command", "converge"];

/// The package keys whose provider is nowhere to be found, with where
/// Converge looked.
type Missing = HashMap<(String, Option<String>), String>;

/// The schemas of `packages`, asked for at once; a package without one is
/// left out, and one without any provider is also named in the second
/// value.
async fn schemas(
    monitor: &Monitor,
    packages: Vec<(String, Option<String>)>,
) -> (
    HashMap<(String, Option<String>), Arc<PackageSchema>>,
    Missing,
) {
    let mut tasks = tokio::task::JoinSet::new();
    for key in packages {
        let monitor = monitor.clone();
        tasks.spawn(async move {
            let schema = monitor.package_schema(&key.0, key.1.as_deref()).await;
            (key, schema)
        });
    }
    let mut out = HashMap::new();
    let mut missing = Missing::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((key, Ok(Some(schema)))) => {
                out.insert(key, schema);
            }
            Ok((
                key,
                Err(converge_engine::EngineError::Schema {
                    source: not_found @ converge_plugin::RegistryError::NotFound { .. },
                    ..
                }),
            )) => {
                missing.insert(key, not_found.to_string());
            }
            _ => {}
        }
    }
    (out, missing)
}

/// A version option written as a literal string.
fn literal(e: Option<&Expr>) -> Option<String> {
    match e.map(|e| &e.kind) {
        Some(ExprKind::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// Every expression of the template: variables, resources' properties,
/// `get` and options, outputs.
pub(crate) fn expressions(loaded: &Loaded) -> Vec<&Expr> {
    let t = &loaded.template;
    let mut exprs: Vec<&Expr> = Vec::new();
    exprs.extend(t.variables.iter().map(|v| &v.expr));
    for r in &t.resources {
        exprs.extend(r.properties.iter().map(|(_, e)| e));
        if let Some(get) = &r.get {
            exprs.push(&get.id);
            exprs.extend(get.state.iter().map(|(_, e)| e));
        }
        exprs.extend(r.opts().exprs());
    }
    exprs.extend(t.outputs.iter().map(|(_, e)| e));
    exprs
}

/// Every `fn::invoke` of the template, in variables, resources and
/// outputs.
pub(crate) fn invokes(loaded: &Loaded) -> Vec<&Invoke> {
    let mut out = Vec::new();
    for e in expressions(loaded) {
        e.invokes(&mut out);
    }
    out
}

//! The template: config declarations, variables, resources (with their
//! options or `get`), and outputs, built from the positioned YAML tree.
//! Unknown keys are errors, with a suggestion when one is close.

use converge_model::{package_of, provider_package};

use super::config::{self, ConfigDecl};
use super::expr::{Access, Expr, ExprParser};
use super::syntax::{Key, Node, NodeKind};
use super::{did_you_mean, Pos, YamlError};

#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// The file the template came from, relative to the project.
    pub file: String,
    pub config: Vec<ConfigDecl>,
    pub variables: Vec<Variable>,
    pub resources: Vec<Resource>,
    pub outputs: Vec<(Key, Expr)>,
    /// What is accepted but not written as documented, in file order.
    pub warnings: Vec<YamlError>,
}

#[derive(Debug, Clone)]
pub(crate) struct Variable {
    pub key: Key,
    pub expr: Expr,
}

#[derive(Debug, Clone)]
pub(crate) struct Resource {
    pub key: Key,
    /// The type token, `pkg:Type` already expanded to `pkg:index:Type`
    /// (the run resolves it through the package's schema: see `tokens`).
    pub type_token: String,
    /// The type token as written, and where.
    pub type_written: String,
    pub type_pos: Pos,
    /// The logical name: `name:` if given, else the key.
    pub name: String,
    /// A provider resource that is the default for its package.
    pub default_provider: bool,
    pub properties: Vec<(Key, Expr)>,
    pub get: Option<Get>,
    /// `options:` as written; most resources have none, and the options
    /// are a kilobyte (see [`Resource::opts`]).
    pub options: Option<Box<Options>>,
}

impl Resource {
    /// The resource's options (the defaults when it has none).
    pub fn opts(&self) -> &Options {
        self.options.as_deref().unwrap_or(&NO_OPTIONS)
    }

    /// `pulumi:providers:<pkg>` resources are providers.
    pub fn is_provider(&self) -> bool {
        provider_package(&self.type_token).is_some()
    }

    /// The package the resource's type belongs to (for providers, the
    /// package they serve).
    pub fn package(&self) -> &str {
        provider_package(&self.type_token).unwrap_or_else(|| package_of(&self.type_token))
    }
}

/// `get: {id, state}`: read an existing object instead of managing one.
#[derive(Debug, Clone)]
pub(crate) struct Get {
    pub id: Expr,
    pub state: Vec<(Key, Expr)>,
}

/// Resource options. Options naming resources are references; the others
/// are expressions, checked for their type when they are evaluated.
#[derive(Debug, Clone, Default)]
pub(crate) struct Options {
    pub depends_on: Vec<Access>,
    pub parent: Option<Access>,
    pub provider: Option<Access>,
    pub providers: Vec<Access>,
    pub deleted_with: Option<Access>,
    pub replace_with: Vec<Access>,
    pub protect: Option<Expr>,
    pub delete_before_replace: Option<Expr>,
    pub retain_on_delete: Option<Expr>,
    pub ignore_changes: Option<Expr>,
    pub replace_on_changes: Option<Expr>,
    pub additional_secret_outputs: Option<Expr>,
    pub aliases: Option<Expr>,
    pub import: Option<Expr>,
    pub version: Option<Expr>,
    pub custom_timeouts: Option<Expr>,
    pub hide_diffs: Option<Expr>,
    pub replacement_trigger: Option<Expr>,
    /// Checked to be a string; Converge downloads no plugin.
    pub plugin_download_url: Option<Expr>,
}

/// The options of a resource without `options:`.
static NO_OPTIONS: Options = Options {
    depends_on: Vec::new(),
    parent: None,
    provider: None,
    providers: Vec::new(),
    deleted_with: None,
    replace_with: Vec::new(),
    protect: None,
    delete_before_replace: None,
    retain_on_delete: None,
    ignore_changes: None,
    replace_on_changes: None,
    additional_secret_outputs: None,
    aliases: None,
    import: None,
    version: None,
    custom_timeouts: None,
    hide_diffs: None,
    replacement_trigger: None,
    plugin_download_url: None,
};

impl Options {
    /// Every option that is an expression.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        [
            &self.protect,
            &self.delete_before_replace,
            &self.retain_on_delete,
            &self.ignore_changes,
            &self.replace_on_changes,
            &self.additional_secret_outputs,
            &self.aliases,
            &self.import,
            &self.version,
            &self.custom_timeouts,
            &self.hide_diffs,
            &self.replacement_trigger,
            &self.plugin_download_url,
        ]
        .into_iter()
        .flatten()
    }
}

/// Keys of a project file (and of a template: Main.yaml may repeat them).
const PROJECT_KEYS: &[&str] = &[
    "name",
    "runtime",
    "description",
    "main",
    "stackConfigDir",
    "backend",
    "options",
    "template",
    "plugins",
    "author",
    "license",
    "website",
    "packages",
];
const TEMPLATE_KEYS: &[&str] = &[
    "config",
    "configuration",
    "variables",
    "resources",
    "outputs",
    "pulumi",
];
const RESOURCE_KEYS: &[&str] = &[
    "type",
    "name",
    "properties",
    "options",
    "get",
    "defaultProvider",
];
pub(crate) const OPTIONS: &[&str] = &[
    "additionalSecretOutputs",
    "aliases",
    "customTimeouts",
    "deleteBeforeReplace",
    "deletedWith",
    "dependsOn",
    "hideDiffs",
    "ignoreChanges",
    "import",
    "parent",
    "pluginDownloadURL",
    "protect",
    "provider",
    "providers",
    "replaceOnChanges",
    "replaceWith",
    "replacementTrigger",
    "retainOnDelete",
    "version",
];

/// The value of `key` in a mapping node.
pub(crate) fn lookup<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    node.as_map()?
        .iter()
        .find(|(k, _)| k.name == key)
        .map(|(_, v)| v)
}

/// The entries of a section that must be a mapping (null: empty).
fn section<'a>(
    file: &str,
    node: &'a Node,
    what: &str,
    errors: &mut Vec<YamlError>,
) -> &'a [(Key, Node)] {
    match &node.kind {
        NodeKind::Map(entries) => entries,
        NodeKind::Null => &[],
        _ => {
            errors.push(YamlError::at(
                file,
                node.pos,
                format!("{what} must be a mapping, not {}", node.kind_name()),
            ));
            &[]
        }
    }
}

/// Builds the template of `root` (a project file or Main.yaml).
pub(crate) fn template(file: &str, root: &Node, errors: &mut Vec<YamlError>) -> Template {
    let mut t = Template {
        file: file.to_owned(),
        config: Vec::new(),
        variables: Vec::new(),
        resources: Vec::new(),
        outputs: Vec::new(),
        warnings: Vec::new(),
    };
    let Some(entries) = root.as_map() else {
        errors.push(YamlError::at(
            file,
            root.pos,
            "the program must be a mapping",
        ));
        return t;
    };
    t.config = config::declarations(file, root, errors);
    for (key, value) in entries {
        match key.name.as_str() {
            "variables" => {
                for (k, v) in section(file, value, "variables", errors) {
                    let expr = ExprParser {
                        file,
                        errors,
                        warnings: &mut t.warnings,
                    }
                    .expr(v);
                    t.variables.push(Variable {
                        key: k.clone(),
                        expr,
                    });
                }
            }
            "resources" => {
                for (k, v) in section(file, value, "resources", errors) {
                    if let Some(r) = resource(file, k, v, errors, &mut t.warnings) {
                        t.resources.push(r);
                    }
                }
            }
            "outputs" => {
                for (k, v) in section(file, value, "outputs", errors) {
                    let expr = ExprParser {
                        file,
                        errors,
                        warnings: &mut t.warnings,
                    }
                    .expr(v);
                    t.outputs.push((k.clone(), expr));
                }
            }
            "config" | "configuration" | "pulumi" => {}
            name if PROJECT_KEYS.contains(&name) => {}
            name => {
                let hint = did_you_mean(name, TEMPLATE_KEYS.iter().chain(PROJECT_KEYS).copied());
                errors.push(YamlError::at(
                    file,
                    key.pos,
                    format!("unknown top-level key '{name}'{hint}"),
                ));
            }
        }
    }
    t
}

/// `pkg:Type` → `pkg:index:Type`.
fn expand_type(token: &str) -> String {
    let parts: Vec<&str> = token.split(':').collect();
    match parts.as_slice() {
        [pkg, ty] => format!("{pkg}:index:{ty}"),
        _ => token.to_owned(),
    }
}

fn is_type_token(token: &str) -> bool {
    let parts: Vec<&str> = token.split(':').collect();
    (2..=3).contains(&parts.len()) && parts.iter().all(|p| !p.is_empty())
}

fn resource(
    file: &str,
    key: &Key,
    node: &Node,
    errors: &mut Vec<YamlError>,
    warnings: &mut Vec<YamlError>,
) -> Option<Resource> {
    let Some(entries) = node.as_map() else {
        errors.push(YamlError::at(
            file,
            node.pos,
            format!(
                "resource '{}' must be a mapping, not {}",
                key.name,
                node.kind_name()
            ),
        ));
        return None;
    };
    let mut r = Resource {
        key: key.clone(),
        type_token: String::new(),
        type_written: String::new(),
        type_pos: node.pos,
        name: key.name.clone(),
        default_provider: false,
        properties: Vec::new(),
        get: None,
        options: None,
    };
    let mut has_type = false;
    let mut properties_pos = None;
    for (k, v) in entries {
        let mut p = ExprParser {
            file,
            errors,
            warnings,
        };
        match p.field(k, RESOURCE_KEYS) {
            "type" => match v.as_str() {
                Some(t) if is_type_token(t) => {
                    has_type = true;
                    r.type_token = expand_type(t);
                    r.type_written = t.to_owned();
                    r.type_pos = v.pos;
                }
                _ => p.error(
                    v.pos,
                    format!(
                        "the type of resource '{}' must be a type token like pkg:module:Type",
                        key.name
                    ),
                ),
            },
            "name" => match v.as_str() {
                Some(n) if !n.is_empty() => r.name = n.to_owned(),
                _ => p.error(v.pos, "a resource's name must be a non-empty string"),
            },
            "defaultProvider" => match v.kind {
                NodeKind::Bool(b) => r.default_provider = b,
                _ => p.error(v.pos, "defaultProvider must be true or false"),
            },
            "properties" => {
                properties_pos = Some(k.pos);
                for (pk, pv) in section(file, v, "properties", p.errors) {
                    let e = p.expr(pv);
                    r.properties.push((pk.clone(), e));
                }
            }
            "get" => r.get = get(&mut p, &key.name, v),
            "options" => r.options = Some(Box::new(options(&mut p, v))),
            other => {
                let hint = did_you_mean(other, RESOURCE_KEYS.iter().copied());
                p.error(
                    k.pos,
                    format!(
                        "unknown property '{other}' of resource '{}'{hint}",
                        key.name
                    ),
                );
            }
        }
    }
    if !has_type && !entries.iter().any(|(k, _)| k.name == "type") {
        errors.push(YamlError::at(
            file,
            key.pos,
            format!("resource '{}' has no type", key.name),
        ));
        return None;
    }
    if let (Some(pos), Some(_)) = (properties_pos, &r.get) {
        errors.push(YamlError::at(
            file,
            pos,
            format!(
                "resource '{}' cannot have both properties and get",
                key.name
            ),
        ));
    }
    if r.default_provider && !r.is_provider() {
        errors.push(YamlError::at(
            file,
            key.pos,
            format!(
                "resource '{}' sets defaultProvider but is not a provider (pulumi:providers:<pkg>)",
                key.name
            ),
        ));
    }
    has_type.then_some(r)
}

fn get(p: &mut ExprParser<'_>, name: &str, node: &Node) -> Option<Get> {
    let Some(entries) = node.as_map() else {
        p.error(node.pos, "get must be a mapping with an id and a state");
        return None;
    };
    let mut id = None;
    let mut state = Vec::new();
    for (k, v) in entries {
        match p.field(k, &["id", "state"]) {
            "id" => id = Some(p.expr(v)),
            "state" => {
                for (sk, sv) in section(p.file, v, "get.state", p.errors) {
                    let e = p.expr(sv);
                    state.push((sk.clone(), e));
                }
            }
            other => {
                let hint = did_you_mean(other, ["id", "state"]);
                p.error(k.pos, format!("unknown property '{other}' of get{hint}"));
            }
        }
    }
    match id {
        Some(id) => Some(Get { id, state }),
        None => {
            p.error(node.pos, format!("get of resource '{name}' has no id"));
            None
        }
    }
}

fn options(p: &mut ExprParser<'_>, node: &Node) -> Options {
    let mut o = Options::default();
    let entries = section(p.file, node, "options", p.errors);
    for (k, v) in entries {
        match p.field(k, OPTIONS) {
            "dependsOn" => o.depends_on = p.resource_refs(v, "dependsOn"),
            "parent" => o.parent = p.resource_ref(v, "parent"),
            "provider" => o.provider = p.resource_ref(v, "provider"),
            "providers" => {
                o.providers = match &v.kind {
                    NodeKind::Map(entries) => entries
                        .iter()
                        .filter_map(|(_, n)| p.resource_ref(n, "providers"))
                        .collect(),
                    _ => p.resource_refs(v, "providers"),
                }
            }
            "deletedWith" => o.deleted_with = p.resource_ref(v, "deletedWith"),
            "protect" => o.protect = Some(p.expr(v)),
            "deleteBeforeReplace" => o.delete_before_replace = Some(p.expr(v)),
            "retainOnDelete" => o.retain_on_delete = Some(p.expr(v)),
            "ignoreChanges" => o.ignore_changes = Some(p.expr(v)),
            "replaceOnChanges" => o.replace_on_changes = Some(p.expr(v)),
            "additionalSecretOutputs" => o.additional_secret_outputs = Some(p.expr(v)),
            "aliases" => {
                let aliases = p.expr(v);
                for (pos, message) in super::aliases::check(&aliases) {
                    p.error(pos, message);
                }
                o.aliases = Some(aliases);
            }
            "import" => o.import = Some(p.expr(v)),
            "version" => o.version = Some(p.expr(v)),
            "customTimeouts" => o.custom_timeouts = Some(p.expr(v)),
            "replaceWith" => o.replace_with = p.resource_refs(v, "replaceWith"),
            "hideDiffs" => o.hide_diffs = Some(p.expr(v)),
            "replacementTrigger" => o.replacement_trigger = Some(p.expr(v)),
            "pluginDownloadURL" => o.plugin_download_url = Some(p.expr(v)),
            other => {
                let hint = did_you_mean(other, OPTIONS.iter().copied());
                p.error(k.pos, format!("unknown resource option '{other}'{hint}"));
            }
        }
    }
    o
}

impl ExprParser<'_> {
    /// A key of a record Pulumi YAML reads in any case (a resource's
    /// fields, its options, `get`): the documented spelling, with a
    /// warning when written otherwise; a key it does not know, as written.
    fn field<'k>(&mut self, key: &'k Key, known: &[&'static str]) -> &'k str {
        match super::builtins::canonical(&key.name, known) {
            Some(documented) => {
                self.casing(key.pos, &key.name, documented);
                documented
            }
            None => &key.name,
        }
    }
}

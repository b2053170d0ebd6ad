//! Static checks over the whole template: every name referenced is
//! defined (with a suggestion when one is close), options name the right
//! kind of resource, and the dependency graph has no cycle. The result is
//! the graph the run schedules on.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::ast::{Resource, Template};
use super::config::Resolved;
use super::expr::{Access, Accessor, Expr};
use super::{did_you_mean, Pos, YamlError};

/// What a name refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Def {
    Variable(usize),
    Resource(usize),
}

/// The dependency graph. Nodes are the variables (`0..V`) then the
/// resources (`V..V+R`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Graph {
    pub names: HashMap<String, Def>,
    /// Direct dependencies of each node.
    pub deps: Vec<Vec<usize>>,
    pub variables: usize,
    /// Per resource.
    pub plans: Vec<ResourcePlan>,
}

/// What a resource's registration needs beyond its expressions.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResourcePlan {
    /// Resources (by index) its properties and `dependsOn` depend on,
    /// through variables too.
    pub dependencies: Vec<usize>,
    /// Per top-level property, the resources it depends on.
    pub property_dependencies: Vec<(String, Vec<usize>)>,
    /// The `defaultProvider: true` provider of its package, if any and no
    /// explicit provider is given.
    pub default_provider: Option<usize>,
}

impl Graph {
    pub fn node_of(&self, def: Def) -> usize {
        match def {
            Def::Variable(i) => i,
            Def::Resource(i) => self.variables + i,
        }
    }

    pub fn def_of(&self, node: usize) -> Def {
        if node < self.variables {
            Def::Variable(node)
        } else {
            Def::Resource(node - self.variables)
        }
    }
}

/// `${pulumi.…}` properties.
pub(crate) const PULUMI_PROPERTIES: &[&str] =
    &["stack", "project", "cwd", "rootDirectory", "organization"];

struct Checker<'a> {
    t: &'a Template,
    config: &'a BTreeMap<String, Resolved>,
    names: HashMap<String, Def>,
    errors: &'a mut Vec<YamlError>,
}

impl Checker<'_> {
    fn error(&mut self, pos: Pos, message: impl Into<String>) {
        self.errors.push(YamlError::at(&self.t.file, pos, message));
    }

    fn all_names(&self) -> Vec<&str> {
        self.names
            .keys()
            .map(String::as_str)
            .chain(self.config.keys().map(String::as_str))
            .collect()
    }

    /// Checks one access; returns the node it depends on, if any.
    fn access(&mut self, a: &Access) -> Option<Def> {
        if let Some(def) = self.names.get(&a.root) {
            return Some(*def);
        }
        if a.root == "pulumi" {
            match a.path.as_slice() {
                [Accessor::Key(k)] if PULUMI_PROPERTIES.contains(&k.as_str()) => {}
                [Accessor::Key(k), ..] => {
                    let hint = did_you_mean(k, PULUMI_PROPERTIES.iter().copied());
                    self.error(a.pos, format!("unknown property 'pulumi.{k}'{hint}"));
                }
                _ => self.error(
                    a.pos,
                    "pulumi has the properties stack, project, cwd, rootDirectory and organization",
                ),
            }
            return None;
        }
        if let Some(c) = self.config.get(&a.root) {
            if c.ty.is_scalar() && !a.path.is_empty() {
                let what = match &a.path[0] {
                    Accessor::Key(k) => format!("no property '{k}'"),
                    Accessor::Index(i) => format!("no element [{i}]"),
                };
                self.error(
                    a.pos,
                    format!("config '{}' is a {}; it has {what}", a.root, c.ty),
                );
            }
            return None;
        }
        let names = self.all_names();
        let hint = did_you_mean(&a.root, names);
        self.error(
            a.pos,
            format!(
                "'{}' is not a resource, variable or config value{hint}",
                a.root
            ),
        );
        None
    }

    /// Checks an option that must name a resource (a provider if
    /// `provider`).
    fn resource_ref(&mut self, a: &Access, option: &str, provider: bool) -> Option<usize> {
        let Some(def) = self.access(a) else {
            if a.root == "pulumi" || self.config.contains_key(&a.root) {
                let msg = format!("{option}: '{}' is not a resource", a.root);
                self.error(a.pos, msg);
            }
            return None;
        };
        match def {
            Def::Resource(i) => {
                let r = &self.t.resources[i];
                if provider && !r.is_provider() {
                    let msg = format!(
                        "{option}: '{}' is a {}, not a provider (pulumi:providers:<pkg>)",
                        a.root, r.type_token
                    );
                    self.error(a.pos, msg);
                }
                Some(i)
            }
            Def::Variable(_) => {
                self.error(
                    a.pos,
                    format!("{option}: '{}' is a variable, not a resource", a.root),
                );
                None
            }
        }
    }

    /// The nodes an expression references.
    fn expr(&mut self, e: &Expr, out: &mut BTreeSet<usize>, graph: &Graph) {
        let mut accesses = Vec::new();
        e.accesses(&mut accesses);
        for a in accesses {
            if let Some(def) = self.access(a) {
                out.insert(graph.node_of(def));
            }
        }
    }
}

/// Checks `t` and builds its dependency graph.
pub(crate) fn check(
    t: &Template,
    config: &BTreeMap<String, Resolved>,
    errors: &mut Vec<YamlError>,
) -> Graph {
    let mut c = Checker {
        t,
        config,
        names: HashMap::new(),
        errors,
    };
    let mut defined: HashMap<&str, (Pos, &str)> = HashMap::new();
    for d in &t.config {
        defined.insert(&d.key.name, (d.key.pos, "config value"));
    }
    let keys = t
        .variables
        .iter()
        .enumerate()
        .map(|(i, v)| (&v.key, Def::Variable(i), "variable"))
        .chain(
            t.resources
                .iter()
                .enumerate()
                .map(|(i, r)| (&r.key, Def::Resource(i), "resource")),
        );
    for (key, def, kind) in keys {
        if key.name == "pulumi" {
            c.error(key.pos, "'pulumi' is a reserved name");
        } else if let Some((pos, other)) = defined.get(key.name.as_str()) {
            let msg = format!(
                "'{}' is already defined as a {other} at {}:{}",
                key.name, pos.line, pos.column
            );
            c.error(key.pos, msg);
        } else {
            defined.insert(&key.name, (key.pos, kind));
            c.names.insert(key.name.clone(), def);
        }
    }
    let mut graph = Graph {
        variables: t.variables.len(),
        ..Graph::default()
    };
    let mut direct: Vec<BTreeSet<usize>> = Vec::new();
    for v in &t.variables {
        let mut deps = BTreeSet::new();
        c.expr(&v.expr, &mut deps, &graph);
        direct.push(deps);
    }
    let defaults = default_providers(&mut c);
    for r in &t.resources {
        let (deps, plan) = resource(&mut c, r, &graph, &defaults);
        direct.push(deps);
        graph.plans.push(plan);
    }
    for (_, e) in &t.outputs {
        c.expr(e, &mut BTreeSet::new(), &graph);
    }
    graph.names = c.names.clone();
    graph.deps = direct.iter().map(|d| d.iter().copied().collect()).collect();
    if cycles(&mut c, &graph) {
        return graph;
    }
    // Through variables: the resources each node depends on.
    let mut memo: Vec<Option<BTreeSet<usize>>> = vec![None; direct.len()];
    for (i, r) in t.resources.iter().enumerate() {
        let mut per_key = Vec::new();
        let mut all = BTreeSet::new();
        let properties = r
            .properties
            .iter()
            .chain(r.get.iter().flat_map(|g| &g.state));
        for (key, e) in properties {
            let mut nodes = BTreeSet::new();
            c.expr(e, &mut nodes, &graph);
            let set = resources_of(&graph, &nodes, &mut memo);
            all.extend(&set);
            per_key.push((key.name.clone(), set.into_iter().collect()));
        }
        if let Some(g) = &r.get {
            let mut nodes = BTreeSet::new();
            c.expr(&g.id, &mut nodes, &graph);
            all.extend(resources_of(&graph, &nodes, &mut memo));
        }
        for a in &r.opts().depends_on {
            if let Some(Def::Resource(j)) = c.names.get(&a.root) {
                all.insert(*j);
            }
        }
        graph.plans[i].dependencies = all.into_iter().collect();
        graph.plans[i].property_dependencies = per_key;
    }
    graph
}

/// Package → its `defaultProvider: true` provider.
fn default_providers(c: &mut Checker<'_>) -> HashMap<String, usize> {
    let mut defaults: HashMap<String, usize> = HashMap::new();
    for (i, r) in c.t.resources.iter().enumerate() {
        if !r.default_provider || !r.is_provider() {
            continue;
        }
        if let Some(first) = defaults.get(r.package()) {
            let msg = format!(
                "'{}' and '{}' are both the default provider of {}",
                c.t.resources[*first].key.name,
                r.key.name,
                r.package()
            );
            c.error(r.key.pos, msg);
        } else {
            defaults.insert(r.package().to_owned(), i);
        }
    }
    defaults
}

fn resource(
    c: &mut Checker<'_>,
    r: &Resource,
    graph: &Graph,
    defaults: &HashMap<String, usize>,
) -> (BTreeSet<usize>, ResourcePlan) {
    let mut deps = BTreeSet::new();
    let mut plan = ResourcePlan::default();
    for (_, e) in &r.properties {
        c.expr(e, &mut deps, graph);
    }
    if let Some(g) = &r.get {
        c.expr(&g.id, &mut deps, graph);
        for (_, e) in &g.state {
            c.expr(e, &mut deps, graph);
        }
    }
    for e in r.opts().exprs() {
        c.expr(e, &mut deps, graph);
    }
    let o = r.opts();
    let refs = o
        .depends_on
        .iter()
        .map(|a| (a, "dependsOn", false))
        .chain(o.parent.iter().map(|a| (a, "parent", false)))
        .chain(o.deleted_with.iter().map(|a| (a, "deletedWith", false)))
        .chain(o.replace_with.iter().map(|a| (a, "replaceWith", false)))
        .chain(o.provider.iter().map(|a| (a, "provider", true)))
        .chain(o.providers.iter().map(|a| (a, "providers", true)));
    for (a, option, provider) in refs {
        if let Some(i) = c.resource_ref(a, option, provider) {
            deps.insert(graph.variables + i);
        }
    }
    let explicit = o.provider.is_some()
        || o.providers.iter().any(|a| {
            matches!(c.names.get(&a.root), Some(Def::Resource(i))
                if c.t.resources[*i].package() == r.package())
        });
    if !r.is_provider() && !explicit {
        if let Some(&i) = defaults.get(r.package()) {
            plan.default_provider = Some(i);
            deps.insert(graph.variables + i);
        }
    }
    (deps, plan)
}

/// Reports every dependency cycle; true if there was one.
fn cycles(c: &mut Checker<'_>, graph: &Graph) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Active,
        Done,
    }
    fn visit(
        n: usize,
        graph: &Graph,
        marks: &mut [Mark],
        stack: &mut Vec<usize>,
        found: &mut Vec<Vec<usize>>,
    ) {
        marks[n] = Mark::Active;
        stack.push(n);
        for &d in &graph.deps[n] {
            match marks[d] {
                Mark::New => visit(d, graph, marks, stack, found),
                Mark::Active => {
                    let from = stack.iter().position(|&s| s == d).unwrap_or(0);
                    found.push(stack[from..].to_vec());
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        marks[n] = Mark::Done;
    }
    let mut marks = vec![Mark::New; graph.deps.len()];
    let mut found = Vec::new();
    for n in 0..graph.deps.len() {
        if marks[n] == Mark::New {
            visit(n, graph, &mut marks, &mut Vec::new(), &mut found);
        }
    }
    let mut reported = BTreeSet::new();
    for cycle in &found {
        let set: BTreeSet<usize> = cycle.iter().copied().collect();
        if !reported.insert(set) {
            continue;
        }
        let key = |n: usize| match graph.def_of(n) {
            Def::Variable(i) => &c.t.variables[i].key,
            Def::Resource(i) => &c.t.resources[i].key,
        };
        let mut names: Vec<&str> = cycle.iter().map(|&n| key(n).name.as_str()).collect();
        names.push(names[0]);
        let pos = key(cycle[0]).pos;
        c.error(pos, format!("dependency cycle: {}", names.join(" → ")));
    }
    !found.is_empty()
}

/// The resources a set of nodes stands for, looking through variables.
fn resources_of(
    graph: &Graph,
    nodes: &BTreeSet<usize>,
    memo: &mut [Option<BTreeSet<usize>>],
) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for &n in nodes {
        match graph.def_of(n) {
            Def::Resource(i) => {
                out.insert(i);
            }
            Def::Variable(_) => {
                if memo[n].is_none() {
                    let deps: BTreeSet<usize> = graph.deps[n].iter().copied().collect();
                    memo[n] = Some(resources_of(graph, &deps, memo));
                }
                out.extend(memo[n].iter().flatten());
            }
        }
    }
    out
}

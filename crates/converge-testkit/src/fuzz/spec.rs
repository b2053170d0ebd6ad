//! Random programs, as data: which resources a program registers, with
//! which inputs, references and options; and how a second program evolves
//! from a first.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use converge_model::Urn;

use super::{Config, Rng, PROJECT, STACK};

/// The packages of the fuzzed providers.
pub const PACKAGES: [&str; 2] = ["pkga", "pkgb"];
const COMPONENT_TYPE: &str = "fuzz:index:Group";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Component,
    Custom,
    /// An explicit provider resource.
    Provider,
}

/// One resource a program registers. References name other resources of
/// the same program, which it registers first.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceSpec {
    /// Unique within the program.
    pub name: String,
    pub kind: Kind,
    /// The package of a custom resource or provider.
    pub package: &'static str,
    /// `None`: the stack.
    pub parent: Option<String>,
    /// An explicit provider; `None`: the package's default provider.
    pub provider: Option<String>,
    /// The default provider version asked for.
    pub version: Option<&'static str>,
    pub inputs: BTreeMap<String, String>,
    pub dependencies: Vec<String>,
    /// Each adds input `from_<name>` = that resource's output `v`, with a
    /// property dependency on it.
    pub property_dependencies: Vec<String>,
    pub protect: bool,
    pub retain_on_delete: bool,
    pub deleted_with: Option<String>,
    pub ignore_changes: Vec<String>,
    pub delete_before_replace: Option<bool>,
    /// Former URNs.
    pub aliases: Vec<String>,
    /// Components: register outputs after registering.
    pub outputs: bool,
}

impl ResourceSpec {
    pub fn type_token(&self) -> String {
        match self.kind {
            Kind::Component => COMPONENT_TYPE.to_owned(),
            Kind::Custom => format!("{}:index:Thing", self.package),
            Kind::Provider => converge_model::provider_type(self.package),
        }
    }

    /// Every resource of the program this one refers to.
    pub fn references(&self) -> impl Iterator<Item = &String> {
        self.parent
            .iter()
            .chain(&self.provider)
            .chain(&self.dependencies)
            .chain(&self.property_dependencies)
            .chain(&self.deleted_with)
    }

    /// Whether the object of this resource outlives its deletion.
    pub fn leaves_object(&self) -> bool {
        self.retain_on_delete || self.deleted_with.is_some()
    }

    fn rename_references(&mut self, removed: &HashSet<String>, renamed: &HashMap<String, String>) {
        let fix = |n: &String| renamed.get(n).cloned().unwrap_or_else(|| n.clone());
        let keep = |n: &&String| !removed.contains(*n);
        self.parent = self.parent.as_ref().map(fix);
        self.provider = self.provider.as_ref().filter(keep).map(fix);
        self.dependencies = self.dependencies.iter().filter(keep).map(fix).collect();
        self.property_dependencies = self
            .property_dependencies
            .iter()
            .filter(keep)
            .map(fix)
            .collect();
        self.deleted_with = self.deleted_with.as_ref().filter(keep).map(fix);
    }
}

/// A program: its resources in an order where every reference points
/// earlier.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProgramSpec {
    pub resources: Vec<ResourceSpec>,
    /// The program exits with an error when a registration fails (else it
    /// registers what it can and exits normally).
    pub fail_on_error: bool,
}

impl ProgramSpec {
    pub fn get(&self, name: &str) -> Option<&ResourceSpec> {
        self.resources.iter().find(|r| r.name == name)
    }

    /// The URN `name` gets in this program.
    ///
    /// # Panics
    /// If there is no such resource.
    pub fn urn_of(&self, name: &str) -> Urn {
        let r = self
            .get(name)
            .unwrap_or_else(|| panic!("no resource {name}"));
        let parent = r.parent.as_ref().map(|p| self.urn_of(p));
        Urn::for_resource(STACK, PROJECT, parent.as_ref(), &r.type_token(), &r.name)
            .expect("fuzzed URNs are valid")
    }

    /// A random program of at most `config.prior_resources` resources.
    pub fn random(rng: &mut Rng, config: &Config) -> ProgramSpec {
        let mut p = ProgramSpec {
            resources: Vec::new(),
            fail_on_error: !config.tolerant_programs || rng.chance(70),
        };
        for i in 0..rng.range(0, config.prior_resources) {
            let r = p.random_resource(rng, format!("r{i}"));
            p.resources.push(r);
        }
        p
    }

    fn names(&self, pred: impl Fn(&ResourceSpec) -> bool) -> Vec<String> {
        self.resources
            .iter()
            .filter(|r| pred(r))
            .map(|r| r.name.clone())
            .collect()
    }

    /// A new resource named `name` whose references are resources already
    /// in the program.
    fn random_resource(&self, rng: &mut Rng, name: String) -> ResourceSpec {
        let kind = [Kind::Custom, Kind::Component, Kind::Provider][rng.weighted(&[65, 25, 10])];
        let package = *rng.pick(&PACKAGES);
        let mut r = ResourceSpec {
            name,
            kind,
            package,
            parent: None,
            provider: None,
            version: None,
            inputs: BTreeMap::new(),
            dependencies: Vec::new(),
            property_dependencies: Vec::new(),
            protect: false,
            retain_on_delete: false,
            deleted_with: None,
            ignore_changes: Vec::new(),
            delete_before_replace: None,
            aliases: Vec::new(),
            outputs: false,
        };
        if kind == Kind::Provider {
            r.inputs
                .insert("region".to_owned(), rng.pick(&["eu", "us"]).to_string());
            return r;
        }
        let components = self.names(|x| x.kind == Kind::Component);
        let customs = self.names(|x| x.kind == Kind::Custom);
        let resources = self.names(|x| x.kind != Kind::Provider);
        if !components.is_empty() && rng.chance(40) {
            r.parent = Some(rng.pick(&components).clone());
        } else if !customs.is_empty() && rng.chance(8) {
            r.parent = Some(rng.pick(&customs).clone());
        }
        for _ in 0..2 {
            if !resources.is_empty() && rng.chance(20) {
                let d = rng.pick(&resources).clone();
                if !r.dependencies.contains(&d) {
                    r.dependencies.push(d);
                }
            }
        }
        if kind == Kind::Component {
            r.outputs = rng.chance(50);
            r.protect = rng.chance(5);
            return r;
        }
        r.inputs
            .insert("v".to_owned(), rng.pick(&["a", "b", "c"]).to_string());
        if rng.chance(40) {
            r.inputs
                .insert("w".to_owned(), rng.pick(&["x", "y"]).to_string());
        }
        let providers = self.names(|x| x.kind == Kind::Provider && x.package == package);
        if !providers.is_empty() && rng.chance(40) {
            r.provider = Some(rng.pick(&providers).clone());
        } else if rng.chance(15) {
            r.version = Some("1.0.0");
        }
        if !customs.is_empty() && rng.chance(25) {
            r.property_dependencies.push(rng.pick(&customs).clone());
        }
        if !customs.is_empty() && rng.chance(10) {
            r.deleted_with = Some(rng.pick(&customs).clone());
        }
        r.protect = rng.chance(4);
        r.retain_on_delete = rng.chance(10);
        if rng.chance(15) {
            r.ignore_changes = vec!["w".to_owned()];
        }
        r.delete_before_replace = match rng.below(20) {
            0 | 1 => Some(true),
            2 => Some(false),
            _ => None,
        };
        r
    }

    /// The next version of this program: each resource is kept, modified,
    /// removed (with the children it parents) or renamed with an alias to
    /// its old URN; then up to `added` new resources are appended.
    pub fn evolve(&self, rng: &mut Rng, config: &Config) -> ProgramSpec {
        let mut removed: HashSet<String> = HashSet::new();
        let mut renamed: HashMap<String, String> = HashMap::new();
        let mut next = ProgramSpec {
            resources: Vec::new(),
            fail_on_error: if config.tolerant_programs && rng.chance(20) {
                !self.fail_on_error
            } else {
                self.fail_on_error
            },
        };
        for r in &self.resources {
            if r.parent.as_ref().is_some_and(|p| removed.contains(p)) {
                removed.insert(r.name.clone());
                continue;
            }
            let mut n = r.clone();
            n.aliases.clear();
            n.rename_references(&removed, &renamed);
            let rename = if config.renames { 8 } else { 0 };
            match rng.weighted(&[50, 22, 14, rename, 6]) {
                0 => {}
                1 => modify_inputs(rng, &mut n),
                2 => {
                    removed.insert(r.name.clone());
                    continue;
                }
                3 => {
                    n.name = format!("{}_renamed", r.name);
                    n.aliases = vec![self.urn_of(&r.name).to_string()];
                    renamed.insert(r.name.clone(), n.name.clone());
                }
                _ => modify_options(rng, &mut n),
            }
            let earlier = next.names(|x| x.kind != Kind::Provider);
            if n.kind != Kind::Provider && !earlier.is_empty() && rng.chance(8) {
                let d = rng.pick(&earlier).clone();
                if !n.dependencies.contains(&d) {
                    n.dependencies.push(d);
                }
            }
            next.resources.push(n);
        }
        for j in 0..rng.range(0, config.added_resources) {
            let r = next.random_resource(rng, format!("n{j}"));
            next.resources.push(r);
        }
        next
    }
}

fn modify_inputs(rng: &mut Rng, r: &mut ResourceSpec) {
    match r.kind {
        Kind::Provider => {
            let region = if r.inputs.get("region").map(String::as_str) == Some("eu") {
                "us"
            } else {
                "eu"
            };
            r.inputs.insert("region".to_owned(), region.to_owned());
        }
        Kind::Component => r.outputs = !r.outputs,
        Kind::Custom => {
            if rng.chance(60) {
                let v = rng.pick(&["a", "b", "c", "d"]).to_string();
                r.inputs.insert("v".to_owned(), v);
            } else if r.inputs.remove("w").is_none() {
                r.inputs.insert("w".to_owned(), "z".to_owned());
            }
        }
    }
}

fn modify_options(rng: &mut Rng, r: &mut ResourceSpec) {
    match rng.below(6) {
        0 => r.protect = !r.protect,
        1 => r.retain_on_delete = !r.retain_on_delete,
        2 => {
            r.delete_before_replace = match r.delete_before_replace {
                Some(true) => None,
                _ => Some(true),
            }
        }
        3 => {
            if r.ignore_changes.is_empty() {
                r.ignore_changes = vec!["w".to_owned(), "v".to_owned()];
            } else {
                r.ignore_changes.clear();
            }
        }
        4 if r.kind == Kind::Custom => {
            // A different provider: explicit → default, or another default.
            if r.provider.take().is_none() {
                r.version = if r.version.is_some() {
                    None
                } else {
                    Some("1.0.0")
                };
            }
        }
        _ => r.deleted_with = None,
    }
}

impl fmt::Display for ResourceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Component => "component",
            Kind::Custom => "custom",
            Kind::Provider => "provider",
        };
        write!(f, "{} = {kind} {}", self.name, self.type_token())?;
        let inputs: Vec<String> = self
            .inputs
            .iter()
            .map(|(k, v)| format!("{k}: {v:?}"))
            .chain(
                self.property_dependencies
                    .iter()
                    .map(|d| format!("from_{d}: {d}.outputs.v")),
            )
            .collect();
        write!(f, " {{{}}}", inputs.join(", "))?;
        let mut opt = |name: &str, value: Option<String>| match value {
            Some(v) => write!(f, " {name}={v}"),
            None => Ok(()),
        };
        let list = |l: &[String]| (!l.is_empty()).then(|| format!("[{}]", l.join(", ")));
        opt("parent", self.parent.clone())?;
        opt("provider", self.provider.clone())?;
        opt("version", self.version.map(str::to_owned))?;
        opt("dependsOn", list(&self.dependencies))?;
        opt("propertyDependencies", list(&self.property_dependencies))?;
        opt("deletedWith", self.deleted_with.clone())?;
        opt("protect", self.protect.then(|| "true".to_owned()))?;
        opt(
            "retainOnDelete",
            self.retain_on_delete.then(|| "true".to_owned()),
        )?;
        opt("ignoreChanges", list(&self.ignore_changes))?;
        opt(
            "deleteBeforeReplace",
            self.delete_before_replace.map(|b| b.to_string()),
        )?;
        opt("aliases", list(&self.aliases))?;
        opt("registerOutputs", self.outputs.then(|| "{v}".to_owned()))?;
        Ok(())
    }
}

impl fmt::Display for ProgramSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  (stack)")?;
        for r in &self.resources {
            writeln!(f, "  {r}")?;
        }
        let on_error = if self.fail_on_error {
            "exits with an error"
        } else {
            "exits normally"
        };
        write!(
            f,
            "  (registers each resource once its references are registered; skips \
             dependents of a failed registration; then {on_error} if one failed)"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every reference points to an earlier resource of the same program.
    fn well_formed(p: &ProgramSpec) {
        let mut seen = HashSet::new();
        for r in &p.resources {
            for n in r.references() {
                assert!(seen.contains(n), "{} refers to later {n}:\n{p}", r.name);
            }
            assert!(seen.insert(r.name.clone()), "duplicate {}", r.name);
            if let Some(pr) = &r.provider {
                let provider = p.get(pr).unwrap();
                assert_eq!(provider.kind, Kind::Provider);
                assert_eq!(provider.package, r.package);
            }
        }
    }

    #[test]
    fn programs_and_their_evolutions_are_well_formed() {
        for seed in 0..500 {
            let mut rng = Rng::new(seed);
            let prior = ProgramSpec::random(
                &mut rng,
                &Config {
                    prior_resources: 10,
                    ..Config::default()
                },
            );
            well_formed(&prior);
            let config = Config {
                added_resources: 4,
                ..Config::default()
            };
            let next = prior.evolve(&mut rng, &config);
            well_formed(&next);
            for r in &next.resources {
                for a in &r.aliases {
                    let old = r.name.trim_end_matches("_renamed");
                    assert_eq!(*a, prior.urn_of(old).to_string());
                }
            }
        }
    }

    #[test]
    fn urns_follow_the_parent_type() {
        let mut p = ProgramSpec::default();
        let mut rng = Rng::new(1);
        let mut group = p.random_resource(&mut rng, "g".to_owned());
        group.kind = Kind::Component;
        p.resources.push(group);
        let mut child = p.random_resource(&mut rng, "c".to_owned());
        child.kind = Kind::Custom;
        child.package = "pkga";
        child.parent = Some("g".to_owned());
        p.resources.push(child);
        assert_eq!(
            p.urn_of("c").as_str(),
            "urn:pulumi:test::proj::fuzz:index:Group$pkga:index:Thing::c"
        );
    }
}

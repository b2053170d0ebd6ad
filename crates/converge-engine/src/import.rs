//! `converge import`'s program: the stack as it is, plus the resources to
//! adopt. Pulumi imports without the user's program; so does this: the
//! program registers the stack resource, the existing resources the
//! imports hang from (their parents and providers, and what those depend
//! on — untargeted, so each stays exactly as recorded), then one
//! registration per import with the `import` option and its inputs taken
//! from the provider's Read ([`ImportInputs::Read`]).
//!
//! The operation must target exactly [`ImportProgram::targets`]: every
//! other resource of the stack is then neither changed nor deleted.

use std::collections::{BTreeMap, BTreeSet};

use async_trait::async_trait;
use converge_model::{package_of, ProviderReference, Urn, UrnError, UrnPattern};
use converge_state::Snapshot;

use crate::goal::{ImportInputs, ResourceGoal, ResourceOptions};
use crate::monitor::{Monitor, Program};

/// One resource to import.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportSpec {
    pub type_token: String,
    pub name: String,
    /// The object's ID (empty for a component).
    pub id: String,
    /// `None`: the stack resource.
    pub parent: Option<Urn>,
    /// An existing provider resource of the stack; `None`: the package's
    /// default provider.
    pub provider: Option<Urn>,
    /// The provider version, for the default provider.
    pub version: Option<String>,
    /// Which of the properties read become inputs (`None`: all).
    pub properties: Option<Vec<String>>,
    /// A component: recorded, no provider, no ID.
    pub component: bool,
    pub protect: bool,
}

impl ImportSpec {
    /// The URN the import gets in `stack` of `project`; `root` is the
    /// stack resource's URN, the parent of an import without one.
    pub fn urn(&self, stack: &str, project: &str, root: Option<&Urn>) -> Result<Urn, UrnError> {
        let parent = self.parent.as_ref().or(root);
        Urn::for_resource(stack, project, parent, &self.type_token, &self.name)
    }
}

/// Why an import program cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportProgramError {
    #[error("the provider {0} is not a provider resource of the stack")]
    UnknownProvider(Urn),
    #[error(
        "the parent {parent} of {name} is neither a resource of the stack nor imported before it"
    )]
    UnknownParent { name: String, parent: Urn },
    #[error("{0}")]
    Urn(#[from] UrnError),
    #[error("{name} is imported twice (URN {urn})")]
    Duplicate { name: String, urn: Urn },
    #[error("{urn} is already a resource of the stack; remove it from the state first (`converge state delete`) or import it under another name")]
    Exists { urn: Urn },
}

/// The program of `converge import`.
#[derive(Debug, Clone)]
pub struct ImportProgram {
    /// The existing resources registered (indices into the base), in
    /// base order.
    existing: Vec<usize>,
    base: Snapshot,
    specs: Vec<ImportSpec>,
    urns: Vec<Urn>,
}

impl ImportProgram {
    /// The program importing `specs` (each after the imports it hangs
    /// from) into `base`, the stack's state.
    pub fn new(
        base: Snapshot,
        stack: &str,
        project: &str,
        specs: Vec<ImportSpec>,
    ) -> Result<Self, ImportProgramError> {
        let live: BTreeMap<&Urn, usize> = base
            .resources
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.delete)
            .map(|(i, r)| (&r.urn, i))
            .collect();
        let root = base
            .resources
            .iter()
            .find(|r| r.urn.is_stack() && r.parent.is_none() && !r.delete)
            .map(|r| r.urn.clone())
            .map_or_else(|| stack_urn(stack, project), Ok)?;
        let mut urns = Vec::new();
        let mut needed = BTreeSet::new();
        for spec in &specs {
            let urn = spec.urn(stack, project, Some(&root))?;
            if urns.contains(&urn) {
                return Err(ImportProgramError::Duplicate {
                    name: spec.name.clone(),
                    urn,
                });
            }
            if live.contains_key(&urn) {
                return Err(ImportProgramError::Exists { urn });
            }
            if let Some(parent) = &spec.parent {
                match live.get(parent) {
                    Some(&i) => {
                        needed.insert(i);
                    }
                    None if urns.contains(parent) || *parent == root => {}
                    None => {
                        return Err(ImportProgramError::UnknownParent {
                            name: spec.name.clone(),
                            parent: parent.clone(),
                        })
                    }
                }
            }
            if let Some(provider) = &spec.provider {
                match live.get(provider) {
                    Some(&i) if base.resources[i].is_provider() => {
                        needed.insert(i);
                    }
                    _ => return Err(ImportProgramError::UnknownProvider(provider.clone())),
                }
            }
            urns.push(urn);
        }
        // What the needed resources depend on, transitively: they keep
        // their place only if all of it is registered before them.
        let mut todo: Vec<usize> = needed.iter().copied().collect();
        while let Some(i) = todo.pop() {
            let r = &base.resources[i];
            let deps = r
                .all_dependencies()
                .map(|(_, u)| u)
                .chain(r.provider.as_ref().map(|p| &p.urn));
            for dep in deps {
                if let Some(&j) = live.get(dep) {
                    if needed.insert(j) {
                        todo.push(j);
                    }
                }
            }
        }
        let existing = needed
            .into_iter()
            .filter(|&i| base.resources[i].urn != root)
            .collect();
        Ok(ImportProgram {
            existing,
            base,
            specs,
            urns,
        })
    }

    /// The URNs of the imports, in order.
    pub fn urns(&self) -> &[Urn] {
        &self.urns
    }

    /// The operation's `--target`s: the imports and nothing else.
    pub fn targets(&self) -> Vec<UrnPattern> {
        self.urns
            .iter()
            .filter_map(|u| UrnPattern::parse(u.as_str()).ok())
            .collect()
    }
}

fn stack_urn(stack: &str, project: &str) -> Result<Urn, UrnError> {
    Urn::new(
        stack,
        project,
        None,
        converge_model::STACK_TYPE,
        &format!("{project}-{stack}"),
    )
}

#[async_trait]
impl Program for ImportProgram {
    async fn run(&self, monitor: Monitor) -> Result<(), String> {
        let stack = monitor.register_stack().await.map_err(|e| e.to_string())?;
        // Provider resources registered here, by URN: their IDs.
        let mut providers: BTreeMap<Urn, String> = BTreeMap::new();
        for &i in &self.existing {
            let r = &self.base.resources[i];
            let goal = ResourceGoal {
                type_token: r.type_token.clone(),
                name: r.urn.name().to_owned(),
                custom: r.custom,
                parent: r.parent.clone(),
                inputs: r.inputs.clone(),
                provider: r.provider.as_ref().map(ToString::to_string),
                options: ResourceOptions {
                    protect: r.protect,
                    retain_on_delete: r.retain_on_delete,
                    ..ResourceOptions::default()
                },
                ..ResourceGoal::default()
            };
            let result = monitor
                .register_resource(goal)
                .await
                .map_err(|e| e.to_string())?;
            if r.is_provider() {
                providers.insert(result.urn, result.id.unwrap_or_default());
            }
        }
        for spec in &self.specs {
            let provider = match (&spec.provider, spec.component) {
                (_, true) => None,
                (Some(urn), false) => Some(reference(&providers, urn)),
                // The default provider, if it is already registered here.
                (None, false) => {
                    let default = default_provider_urn(&monitor, spec);
                    default
                        .filter(|u| providers.contains_key(u))
                        .map(|u| reference(&providers, &u))
                }
            };
            let goal = ResourceGoal {
                type_token: spec.type_token.clone(),
                name: spec.name.clone(),
                custom: !spec.component,
                parent: Some(spec.parent.clone().unwrap_or_else(|| stack.urn.clone())),
                provider,
                version: spec.version.clone(),
                options: ResourceOptions {
                    protect: spec.protect,
                    import_id: (!spec.component).then(|| spec.id.clone()),
                    import_inputs: ImportInputs::Read {
                        properties: spec.properties.clone(),
                    },
                    ..ResourceOptions::default()
                },
                ..ResourceGoal::default()
            };
            monitor
                .register_resource(goal)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

fn reference(providers: &BTreeMap<Urn, String>, urn: &Urn) -> String {
    let id = providers.get(urn).cloned().unwrap_or_default();
    ProviderReference {
        urn: urn.clone(),
        id,
    }
    .to_string()
}

/// The URN the engine gives the default provider of `spec`'s package.
fn default_provider_urn(monitor: &Monitor, spec: &ImportSpec) -> Option<Urn> {
    crate::step_generator::default_provider_urn(
        monitor.stack(),
        monitor.project(),
        package_of(&spec.type_token),
        spec.version.as_deref(),
    )
    .ok()
}

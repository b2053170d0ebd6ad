//! Running a [`ProgramSpec`]: every resource registers on its own task as
//! soon as the resources it refers to have registered (so independent
//! resources register concurrently), and never when one of them failed or
//! was skipped, as an SDK awaiting its inputs would.

use std::collections::HashMap;
use std::sync::Arc;

use converge_engine::{Monitor, RegisterResult, ResourceGoal, ResourceOptions};
use converge_model::{PropertyValue, Urn};
use tokio::sync::watch;
use tokio::task::JoinSet;

use super::spec::{Kind, ProgramSpec, ResourceSpec};
use crate::lifecycle::{program, register_stack, TestProgram};

/// What became of a registration.
#[derive(Debug, Clone)]
enum Slot {
    Pending,
    Registered(Box<RegisterResult>),
    /// Failed, or skipped because a reference failed.
    Missing,
}

impl ProgramSpec {
    /// The program as an in-process [`TestProgram`].
    pub fn program(&self) -> TestProgram {
        let spec = Arc::new(self.clone());
        program(move |m| run(m, Arc::clone(&spec)))
    }
}

async fn run(m: Monitor, spec: Arc<ProgramSpec>) -> Result<(), String> {
    let stack = register_stack(&m).await?;
    let mut slots: HashMap<String, watch::Receiver<Slot>> = HashMap::new();
    let mut tasks = JoinSet::new();
    for (i, r) in spec.resources.iter().enumerate() {
        let (tx, rx) = watch::channel(Slot::Pending);
        let waits: Vec<(String, watch::Receiver<Slot>)> = r
            .references()
            .map(|n| (n.clone(), slots[n].clone()))
            .collect();
        slots.insert(r.name.clone(), rx);
        let (m, spec, stack) = (m.clone(), Arc::clone(&spec), stack.clone());
        tasks.spawn(async move {
            let r = &spec.resources[i];
            let mut refs: HashMap<String, RegisterResult> = HashMap::new();
            for (name, mut rx) in waits {
                let slot = rx
                    .wait_for(|s| !matches!(s, Slot::Pending))
                    .await
                    .map(|s| s.clone());
                match slot {
                    Ok(Slot::Registered(result)) => {
                        refs.insert(name, *result);
                    }
                    _ => {
                        let _ = tx.send(Slot::Missing);
                        return Ok(());
                    }
                }
            }
            match register(&m, &stack, r, &refs).await {
                Ok(result) => {
                    let _ = tx.send(Slot::Registered(Box::new(result)));
                    Ok(())
                }
                Err(e) => {
                    let _ = tx.send(Slot::Missing);
                    Err(format!("{}: {e}", r.name))
                }
            }
        });
    }
    let mut errors = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(e)) => errors.push(e),
            Err(e) => errors.push(format!("a registration task failed: {e}")),
        }
    }
    if !errors.is_empty() && spec.fail_on_error {
        errors.sort();
        return Err(errors.join("; "));
    }
    Ok(())
}

/// Registers one resource (and, for a component, its outputs).
async fn register(
    m: &Monitor,
    stack: &Urn,
    r: &ResourceSpec,
    refs: &HashMap<String, RegisterResult>,
) -> Result<RegisterResult, String> {
    let goal = goal(stack, r, refs);
    let result = m.register_resource(goal).await.map_err(|e| e.to_string())?;
    if r.kind == Kind::Component && r.outputs {
        let outputs = [("v".to_owned(), PropertyValue::from(r.name.as_str()))]
            .into_iter()
            .collect();
        m.register_resource_outputs(&result.urn, outputs)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(result)
}

fn goal(stack: &Urn, r: &ResourceSpec, refs: &HashMap<String, RegisterResult>) -> ResourceGoal {
    let urn = |n: &String| refs[n].urn.clone();
    let mut inputs: converge_model::PropertyMap = r
        .inputs
        .iter()
        .map(|(k, v)| (k.clone(), PropertyValue::from(v.as_str())))
        .collect();
    let mut property_dependencies = std::collections::BTreeMap::new();
    for d in &r.property_dependencies {
        let key = format!("from_{d}");
        let value = refs[d]
            .outputs
            .get("v")
            .cloned()
            .unwrap_or(PropertyValue::Null);
        inputs.insert(key.clone(), value);
        property_dependencies.insert(key, vec![urn(d)]);
    }
    // SDKs list property dependencies among the dependencies too.
    let mut dependencies: Vec<Urn> = r.dependencies.iter().map(urn).collect();
    for d in &r.property_dependencies {
        let u = urn(d);
        if !dependencies.contains(&u) {
            dependencies.push(u);
        }
    }
    let provider = r.provider.as_ref().map(|p| {
        let result = &refs[p];
        format!("{}::{}", result.urn, result.id.clone().unwrap_or_default())
    });
    ResourceGoal {
        type_token: r.type_token(),
        name: r.name.clone(),
        custom: r.kind != Kind::Component,
        parent: Some(r.parent.as_ref().map_or_else(|| stack.clone(), urn)),
        inputs,
        provider,
        version: r.version.map(str::to_owned),
        dependencies,
        property_dependencies,
        options: ResourceOptions {
            protect: r.protect,
            delete_before_replace: r.delete_before_replace,
            ignore_changes: r.ignore_changes.clone(),
            retain_on_delete: r.retain_on_delete,
            deleted_with: r.deleted_with.as_ref().map(urn),
            aliases: r
                .aliases
                .iter()
                .map(|a| Urn::parse(a).expect("fuzzed aliases are URNs").into())
                .collect(),
            ..ResourceOptions::default()
        },
    }
}

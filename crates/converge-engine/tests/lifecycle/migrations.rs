//! State migrations (`stateMigrations`): a registration's callbacks get
//! its old state and its descendants' as checkpoint resources (secrets in
//! plaintext), before anything is diffed; what they return is the old
//! state the steps start from. A renamed custom resource keeps its object
//! (a Same step, no create or delete) and what referred to it follows; a
//! component merged into its successor leaves the state with no provider
//! call; an answer that would lose or change a real object is refused and
//! leaves the state as it was.

use std::sync::Mutex;

use async_trait::async_trait;
use converge_engine::{MigrationAnswer, MigrationCallback, StateMigrator};
use converge_model::ResourceState;
use converge_state::checkpoint::{resources_from_json, resources_to_json};
use converge_testkit::{component, custom, program, register_stack, TestProgram};

use super::*;

const C: &str = "my:index:App";

type Rewrite =
    dyn Fn(&Urn, Vec<ResourceState>) -> Option<(Vec<ResourceState>, Vec<(Urn, Urn)>)> + Send + Sync;

/// Runs `rewrite` as every callback; records what each call received
/// (the registration's URN and the old state's text).
struct Migrator {
    rewrite: Box<Rewrite>,
    seen: Mutex<Vec<(String, String)>>,
}

impl std::fmt::Debug for Migrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Migrator")
    }
}

#[async_trait]
impl StateMigrator for Migrator {
    async fn migrate(
        &self,
        _callback: &MigrationCallback,
        urn: &Urn,
        old_state: Vec<u8>,
    ) -> Result<Option<MigrationAnswer>, String> {
        self.seen.lock().unwrap().push((
            urn.to_string(),
            String::from_utf8(old_state.clone()).unwrap(),
        ));
        let states = resources_from_json(&old_state).map_err(|e| e.to_string())?;
        Ok(
            (self.rewrite)(urn, states).map(|(states, successors)| MigrationAnswer {
                new_state: resources_to_json(&states).unwrap(),
                successors: successors
                    .into_iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect(),
            }),
        )
    }
}

fn migrator(
    rewrite: impl Fn(&Urn, Vec<ResourceState>) -> Option<(Vec<ResourceState>, Vec<(Urn, Urn)>)>
        + Send
        + Sync
        + 'static,
) -> Arc<Migrator> {
    Arc::new(Migrator {
        rewrite: Box::new(rewrite),
        seen: Mutex::new(Vec::new()),
    })
}

fn callback() -> MigrationCallback {
    MigrationCallback {
        target: "127.0.0.1:1".to_owned(),
        token: "t".to_owned(),
    }
}

/// `app` (a component) holding `extra` (a component) and a Thing named
/// `bucket` (or `app-bucket`, the old name), and a Thing `user` that
/// depends on the bucket; `app` carries the migration when `migrator` is
/// given.
fn app(migrator: Option<Arc<Migrator>>, bucket: &'static str, extra: bool) -> TestProgram {
    program(move |m| {
        let migrator = migrator.clone();
        async move {
            if let Some(mg) = &migrator {
                m.set_state_migrator(Arc::clone(mg) as Arc<dyn StateMigrator>);
            }
            let stack = register_stack(&m).await?;
            let mut a = component(C, "app");
            if migrator.is_some() {
                a.options.state_migrations = vec![callback(), callback()];
            }
            let app = reg(&m, &stack, a).await?.urn;
            if extra {
                reg(&m, &app, component(C, "app-extra")).await?;
            }
            let b = reg(&m, &app, custom(T, bucket, inputs(&[("k", "1")]))).await?;
            let mut user = custom(T, "user", inputs(&[("k", "1")]));
            user.dependencies = vec![b.urn.clone()];
            reg(&m, &stack, user).await?;
            Ok(())
        }
    })
}

fn renamed(urn: &Urn, to: &str) -> Urn {
    let text = urn.as_str();
    let cut = text.rfind("::").unwrap();
    Urn::parse(&format!("{}::{to}", &text[..cut])).unwrap()
}

#[tokio::test]
async fn a_migration_renames_a_child_and_merges_a_component_without_touching_the_object() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&app(None, "app-bucket", true)).await);
    let id = w.resource("app-bucket").unwrap().id.clone();
    let app_urn = w.resource("app").unwrap().urn.clone();
    cloud.reset_counts();

    // The callback renames the bucket and folds `app-extra` into `app`;
    // the second callback (the same one again) finds nothing to do.
    let mg = migrator(|_, states| {
        if states.iter().any(|s| s.urn.name() == "bucket") {
            return None;
        }
        let app = states[0].urn.clone();
        let mut out = Vec::new();
        let mut successors = Vec::new();
        for mut s in states {
            match s.urn.name() {
                "app-extra" => successors.push((s.urn.clone(), app.clone())),
                "app-bucket" => {
                    let to = renamed(&s.urn, "bucket");
                    successors.push((s.urn.clone(), to.clone()));
                    s.urn = to;
                    out.push(s);
                }
                _ => out.push(s),
            }
        }
        Some((out, successors))
    });
    let result = w.up(&app(Some(mg.clone()), "bucket", false)).await;
    expect_ok(&result);

    let seen = mg.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "each callback ran once");
    assert_eq!(seen[0].0, app_urn.to_string());
    let first: Vec<String> = resources_from_json(seen[0].1.as_bytes())
        .unwrap()
        .iter()
        .map(|s| s.urn.name().to_owned())
        .collect();
    assert_eq!(first, ["app", "app-extra", "app-bucket"], "the root first");
    // The second callback got what the first returned.
    assert!(seen[1].1.contains("::bucket\""), "{}", seen[1].1);

    assert_eq!(ops_of(&result, "bucket"), [StepOp::Same]);
    assert!(
        ops_of(&result, "app-extra").is_empty(),
        "a merge is no delete: {:?}",
        all_ops(&result)
    );
    let counts = cloud.counts();
    assert_eq!((counts.creates, counts.deletes), (0, 0));
    let bucket = w.resource("bucket").expect("the bucket under its new name");
    assert_eq!(bucket.id, id, "the same object");
    assert!(w.resource("app-bucket").is_none());
    assert!(w.resource("app-extra").is_none(), "merged into app");
    let user = w.resource("user").unwrap();
    assert_eq!(user.dependencies, std::slice::from_ref(&bucket.urn));
    assert_eq!(cloud.len(), 2);

    // The next run has nothing left to migrate and changes nothing.
    let result = w.up(&app(Some(mg), "bucket", false)).await;
    expect_ok(&result);
    assert_eq!(ops_of(&result, "bucket"), [StepOp::Same]);
}

#[tokio::test]
async fn a_migration_that_would_lose_or_change_an_object_is_refused_and_changes_nothing() {
    let (mut w, cloud) = world(provider());
    expect_ok(&w.up(&app(None, "app-bucket", true)).await);
    let before = w.snapshot.clone();

    let cases: Vec<(&str, Arc<Migrator>)> = vec![
        (
            "without naming a successor",
            migrator(|_, mut states| {
                states.retain(|s| s.urn.name() != "app-bucket");
                Some((states, vec![]))
            }),
        ),
        (
            "changes the ID",
            migrator(|_, mut states| {
                for s in &mut states {
                    if s.custom {
                        s.id = Some("someone-else".to_owned());
                    }
                }
                Some((states, vec![]))
            }),
        ),
        (
            "never remove one",
            migrator(|_, states| {
                let app = states[0].urn.clone();
                let successors = states
                    .iter()
                    .filter(|s| s.custom)
                    .map(|s| (s.urn.clone(), app.clone()))
                    .collect();
                Some((
                    states.into_iter().filter(|s| !s.custom).collect(),
                    successors,
                ))
            }),
        ),
        (
            "cannot add resources",
            migrator(|_, mut states| {
                let mut copy = states[2].clone();
                copy.urn = renamed(&copy.urn, "twin");
                states.push(copy);
                Some((states, vec![]))
            }),
        ),
    ];
    for (want, mg) in cases {
        let result = w.up(&app(Some(mg), "app-bucket", true)).await;
        let error = result.error.expect("the migration is refused").to_string();
        assert!(error.contains("state migration of"), "{error}");
        assert!(error.contains(want), "{want}: {error}");
        assert_eq!(w.snapshot.resources, before.resources, "{want}");
        assert_eq!(cloud.len(), 2);
    }
}

#[tokio::test]
async fn a_preview_shows_the_migrated_state_and_writes_nothing() {
    let (mut w, _cloud) = world(provider());
    expect_ok(&w.up(&app(None, "app-bucket", false)).await);
    let before = w.snapshot.clone();
    let mg = migrator(|_, states| {
        let mut successors = Vec::new();
        let out = states
            .into_iter()
            .map(|mut s| {
                if s.urn.name() == "app-bucket" {
                    let to = renamed(&s.urn, "bucket");
                    successors.push((s.urn.clone(), to.clone()));
                    s.urn = to;
                }
                s
            })
            .collect();
        Some((out, successors))
    });
    let result = w.preview(&app(Some(mg), "bucket", false)).await;
    expect_ok(&result);
    assert_eq!(ops_of(&result, "bucket"), [StepOp::Same]);
    assert!(ops_of(&result, "app-bucket").is_empty(), "no delete of it");
    assert_eq!(w.snapshot.resources, before.resources);
}

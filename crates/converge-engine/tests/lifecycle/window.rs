//! Steps in flight (`DeploymentOptions::steps_in_flight`): registrations
//! beyond the window wait their turn before anything of theirs is
//! prepared, the engine's own registrations (a default provider's) never
//! wait behind the ones that need them, and deletions start as their
//! dependents finish, a window at a time.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use converge_engine::StepOp;
use converge_plugin::CreateResponse;
use converge_testkit::{custom, program, register_stack, MockProvider, Rpc, TestProgram};

use super::*;

/// How many registrations are between their Check and their Create, and
/// the most there ever were.
#[derive(Debug, Default)]
struct Gauge {
    now: AtomicUsize,
    most: AtomicUsize,
}

/// A provider whose creates take `latency`, counting the registrations
/// under way in `gauge`.
fn gauged(gauge: Arc<Gauge>, latency: Duration) -> MockProvider {
    let cloud = MockCloud::new();
    let c = cloud.clone();
    let (at_check, at_create) = (Arc::clone(&gauge), gauge);
    MockProvider::new("pkg")
        .with_cloud(cloud)
        .latency_of(Rpc::Create, latency)
        .on_check(move |req| {
            let now = at_check.now.fetch_add(1, Ordering::SeqCst) + 1;
            at_check.most.fetch_max(now, Ordering::SeqCst);
            Ok(converge_plugin::CheckResponse {
                inputs: req.news,
                failures: Vec::new(),
            })
        })
        .on_create(move |req| {
            at_create.now.fetch_sub(1, Ordering::SeqCst);
            let id = c.insert(&req.urn, "pkg", req.properties.clone());
            Ok(CreateResponse {
                id,
                properties: req.properties,
            })
        })
}

/// A world of the gauged provider whose creates take `latency`, with
/// `steps_in_flight` and `parallel` set.
fn gauged_world(
    latency: Duration,
    steps_in_flight: usize,
    parallel: usize,
) -> (Lifecycle, Arc<MockCloud>, Arc<Gauge>) {
    let gauge = Arc::new(Gauge::default());
    let (mut w, cloud) = world(gauged(Arc::clone(&gauge), latency));
    w.options.steps_in_flight = steps_in_flight;
    w.options.parallel = parallel;
    (w, cloud, gauge)
}

/// `n` resources of the default provider, registered at once.
fn at_once(n: usize) -> TestProgram {
    program(move |m| async move {
        let stack = register_stack(&m).await?;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..n {
            let (m, stack) = (m.clone(), stack.clone());
            tasks.spawn(async move {
                let g = custom(T, &format!("r{i}"), inputs(&[("k", "1")]));
                reg(&m, &stack, g).await.map(|_| ())
            });
        }
        while let Some(r) = tasks.join_next().await {
            r.map_err(|e| e.to_string())??;
        }
        Ok(())
    })
}

#[tokio::test]
async fn registrations_beyond_the_window_wait_their_turn() {
    let (mut w, cloud, gauge) = gauged_world(Duration::from_millis(5), 4, 1);
    // Every registration needs the default provider, which the first one
    // registers while the other three turns wait for it: were its
    // registration to need a turn too, this would never end.
    let r = tokio::time::timeout(Duration::from_secs(60), w.up(&at_once(40)))
        .await
        .expect("the up ends: a default provider does not wait for a turn");
    expect_ok(&r);
    assert_eq!(ops_of(&r, "default"), vec![StepOp::Create]);
    assert_eq!(cloud.len(), 40);
    let most = gauge.most.load(Ordering::SeqCst);
    assert!(most <= 4, "{most} registrations were under way at once");
    assert_eq!(gauge.now.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_window_is_never_narrower_than_the_parallel_provider_calls() {
    let (mut w, _cloud, gauge) = gauged_world(Duration::from_millis(20), 1, 3);
    expect_ok(&w.up(&at_once(12)).await);
    // Three turns: while one create takes its 20 ms, the others have been
    // checked and wait for their provider call.
    let most = gauge.most.load(Ordering::SeqCst);
    assert!(
        (2..=3).contains(&most),
        "{most} registrations were under way at once"
    );
}

/// A destroy with a window of two: chains of five resources, each
/// depending on the one before, are deleted last to first, and every
/// deletion still happens.
#[tokio::test]
async fn a_destroy_through_a_narrow_window_deletes_dependents_first() {
    let order = log();
    let cloud = MockCloud::new();
    let (c, deleted) = (cloud.clone(), order.clone());
    let provider = MockProvider::new("pkg")
        .with_cloud(cloud)
        .on_delete(move |req| {
            c.remove(&req.id)?;
            deleted.lock().unwrap().push(req.urn.name().to_owned());
            Ok(())
        });
    let (mut w, cloud) = world(provider);
    let chains = program(|m| async move {
        let stack = register_stack(&m).await?;
        for chain in 0..3 {
            let mut before: Option<Urn> = None;
            for link in 0..5 {
                let mut g = custom(T, &format!("c{chain}-{link}"), inputs(&[]));
                g.dependencies = before.iter().cloned().collect();
                before = Some(reg(&m, &stack, g).await?.urn);
            }
        }
        Ok(())
    });
    expect_ok(&w.up(&chains).await);
    w.options.steps_in_flight = 2;
    w.options.parallel = 1;
    let r = w.destroy().await;
    expect_ok(&r);
    assert!(cloud.is_empty());
    let order = entries(&order);
    let pos = |n: &str| order.iter().position(|e| e == n).expect(n);
    for chain in 0..3 {
        for link in 1..5 {
            let (later, earlier) = (format!("c{chain}-{link}"), format!("c{chain}-{}", link - 1));
            assert!(pos(&later) < pos(&earlier), "{order:?}");
        }
    }
    assert_eq!(ops_of(&r, "c0-0"), vec![StepOp::Delete]);
}

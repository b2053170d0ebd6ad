//! One configured provider instance per provider resource per operation:
//! the resources of a stack with prior state all name the same provider
//! reference, which no step of this operation configured (a default
//! provider carried over unchanged), and their steps ask for it at once.
//! The registry configures it once and every step shares that instance —
//! for any provider kind, since each configured instance is a plugin
//! process (a Pulumi plugin or a Terraform provider).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use converge_plugin::Provider;
use converge_testkit::{numbered_things, Rpc};

use super::*;

/// A world whose loader makes a new provider instance per load (as the
/// plugin loader starts a process per configured instance), counting the
/// configured ones.
fn counting_world() -> (Lifecycle, Arc<AtomicUsize>) {
    let cloud = MockCloud::new();
    let configured = Arc::new(AtomicUsize::new(0));
    let version = provider().version().clone();
    let (c, shared) = (configured.clone(), cloud.clone());
    let loader = MockLoader::new().with_factory("pkg", version, move || {
        let c = c.clone();
        Arc::new(
            MockProvider::new("pkg")
                .with_cloud(shared.clone())
                // Configuring takes a while, as starting a plugin does:
                // the steps asking meanwhile must wait, not configure too.
                .latency_of(Rpc::Configure, Duration::from_millis(20))
                .on_configure(move |_| {
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
        ) as Arc<dyn Provider>
    });
    (Lifecycle::new(cloud, Arc::new(loader)), configured)
}

#[tokio::test]
async fn every_operation_configures_a_carried_over_provider_once() {
    let (mut w, configured) = counting_world();
    let program = numbered_things(10);
    expect_ok(&w.up(&program).await);
    assert_eq!(configured.swap(0, Ordering::SeqCst), 1, "up");

    expect_ok(&w.preview(&program).await);
    assert_eq!(configured.swap(0, Ordering::SeqCst), 1, "preview");

    expect_ok(&w.refresh().await);
    assert_eq!(configured.swap(0, Ordering::SeqCst), 1, "refresh");

    expect_ok(&w.up(&program).await);
    assert_eq!(configured.swap(0, Ordering::SeqCst), 1, "up again");

    expect_ok(&w.destroy().await);
    assert_eq!(configured.swap(0, Ordering::SeqCst), 1, "destroy");
    assert!(w.resource("r0").is_none());
}

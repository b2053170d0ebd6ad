//! Test doubles for the engine's lifecycle tests, fuzzers and benchmarks, in
//! the manner of Pulumi's `deploytest` (a mock provider with one closure per
//! RPC).
//!
//! - [`MockCloud`]: the "real objects" providers create, shared by every
//!   provider of a test, with deterministic IDs (`id-1`, `id-2`, …), call
//!   counters and a fault switch.
//! - [`MockProvider`]: a [`converge_plugin::Provider`] built from optional
//!   closures; absent closures fall back to defaults that keep the cloud
//!   consistent with what the engine is told, so a test can assert that every
//!   object in the cloud is in the state and vice versa.
//! - [`Lifecycle`]: one test world (snapshot, cloud, providers) whose
//!   operations check every journal prefix and that the cloud is tracked.
//! - [`MockLoader`]: a [`converge_plugin::ProviderLoader`] over a list of
//!   `(package, version, factory)`, choosing per seed 001's lookup.
//! - [`terraform_mirror`] (unix): real Terraform providers for the tests of
//!   the Terraform adapter, `store` and `breaker`, written in
//!   Python with PyPI's `tf` (`terraform/`), installed in OpenTofu's local
//!   mirror layout.
//! - [`tf_mock`]: a Terraform provider (tfplugin6) served in-process, one
//!   closure per RPC, for the Terraform adapter's lifecycle tests.
//!
//! ```
//! use std::sync::Arc;
//! use converge_testkit::{MockCloud, MockLoader, MockProvider};
//!
//! let cloud = MockCloud::new();
//! let provider = MockProvider::new("pkg").with_cloud(cloud.clone());
//! let loader = MockLoader::single(provider);
//! # let _ = (loader, cloud);
//! ```
//!
//! **Invariants.** Dev-only (`publish = false`); nothing here is used by a
//! shipping crate. No IO (but [`tf_mock`]'s socket on 127.0.0.1), no
//! randomness: the same test run twice makes the same calls and gets the
//! same IDs — except [`terraform_mirror`], which writes the test providers
//! into a directory the caller gives, and [`go_provider`], which builds the
//! Go test provider with the Go toolchain.

mod cloud;
pub mod fuzz;
pub mod go_provider;
pub mod http_files;
mod lifecycle;
mod loader;
mod provider;
pub mod terraform_mirror;
pub mod tf_mock;

pub use cloud::{CallCounts, CloudObject, CloudOp, MockCloud};
pub use lifecycle::{
    check_cloud_tracked, check_journal, component, custom, numbered_things, program, props,
    register_stack, Lifecycle, MemorySink, TestProgram,
};
pub use loader::{is_compatible, MockLoader, ProviderFactory};
pub use provider::{AsyncHandler, Handler, HandlerFuture, MockProvider, Rpc};

//! End to end: Terraform providers (tfplugin6) through the `converge`
//! binary. The providers are Converge's test providers, real tfplugin6
//! servers written with PyPI's `tf` (converge-testkit's `terraform/`),
//! installed in OpenTofu's unpacked mirror layout under a HOME of the
//! test's own (or `TF_PLUGIN_CACHE_DIR`), where `converge` discovers them
//! for a package with no Pulumi plugin. Their objects are JSON files in a
//! directory: the tests assert on those files (the real objects) and on
//! `converge stack export` (the state), not only on what the CLI prints.
//!
//! - `yaml`: a YAML program with `store` 2.0.0 — create, update,
//!   replace, refresh with drift, `converge import`, a data source (and
//!   its `fn::store:getItem` shorthand), an explicit provider resource,
//!   destroy; secrets never in plaintext in the state, the journal or the
//!   output.
//! - `upgrade`: state written by `store` 1.0.0 upgraded by 2.0.0
//!   (`UpgradeResourceState`), and provider private data kept in state.
//! - `python`: the same lifecycle from a Python program (the published
//!   `pulumi` SDK), with the `import` option and an invoke.
//! - `contract`: `breaker`, one test per rule of seeds 003/004 it breaks.
//! - `errors`: a provider configuration error and an unknown property.
//!
//! Skipped (with a message) when `CONVERGE_TEST_TF_PYTHON` is not set.

#![cfg(unix)]

mod contract;
mod errors;
mod python;
mod upgrade;
mod world;
mod yaml;

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
//! - `go`: the Go test provider (go-plugin, AutoMTLS, protocols 5 and 6)
//!   through the same lifecycle from YAML and Python, a schema upgrade,
//!   the processes each command starts and how they end, and a provider
//!   of another protocol version.
//! - `install`: `converge plugin install terraform` from a packed
//!   filesystem mirror, a network mirror and a registry on 127.0.0.1;
//!   hashes, the lock file, a tampered archive.
//!
//! Skipped (with a message) when `CONVERGE_TEST_TF_PYTHON` (the Python
//! providers) or `CONVERGE_TEST_GO` (the Go provider) is not set; they
//! fail under `CI=true`.

#![cfg(unix)]

mod contract;
mod errors;
mod go;
mod install;
mod python;
mod upgrade;
mod world;
mod yaml;

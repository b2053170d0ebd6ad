//! Terraform providers (tfplugin5 and tfplugin6) as Converge providers. Converge plays
//! Terraform Core's part of seeds 003/004: it merges the proposed new
//! state, upgrades every prior state, plans twice and checks the second
//! plan against the first, checks every apply, and keeps provider private
//! data and schema versions in state. The rules themselves are
//! `converge_engine::lifecycle`'s, the same that check Pulumi plugins
//! against a saved plan; here a broken rule is an error.
//!
//! - [`loader`]: a package with no Pulumi plugin but a Terraform provider
//!   of that TYPE (OpenTofu's local layouts, the lock file's version) runs
//!   the Terraform provider.
//! - [`provider`]: the `Provider` trait over tfplugin6 (`calls.rs`),
//!   planning and applying (`change.rs`), reading and import (`read.rs`).
//! - [`session`]: one connection, its schema and the Pulumi tokens.
//! - [`schema`], [`names`]: blocks and attributes; Pulumi's names for
//!   types (`random_pet` → `random:index/pet:Pet`) and attributes.
//! - [`shape`]: Pulumi-shaped properties ↔ Terraform objects, secrets.
//! - [`proposed`]: the proposed new state.
//! - [`contract`]: the rules, as errors naming the attribute.
//! - [`meta`]: schema version and private data in state (`__meta`).
//! - [`diagnostics`]: provider diagnostics as messages.
//!
//! - [`client`]: one client for protocols 5 and 6 (tfplugin6's messages,
//!   converted one to one for a provider that chose 5).
//! - [`install`]: provider installation by the OpenTofu CLI
//!   configuration (mirrors, registries), hashes and the lock file.
//!
//! One configured provider process per provider configuration and
//! command ([`loader`]); every process ends through go-plugin's
//! `Shutdown`.
//!
//! Deliberately absent: process management and wire values (in
//! `converge_plugin::terraform`), any rule of its own (the rules are the
//! engine's), and the bridge's pluralised names for nested blocks.

pub mod client;
pub mod contract;
pub mod diagnostics;
pub mod install;
pub mod loader;
pub mod meta;
pub mod names;
pub mod proposed;
pub mod provider;
pub mod schema;
pub mod session;
pub mod shape;

pub use loader::{TerraformLoader, TerraformLoaderOptions};
pub use provider::TerraformProvider;

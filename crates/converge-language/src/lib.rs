//! Language hosts: the programs Converge runs against the engine's
//! [`Monitor`](converge_engine::Monitor).
//!
//! - [`yaml`]: Pulumi YAML programs (`runtime: yaml`), parsed, checked and
//!   evaluated in-process.
//! - [`entry_point`]: `main:` of the project, checked to name something
//!   that exists inside the project, for every runtime.
//! - [`python`], [`nodejs`]: programs run as child processes with the
//!   published SDKs.
//! - [`client`]: a program an Automation API SDK runs in its own process
//!   (an inline program), reached through the `LanguageRuntime` it serves.
//!
//! **Invariants.** A language host only talks to the engine through the
//! monitor; it never reads or writes state.

pub mod client;
pub mod entry_point;
pub mod nodejs;
pub mod process;
pub mod python;
pub mod yaml;

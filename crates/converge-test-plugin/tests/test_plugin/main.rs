//! The test plugin as a real process, driven by the plugin host and the
//! engine: Construct, failures, shutdown and plugin versions. One module
//! per concern, in one test binary so that the dependency graph is linked
//! once. `tests/path_lifecycle.rs` stays a binary of its own because it
//! changes the process's PATH; `common` is shared with it.

#[path = "../common/mod.rs"]
mod common;

mod construct;
mod failures;
mod parameterize;
mod shutdown;
mod versions;

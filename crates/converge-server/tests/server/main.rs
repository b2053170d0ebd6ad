//! converge-server's integration tests, each against a real service:
//! the API, the backend conformance suite through the HTTP backend, leases
//! and client retries. One module per concern, in one test binary so that
//! the dependency graph is linked once.

mod common;

mod api;
mod conformance;
mod console_admin;
mod console_api;
mod leases;
mod limits;
mod policy_packs;
mod retries;
mod scopes;

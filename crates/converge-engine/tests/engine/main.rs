//! converge-engine's integration tests beyond the lifecycle suite (which is
//! its own binary, `tests/lifecycle/`): crash injection, the fuzzer and
//! persistence through the file and HTTP backends, one module each, in one
//! test binary so that the dependency graph is linked once for all four.

mod crash;
mod fuzz;
mod persistence;
mod persistence_http;

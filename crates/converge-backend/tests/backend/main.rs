//! converge-backend's integration tests, one module per concern, in one test
//! binary: each binary links the whole dependency graph, so one binary per
//! crate keeps `cargo test` from linking the same code eight times.

mod conformance_file;
mod conformance_object;
mod file_errors;
mod file_journal;
mod file_journal_crash;
mod file_layout;
mod file_lock_process;
mod object_layout;

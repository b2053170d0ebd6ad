//! converge-state's integration tests: checkpoints against fixtures written
//! by Pulumi, integrity rules, journal replay and JSON, passphrase
//! interoperability and plan files. One module per concern, in one test
//! binary so that the dependency graph is linked once.

mod checkpoint_roundtrip;
mod integrity_rules;
mod passphrase_interop;
mod plan_files;
mod resource_options;

// The journal property tests use the proptest generators of feature
// `testing`: `cargo test -p converge-state --features testing`.
#[cfg(feature = "testing")]
mod journal_json;
#[cfg(feature = "testing")]
mod journal_replay;

//! Converge's test Terraform providers (`terraform/`, installed by
//! `converge_testkit::terraform_mirror`) speak tfplugin6: each is installed
//! in a temporary mirror, launched with `ProviderProcess::launch` and driven
//! with the raw tonic client, values encoded by the schemas' object types.
//! Skipped, with a message, when CONVERGE_TEST_TF_PYTHON is unset.

#![cfg(unix)]

#[path = "terraform_providers/breaker.rs"]
mod breaker;
#[path = "terraform_providers/session.rs"]
mod session;
#[path = "terraform_providers/store.rs"]
mod store;

//! Terraform providers (tfplugin5 and tfplugin6) as go-plugin processes:
//! the handshake line, AutoMTLS, the running process, where providers are
//! found on disk, and the values they exchange. The `Provider` adapter is
//! converge-terraform's.
//!
//! - [`handshake`]: the `CORE|APP|NETWORK|ADDR|PROTOCOL|CERT` line, parsed.
//! - [`tls`]: the client certificate we present and the TLS configuration
//!   that trusts exactly the certificate the provider printed, with the
//!   versions and signature schemes its key allows.
//! - [`process`]: launch, handshake, connect (unix or tcp), stderr to
//!   tracing, `GRPCController.Shutdown`, kill after a grace period.
//! - [`discovery`]: OpenTofu's unpacked local layouts, newest version first.
//! - [`values`]: `DynamicValue` ↔ [`PropertyValue`](converge_model::PropertyValue),
//!   by the cty type of a schema attribute.

pub mod discovery;
pub mod handshake;
pub mod process;
pub mod tls;
pub mod values;

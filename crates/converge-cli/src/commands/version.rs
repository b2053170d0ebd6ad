//! `converge version`: Converge's version and the Pulumi CLI version whose
//! surface it implements.
//!
//! Pulumi's Automation API SDKs start with `pulumi version` and choose
//! behaviour by the answer: their minimum-version check, the event log's
//! transport (a gRPC stream past 3.205.0, a file before), inline programs
//! for refresh and destroy (3.181.0 on). Converge implements that surface
//! as the SDKs of [`PULUMI_CLI_VERSION`] and later use it, so when it runs
//! under the name `pulumi` (a symlink on `PATH`) it answers with that
//! version alone, as Pulumi prints its own.

/// The Pulumi CLI version whose Automation API surface Converge
/// implements and tests: the first to stream engine events over gRPC
/// (`--event-log tcp://…`) with inline programs for every operation.
/// Every SDK from it to the newest published ones selects the same
/// behaviours.
pub const PULUMI_CLI_VERSION: &str = "3.206.0";

/// Whether the binary was started under the name `pulumi`.
pub fn invoked_as_pulumi() -> bool {
    std::env::args_os()
        .next()
        .as_deref()
        .map(std::path::Path::new)
        .and_then(std::path::Path::file_stem)
        .is_some_and(|name| name == "pulumi")
}

pub fn run() {
    crate::display::say(text(invoked_as_pulumi()));
}

/// What `version` prints.
fn text(as_pulumi: bool) -> String {
    if as_pulumi {
        format!("v{PULUMI_CLI_VERSION}")
    } else {
        format!(
            "converge {} (implements the Pulumi CLI v{PULUMI_CLI_VERSION})",
            env!("CARGO_PKG_VERSION")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_pulumi_the_version_is_pulumis_alone() {
        assert_eq!(text(true), format!("v{PULUMI_CLI_VERSION}"));
        assert!(text(false).starts_with("converge "));
        assert!(text(false).contains(PULUMI_CLI_VERSION));
    }
}

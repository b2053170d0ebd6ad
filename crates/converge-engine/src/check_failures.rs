//! A provider's `Check` that refuses a resource's inputs. Each failure is
//! reported as an error diagnostic on the resource, as Pulumi reports
//! them, so that the display's diagnostics and the event log (the
//! Automation API's `on_event`) carry the cause even when the program's
//! own error (the SDK's "Resource monitor has terminated") comes first;
//! the step then fails with [`EngineError::CheckFailed`].
//!
//! A failure's value is not shown: it may be a secret.

use converge_model::Urn;
use converge_plugin::provider::CheckFailure;

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::Severity;

/// Reports each of `failures` on `urn` and returns the step's error.
pub(crate) fn refuse(d: &Deployment, urn: Urn, failures: Vec<CheckFailure>) -> EngineError {
    for failure in &failures {
        d.events
            .diagnostic(Severity::Error, Some(&urn), message(&urn, failure));
    }
    EngineError::CheckFailed { urn, failures }
}

/// One failure as the diagnostic says it.
fn message(urn: &Urn, failure: &CheckFailure) -> String {
    let (ty, name) = (urn.type_token(), urn.name());
    if failure.property.is_empty() {
        format!("{ty} resource '{name}' has a problem: {}", failure.reason)
    } else {
        format!(
            "{ty} resource '{name}': property {} has a problem: {}",
            failure.property, failure.reason
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_the_resource_and_the_property() {
        let urn =
            Urn::parse("urn:pulumi:dev::p::random:index/randomInteger:RandomInteger::bad").unwrap();
        let on = |property: &str| {
            message(
                &urn,
                &CheckFailure {
                    property: property.into(),
                    reason: "min (10) must be at most max (1)".into(),
                },
            )
        };
        assert_eq!(
            on("min"),
            "random:index/randomInteger:RandomInteger resource 'bad': property min has a \
             problem: min (10) must be at most max (1)"
        );
        assert_eq!(
            on(""),
            "random:index/randomInteger:RandomInteger resource 'bad' has a problem: min (10) \
             must be at most max (1)"
        );
    }
}

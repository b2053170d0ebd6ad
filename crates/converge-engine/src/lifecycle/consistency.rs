//! "Provider produced an inconsistent result after apply" (seed 003,
//! ApplyResourceChange): the new state must keep every value the planned
//! state knew. Pulumi treats this as advisory (a warning); Terraform
//! providers make it an error — the caller says which.

use converge_model::{PropertyMap, Urn};

use super::values::{check_known_values, Compare, ValueViolation};

/// How an inconsistent result is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsistencySeverity {
    /// Reported; the apply stands (Pulumi plugins).
    Warning,
    /// The apply fails (Terraform providers).
    Error,
}

/// What is checked: whose result, and how seriously.
#[derive(Debug, Clone)]
pub struct ApplyCheck<'a> {
    /// The provider, as a reference or a package name.
    pub provider: &'a str,
    pub urn: &'a Urn,
    pub severity: ConsistencySeverity,
    /// How keys on one side only count (a schema's full objects:
    /// [`Compare::EXACT`]; a partial planned state: [`Compare::SHARED`]).
    pub compare: Compare,
}

/// One property whose applied value broke the plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "provider produced an inconsistent result after apply: provider {provider}, resource {urn}, property {violation}"
)]
pub struct InconsistentResult {
    pub provider: String,
    pub urn: Urn,
    pub severity: ConsistencySeverity,
    pub violation: ValueViolation,
}

/// Compares the provider's result with the planned state.
pub fn check_apply_result(
    check: &ApplyCheck<'_>,
    planned: &PropertyMap,
    actual: &PropertyMap,
) -> Vec<InconsistentResult> {
    check_known_values(planned, actual, check.compare)
        .into_iter()
        .map(|violation| InconsistentResult {
            provider: check.provider.to_owned(),
            urn: check.urn.clone(),
            severity: check.severity,
            violation,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use converge_model::PropertyValue;

    use super::*;

    #[test]
    fn a_changed_known_value_names_provider_resource_and_property() {
        let urn = Urn::parse("urn:pulumi:dev::p::pkg:index:Thing::a").unwrap();
        let check = ApplyCheck {
            provider: "pkg",
            urn: &urn,
            severity: ConsistencySeverity::Error,
            compare: Compare::SHARED,
        };
        let planned: PropertyMap = [
            ("arn".to_owned(), PropertyValue::from("arn:1")),
            ("id".to_owned(), PropertyValue::Unknown),
        ]
        .into();
        let good: PropertyMap = [
            ("arn".to_owned(), PropertyValue::from("arn:1")),
            ("id".to_owned(), PropertyValue::from("x")),
        ]
        .into();
        assert_eq!(check_apply_result(&check, &planned, &good), vec![]);
        let bad: PropertyMap = [("arn".to_owned(), PropertyValue::from("arn:2"))].into();
        let found = check_apply_result(&check, &planned, &bad);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, ConsistencySeverity::Error);
        let text = found[0].to_string();
        assert!(
            text.starts_with("provider produced an inconsistent result after apply: provider pkg, resource urn:pulumi:dev::p::pkg:index:Thing::a, property arn:"),
            "{text}"
        );
    }
}

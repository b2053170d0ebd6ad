//! Seeds 003/004's contract between Core and a provider, checked on every
//! plan and apply with `converge_engine::lifecycle` (the same rules a
//! saved plan is checked with for Pulumi plugins). For Terraform
//! providers a broken rule is an error, named as Terraform names it, with
//! each offending attribute in its Pulumi spelling.

use std::fmt;

use converge_engine::lifecycle::{
    check_apply_result, check_known_values, check_wholly_known, planned_fills_only_computed,
    ApplyCheck, Compare, ConsistencySeverity, ValueViolation,
};
use converge_model::{PropertyMap, PropertyValue, Urn};

use crate::schema::Block;

/// Which rule a provider broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// PlanResourceChange set an attribute the configuration sets (or
    /// leaves null and the schema does not compute) to another value.
    PlannedNonComputed,
    /// The plan made at apply time disagrees with a known value of the
    /// first plan.
    FinalPlan,
    /// ApplyResourceChange's new state disagrees with a known planned
    /// value, or is not wholly known.
    ApplyResult,
}

impl Rule {
    fn meaning(self) -> &'static str {
        match self {
            Rule::PlannedNonComputed => {
                "produced an invalid plan (planned value for a non-computed attribute)"
            }
            Rule::FinalPlan => "produced an inconsistent final plan",
            Rule::ApplyResult => "produced an inconsistent result after apply",
        }
    }

    fn advice(self) -> &'static str {
        match self {
            Rule::PlannedNonComputed | Rule::FinalPlan => {
                "nothing was changed; this is a bug in the provider, which should be reported to its authors"
            }
            Rule::ApplyResult => {
                "the object was recorded as the provider returned it; this is a bug in the provider, which should be reported to its authors"
            }
        }
    }
}

/// A broken rule: which, by whom, for which resource, and every
/// offending attribute.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ContractViolation {
    pub rule: Rule,
    pub provider: String,
    pub urn: Urn,
    pub details: Vec<String>,
}

impl fmt::Display for ContractViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "provider {} {} for {}: {}; {}",
            self.provider,
            self.rule.meaning(),
            self.urn,
            self.details.join("; "),
            self.rule.advice()
        )
    }
}

/// Who is checked.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub provider: &'a str,
    pub urn: &'a Urn,
    pub block: &'a Block,
}

impl Subject<'_> {
    fn violation(&self, rule: Rule, found: &[ValueViolation]) -> Option<ContractViolation> {
        if found.is_empty() {
            return None;
        }
        Some(ContractViolation {
            rule,
            provider: self.provider.to_owned(),
            urn: self.urn.clone(),
            details: found.iter().map(|v| self.detail(v)).collect(),
        })
    }

    /// A violation's text with its path in Pulumi's spelling (and the
    /// Terraform attribute beside it when the two differ).
    fn detail(&self, v: &ValueViolation) -> String {
        let tf = v.path().to_string();
        let pulumi = self.block.pulumi_path(v.path()).to_string();
        let text = v.to_string();
        let rest = text.strip_prefix(&tf).unwrap_or(&text);
        if pulumi == tf {
            format!("attribute {pulumi}{rest}")
        } else {
            format!("attribute {pulumi} (Terraform {tf}){rest}")
        }
    }

    /// Seed 003's PlanResourceChange rule.
    pub fn check_plan(
        &self,
        config: &PropertyMap,
        prior: Option<&PropertyMap>,
        planned: &PropertyMap,
    ) -> Result<(), ContractViolation> {
        let found =
            planned_fills_only_computed(config, prior, planned, &|p| self.block.is_computed(p));
        self.violation(Rule::PlannedNonComputed, &found)
            .map_or(Ok(()), Err)
    }

    /// Seed 004's second-plan rule: every known value of the first plan
    /// holds in the final one; unknowns may become anything.
    pub fn check_final_plan(
        &self,
        first: &PropertyMap,
        last: &PropertyMap,
    ) -> Result<(), ContractViolation> {
        let found = check_known_values(first, last, Compare::EXACT);
        self.violation(Rule::FinalPlan, &found).map_or(Ok(()), Err)
    }

    /// Seed 003's ApplyResourceChange rule, as an error: the new state
    /// keeps every known planned value and is wholly known.
    pub fn check_apply(
        &self,
        planned: &PropertyMap,
        new_state: &PropertyMap,
    ) -> Result<(), ContractViolation> {
        let check = ApplyCheck {
            provider: self.provider,
            urn: self.urn,
            severity: ConsistencySeverity::Error,
            compare: Compare::EXACT,
        };
        let mut found: Vec<ValueViolation> = check_apply_result(&check, planned, new_state)
            .into_iter()
            .map(|r| r.violation)
            .collect();
        found.extend(check_wholly_known(new_state));
        self.violation(Rule::ApplyResult, &found)
            .map_or(Ok(()), Err)
    }
}

/// What is recorded of a new state: an unknown a provider left in it
/// (which breaks the apply rule) is recorded as null, as OpenTofu saves
/// it, so state never holds an unknown.
pub fn recordable(new_state: &PropertyMap) -> PropertyMap {
    fn known(v: &PropertyValue) -> PropertyValue {
        match v {
            PropertyValue::Unknown => PropertyValue::Null,
            PropertyValue::Array(items) => PropertyValue::Array(items.iter().map(known).collect()),
            PropertyValue::Object(m) => PropertyValue::Object(recordable(m)),
            other => other.clone(),
        }
    }
    new_state
        .iter()
        .map(|(k, v)| (k.clone(), known(v)))
        .collect()
}

//! A provider's diagnostics: errors and warnings, some about one
//! attribute.

use converge_model::{PathElement, PropertyPath};
use converge_proto::tfplugin6::{attribute_path::step::Selector, diagnostic::Severity, Diagnostic};

use crate::schema::Block;

/// One diagnostic, as text, with the Pulumi path of its attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub property: Option<String>,
    pub message: String,
}

/// A provider's diagnostics, split by severity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl Findings {
    /// Reads `diagnostics`; attribute paths are spelled as Pulumi names
    /// through `block` when one is given.
    pub fn read(diagnostics: &[Diagnostic], block: Option<&Block>) -> Findings {
        let mut out = Findings::default();
        for d in diagnostics {
            let property = d.attribute.as_ref().and_then(|a| {
                let path = PropertyPath::new(
                    a.steps
                        .iter()
                        .filter_map(|s| match s.selector.as_ref()? {
                            Selector::AttributeName(n) => Some(PathElement::Key(n.clone())),
                            Selector::ElementKeyString(k) => Some(PathElement::Key(k.clone())),
                            Selector::ElementKeyInt(i) => {
                                Some(PathElement::Index(usize::try_from(*i).ok()?))
                            }
                        })
                        .collect(),
                );
                if path.elements().is_empty() {
                    return None;
                }
                Some(match block {
                    Some(b) => b.pulumi_path(&path).to_string(),
                    None => path.to_string(),
                })
            });
            let mut message = d.summary.trim().to_owned();
            if !d.detail.trim().is_empty() {
                if !message.is_empty() {
                    message.push_str(": ");
                }
                message.push_str(d.detail.trim());
            }
            let finding = Finding { property, message };
            match Severity::try_from(d.severity).unwrap_or(Severity::Invalid) {
                Severity::Warning => out.warnings.push(finding),
                Severity::Error | Severity::Invalid => out.errors.push(finding),
            }
        }
        out
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// The errors as a check's failures, by property.
    pub fn check_failures(self) -> Vec<converge_plugin::provider::CheckFailure> {
        self.errors
            .into_iter()
            .map(|f| converge_plugin::provider::CheckFailure {
                property: f.property.unwrap_or_default(),
                reason: f.message,
            })
            .collect()
    }

    /// The errors as one line each: `message (attribute path)`.
    pub fn error_lines(&self) -> Vec<String> {
        self.errors.iter().map(Finding::line).collect()
    }
}

impl Finding {
    pub fn line(&self) -> String {
        match &self.property {
            Some(p) => format!("{} (attribute {p})", self.message),
            None => self.message.clone(),
        }
    }
}

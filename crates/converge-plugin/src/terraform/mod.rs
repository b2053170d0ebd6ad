//! Terraform provider plugins (tfplugin6): what Converge needs to run a
//! Terraform provider as a Converge provider.
//!
//! - [`values`]: `DynamicValue` ↔ [`PropertyValue`](converge_model::PropertyValue),
//!   by the cty type of a schema attribute.

pub mod values;

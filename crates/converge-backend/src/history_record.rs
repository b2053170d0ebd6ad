//! Update history records (Pulumi's `UpdateInfo` JSON), as every backend
//! checks and reads them: a JSON object whose `kind`, when present, is the
//! update's kind.

use crate::capabilities::UpdateKind;
use crate::error::{BackendError, Result};
use crate::name::StackRef;

/// The key Converge adds to the record of an update the user cancelled
/// (`true`). The record's `result` stays one of Pulumi's (`failed`), so
/// that Pulumi and the Automation API SDKs, which know only those, still
/// read it.
pub const CANCELLED_FIELD: &str = "convergeCancelled";

/// Whether the history record `record` (a parsed `UpdateInfo`) is of an
/// update the user cancelled.
pub fn is_cancelled(record: &serde_json::Value) -> bool {
    record.get(CANCELLED_FIELD) == Some(&serde_json::Value::Bool(true))
}

/// Checks that `record` is a JSON object whose `kind` (if any) is `kind`.
pub(crate) fn check_record(stack: &StackRef, kind: &UpdateKind, record: &[u8]) -> Result<()> {
    let invalid = |reason: String| BackendError::InvalidHistoryRecord {
        stack: stack.to_string(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(record).map_err(|e| invalid(format!("not JSON: {e}")))?;
    let obj = value
        .as_object()
        .ok_or_else(|| invalid("not a JSON object".to_owned()))?;
    match obj.get("kind") {
        None => Ok(()),
        Some(serde_json::Value::String(k)) if k == kind.as_str() => Ok(()),
        Some(other) => Err(invalid(format!(
            "its kind {other} does not match the update kind {kind:?}",
            kind = kind.as_str()
        ))),
    }
}

/// The record's `kind`, if it has one.
pub(crate) fn record_kind(record: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Peek {
        kind: Option<String>,
    }
    serde_json::from_slice::<Peek>(record).ok()?.kind
}

//! The options a child inherits from its parent, as Pulumi's resource
//! monitor gives them: `protect`, `retainOnDelete` and `deletedWith`, each
//! when the child's registration leaves it unset (an explicit `false`
//! stays). A parent's are its effective ones, themselves inherited, so a
//! whole subtree under a retained component is retained. The SDKs pass
//! `protect` down themselves; `retainOnDelete` and `deletedWith` only the
//! engine does.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use converge_proto::pulumirpc::RegisterResourceRequest;

/// Each registration's effective inheritable options, by URN.
#[derive(Debug, Default)]
pub(crate) struct InheritedOptions {
    by_urn: Mutex<HashMap<String, Inheritable>>,
}

#[derive(Debug, Clone, Default)]
struct Inheritable {
    protect: Option<bool>,
    retain_on_delete: Option<bool>,
    deleted_with: String,
}

impl InheritedOptions {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Inheritable>> {
        self.by_urn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Fills what `req` leaves unset from its parent's (a parent registers
    /// before its children).
    pub fn inherit(&self, req: &mut RegisterResourceRequest) {
        if req.parent.is_empty() {
            return;
        }
        let Some(parent) = self.lock().get(&req.parent).cloned() else {
            return;
        };
        if req.protect.is_none() {
            req.protect = parent.protect;
        }
        if req.retain_on_delete.is_none() {
            req.retain_on_delete = parent.retain_on_delete;
        }
        if req.deleted_with.is_empty() {
            req.deleted_with = parent.deleted_with;
        }
    }

    /// Notes the effective options of `urn`, registered by `req` (after
    /// [`InheritedOptions::inherit`]).
    pub fn registered(&self, urn: &str, req: &RegisterResourceRequest) {
        let options = Inheritable {
            protect: req.protect,
            retain_on_delete: req.retain_on_delete,
            deleted_with: req.deleted_with.clone(),
        };
        self.lock().insert(urn.to_owned(), options);
    }
}

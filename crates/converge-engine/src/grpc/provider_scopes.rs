//! The providers each registration names (`invokeParent`): an invoke
//! parented to a resource, without a provider of its own, runs on the
//! provider that resource's `providers` option (or, for a custom
//! resource, its `provider`) names for the invoke's package — the
//! resolution a child resource gets — looking further up the parents
//! when it names none; else on the package's default provider.

use std::collections::HashMap;
use std::sync::Mutex;

use converge_model::package_of;
use converge_proto::pulumirpc::RegisterResourceRequest;

use super::lock;

#[derive(Debug, Default)]
pub(crate) struct ProviderScopes {
    /// By URN: the parent's URN and the providers named, by package.
    resources: Mutex<HashMap<String, Scope>>,
}

#[derive(Debug)]
struct Scope {
    parent: String,
    providers: Vec<(String, String)>,
}

impl ProviderScopes {
    /// Notes the registration of `urn` by `req`.
    pub fn registered(&self, urn: &str, req: &RegisterResourceRequest) {
        let mut providers: Vec<(String, String)> = req
            .providers
            .iter()
            .map(|(package, reference)| (package.clone(), reference.clone()))
            .collect();
        if req.custom && !req.provider.is_empty() {
            providers.push((package_of(&req.r#type).to_owned(), req.provider.clone()));
        }
        lock(&self.resources).insert(
            urn.to_owned(),
            Scope {
                parent: req.parent.clone(),
                providers,
            },
        );
    }

    /// The provider reference an invoke of `token` parented to `parent`
    /// runs on, if `parent` or one of its ancestors names one for the
    /// token's package.
    pub fn provider_for(&self, parent: &str, token: &str) -> Option<String> {
        let package = package_of(token);
        let resources = lock(&self.resources);
        let mut current = parent;
        // A parent registers before its children, so the chain ends.
        while let Some(scope) = resources.get(current) {
            if let Some((_, reference)) = scope.providers.iter().find(|(p, _)| p == package) {
                return Some(reference.clone());
            }
            current = &scope.parent;
        }
        None
    }
}

//! Other stacks of the current stack's backend, as a stack reference sees
//! them: a name resolved as the backend names stacks, the stack's current
//! state read through [`StackState::read`] (an open journal replayed,
//! nothing ever written), and its secrets decrypted only when there are
//! some, with a crypter the caller supplies ([`SecretsOpener`]).

use std::fmt;
use std::sync::Arc;

use converge_backend::{Backend, BackendError, StackRef, DIY_ORGANIZATION};
use converge_model::{PropertyMap, PropertyValue, STACK_TYPE};
use converge_state::checkpoint::{
    property_map_from_json, property_map_to_json, PropertyValueError,
};
use converge_state::secrets::{Crypter, SecretsMode};
use converge_state::{SecretsProviders, Snapshot};

use crate::stack_state::{ReadOptions, StackState, StackStateError};

/// Why an opener could not give a crypter for a referenced stack.
pub type OpenError = Box<dyn std::error::Error + Send + Sync>;

/// Opens the secrets of a referenced stack: a crypter for the secrets
/// provider its state names. Called only for a stack that has secrets to
/// decrypt, off the async runtime (deriving a key may be slow).
pub trait SecretsOpener: Send + Sync + fmt::Debug {
    fn open(
        &self,
        stack: &StackRef,
        provider: Option<&SecretsProviders>,
    ) -> Result<Arc<dyn Crypter>, OpenError>;
}

/// Why a referenced stack could not be read.
#[derive(Debug, thiserror::Error)]
pub enum StackReferenceError {
    #[error("stack reference {name:?} is not a valid stack name: {source}")]
    InvalidName {
        name: String,
        #[source]
        source: BackendError,
    },
    #[error(
        "stack reference {name:?}: no stack {stack} in {backend}; \
         the referenced stack must exist in the same backend as this one"
    )]
    NotFound {
        name: String,
        stack: String,
        backend: String,
    },
    #[error("stack reference {name:?}: the backend failed: {source}")]
    Backend {
        name: String,
        #[source]
        source: BackendError,
    },
    #[error("stack reference {name:?}: {source}")]
    State {
        name: String,
        #[source]
        source: StackStateError,
    },
    #[error("stack reference {name:?}: cannot decrypt the secrets of stack {stack}: {source}")]
    Secrets {
        name: String,
        stack: String,
        #[source]
        source: OpenError,
    },
    #[error("stack reference {name:?}: cannot decrypt the secrets of stack {stack}: {source}")]
    Decrypt {
        name: String,
        stack: String,
        #[source]
        source: PropertyValueError,
    },
}

/// A referenced stack's outputs: secrets as secret values (plaintext
/// inside, in memory only), and the names of the outputs holding one.
#[derive(Debug, Clone, PartialEq)]
pub struct StackOutputs {
    pub outputs: PropertyMap,
    /// Sorted.
    pub secret_output_names: Vec<String>,
}

/// The other stacks of the backend the current stack lives in.
#[derive(Debug, Clone)]
pub struct StackReferences {
    backend: Arc<dyn Backend>,
    current: StackRef,
    secrets: Arc<dyn SecretsOpener>,
}

impl StackReferences {
    /// Stacks of `backend`, named relative to `current` (the stack being
    /// deployed); their secrets opened with `secrets`.
    pub fn new(
        backend: Arc<dyn Backend>,
        current: StackRef,
        secrets: Arc<dyn SecretsOpener>,
    ) -> StackReferences {
        StackReferences {
            backend,
            current,
            secrets,
        }
    }

    /// The stack a reference names: `stack` is in the current stack's
    /// organization and project, `project/stack` in its organization (a
    /// file or bucket backend's `organization/stack` is the DIY
    /// organization's, as for `--stack`), `org/project/stack` as written.
    pub fn resolve(&self, name: &str) -> Result<StackRef, StackReferenceError> {
        let invalid = |source| StackReferenceError::InvalidName {
            name: name.to_owned(),
            source,
        };
        let mut stack = StackRef::parse(name, &self.current.project).map_err(invalid)?;
        if name.split('/').count() < 3 {
            stack.organization = self.current.organization.clone();
        }
        stack.validate().map_err(invalid)?;
        Ok(stack)
    }

    /// The current outputs of the stack `name` names: its root stack
    /// resource's outputs (none if it was never deployed).
    pub async fn outputs(&self, name: &str) -> Result<StackOutputs, StackReferenceError> {
        let (stack, snapshot) = self.read(name).await?;
        let outputs = snapshot
            .as_ref()
            .and_then(|s| {
                s.resources
                    .iter()
                    .find(|r| r.type_token == STACK_TYPE && r.parent.is_none() && !r.delete)
            })
            .map(|r| r.outputs.clone())
            .unwrap_or_default();
        let providers = snapshot.and_then(|s| s.secrets_providers);
        let outputs = self
            .decrypt(name, &stack, providers.as_ref(), vec![outputs])
            .await?
            .pop()
            .unwrap_or_default();
        let secret_output_names = outputs
            .iter()
            .filter(|(_, v)| v.contains_secrets())
            .map(|(k, _)| k.clone())
            .collect();
        Ok(StackOutputs {
            outputs,
            secret_output_names,
        })
    }

    /// Every live resource of the stack `name` names, by URN: `{type,
    /// outputs}`.
    pub async fn resource_outputs(&self, name: &str) -> Result<PropertyMap, StackReferenceError> {
        let (stack, snapshot) = self.read(name).await?;
        let Some(snapshot) = snapshot else {
            return Ok(PropertyMap::new());
        };
        let live: Vec<_> = snapshot.resources.iter().filter(|r| !r.delete).collect();
        let maps = live.iter().map(|r| r.outputs.clone()).collect();
        let maps = self
            .decrypt(name, &stack, snapshot.secrets_providers.as_ref(), maps)
            .await?;
        Ok(live
            .iter()
            .zip(maps)
            .map(|(r, outputs)| {
                let entry = PropertyMap::from([
                    (
                        "type".to_owned(),
                        PropertyValue::from(r.type_token.as_str()),
                    ),
                    ("outputs".to_owned(), PropertyValue::Object(outputs)),
                ]);
                (r.urn.to_string(), PropertyValue::Object(entry))
            })
            .collect())
    }

    /// The stack `name` names and its current snapshot, secrets as
    /// ciphertext. Never writes: a journal is replayed, not compacted.
    async fn read(&self, name: &str) -> Result<(StackRef, Option<Snapshot>), StackReferenceError> {
        let stack = self.resolve(name)?;
        let exists = self.backend.stack_exists(&stack).await.map_err(|source| {
            StackReferenceError::Backend {
                name: name.to_owned(),
                source,
            }
        })?;
        if !exists {
            // A name typed without an organization lives in the backend's.
            let mut shown = stack.clone();
            if shown.organization == DIY_ORGANIZATION {
                shown.organization = self.backend.default_organization();
            }
            return Err(StackReferenceError::NotFound {
                name: name.to_owned(),
                stack: shown.to_string(),
                backend: self.backend.url(),
            });
        }
        let state = StackState::new(self.backend.clone(), stack.clone());
        let current = state
            .read(&ReadOptions::default())
            .await
            .map_err(|source| StackReferenceError::State {
                name: name.to_owned(),
                source,
            })?;
        Ok((stack, current.checkpoint.latest))
    }

    /// `maps` (read with secrets as ciphertext) with their secrets
    /// decrypted; the stack's secrets are opened only if there are any.
    async fn decrypt(
        &self,
        name: &str,
        stack: &StackRef,
        providers: Option<&SecretsProviders>,
        maps: Vec<PropertyMap>,
    ) -> Result<Vec<PropertyMap>, StackReferenceError> {
        let has_secrets = maps
            .iter()
            .any(|m| m.values().any(PropertyValue::contains_secrets));
        if !has_secrets {
            return Ok(maps);
        }
        let secrets_error = |source| StackReferenceError::Secrets {
            name: name.to_owned(),
            stack: stack.to_string(),
            source,
        };
        let opener = self.secrets.clone();
        let (for_task, providers) = (stack.clone(), providers.cloned());
        let crypter =
            tokio::task::spawn_blocking(move || opener.open(&for_task, providers.as_ref()))
                .await
                .map_err(|e| secrets_error(Box::new(e)))?
                .map_err(secrets_error)?;
        let decrypt_error = |source| StackReferenceError::Decrypt {
            name: name.to_owned(),
            stack: stack.to_string(),
            source,
        };
        maps.iter()
            .map(|m| {
                // Ciphertext back to its stored form, then read with the key.
                let stored = property_map_to_json(m, SecretsMode::Opaque).map_err(decrypt_error)?;
                property_map_from_json(&stored, SecretsMode::Crypter(crypter.as_ref()))
                    .map_err(decrypt_error)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use converge_backend::FileBackend;

    use super::*;

    #[derive(Debug)]
    struct NoKeys;

    impl SecretsOpener for NoKeys {
        fn open(
            &self,
            _stack: &StackRef,
            _provider: Option<&SecretsProviders>,
        ) -> Result<Arc<dyn Crypter>, OpenError> {
            Err("no keys here".into())
        }
    }

    fn references(organization: &str) -> StackReferences {
        let current = StackRef::with_organization(organization, "web", "dev").unwrap();
        StackReferences::new(
            Arc::new(FileBackend::new(std::env::temp_dir(), "")),
            current,
            Arc::new(NoKeys),
        )
    }

    #[test]
    fn names_resolve_relative_to_the_current_stack() {
        let r = references("acme");
        let resolved = |name: &str| r.resolve(name).unwrap().to_string();
        assert_eq!(resolved("prod"), "acme/web/prod");
        assert_eq!(resolved("db/prod"), "acme/db/prod");
        assert_eq!(resolved("other/db/prod"), "other/db/prod");
        // Pulumi's two-part DIY form names the current project.
        let diy = references("organization");
        assert_eq!(
            diy.resolve("organization/prod").unwrap().to_string(),
            "organization/web/prod"
        );
        for bad in ["", "a/b/c/d", "db/pr od", "../x"] {
            let e = r.resolve(bad).unwrap_err();
            assert!(
                matches!(e, StackReferenceError::InvalidName { .. }),
                "{bad:?}: {e}"
            );
            assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        }
    }
}

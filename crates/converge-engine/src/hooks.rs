//! Resource hooks: functions a program registered by name
//! (`RegisterResourceHook`, `RegisterErrorHook`) and attached to resources
//! with the `hooks` option, which the engine runs around a resource's
//! create, update and delete, as Pulumi's engine does.
//!
//! - A *before* hook runs before the provider call; its failure fails the
//!   step, nothing done (unless the hook ignores errors: then a warning).
//! - An *after* hook runs once the step's result is recorded; its failure
//!   is a warning.
//! - An *error* hook (`on-error`) runs when the provider call fails; if
//!   one asks for it, the call is tried again, at most
//!   [`MAX_ERROR_HOOK_RETRIES`] times.
//!
//! A resource's hook names are recorded in its state (`resourceHooks`), by
//! kind: a resource the program no longer declares is deleted with the
//! delete hooks its state names, which the program must still register.
//!
//! The engine knows hooks by name only; a [`HookRunner`] — the gRPC
//! monitor's, calling the program back through its `Callbacks` service —
//! runs them. Without one (an in-process program) a resource that names a
//! hook cannot have it run, and says so.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;

use async_trait::async_trait;
use converge_model::{PropertyMap, ResourceState, Urn};

use crate::deployment::Deployment;
use crate::error::EngineError;
use crate::events::Severity;

/// How many times error hooks may have one failed operation tried again.
pub const MAX_ERROR_HOOK_RETRIES: usize = 100;

/// When a hook runs; its name is Pulumi's, as recorded in the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HookKind {
    BeforeCreate,
    AfterCreate,
    BeforeUpdate,
    AfterUpdate,
    BeforeDelete,
    AfterDelete,
    OnError,
}

impl HookKind {
    pub const ALL: [HookKind; 7] = [
        HookKind::BeforeCreate,
        HookKind::AfterCreate,
        HookKind::BeforeUpdate,
        HookKind::AfterUpdate,
        HookKind::BeforeDelete,
        HookKind::AfterDelete,
        HookKind::OnError,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HookKind::BeforeCreate => "before-create",
            HookKind::AfterCreate => "after-create",
            HookKind::BeforeUpdate => "before-update",
            HookKind::AfterUpdate => "after-update",
            HookKind::BeforeDelete => "before-delete",
            HookKind::AfterDelete => "after-delete",
            HookKind::OnError => "on-error",
        }
    }

    fn is_before(self) -> bool {
        matches!(
            self,
            HookKind::BeforeCreate | HookKind::BeforeUpdate | HookKind::BeforeDelete
        )
    }
}

impl fmt::Display for HookKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A resource's hooks, by kind (the `hooks` resource option).
pub type HookBinding = BTreeMap<HookKind, Vec<String>>;

/// What a resource hook is told: the resource, and the values the kind of
/// hook sees (Pulumi's table: inputs and outputs, old and new, as they
/// exist at that point).
#[derive(Debug, Clone, Copy)]
pub struct HookCall<'a> {
    pub kind: HookKind,
    pub urn: &'a Urn,
    /// Empty before a create.
    pub id: &'a str,
    pub type_token: &'a str,
    pub new_inputs: Option<&'a PropertyMap>,
    pub old_inputs: Option<&'a PropertyMap>,
    pub new_outputs: Option<&'a PropertyMap>,
    pub old_outputs: Option<&'a PropertyMap>,
    /// The states whose options the hook is told of (Pulumi's
    /// `sendsOptionsToHooks`): the recorded one, the one asked for.
    pub old_options: Option<&'a ResourceState>,
    pub new_options: Option<&'a ResourceState>,
    /// A preview: only hooks registered to run on previews run.
    pub preview: bool,
}

/// What an error hook is told besides the errors: the resource and the
/// operation that failed.
#[derive(Debug, Clone, Copy)]
pub struct ErrorHookCall<'a> {
    pub urn: &'a Urn,
    pub id: &'a str,
    pub type_token: &'a str,
    pub new_inputs: Option<&'a PropertyMap>,
    pub old_inputs: Option<&'a PropertyMap>,
    pub old_outputs: Option<&'a PropertyMap>,
    /// `create`, `update` or `delete`.
    pub failed_operation: &'static str,
    pub old_options: Option<&'a ResourceState>,
    pub new_options: Option<&'a ResourceState>,
}

/// Why a hook did not run to success.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookError {
    #[error("hook {name:?} is not registered by the program in this run (the resource names it{}); a program that registers a hook of that name must run for it to be called", if *.recorded { " in the state" } else { "" })]
    NotRegistered { name: String, recorded: bool },
    #[error("hook {name:?} failed: {message}")]
    Failed {
        name: String,
        message: String,
        /// Registered to have its failures reported as warnings only.
        ignore_errors: bool,
    },
}

/// Runs the program's hooks by name.
#[async_trait]
pub trait HookRunner: Send + Sync + fmt::Debug {
    /// True once the program has registered a hook.
    fn any_registered(&self) -> bool;

    /// Runs a resource hook; a hook not meant for previews does nothing
    /// in one.
    async fn resource_hook(&self, name: &str, call: HookCall<'_>) -> Result<(), HookError>;

    /// Runs an error hook with every error the operation gave so far,
    /// newest first: `true` asks for the operation to be tried again.
    async fn error_hook(
        &self,
        name: &str,
        call: ErrorHookCall<'_>,
        errors: &[String],
    ) -> Result<bool, HookError>;
}

/// The names of `state`'s hooks of `kind`.
fn names(state: &ResourceState, kind: HookKind) -> &[String] {
    state
        .resource_hooks
        .get(kind.as_str())
        .map_or(&[], Vec::as_slice)
}

/// Runs `state`'s hooks of `call.kind`, in order. A before hook's failure
/// is the step's (unless it ignores errors); an after hook's is a warning.
/// `recorded`: the names come from the state, not this run's program.
///
/// The work is boxed, and only when there are hooks to run: a step's
/// future, which thousands of registrations may hold while they wait,
/// grows by a pointer.
pub(crate) fn run<'a>(
    d: &'a Deployment,
    state: &'a ResourceState,
    call: HookCall<'a>,
    recorded: bool,
) -> impl Future<Output = Result<(), EngineError>> + Send + 'a {
    let work = (!names(state, call.kind).is_empty())
        .then(|| Box::pin(run_named(d, state, call, recorded)));
    async move {
        match work {
            Some(work) => work.await,
            None => Ok(()),
        }
    }
}

async fn run_named(
    d: &Deployment,
    state: &ResourceState,
    call: HookCall<'_>,
    recorded: bool,
) -> Result<(), EngineError> {
    for name in names(state, call.kind) {
        let outcome = match d.hooks.get() {
            Some(runner) => runner.resource_hook(name, call).await,
            None => Err(HookError::NotRegistered {
                name: name.clone(),
                recorded,
            }),
        };
        let Err(source) = outcome else {
            continue;
        };
        let ignored = matches!(
            source,
            HookError::Failed {
                ignore_errors: true,
                ..
            }
        );
        let err = EngineError::Hook {
            urn: call.urn.clone(),
            kind: call.kind,
            source,
        };
        if call.kind.is_before() && !ignored {
            return Err(err);
        }
        d.events
            .diagnostic(Severity::Warning, Some(call.urn), err.to_string());
    }
    Ok(())
}

/// Runs `state`'s error hooks after `errors` (newest first): `true` if
/// one asked for a retry (every hook runs; one hook's failure is a
/// warning and no vote for a retry).
async fn on_error(
    d: &Deployment,
    state: &ResourceState,
    call: ErrorHookCall<'_>,
    errors: &[String],
) -> bool {
    let mut retry = false;
    for name in names(state, HookKind::OnError) {
        let outcome = match d.hooks.get() {
            Some(runner) => runner.error_hook(name, call, errors).await,
            None => Err(HookError::NotRegistered {
                name: name.clone(),
                recorded: false,
            }),
        };
        match outcome {
            Ok(again) => retry |= again,
            Err(source) => {
                let err = EngineError::Hook {
                    urn: call.urn.clone(),
                    kind: HookKind::OnError,
                    source,
                };
                d.events
                    .diagnostic(Severity::Warning, Some(call.urn), err.to_string());
            }
        }
    }
    retry
}

/// After a provider call failed with `err`: whether to try it again.
/// `errors` collects the failures so far, newest first, for the error
/// hooks. Only a plain failure is
/// retried — a partial failure left an object to record — never in a
/// preview, and at most [`MAX_ERROR_HOOK_RETRIES`] times.
pub(crate) fn retry<'a>(
    d: &'a Deployment,
    state: &'a ResourceState,
    err: &'a EngineError,
    errors: &'a mut Vec<String>,
    call: ErrorHookCall<'a>,
) -> impl Future<Output = bool> + Send + 'a {
    let work = (!names(state, HookKind::OnError).is_empty())
        .then(|| Box::pin(retry_named(d, state, err, errors, call)));
    async move {
        match work {
            Some(work) => work.await,
            None => false,
        }
    }
}

async fn retry_named(
    d: &Deployment,
    state: &ResourceState,
    err: &EngineError,
    errors: &mut Vec<String>,
    call: ErrorHookCall<'_>,
) -> bool {
    let retryable = !names(state, HookKind::OnError).is_empty()
        && !matches!(
            err,
            EngineError::Step {
                source: converge_plugin::ProviderError::PartialFailure { .. },
                ..
            }
        )
        && errors.len() < MAX_ERROR_HOOK_RETRIES
        && !d.opts.preview;
    if !retryable {
        return false;
    }
    errors.insert(0, step_error_text(err));
    on_error(d, state, call, errors).await
}

/// A failed step's error as an error hook sees it: the provider's message.
fn step_error_text(err: &EngineError) -> String {
    match err {
        EngineError::Step { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// The binding's hook names by the kinds the state records.
pub(crate) fn recorded(binding: &HookBinding) -> BTreeMap<String, Vec<String>> {
    binding
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(kind, names)| (kind.as_str().to_owned(), names.clone()))
        .collect()
}

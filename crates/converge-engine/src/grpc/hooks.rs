//! Resource hooks and error hooks the program registered by name
//! (`RegisterResourceHook`, `RegisterErrorHook`), run for the engine's
//! steps ([`crate::hooks`]) by calling the program back through its
//! `Callbacks` service with Pulumi's `ResourceHookRequest` and
//! `ErrorHookRequest` — the resource's inputs and outputs as the kind of
//! hook sees them, and its options (`sendsOptionsToHooks`).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use converge_model::{PropertyMap, ResourceState};
use converge_proto::pulumirpc::register_resource_request::{CustomTimeouts, ResourceHooksBinding};
use converge_proto::pulumirpc::{
    Callback, CallbackInvokeRequest, ErrorHookRequest, ErrorHookResponse, RegisterErrorHookRequest,
    RegisterResourceHookRequest, ResourceHookRequest, ResourceHookResponse, ResourceOptions,
};
use converge_proto::{marshal_properties, marshal_value, MarshalOptions};
use prost::Message;
use tonic::Status;

use super::lock;
use crate::hooks::{ErrorHookCall, HookCall, HookError, HookKind, HookRunner};

/// A registered resource hook.
#[derive(Debug, Clone)]
struct ResourceHook {
    callback: Callback,
    on_dry_run: bool,
    ignore_errors: bool,
}

/// The program's hooks by name, and clients of its `Callbacks` servers.
#[derive(Debug, Default)]
pub(crate) struct Hooks {
    resource: Mutex<HashMap<String, ResourceHook>>,
    error: Mutex<HashMap<String, Callback>>,
    clients: super::callbacks::CallbackClients,
}

impl Hooks {
    pub fn add_resource_hook(&self, req: RegisterResourceHookRequest) -> Result<(), Status> {
        let callback = callback_of(&req.name, req.callback)?;
        let mut hooks = lock(&self.resource);
        if hooks.contains_key(&req.name) {
            return Err(already(&req.name));
        }
        hooks.insert(
            req.name,
            ResourceHook {
                callback,
                on_dry_run: req.on_dry_run,
                ignore_errors: req.ignore_errors,
            },
        );
        Ok(())
    }

    pub fn add_error_hook(&self, req: RegisterErrorHookRequest) -> Result<(), Status> {
        let callback = callback_of(&req.name, req.callback)?;
        let mut hooks = lock(&self.error);
        if hooks.contains_key(&req.name) {
            return Err(already(&req.name));
        }
        hooks.insert(req.name, callback);
        Ok(())
    }

    /// Calls `callback` with `request`; its response decoded. A failure to
    /// reach the program or read its answer is the hook's failure.
    async fn invoke<Req: Message, Resp: Message + Default>(
        &self,
        name: &str,
        callback: &Callback,
        request: &Req,
    ) -> Result<Resp, String> {
        let mut client = self.clients.get(&callback.target).await.map_err(|e| {
            format!(
                "the program's Callbacks server at {} cannot be reached: {e}",
                callback.target
            )
        })?;
        let answer = client
            .invoke(CallbackInvokeRequest {
                token: callback.token.clone(),
                request: request.encode_to_vec(),
            })
            .await
            .map_err(|s| format!("calling the program failed: {}", s.message()))?
            .into_inner();
        converge_proto::decode_message::<Resp>(&answer.response)
            .map_err(|e| format!("hook {name:?}'s answer cannot be read: {e}"))
    }
}

fn callback_of(name: &str, callback: Option<Callback>) -> Result<Callback, Status> {
    if name.is_empty() {
        return Err(Status::invalid_argument("a hook must have a name"));
    }
    callback.ok_or_else(|| Status::invalid_argument(format!("hook {name:?} has no callback")))
}

fn already(name: &str) -> Status {
    Status::already_exists(format!(
        "a hook named {name:?} is registered already: each hook's name must be unique in a program"
    ))
}

#[async_trait]
impl HookRunner for Hooks {
    fn any_registered(&self) -> bool {
        !lock(&self.resource).is_empty() || !lock(&self.error).is_empty()
    }

    async fn resource_hook(&self, name: &str, call: HookCall<'_>) -> Result<(), HookError> {
        let Some(hook) = lock(&self.resource).get(name).cloned() else {
            return Err(HookError::NotRegistered {
                name: name.to_owned(),
                recorded: matches!(call.kind, HookKind::BeforeDelete | HookKind::AfterDelete),
            });
        };
        if call.preview && !hook.on_dry_run {
            return Ok(());
        }
        let failed = |message: String| HookError::Failed {
            name: name.to_owned(),
            message,
            ignore_errors: hook.ignore_errors,
        };
        let request = ResourceHookRequest {
            urn: call.urn.to_string(),
            id: call.id.to_owned(),
            name: call.urn.name().to_owned(),
            r#type: call.type_token.to_owned(),
            new_inputs: structure(call.new_inputs).map_err(failed)?,
            old_inputs: structure(call.old_inputs).map_err(failed)?,
            new_outputs: structure(call.new_outputs).map_err(failed)?,
            old_outputs: structure(call.old_outputs).map_err(failed)?,
            old_options: call.old_options.map(options_of),
            new_options: call.new_options.map(options_of),
        };
        let response: ResourceHookResponse = self
            .invoke(name, &hook.callback, &request)
            .await
            .map_err(failed)?;
        if response.error.is_empty() {
            Ok(())
        } else {
            Err(failed(response.error))
        }
    }

    async fn error_hook(
        &self,
        name: &str,
        call: ErrorHookCall<'_>,
        errors: &[String],
    ) -> Result<bool, HookError> {
        let Some(callback) = lock(&self.error).get(name).cloned() else {
            return Err(HookError::NotRegistered {
                name: name.to_owned(),
                recorded: false,
            });
        };
        let failed = |message: String| HookError::Failed {
            name: name.to_owned(),
            message,
            ignore_errors: false,
        };
        let request = ErrorHookRequest {
            urn: call.urn.to_string(),
            id: call.id.to_owned(),
            name: call.urn.name().to_owned(),
            r#type: call.type_token.to_owned(),
            new_inputs: structure(call.new_inputs).map_err(failed)?,
            old_inputs: structure(call.old_inputs).map_err(failed)?,
            old_outputs: structure(call.old_outputs).map_err(failed)?,
            failed_operation: call.failed_operation.to_owned(),
            errors: errors.to_vec(),
            old_options: call.old_options.map(options_of),
            new_options: call.new_options.map(options_of),
        };
        let response: ErrorHookResponse = self
            .invoke(name, &callback, &request)
            .await
            .map_err(failed)?;
        if response.error.is_empty() {
            Ok(response.retry)
        } else {
            Err(failed(response.error))
        }
    }
}

/// Property values as a hook gets them: secrets, unknowns and resource
/// references kept (the SDKs make outputs of them).
fn structure(map: Option<&PropertyMap>) -> Result<Option<prost_types::Struct>, String> {
    map.map(|m| {
        marshal_properties(m, to_hook())
            .map_err(|e| format!("the resource's values cannot be sent to the hook: {e}"))
    })
    .transpose()
}

fn to_hook() -> MarshalOptions {
    MarshalOptions {
        keep_output_values: false,
        ..MarshalOptions::full()
    }
}

/// A resource's options as its state records them, in the form hooks are
/// sent them.
fn options_of(state: &ResourceState) -> ResourceOptions {
    let hooks = |kind: HookKind| {
        state
            .resource_hooks
            .get(kind.as_str())
            .cloned()
            .unwrap_or_default()
    };
    let binding = (!state.resource_hooks.is_empty()).then(|| ResourceHooksBinding {
        before_create: hooks(HookKind::BeforeCreate),
        after_create: hooks(HookKind::AfterCreate),
        before_update: hooks(HookKind::BeforeUpdate),
        after_update: hooks(HookKind::AfterUpdate),
        before_delete: hooks(HookKind::BeforeDelete),
        after_delete: hooks(HookKind::AfterDelete),
        on_error: hooks(HookKind::OnError),
    });
    let timeouts = state.custom_timeouts.as_ref().map(|t| CustomTimeouts {
        create: t.create.clone().unwrap_or_default(),
        update: t.update.clone().unwrap_or_default(),
        delete: t.delete.clone().unwrap_or_default(),
        read: t.read.clone().unwrap_or_default(),
    });
    ResourceOptions {
        depends_on: state.dependencies.iter().map(ToString::to_string).collect(),
        protect: Some(state.protect),
        ignore_changes: state.ignore_changes.clone(),
        replace_on_changes: state.replace_on_changes.clone(),
        provider: state
            .provider
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        custom_timeouts: timeouts,
        retain_on_delete: Some(state.retain_on_delete),
        deleted_with: state
            .deleted_with
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        additional_secret_outputs: state.additional_secret_outputs.clone(),
        hooks: binding,
        import: state.import_id.clone().unwrap_or_default(),
        hide_diff: state.hide_diff.clone(),
        replace_with: state.replace_with.iter().map(ToString::to_string).collect(),
        replacement_trigger: state
            .replacement_trigger
            .as_ref()
            .and_then(|v| marshal_value(v, to_hook()).ok().flatten()),
        parent: state
            .parent
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        ..ResourceOptions::default()
    }
}

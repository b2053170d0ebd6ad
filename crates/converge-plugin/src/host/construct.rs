//! `Construct` and `Call` over the wire: the model requests of
//! [`crate::provider`] as `pulumirpc.ConstructRequest` / `CallRequest`, and
//! the answers back. Values go as the plugin accepts them (its
//! [`Caps`]); unknowns only in previews (`dry_run`). The plugin registers
//! resources with the monitor named in the request while it works, so
//! these calls last as long as the registrations they make.

use converge_proto::marshal::dependency_map;
use std::collections::BTreeMap;

use converge_model::Urn;
use converge_proto::pulumirpc as wire;

use super::convert::{annotate_secrets, failures, from_wire, receive, status_error, to_wire, Caps};
use super::process::PluginProcess;
use crate::provider::{
    CallRequest, CallResponse, ConstructRequest, ConstructResponse, DeploymentContext,
};
use crate::ProviderError;

/// Sends `Construct` to `process` (configured with `caps`; `known` false
/// when its configuration held unknown values).
pub(super) async fn construct(
    process: &PluginProcess,
    caps: Caps,
    known: bool,
    req: ConstructRequest,
) -> Result<ConstructResponse, ProviderError> {
    const METHOD: &str = "Construct";
    if !known {
        // As Pulumi: a component cannot be built by a provider whose
        // configuration is not known yet.
        return Err(ProviderError::Failed(format!(
            "{METHOD} {} {:?}: the {} provider's configuration is not known yet",
            req.type_token, req.name, process.package
        )));
    }
    let dry_run = req.context.dry_run;
    let ctx = &req.context;
    let o = &req.options;
    let wire_req = wire::ConstructRequest {
        project: ctx.project.clone(),
        stack: ctx.stack.clone(),
        config: ctx.config.clone().into_iter().collect(),
        dry_run,
        parallel: parallel(ctx),
        monitor_endpoint: ctx.monitor_endpoint.clone(),
        r#type: req.type_token.clone(),
        name: req.name.clone(),
        parent: req
            .parent
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        inputs: to_wire(METHOD, &req.inputs, caps.send(dry_run))?,
        input_dependencies: dependency_map(&req.input_dependencies, |urns| {
            wire::construct_request::PropertyDependencies { urns }
        }),
        protect: o.protect,
        providers: req.providers.clone().into_iter().collect(),
        dependencies: req.dependencies.iter().map(ToString::to_string).collect(),
        config_secret_keys: ctx.config_secret_keys.clone(),
        organization: ctx.organization.clone(),
        additional_secret_outputs: o.additional_secret_outputs.clone(),
        custom_timeouts: o.custom_timeouts.as_ref().map(|t| {
            wire::construct_request::CustomTimeouts {
                create: t.create.clone().unwrap_or_default(),
                update: t.update.clone().unwrap_or_default(),
                delete: t.delete.clone().unwrap_or_default(),
                read: t.read.clone().unwrap_or_default(),
            }
        }),
        deleted_with: o
            .deleted_with
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        delete_before_replace: o.delete_before_replace,
        ignore_changes: o.ignore_changes.clone(),
        replace_on_changes: o.replace_on_changes.clone(),
        retain_on_delete: o.retain_on_delete,
        accepts_output_values: true,
        aliases: o
            .aliases
            .iter()
            .map(|u| wire::Alias {
                alias: Some(wire::alias::Alias::Urn(u.to_string())),
            })
            .collect(),
        ..Default::default()
    };
    let resp = process.client().construct(wire_req).await;
    let resp = resp
        .map(tonic::Response::into_inner)
        .map_err(|s| status_error(METHOD, &s, dry_run, || process.death_note()))?;
    let urn = Urn::parse(&resp.urn).map_err(|e| {
        ProviderError::Failed(format!(
            "{METHOD}: the plugin returned an invalid URN {:?}: {e}",
            resp.urn
        ))
    })?;
    let mut state = from_wire(METHOD, resp.state.as_ref(), receive(dry_run))?;
    if !caps.accept_secrets {
        annotate_secrets(&mut state, &req.inputs);
    }
    let state_dependencies = parse_dependencies(
        METHOD,
        resp.state_dependencies
            .into_iter()
            .map(|(k, d)| (k, d.urns)),
    )?;
    Ok(ConstructResponse {
        urn,
        state,
        state_dependencies,
    })
}

/// Sends `Call` to `process`. A plugin whose configuration is not known
/// yet (a preview) is not called: the answer is empty, as Pulumi's.
pub(super) async fn call(
    process: &PluginProcess,
    caps: Caps,
    known: bool,
    req: CallRequest,
) -> Result<CallResponse, ProviderError> {
    const METHOD: &str = "Call";
    if !known {
        return Ok(CallResponse::default());
    }
    let dry_run = req.context.dry_run;
    let ctx = &req.context;
    let wire_req = wire::CallRequest {
        tok: req.token.clone(),
        args: to_wire(METHOD, &req.args, caps.send(dry_run))?,
        arg_dependencies: dependency_map(&req.arg_dependencies, |urns| {
            wire::call_request::ArgumentDependencies { urns }
        }),
        project: ctx.project.clone(),
        stack: ctx.stack.clone(),
        config: ctx.config.clone().into_iter().collect(),
        config_secret_keys: ctx.config_secret_keys.clone(),
        dry_run,
        parallel: parallel(ctx),
        monitor_endpoint: ctx.monitor_endpoint.clone(),
        organization: ctx.organization.clone(),
        accepts_output_values: true,
        ..Default::default()
    };
    let resp = process.client().call(wire_req).await;
    let resp = resp
        .map(tonic::Response::into_inner)
        .map_err(|s| status_error(METHOD, &s, dry_run, || process.death_note()))?;
    let outputs = from_wire(METHOD, resp.r#return.as_ref(), receive(dry_run))?;
    let return_dependencies = parse_dependencies(
        METHOD,
        resp.return_dependencies
            .into_iter()
            .map(|(k, d)| (k, d.urns)),
    )?;
    Ok(CallResponse {
        outputs,
        return_dependencies,
        failures: failures(resp.failures),
    })
}

fn parallel(ctx: &DeploymentContext) -> i32 {
    i32::try_from(ctx.parallel).unwrap_or(i32::MAX)
}

fn parse_dependencies(
    method: &str,
    deps: impl Iterator<Item = (String, Vec<String>)>,
) -> Result<BTreeMap<String, Vec<Urn>>, ProviderError> {
    deps.map(|(key, urns)| {
        let urns = urns
            .iter()
            .map(|u| Urn::parse(u))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                ProviderError::Failed(format!(
                    "{method}: the plugin returned an invalid dependency of {key:?}: {e}"
                ))
            })?;
        Ok((key, urns))
    })
    .collect()
}

//! Transforms: functions a program registered — the `transforms` resource
//! option, `register_stack_transform`, `register_invoke_transform` — that
//! the engine calls back through the program's `Callbacks` service, as
//! Pulumi's engine does, before the registration or invoke goes on.
//!
//! A registration's transforms run in Pulumi's order: its own, then each
//! ancestor's own (its parent's, the parent's parent's, …), then the
//! stack's, in the order they were registered; each sees the properties
//! and options the one before it left. The properties go out as output
//! values carrying their dependencies, so that what a transform returns
//! keeps them; afterwards a registration's dependencies are the
//! transformed `dependsOn` plus those its properties carry. A remote
//! component's own transforms are kept for the registration its
//! provider's `Construct` makes of the same component, which runs them
//! again with its parents' and the stack's.
//!
//! An invoke's transforms are the stack's invoke transforms, in order;
//! each sees the function's arguments and options.

use std::collections::HashMap;
use std::sync::Mutex;

use converge_model::{OutputValue, PropertyMap, PropertyValue};
use converge_proto::pulumirpc::register_resource_request::PropertyDependencies;
use converge_proto::pulumirpc::{
    alias, Alias, Callback, CallbackInvokeRequest, RegisterResourceRequest, ResourceInvokeRequest,
    TransformInvokeOptions, TransformInvokeRequest, TransformInvokeResponse, TransformRequest,
    TransformResourceOptions, TransformResponse,
};
use converge_proto::{marshal_properties, unmarshal_properties, MarshalOptions};
use prost::Message;
use tonic::Status;

use super::lock;

/// Every transform a program registered, and what is needed to find a
/// registration's.
#[derive(Debug, Default)]
pub(crate) struct Transforms {
    /// Clients of the programs' `Callbacks` servers, by address.
    clients: super::callbacks::CallbackClients,
    stack: Mutex<Vec<Callback>>,
    stack_invoke: Mutex<Vec<Callback>>,
    /// Each registered resource's own transforms (for its children), and
    /// its parent, by URN.
    resources: Mutex<HashMap<String, Registered>>,
    /// A remote component's own transforms, by `parent::type::name`, until
    /// its provider registers the component.
    pending: Mutex<HashMap<String, Vec<Callback>>>,
}

#[derive(Debug)]
struct Registered {
    parent: String,
    transforms: Vec<Callback>,
}

/// A registration's transforms, once collected: its own (kept, after the
/// registration, for its children) and all that run on it.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub own: Vec<Callback>,
    all: Vec<Callback>,
}

impl Transforms {
    pub fn add_stack(&self, callback: Callback) {
        lock(&self.stack).push(callback);
    }

    pub fn add_stack_invoke(&self, callback: Callback) {
        lock(&self.stack_invoke).push(callback);
    }

    /// A registration's transforms: its own (for a component a provider
    /// constructs, those its remote registration had), then each
    /// ancestor's own, then the stack's.
    fn collect(&self, req: &RegisterResourceRequest) -> Collected {
        let key = format!("{}::{}::{}", req.parent, req.r#type, req.name);
        let own = match lock(&self.pending).remove(&key) {
            Some(pending) => pending,
            None => {
                if req.remote && !req.transforms.is_empty() {
                    lock(&self.pending).insert(key, req.transforms.clone());
                }
                req.transforms.clone()
            }
        };
        let mut all = own.clone();
        {
            let resources = lock(&self.resources);
            let mut current = req.parent.as_str();
            while let Some(r) = resources.get(current) {
                all.extend(r.transforms.iter().cloned());
                current = &r.parent;
            }
        }
        all.extend(lock(&self.stack).iter().cloned());
        Collected { own, all }
    }

    /// Records a registered resource: its parent and its own transforms,
    /// which its children's registrations run.
    pub fn registered(&self, urn: &str, parent: &str, own: Vec<Callback>) {
        lock(&self.resources).insert(
            urn.to_owned(),
            Registered {
                parent: parent.to_owned(),
                transforms: own,
            },
        );
    }

    /// Runs the registration's transforms on `req` (its properties and
    /// options); returns them collected, for [`Transforms::registered`].
    pub async fn apply(&self, req: &mut RegisterResourceRequest) -> Result<Collected, Status> {
        let collected = self.collect(req);
        if collected.all.is_empty() {
            return Ok(collected);
        }
        let what = format!("{} {:?}", req.r#type, req.name);
        let mut props = with_dependencies(req, &what)?;
        let mut options = options_of(req);
        for callback in &collected.all {
            let request = TransformRequest {
                r#type: req.r#type.clone(),
                name: req.name.clone(),
                custom: req.custom,
                parent: req.parent.clone(),
                properties: Some(
                    marshal_properties(&props, MarshalOptions::full())
                        .map_err(|e| Status::internal(format!("{what}: transform: {e}")))?,
                ),
                options: Some(options.clone()),
            };
            let response: TransformResponse = self.invoke(callback, &request, &what).await?;
            if let Some(p) = response.properties {
                props = unmarshal_properties(&p, MarshalOptions::full()).map_err(|e| {
                    Status::invalid_argument(format!("{what}: a transform's properties: {e}"))
                })?;
            }
            if let Some(o) = response.options {
                options = o;
            }
        }
        apply_options(req, options);
        set_properties(req, &props, &what)?;
        Ok(collected)
    }

    /// Runs the stack's invoke transforms on `req`.
    pub async fn apply_invoke(&self, req: &mut ResourceInvokeRequest) -> Result<(), Status> {
        let transforms = lock(&self.stack_invoke).clone();
        if transforms.is_empty() {
            return Ok(());
        }
        let what = format!("invoke {}", req.tok);
        let mut options = TransformInvokeOptions {
            provider: req.provider.clone(),
            plugin_download_url: req.plugin_download_url.clone(),
            version: req.version.clone(),
            plugin_checksums: req.plugin_checksums.clone(),
        };
        for callback in &transforms {
            let request = TransformInvokeRequest {
                token: req.tok.clone(),
                args: req.args.clone(),
                options: Some(options.clone()),
            };
            let response: TransformInvokeResponse = self.invoke(callback, &request, &what).await?;
            if response.args.is_some() {
                req.args = response.args;
            }
            if let Some(o) = response.options {
                options = o;
            }
        }
        req.provider = options.provider;
        req.plugin_download_url = options.plugin_download_url;
        req.version = options.version;
        req.plugin_checksums = options.plugin_checksums;
        Ok(())
    }

    /// Calls `callback` with `request`; its response decoded.
    async fn invoke<Req: Message, Resp: Message + Default>(
        &self,
        callback: &Callback,
        request: &Req,
        what: &str,
    ) -> Result<Resp, Status> {
        let mut client = self.clients.get(&callback.target).await.map_err(|e| {
            Status::unavailable(format!(
                "{what}: the program's transform at {} cannot be reached: {e}",
                callback.target
            ))
        })?;
        let answer = client
            .invoke(CallbackInvokeRequest {
                token: callback.token.clone(),
                request: request.encode_to_vec(),
            })
            .await
            .map_err(|s| {
                Status::new(
                    s.code(),
                    format!("{what}: transform failed: {}", s.message()),
                )
            })?
            .into_inner();
        converge_proto::decode_message::<Resp>(&answer.response).map_err(|e| {
            Status::invalid_argument(format!("{what}: a transform's answer cannot be read: {e}"))
        })
    }
}

/// The registration's properties, each one that has dependencies as an
/// output value carrying them (a value that already is one keeps its
/// own), so a transform that keeps it keeps them. A property without
/// dependencies stays a plain value, as Pulumi's engine sends it: the
/// SDKs turn an output value into an `Output`, on which a transform's
/// `props["length"] * 2` or `{...props.tags, team}` would not work.
fn with_dependencies(req: &RegisterResourceRequest, what: &str) -> Result<PropertyMap, Status> {
    let Some(object) = req.object.as_ref() else {
        return Ok(PropertyMap::new());
    };
    let mut props = unmarshal_properties(object, MarshalOptions::full())
        .map_err(|e| Status::invalid_argument(format!("{what}: object: {e}")))?;
    for (key, value) in props.iter_mut() {
        if matches!(value, PropertyValue::Output(_)) {
            continue;
        }
        let dependencies: Vec<converge_model::Urn> = match req.property_dependencies.get(key) {
            Some(deps) => deps
                .urns
                .iter()
                .filter_map(|u| converge_model::Urn::parse(u).ok())
                .collect(),
            None => Vec::new(),
        };
        if dependencies.is_empty() {
            continue;
        }
        let inner = std::mem::replace(value, PropertyValue::Null);
        *value = match inner {
            PropertyValue::Secret(inner) => output(*inner, true, dependencies),
            PropertyValue::Unknown => PropertyValue::Output(Box::new(OutputValue {
                element: None,
                secret: false,
                dependencies,
            })),
            plain => output(plain, false, dependencies),
        };
    }
    Ok(props)
}

fn output(
    value: PropertyValue,
    secret: bool,
    dependencies: Vec<converge_model::Urn>,
) -> PropertyValue {
    PropertyValue::Output(Box::new(OutputValue {
        element: Some(Box::new(value)),
        secret,
        dependencies,
    }))
}

/// The transformed properties back on `req`, with the property
/// dependencies their output values carry, all of which the registration
/// also depends on.
fn set_properties(
    req: &mut RegisterResourceRequest,
    props: &PropertyMap,
    what: &str,
) -> Result<(), Status> {
    req.property_dependencies.clear();
    for (key, value) in props.iter() {
        let mut urns = Vec::new();
        collect_dependencies(value, &mut urns);
        urns.sort();
        urns.dedup();
        for urn in &urns {
            if !req.dependencies.contains(urn) {
                req.dependencies.push(urn.clone());
            }
        }
        req.property_dependencies
            .insert(key.clone(), PropertyDependencies { urns });
    }
    req.object = Some(
        marshal_properties(props, MarshalOptions::full())
            .map_err(|e| Status::internal(format!("{what}: transformed object: {e}")))?,
    );
    Ok(())
}

/// The URNs every output value inside `value` depends on.
fn collect_dependencies(value: &PropertyValue, into: &mut Vec<String>) {
    match value {
        PropertyValue::Output(o) => {
            into.extend(o.dependencies.iter().map(ToString::to_string));
            if let Some(element) = &o.element {
                collect_dependencies(element, into);
            }
        }
        PropertyValue::Secret(inner) => collect_dependencies(inner, into),
        PropertyValue::Array(items) => items.iter().for_each(|v| collect_dependencies(v, into)),
        PropertyValue::Object(map) => map.values().for_each(|v| collect_dependencies(v, into)),
        _ => {}
    }
}

/// A registration's options as a transform sees them.
fn options_of(req: &RegisterResourceRequest) -> TransformResourceOptions {
    let mut aliases: Vec<Alias> = req
        .alias_ur_ns
        .iter()
        .map(|u| Alias {
            alias: Some(alias::Alias::Urn(u.clone())),
        })
        .collect();
    aliases.extend(req.aliases.iter().cloned());
    let delete_before_replace = (req.delete_before_replace_defined || req.delete_before_replace)
        .then_some(req.delete_before_replace);
    TransformResourceOptions {
        depends_on: req.dependencies.clone(),
        protect: req.protect,
        ignore_changes: req.ignore_changes.clone(),
        replace_on_changes: req.replace_on_changes.clone(),
        version: req.version.clone(),
        aliases,
        provider: req.provider.clone(),
        custom_timeouts: req.custom_timeouts.clone(),
        plugin_download_url: req.plugin_download_url.clone(),
        retain_on_delete: req.retain_on_delete,
        deleted_with: req.deleted_with.clone(),
        delete_before_replace,
        additional_secret_outputs: req.additional_secret_outputs.clone(),
        providers: req.providers.clone(),
        plugin_checksums: req.plugin_checksums.clone(),
        hooks: req.hooks.clone(),
        import: req.import_id.clone(),
        hide_diff: req.hide_diffs.clone(),
        replace_with: req.replace_with.clone(),
        replacement_trigger: req.replacement_trigger.clone(),
    }
}

/// The transformed options back on `req`.
fn apply_options(req: &mut RegisterResourceRequest, o: TransformResourceOptions) {
    req.dependencies = o.depends_on;
    req.protect = o.protect;
    req.ignore_changes = o.ignore_changes;
    req.replace_on_changes = o.replace_on_changes;
    req.version = o.version;
    // The aliases are now one list, URNs and specs, as the transform saw
    // them (specs as given: relative to this registration).
    req.alias_ur_ns.clear();
    req.aliases = o.aliases;
    req.alias_specs = true;
    req.provider = o.provider;
    req.custom_timeouts = o.custom_timeouts;
    req.plugin_download_url = o.plugin_download_url;
    req.retain_on_delete = o.retain_on_delete;
    req.deleted_with = o.deleted_with;
    req.delete_before_replace_defined = o.delete_before_replace.is_some();
    req.delete_before_replace = o.delete_before_replace.unwrap_or(false);
    req.additional_secret_outputs = o.additional_secret_outputs;
    req.providers = o.providers;
    req.plugin_checksums = o.plugin_checksums;
    req.hooks = o.hooks;
    req.import_id = o.import;
    req.hide_diffs = o.hide_diff;
    req.replace_with = o.replace_with;
    req.replacement_trigger = o.replacement_trigger;
}

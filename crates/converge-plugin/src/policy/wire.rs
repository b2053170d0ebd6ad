//! The Analyzer protocol's messages ↔ the policy types.

use std::collections::BTreeMap;

use converge_model::PropertyMap;
use converge_proto::pulumirpc as rpc;
use converge_proto::{marshal_properties, unmarshal_properties, MarshalOptions};
use prost_types::value::Kind;

use super::{
    AnalyzedResource, EnforcementLevel, PackInfo, PolicyConfig, PolicyDiagnostic, PolicyInfo,
    PolicySchema, PolicySeverity, Remediation, StackResource,
};

/// Packs get secrets and unknowns as such (the SDKs unwrap secrets and
/// refuse to evaluate unknowns during a preview).
fn options() -> MarshalOptions {
    MarshalOptions {
        keep_unknowns: true,
        keep_secrets: true,
        ..MarshalOptions::default()
    }
}

pub(crate) fn properties(props: &PropertyMap) -> Result<prost_types::Struct, String> {
    marshal_properties(props, options()).map_err(|e| e.to_string())
}

pub(crate) fn from_struct(s: &prost_types::Struct) -> Result<PropertyMap, String> {
    unmarshal_properties(s, options()).map_err(|e| e.to_string())
}

pub(crate) fn level_from(level: i32) -> EnforcementLevel {
    match rpc::EnforcementLevel::try_from(level) {
        Ok(rpc::EnforcementLevel::Mandatory) => EnforcementLevel::Mandatory,
        Ok(rpc::EnforcementLevel::Disabled) => EnforcementLevel::Disabled,
        Ok(rpc::EnforcementLevel::Remediate) => EnforcementLevel::Remediate,
        _ => EnforcementLevel::Advisory,
    }
}

pub(crate) fn severity_from(severity: i32) -> Option<PolicySeverity> {
    match rpc::PolicySeverity::try_from(severity) {
        Ok(rpc::PolicySeverity::Low) => Some(PolicySeverity::Low),
        Ok(rpc::PolicySeverity::Medium) => Some(PolicySeverity::Medium),
        Ok(rpc::PolicySeverity::High) => Some(PolicySeverity::High),
        Ok(rpc::PolicySeverity::Critical) => Some(PolicySeverity::Critical),
        _ => None,
    }
}

pub(crate) fn level_to(level: EnforcementLevel) -> i32 {
    (match level {
        EnforcementLevel::Advisory => rpc::EnforcementLevel::Advisory,
        EnforcementLevel::Mandatory => rpc::EnforcementLevel::Mandatory,
        EnforcementLevel::Disabled => rpc::EnforcementLevel::Disabled,
        EnforcementLevel::Remediate => rpc::EnforcementLevel::Remediate,
    }) as i32
}

/// A `google.protobuf.Struct` as JSON.
pub(crate) fn struct_json(s: &prost_types::Struct) -> serde_json::Map<String, serde_json::Value> {
    s.fields
        .iter()
        .map(|(k, v)| (k.clone(), value_json(v)))
        .collect()
}

fn value_json(v: &prost_types::Value) -> serde_json::Value {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::NumberValue(n)) => {
            if n.fract() == 0.0 && n.abs() < 9.0e15 {
                serde_json::Value::from(*n as i64)
            } else {
                serde_json::Number::from_f64(*n).map_or(serde_json::Value::Null, Into::into)
            }
        }
        Some(Kind::StringValue(s)) => serde_json::Value::String(s.clone()),
        Some(Kind::BoolValue(b)) => serde_json::Value::Bool(*b),
        Some(Kind::StructValue(s)) => serde_json::Value::Object(struct_json(s)),
        Some(Kind::ListValue(l)) => l.values.iter().map(value_json).collect(),
    }
}

/// JSON as a `google.protobuf.Struct`.
pub(crate) fn json_struct(m: &serde_json::Map<String, serde_json::Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: m.iter().map(|(k, v)| (k.clone(), json_value(v))).collect(),
    }
}

fn json_value(v: &serde_json::Value) -> prost_types::Value {
    let kind = match v {
        serde_json::Value::Null => Kind::NullValue(0),
        serde_json::Value::Bool(b) => Kind::BoolValue(*b),
        serde_json::Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        serde_json::Value::String(s) => Kind::StringValue(s.clone()),
        serde_json::Value::Array(a) => Kind::ListValue(prost_types::ListValue {
            values: a.iter().map(json_value).collect(),
        }),
        serde_json::Value::Object(o) => Kind::StructValue(json_struct(o)),
    };
    prost_types::Value { kind: Some(kind) }
}

pub(crate) fn pack_info(info: rpc::AnalyzerInfo, version: Option<&str>) -> PackInfo {
    let policies = info
        .policies
        .into_iter()
        .map(|p| PolicyInfo {
            enforcement_level: level_from(p.enforcement_level),
            config_schema: p.config_schema.map(|s| PolicySchema {
                properties: s.properties.as_ref().map(struct_json).unwrap_or_default(),
                required: s.required,
            }),
            stack: p.policy_type == rpc::PolicyType::Stack as i32,
            name: p.name,
            description: p.description,
        })
        .collect();
    let initial_config = info
        .initial_config
        .into_iter()
        .map(|(k, c)| {
            (
                k,
                PolicyConfig {
                    enforcement_level: Some(level_from(c.enforcement_level)),
                    properties: c.properties.as_ref().map(struct_json).unwrap_or_default(),
                },
            )
        })
        .collect();
    PackInfo {
        name: info.name,
        version: version
            .map(str::to_owned)
            .unwrap_or(info.version)
            .trim_start_matches('v')
            .to_owned(),
        policies,
        initial_config,
    }
}

pub(crate) fn configure(config: &BTreeMap<String, PolicyConfig>) -> rpc::ConfigureAnalyzerRequest {
    rpc::ConfigureAnalyzerRequest {
        policy_config: config
            .iter()
            .map(|(k, c)| {
                (
                    k.clone(),
                    rpc::PolicyConfig {
                        enforcement_level: level_to(
                            c.enforcement_level.unwrap_or(EnforcementLevel::Advisory),
                        ),
                        properties: Some(json_struct(&c.properties)),
                    },
                )
            })
            .collect(),
    }
}

fn resource_options(r: &AnalyzedResource) -> rpc::AnalyzerResourceOptions {
    rpc::AnalyzerResourceOptions {
        protect: r.options.protect,
        ignore_changes: r.options.ignore_changes.clone(),
        delete_before_replace: r.options.delete_before_replace.unwrap_or(false),
        delete_before_replace_defined: r.options.delete_before_replace.is_some(),
        additional_secret_outputs: r.options.additional_secret_outputs.clone(),
        aliases: r.options.aliases.clone(),
        custom_timeouts: None,
        parent: r.options.parent.clone().unwrap_or_default(),
    }
}

fn provider(r: &AnalyzedResource) -> Result<Option<rpc::AnalyzerProviderResource>, String> {
    r.provider
        .as_ref()
        .map(|p| {
            Ok(rpc::AnalyzerProviderResource {
                r#type: p.type_token.clone(),
                properties: Some(properties(&p.properties)?),
                urn: p.urn.clone(),
                name: p.name.clone(),
            })
        })
        .transpose()
}

pub(crate) fn analyze_request(r: &AnalyzedResource) -> Result<rpc::AnalyzeRequest, String> {
    Ok(rpc::AnalyzeRequest {
        r#type: r.type_token.clone(),
        properties: Some(properties(&r.properties)?),
        urn: r.urn.clone(),
        name: r.name.clone(),
        options: Some(resource_options(r)),
        provider: provider(r)?,
    })
}

pub(crate) fn stack_request(
    resources: &[StackResource],
) -> Result<rpc::AnalyzeStackRequest, String> {
    let resources = resources
        .iter()
        .map(|s| {
            let r = &s.resource;
            Ok(rpc::AnalyzerResource {
                r#type: r.type_token.clone(),
                properties: Some(properties(&r.properties)?),
                urn: r.urn.clone(),
                name: r.name.clone(),
                options: Some(resource_options(r)),
                provider: provider(r)?,
                parent: s.parent.clone().unwrap_or_default(),
                dependencies: s.dependencies.clone(),
                property_dependencies: s
                    .property_dependencies
                    .iter()
                    .map(|(k, urns)| {
                        (
                            k.clone(),
                            rpc::AnalyzerPropertyDependencies { urns: urns.clone() },
                        )
                    })
                    .collect(),
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(rpc::AnalyzeStackRequest { resources })
}

pub(crate) fn diagnostics(
    info: &PackInfo,
    response: rpc::AnalyzeResponse,
) -> Vec<PolicyDiagnostic> {
    response
        .diagnostics
        .into_iter()
        .map(|d| PolicyDiagnostic {
            pack_name: if d.policy_pack_name.is_empty() {
                info.name.clone()
            } else {
                d.policy_pack_name
            },
            // The pack's version as the engine knows it: a Python pack's
            // SDK reports a placeholder of its own.
            pack_version: info.version.clone(),
            policy_name: d.policy_name,
            description: d.description,
            message: d.message,
            enforcement_level: level_from(d.enforcement_level),
            urn: (!d.urn.is_empty()).then_some(d.urn),
            severity: severity_from(d.severity),
        })
        .collect()
}

pub(crate) fn remediations(
    info: &PackInfo,
    response: rpc::RemediateResponse,
) -> Result<Vec<Remediation>, String> {
    response
        .remediations
        .into_iter()
        .map(|r| {
            Ok(Remediation {
                properties: r.properties.as_ref().map(from_struct).transpose()?,
                diagnostic: (!r.diagnostic.is_empty()).then_some(r.diagnostic),
                pack_name: if r.policy_pack_name.is_empty() {
                    info.name.clone()
                } else {
                    r.policy_pack_name
                },
                pack_version: info.version.clone(),
                policy_name: r.policy_name,
                description: r.description,
            })
        })
        .collect()
}

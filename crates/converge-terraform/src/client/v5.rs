//! tfplugin6 requests as their tfplugin5 counterparts, and tfplugin5
//! responses back as tfplugin6: field by field, the same numbers and
//! meanings. What protocol 5 lacks is left empty on the way back
//! (attributes' nested object types, `move_resource_state`); what
//! protocol 6 lacks is dropped (a diagnostic's function argument, a
//! prepared provider configuration). Provider-defined functions are not
//! carried over: Converge calls none.

use converge_proto::tfplugin5 as v5;
use converge_proto::tfplugin6 as v6;

/// A tfplugin6 request as protocol 5's.
pub(super) trait ToV5 {
    type Out;
    fn to_v5(self) -> Self::Out;
}

/// A tfplugin5 response as protocol 6's.
pub(super) trait ToV6 {
    type Out;
    fn to_v6(self) -> Self::Out;
}

pub(super) fn request<R: ToV5>(request: R) -> R::Out {
    request.to_v5()
}

pub(super) fn response<R: ToV6>(response: R) -> R::Out {
    response.to_v6()
}

fn value(v: Option<v6::DynamicValue>) -> Option<v5::DynamicValue> {
    v.map(|v| v5::DynamicValue {
        msgpack: v.msgpack,
        json: v.json,
    })
}

fn value6(v: Option<v5::DynamicValue>) -> Option<v6::DynamicValue> {
    v.map(|v| v6::DynamicValue {
        msgpack: v.msgpack,
        json: v.json,
    })
}

fn path6(p: v5::AttributePath) -> v6::AttributePath {
    use v5::attribute_path::step::Selector as S5;
    use v6::attribute_path::step::Selector as S6;
    v6::AttributePath {
        steps: p
            .steps
            .into_iter()
            .map(|s| v6::attribute_path::Step {
                selector: s.selector.map(|s| match s {
                    S5::AttributeName(n) => S6::AttributeName(n),
                    S5::ElementKeyString(k) => S6::ElementKeyString(k),
                    S5::ElementKeyInt(i) => S6::ElementKeyInt(i),
                }),
            })
            .collect(),
    }
}

fn diagnostics6(d: Vec<v5::Diagnostic>) -> Vec<v6::Diagnostic> {
    d.into_iter()
        .map(|d| v6::Diagnostic {
            severity: d.severity,
            summary: d.summary,
            detail: d.detail,
            attribute: d.attribute.map(path6),
        })
        .collect()
}

fn block6(b: v5::schema::Block) -> v6::schema::Block {
    v6::schema::Block {
        version: b.version,
        attributes: b
            .attributes
            .into_iter()
            .map(|a| v6::schema::Attribute {
                name: a.name,
                r#type: a.r#type,
                nested_type: None,
                description: a.description,
                required: a.required,
                optional: a.optional,
                computed: a.computed,
                sensitive: a.sensitive,
                description_kind: a.description_kind,
                deprecated: a.deprecated,
            })
            .collect(),
        block_types: b
            .block_types
            .into_iter()
            .map(|n| v6::schema::NestedBlock {
                type_name: n.type_name,
                block: n.block.map(block6),
                // The nesting modes have the same numbers.
                nesting: n.nesting,
                min_items: n.min_items,
                max_items: n.max_items,
            })
            .collect(),
        description: b.description,
        description_kind: b.description_kind,
        deprecated: b.deprecated,
    }
}

fn schema6(s: v5::Schema) -> v6::Schema {
    v6::Schema {
        version: s.version,
        block: s.block.map(block6),
    }
}

fn capabilities6(c: v5::ServerCapabilities) -> v6::ServerCapabilities {
    v6::ServerCapabilities {
        plan_destroy: c.plan_destroy,
        get_provider_schema_optional: c.get_provider_schema_optional,
        move_resource_state: false,
    }
}

impl ToV5 for v6::get_provider_schema::Request {
    type Out = v5::get_provider_schema::Request;
    fn to_v5(self) -> Self::Out {
        v5::get_provider_schema::Request {}
    }
}

impl ToV6 for v5::get_provider_schema::Response {
    type Out = v6::get_provider_schema::Response;
    fn to_v6(self) -> Self::Out {
        let schemas = |m: std::collections::HashMap<String, v5::Schema>| {
            m.into_iter().map(|(k, s)| (k, schema6(s))).collect()
        };
        v6::get_provider_schema::Response {
            provider: self.provider.map(schema6),
            resource_schemas: schemas(self.resource_schemas),
            data_source_schemas: schemas(self.data_source_schemas),
            diagnostics: diagnostics6(self.diagnostics),
            provider_meta: self.provider_meta.map(schema6),
            server_capabilities: self.server_capabilities.map(capabilities6),
            functions: Default::default(),
        }
    }
}

impl ToV5 for v6::validate_provider_config::Request {
    type Out = v5::prepare_provider_config::Request;
    fn to_v5(self) -> Self::Out {
        v5::prepare_provider_config::Request {
            config: value(self.config),
        }
    }
}

impl ToV6 for v5::prepare_provider_config::Response {
    type Out = v6::validate_provider_config::Response;
    fn to_v6(self) -> Self::Out {
        v6::validate_provider_config::Response {
            diagnostics: diagnostics6(self.diagnostics),
        }
    }
}

impl ToV5 for v6::configure_provider::Request {
    type Out = v5::configure::Request;
    fn to_v5(self) -> Self::Out {
        v5::configure::Request {
            terraform_version: self.terraform_version,
            config: value(self.config),
        }
    }
}

impl ToV6 for v5::configure::Response {
    type Out = v6::configure_provider::Response;
    fn to_v6(self) -> Self::Out {
        v6::configure_provider::Response {
            diagnostics: diagnostics6(self.diagnostics),
        }
    }
}

impl ToV5 for v6::validate_resource_config::Request {
    type Out = v5::validate_resource_type_config::Request;
    fn to_v5(self) -> Self::Out {
        v5::validate_resource_type_config::Request {
            type_name: self.type_name,
            config: value(self.config),
        }
    }
}

impl ToV6 for v5::validate_resource_type_config::Response {
    type Out = v6::validate_resource_config::Response;
    fn to_v6(self) -> Self::Out {
        v6::validate_resource_config::Response {
            diagnostics: diagnostics6(self.diagnostics),
        }
    }
}

impl ToV5 for v6::validate_data_resource_config::Request {
    type Out = v5::validate_data_source_config::Request;
    fn to_v5(self) -> Self::Out {
        v5::validate_data_source_config::Request {
            type_name: self.type_name,
            config: value(self.config),
        }
    }
}

impl ToV6 for v5::validate_data_source_config::Response {
    type Out = v6::validate_data_resource_config::Response;
    fn to_v6(self) -> Self::Out {
        v6::validate_data_resource_config::Response {
            diagnostics: diagnostics6(self.diagnostics),
        }
    }
}

impl ToV5 for v6::upgrade_resource_state::Request {
    type Out = v5::upgrade_resource_state::Request;
    fn to_v5(self) -> Self::Out {
        v5::upgrade_resource_state::Request {
            type_name: self.type_name,
            version: self.version,
            raw_state: self.raw_state.map(|r| v5::RawState {
                json: r.json,
                flatmap: r.flatmap,
            }),
        }
    }
}

impl ToV6 for v5::upgrade_resource_state::Response {
    type Out = v6::upgrade_resource_state::Response;
    fn to_v6(self) -> Self::Out {
        v6::upgrade_resource_state::Response {
            upgraded_state: value6(self.upgraded_state),
            diagnostics: diagnostics6(self.diagnostics),
        }
    }
}

impl ToV5 for v6::read_resource::Request {
    type Out = v5::read_resource::Request;
    fn to_v5(self) -> Self::Out {
        v5::read_resource::Request {
            type_name: self.type_name,
            current_state: value(self.current_state),
            private: self.private,
            provider_meta: value(self.provider_meta),
        }
    }
}

impl ToV6 for v5::read_resource::Response {
    type Out = v6::read_resource::Response;
    fn to_v6(self) -> Self::Out {
        v6::read_resource::Response {
            new_state: value6(self.new_state),
            diagnostics: diagnostics6(self.diagnostics),
            private: self.private,
        }
    }
}

impl ToV5 for v6::plan_resource_change::Request {
    type Out = v5::plan_resource_change::Request;
    fn to_v5(self) -> Self::Out {
        v5::plan_resource_change::Request {
            type_name: self.type_name,
            prior_state: value(self.prior_state),
            proposed_new_state: value(self.proposed_new_state),
            config: value(self.config),
            prior_private: self.prior_private,
            provider_meta: value(self.provider_meta),
        }
    }
}

impl ToV6 for v5::plan_resource_change::Response {
    type Out = v6::plan_resource_change::Response;
    fn to_v6(self) -> Self::Out {
        v6::plan_resource_change::Response {
            planned_state: value6(self.planned_state),
            requires_replace: self.requires_replace.into_iter().map(path6).collect(),
            planned_private: self.planned_private,
            diagnostics: diagnostics6(self.diagnostics),
            legacy_type_system: self.legacy_type_system,
        }
    }
}

impl ToV5 for v6::apply_resource_change::Request {
    type Out = v5::apply_resource_change::Request;
    fn to_v5(self) -> Self::Out {
        v5::apply_resource_change::Request {
            type_name: self.type_name,
            prior_state: value(self.prior_state),
            planned_state: value(self.planned_state),
            config: value(self.config),
            planned_private: self.planned_private,
            provider_meta: value(self.provider_meta),
        }
    }
}

impl ToV6 for v5::apply_resource_change::Response {
    type Out = v6::apply_resource_change::Response;
    fn to_v6(self) -> Self::Out {
        v6::apply_resource_change::Response {
            new_state: value6(self.new_state),
            private: self.private,
            diagnostics: diagnostics6(self.diagnostics),
            legacy_type_system: self.legacy_type_system,
        }
    }
}

impl ToV5 for v6::import_resource_state::Request {
    type Out = v5::import_resource_state::Request;
    fn to_v5(self) -> Self::Out {
        v5::import_resource_state::Request {
            type_name: self.type_name,
            id: self.id,
        }
    }
}

impl ToV6 for v5::import_resource_state::Response {
    type Out = v6::import_resource_state::Response;
    fn to_v6(self) -> Self::Out {
        v6::import_resource_state::Response {
            imported_resources: self
                .imported_resources
                .into_iter()
                .map(|r| v6::import_resource_state::ImportedResource {
                    type_name: r.type_name,
                    state: value6(r.state),
                    private: r.private,
                })
                .collect(),
            diagnostics: diagnostics6(self.diagnostics),
        }
    }
}

impl ToV5 for v6::read_data_source::Request {
    type Out = v5::read_data_source::Request;
    fn to_v5(self) -> Self::Out {
        v5::read_data_source::Request {
            type_name: self.type_name,
            config: value(self.config),
            provider_meta: value(self.provider_meta),
        }
    }
}

impl ToV6 for v5::read_data_source::Response {
    type Out = v6::read_data_source::Response;
    fn to_v6(self) -> Self::Out {
        v6::read_data_source::Response {
            state: value6(self.state),
            diagnostics: diagnostics6(self.diagnostics),
        }
    }
}

impl ToV5 for v6::stop_provider::Request {
    type Out = v5::stop::Request;
    fn to_v5(self) -> Self::Out {
        v5::stop::Request {}
    }
}

impl ToV6 for v5::stop::Response {
    type Out = v6::stop_provider::Response;
    fn to_v6(self) -> Self::Out {
        v6::stop_provider::Response { error: self.error }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_keeps_every_attribute_flag_and_nested_block() {
        let v5_schema = v5::Schema {
            version: 3,
            block: Some(v5::schema::Block {
                version: 3,
                attributes: vec![v5::schema::Attribute {
                    name: "id".into(),
                    r#type: b"\"string\"".to_vec(),
                    description: "the ID".into(),
                    required: false,
                    optional: true,
                    computed: true,
                    sensitive: true,
                    description_kind: 1,
                    deprecated: true,
                }],
                block_types: vec![v5::schema::NestedBlock {
                    type_name: "rule".into(),
                    block: Some(v5::schema::Block::default()),
                    nesting: v5::schema::nested_block::NestingMode::Set as i32,
                    min_items: 1,
                    max_items: 4,
                }],
                description: "a thing".into(),
                description_kind: 0,
                deprecated: false,
            }),
        };
        let s = schema6(v5_schema);
        assert_eq!(s.version, 3);
        let block = s.block.unwrap();
        let a = &block.attributes[0];
        assert_eq!(
            (
                a.name.as_str(),
                a.optional,
                a.computed,
                a.sensitive,
                a.deprecated
            ),
            ("id", true, true, true, true)
        );
        assert_eq!(a.r#type, b"\"string\"");
        assert_eq!(a.description_kind, 1);
        let n = &block.block_types[0];
        assert_eq!(n.nesting, v6::schema::nested_block::NestingMode::Set as i32);
        assert_eq!((n.min_items, n.max_items), (1, 4));
    }

    #[test]
    fn diagnostics_and_paths_come_back_whole() {
        use v5::attribute_path::step::Selector;
        let response = v5::plan_resource_change::Response {
            planned_state: Some(v5::DynamicValue {
                msgpack: vec![0xc0],
                json: vec![],
            }),
            requires_replace: vec![v5::AttributePath {
                steps: vec![
                    v5::attribute_path::Step {
                        selector: Some(Selector::AttributeName("tags".into())),
                    },
                    v5::attribute_path::Step {
                        selector: Some(Selector::ElementKeyString("a".into())),
                    },
                    v5::attribute_path::Step {
                        selector: Some(Selector::ElementKeyInt(2)),
                    },
                ],
            }],
            planned_private: b"p".to_vec(),
            diagnostics: vec![v5::Diagnostic {
                severity: 2,
                summary: "careful".into(),
                detail: "details".into(),
                attribute: None,
                function_argument: Some(1),
            }],
            legacy_type_system: true,
        };
        let r = response.to_v6();
        assert_eq!(r.planned_state.unwrap().msgpack, vec![0xc0]);
        assert_eq!(r.requires_replace[0].steps.len(), 3);
        assert_eq!(r.planned_private, b"p");
        assert_eq!(r.diagnostics[0].summary, "careful");
        assert_eq!(r.diagnostics[0].severity, 2);
        assert!(r.legacy_type_system);
    }
}

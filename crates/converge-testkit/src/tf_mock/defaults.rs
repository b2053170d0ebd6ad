//! The [`TfMock`]'s default answers: what a well-behaved Terraform
//! provider over the [`MockCloud`](crate::MockCloud) does. Closures given
//! with `on_*` may call these and adjust what they return.

use converge_model::{PropertyMap, PropertyValue, Urn};
use converge_plugin::terraform::values::{decode_json, CtyType};
use converge_terraform::names::resource_token;

use super::schema::BlockInfo;
use super::{
    error, ApplyCall, ApplyResult, ConfigCall, DataResult, ImportCall, ImportResult, Imported,
    PlanCall, PlanResult, ReadCall, ReadResult, TfMock, UpgradeCall, UpgradeResult,
};
use crate::cloud::CloudOp;

impl TfMock {
    /// The URN the cloud's objects of `type_name` are filed under.
    ///
    /// # Panics
    /// If the package or type name cannot be part of a URN.
    pub fn cloud_urn(&self, type_name: &str) -> Urn {
        let token = resource_token(self.package(), type_name);
        Urn::parse(&format!("urn:pulumi:terraform::mock::{token}::{type_name}"))
            .unwrap_or_else(|e| panic!("TfMock: {e}"))
    }

    /// Puts an object of `type_name` with `attributes` in the cloud, as if
    /// made outside Converge (to import or read), its `id` attribute set to
    /// its new ID, which is returned.
    pub fn insert_object(&self, type_name: &str, mut attributes: PropertyMap) -> String {
        let cloud = self.cloud();
        let id = cloud.insert(
            &self.cloud_urn(type_name),
            self.package(),
            PropertyMap::new(),
        );
        attributes.insert("id".to_owned(), PropertyValue::from(id.as_str()));
        let _ = cloud.set_properties(&id, attributes);
        id
    }

    fn block_of(&self, type_name: &str) -> Option<&BlockInfo> {
        self.resources.get(type_name)
    }

    /// The raw JSON decoded as an object of the current schema, as is.
    pub fn default_upgrade(&self, call: &UpgradeCall) -> UpgradeResult {
        let Some(ty) = self.object_type(&call.type_name) else {
            return unknown_type(&call.type_name).into();
        };
        let bytes = serde_json::to_vec(&call.raw_json).unwrap_or_default();
        match decode_json(&bytes, &ty) {
            Ok(PropertyValue::Object(state)) => UpgradeResult {
                state: Some(state),
                diagnostics: Vec::new(),
            },
            Ok(PropertyValue::Null) => UpgradeResult::default(),
            Ok(other) => vec![error(&format!(
                "raw state is {}, not an object",
                other.kind_name()
            ))]
            .into(),
            Err(e) => vec![error(&format!("cannot decode the raw state: {e}"))].into(),
        }
    }

    /// The proposed new state with every computed null made unknown; the
    /// prior private data planned as is; nothing requires replacement.
    pub fn default_plan(&self, call: &PlanCall) -> PlanResult {
        let Some(block) = self.block_of(&call.type_name) else {
            return PlanResult {
                diagnostics: unknown_type(&call.type_name),
                ..PlanResult::default()
            };
        };
        PlanResult {
            planned_state: call
                .proposed_new_state
                .as_ref()
                .map(|p| block.unknown_computed_nulls(p)),
            requires_replace: Vec::new(),
            planned_private: call.prior_private.clone(),
            diagnostics: Vec::new(),
        }
    }

    /// Creates, updates or deletes the cloud object; see the
    /// [module](super) docs.
    pub fn default_apply(&self, call: &ApplyCall) -> ApplyResult {
        let Some(ty) = self.object_type(&call.type_name) else {
            return unknown_type(&call.type_name).into();
        };
        let urn = self.cloud_urn(&call.type_name);
        let cloud = self.cloud();
        let Some(planned) = &call.planned_state else {
            let id = call
                .prior_state
                .as_ref()
                .and_then(id_of)
                .unwrap_or_default();
            let removed = cloud
                .enter(CloudOp::Delete, &urn)
                .and_then(|()| cloud.remove(&id));
            return match removed {
                Ok(_) => ApplyResult::default(),
                Err(e) => vec![error(&e.to_string())].into(),
            };
        };
        let (op, id) = match call.prior_state.as_ref().and_then(id_of) {
            Some(id) => (CloudOp::Update, id),
            None => (CloudOp::Create, String::new()),
        };
        if let Err(e) = cloud.enter(op, &urn) {
            return vec![error(&e.to_string())].into();
        }
        let id = if op == CloudOp::Create {
            cloud.insert(&urn, self.package(), PropertyMap::new())
        } else {
            id
        };
        // An unknown `id` becomes the cloud object's ID.
        let new_state = match fill(&PropertyValue::Object(planned.clone()), &ty, "", &id) {
            PropertyValue::Object(m) => m,
            _ => planned.clone(),
        };
        if let Err(e) = cloud.set_properties(&id, new_state.clone()) {
            return vec![error(&e.to_string())].into();
        }
        ApplyResult {
            new_state: Some(new_state),
            private: call.planned_private.clone(),
            diagnostics: Vec::new(),
        }
    }

    /// The cloud object named by the state's `id`, or null when it is gone;
    /// the private data as given.
    pub fn default_read(&self, call: &ReadCall) -> ReadResult {
        let urn = self.cloud_urn(&call.type_name);
        if let Err(e) = self.cloud().enter(CloudOp::Read, &urn) {
            return ReadResult {
                diagnostics: vec![error(&e.to_string())],
                ..ReadResult::default()
            };
        }
        let id = call.current_state.as_ref().and_then(id_of);
        ReadResult {
            new_state: id.and_then(|id| self.object(&urn, &id)),
            private: call.private.clone(),
            diagnostics: Vec::new(),
        }
    }

    /// The cloud object `id` as it is, without private data.
    pub fn default_import(&self, call: &ImportCall) -> ImportResult {
        let urn = self.cloud_urn(&call.type_name);
        match self.object(&urn, &call.id) {
            Some(state) => ImportResult {
                imported: vec![Imported {
                    type_name: call.type_name.clone(),
                    state: Some(state),
                    private: Vec::new(),
                }],
                diagnostics: Vec::new(),
            },
            None => ImportResult {
                imported: Vec::new(),
                diagnostics: vec![error(&format!(
                    "Cannot import non-existent remote object: no {} with id {:?}",
                    call.type_name, call.id
                ))],
            },
        }
    }

    /// The configuration with computed nulls filled.
    pub fn default_read_data(&self, call: &ConfigCall) -> DataResult {
        let Some(block) = self.data_sources.get(&call.type_name) else {
            return DataResult {
                state: None,
                diagnostics: unknown_type(&call.type_name),
            };
        };
        let config = call.config.clone().unwrap_or_default();
        let planned = block.unknown_computed_nulls(&config);
        let state = match fill(
            &PropertyValue::Object(planned.clone()),
            &block.object_type(),
            "",
            &call.type_name,
        ) {
            PropertyValue::Object(m) => m,
            _ => planned,
        };
        DataResult {
            state: Some(state),
            diagnostics: Vec::new(),
        }
    }

    fn object(&self, urn: &Urn, id: &str) -> Option<PropertyMap> {
        self.cloud()
            .get(id)
            .filter(|o| o.type_token == urn.type_token())
            .map(|o| o.properties)
    }
}

fn unknown_type(type_name: &str) -> Vec<converge_proto::tfplugin6::Diagnostic> {
    vec![error(&format!("unknown type {type_name:?}"))]
}

impl From<Vec<converge_proto::tfplugin6::Diagnostic>> for UpgradeResult {
    fn from(diagnostics: Vec<converge_proto::tfplugin6::Diagnostic>) -> Self {
        UpgradeResult {
            state: None,
            diagnostics,
        }
    }
}

impl From<Vec<converge_proto::tfplugin6::Diagnostic>> for ApplyResult {
    fn from(diagnostics: Vec<converge_proto::tfplugin6::Diagnostic>) -> Self {
        ApplyResult {
            new_state: None,
            private: Vec::new(),
            diagnostics,
        }
    }
}

fn id_of(state: &PropertyMap) -> Option<String> {
    match state.get("id") {
        Some(PropertyValue::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// `v` of type `ty` with every unknown replaced by a value a provider
/// might choose: strings `<attribute>-<id>` (`id` itself for `id`),
/// numbers 1, bools false, empty collections.
fn fill(v: &PropertyValue, ty: &CtyType, path: &str, id: &str) -> PropertyValue {
    let join = |name: &str| {
        if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    match (v, ty) {
        (PropertyValue::Unknown, CtyType::String | CtyType::Dynamic) => {
            PropertyValue::String(if path == "id" {
                id.to_owned()
            } else {
                format!("{path}-{id}")
            })
        }
        (PropertyValue::Unknown, CtyType::Number) => PropertyValue::Number(1.0),
        (PropertyValue::Unknown, CtyType::Bool) => PropertyValue::Bool(false),
        (PropertyValue::Unknown, CtyType::List(_) | CtyType::Set(_)) => {
            PropertyValue::Array(Vec::new())
        }
        (PropertyValue::Unknown, CtyType::Map(_)) => PropertyValue::Object(PropertyMap::new()),
        (PropertyValue::Unknown, CtyType::Tuple(ts)) => PropertyValue::Array(
            ts.iter()
                .enumerate()
                .map(|(i, t)| fill(&PropertyValue::Unknown, t, &format!("{path}[{i}]"), id))
                .collect(),
        ),
        (PropertyValue::Unknown, CtyType::Object { attributes, .. }) => PropertyValue::Object(
            attributes
                .iter()
                .map(|(n, t)| (n.clone(), fill(&PropertyValue::Unknown, t, &join(n), id)))
                .collect(),
        ),
        (PropertyValue::Object(m), CtyType::Object { attributes, .. }) => PropertyValue::Object(
            m.iter()
                .map(|(n, x)| {
                    let t = attributes.get(n).unwrap_or(&CtyType::Dynamic);
                    (n.clone(), fill(x, t, &join(n), id))
                })
                .collect(),
        ),
        (PropertyValue::Object(m), CtyType::Map(t)) => PropertyValue::Object(
            m.iter()
                .map(|(k, x)| (k.clone(), fill(x, t, &format!("{path}[{k:?}]"), id)))
                .collect(),
        ),
        (PropertyValue::Array(items), CtyType::List(t) | CtyType::Set(t)) => PropertyValue::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| fill(x, t, &format!("{path}[{i}]"), id))
                .collect(),
        ),
        (PropertyValue::Array(items), CtyType::Tuple(ts)) => PropertyValue::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    fill(
                        x,
                        ts.get(i).unwrap_or(&CtyType::Dynamic),
                        &format!("{path}[{i}]"),
                        id,
                    )
                })
                .collect(),
        ),
        (other, _) => other.clone(),
    }
}

//! Lifecycle tests of the Terraform adapter: the engine (`Lifecycle`, with
//! its journal-replay and cloud-tracking checks after every operation)
//! drives `TerraformProvider` over real gRPC to an in-process tfplugin6
//! provider (`converge_testkit::tf_mock`) whose answers each test shapes,
//! and whose record of requests shows what the adapter sent.

mod contract;
mod import;
mod private;
mod proposed;
mod replace;
mod stop;
mod upgrade;

use std::sync::Arc;

use converge_engine::{Monitor, OperationResult, PlanConstraint, PlanUse, StepOp};
use converge_model::{PropertyMap, PropertyValue, ResourceState};
use converge_plugin::terraform::values::CtyType;
use converge_proto::tfplugin6 as tf;
use converge_state::plan::DeploymentPlan;
use converge_state::Manifest;
use converge_terraform::meta::Meta;
use converge_testkit::tf_mock::schema::{
    computed, optional, optional_computed, provider_schema, required, resource,
};
use converge_testkit::tf_mock::{TfMock, TfServer};
use converge_testkit::{custom, program, register_stack, Lifecycle, MockCloud, TestProgram};

/// The Terraform TYPE of the mock provider (the Pulumi package).
pub const PKG: &str = "mock";
/// Its resource type, and the token the adapter gives it.
pub const THING: &str = "mock_thing";
pub const TOKEN: &str = "mock:index/thing:Thing";

/// `mock_thing` at `version`: `id` and `revision` computed, `name`
/// required, `note` optional, `label` optional and computed.
pub fn thing_schema(version: i64) -> tf::get_provider_schema::Response {
    let s = CtyType::String;
    provider_schema(
        vec![optional("region", &s)],
        vec![(
            THING,
            resource(
                version,
                vec![
                    computed("id", &s),
                    required("name", &s),
                    optional("note", &s),
                    optional_computed("label", &s),
                    computed("revision", &s),
                ],
            ),
        )],
        Vec::new(),
    )
}

/// A mock of `thing_schema(1)` on `cloud`.
pub fn mock(cloud: &Arc<MockCloud>) -> TfMock {
    TfMock::new(PKG, thing_schema(1)).with_cloud(cloud.clone())
}

/// Serves `mock` and makes a world whose loader answers its package.
pub async fn world(mock: TfMock) -> (Lifecycle, TfServer) {
    let cloud = mock.cloud().clone();
    let server = mock.serve().await.unwrap();
    let w = Lifecycle::new(cloud, Arc::new(server.loader()));
    (w, server)
}

pub fn s(v: &str) -> PropertyValue {
    PropertyValue::from(v)
}

/// A property map of strings.
pub fn strings(pairs: &[(&str, &str)]) -> PropertyMap {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), s(v))).collect()
}

/// A program of one `mock_thing` named `a` with these inputs.
pub fn one(pairs: &[(&str, &str)]) -> TestProgram {
    let inputs = strings(pairs);
    program(move |m: Monitor| {
        let inputs = inputs.clone();
        async move {
            let stack = register_stack(&m).await?;
            let mut g = custom(TOKEN, "a", inputs);
            g.parent = Some(stack);
            m.register_resource(g).await.map_err(|e| e.to_string())?;
            Ok(())
        }
    })
}

pub fn expect_ok(result: &OperationResult) {
    if let Some(e) = &result.error {
        panic!("operation failed: {e}");
    }
}

/// The operation's error, which it must have.
pub fn error_of(result: &OperationResult) -> String {
    match &result.error {
        Some(e) => {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                let more = s.to_string();
                if !text.contains(&more) {
                    text.push_str(": ");
                    text.push_str(&more);
                }
                source = s.source();
            }
            text
        }
        None => panic!("the operation should have failed"),
    }
}

/// The ops of the result's steps for resource `name`, in plan order.
pub fn ops_of(result: &OperationResult, name: &str) -> Vec<StepOp> {
    result
        .plan
        .steps
        .iter()
        .filter(|s| s.urn.ends_with(&format!("::{name}")))
        .map(|s| s.op)
        .collect()
}

/// Resource `a`, which must be in the state.
pub fn thing_a(w: &Lifecycle) -> &ResourceState {
    w.resource("a")
        .unwrap_or_else(|| panic!("resource a is not in the state"))
}

/// What a resource's `__meta` records.
pub fn meta(r: &ResourceState) -> Meta {
    Meta::read(&r.outputs)
}

/// A Terraform object as the JSON Terraform writes in state.
pub fn json_of(m: &PropertyMap) -> serde_json::Value {
    fn one(v: &PropertyValue) -> serde_json::Value {
        match v {
            PropertyValue::Null => serde_json::Value::Null,
            PropertyValue::Bool(b) => (*b).into(),
            PropertyValue::Number(n) => (*n).into(),
            PropertyValue::String(s) => s.clone().into(),
            PropertyValue::Array(a) => a.iter().map(one).collect(),
            PropertyValue::Object(m) => json_of(m),
            other => panic!("no JSON for {other:?}"),
        }
    }
    serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), one(v))).collect())
}

/// The constraint the CLI's plain `up` runs with: the preview's plan,
/// for consistency checks only.
pub fn preview_constraint(preview: &OperationResult) -> PlanConstraint {
    PlanConstraint {
        plan: Arc::new(DeploymentPlan {
            manifest: Manifest::converge("2026-01-01T00:00:00Z"),
            config: Default::default(),
            resource_plans: preview.resource_plans.clone(),
            base: None,
            refresh_only: false,
        }),
        usage: PlanUse::ConsistencyOnly,
    }
}

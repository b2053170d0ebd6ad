//! The mock over the wire, with a plain tfplugin6 client: its defaults
//! behave as a provider would, and a mistake on either side is loud.

use converge_model::{PropertyMap, PropertyValue};
use converge_plugin::terraform::values::{decode_dynamic_value, encode_dynamic_value, CtyType};
use converge_proto::tfplugin6::provider_client::ProviderClient;
use converge_proto::tfplugin6::{self as tf, DynamicValue};

use super::schema::{computed, provider_schema, required, resource};
use super::*;

fn thing_mock() -> TfMock {
    let s = CtyType::String;
    TfMock::new(
        "mock",
        provider_schema(
            Vec::new(),
            vec![(
                "mock_thing",
                resource(
                    3,
                    vec![
                        computed("id", &s),
                        required("name", &s),
                        computed("arn", &s),
                    ],
                ),
            )],
            Vec::new(),
        ),
    )
}

fn object(pairs: &[(&str, PropertyValue)]) -> PropertyMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn wire(m: Option<&PropertyMap>, mock: &TfMock) -> Option<DynamicValue> {
    let ty = mock.object_type("mock_thing").unwrap();
    let v = m.map_or(PropertyValue::Null, |m| PropertyValue::Object(m.clone()));
    Some(encode_dynamic_value(&v, &ty).unwrap())
}

fn unwire(v: Option<&DynamicValue>, mock: &TfMock) -> PropertyValue {
    let ty = mock.object_type("mock_thing").unwrap();
    decode_dynamic_value(v.unwrap(), &ty).unwrap()
}

#[tokio::test]
async fn the_defaults_plan_unknowns_and_apply_read_and_delete_the_cloud_object() {
    let server = thing_mock().serve().await.unwrap();
    let mock = server.mock();
    let mut client = ProviderClient::new(server.channel());
    let schema = client
        .get_provider_schema(tf::get_provider_schema::Request {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(schema.resource_schemas["mock_thing"].version, 3);

    let config = object(&[
        ("id", PropertyValue::Null),
        ("name", PropertyValue::from("n")),
        ("arn", PropertyValue::Null),
    ]);
    let plan = client
        .plan_resource_change(tf::plan_resource_change::Request {
            type_name: "mock_thing".to_owned(),
            prior_state: wire(None, mock),
            proposed_new_state: wire(Some(&config), mock),
            config: wire(Some(&config), mock),
            prior_private: b"p".to_vec(),
            provider_meta: None,
        })
        .await
        .unwrap()
        .into_inner();
    let planned = unwire(plan.planned_state.as_ref(), mock);
    let planned = planned.as_object().unwrap().clone();
    assert_eq!(planned["id"], PropertyValue::Unknown);
    assert_eq!(planned["arn"], PropertyValue::Unknown);
    assert_eq!(planned["name"], PropertyValue::from("n"));
    assert_eq!(plan.planned_private, b"p");

    let applied = client
        .apply_resource_change(tf::apply_resource_change::Request {
            type_name: "mock_thing".to_owned(),
            prior_state: wire(None, mock),
            planned_state: wire(Some(&planned), mock),
            config: wire(Some(&config), mock),
            planned_private: b"p".to_vec(),
            provider_meta: None,
        })
        .await
        .unwrap()
        .into_inner();
    let state = unwire(applied.new_state.as_ref(), mock);
    let state = state.as_object().unwrap().clone();
    assert_eq!(state["id"], PropertyValue::from("id-1"));
    assert_eq!(state["arn"], PropertyValue::from("arn-id-1"));
    assert_eq!(mock.cloud().get("id-1").unwrap().properties, state);
    assert_eq!(
        mock.cloud().get("id-1").unwrap().type_token,
        "mock:index/thing:Thing"
    );

    let read = client
        .read_resource(tf::read_resource::Request {
            type_name: "mock_thing".to_owned(),
            current_state: wire(Some(&state), mock),
            private: b"q".to_vec(),
            provider_meta: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        unwire(read.new_state.as_ref(), mock),
        PropertyValue::Object(state.clone())
    );
    assert_eq!(read.private, b"q");

    client
        .apply_resource_change(tf::apply_resource_change::Request {
            type_name: "mock_thing".to_owned(),
            prior_state: wire(Some(&state), mock),
            planned_state: wire(None, mock),
            config: wire(None, mock),
            planned_private: Vec::new(),
            provider_meta: None,
        })
        .await
        .unwrap();
    assert!(mock.cloud().is_empty());
    assert_eq!(
        mock.rpcs(),
        [
            "GetProviderSchema",
            "PlanResourceChange",
            "ApplyResourceChange",
            "ReadResource",
            "ApplyResourceChange"
        ]
    );
    let (q, _) = &mock.plans()[0];
    assert_eq!(q.prior_state, None);
    assert_eq!(q.config.as_ref(), Some(&config));
}

#[tokio::test]
async fn a_request_the_schema_does_not_allow_is_invalid_argument() {
    let server = thing_mock().serve().await.unwrap();
    let mut client = ProviderClient::new(server.channel());
    let not_an_object = encode_dynamic_value(&PropertyValue::from("x"), &CtyType::String).unwrap();
    let err = client
        .validate_resource_config(tf::validate_resource_config::Request {
            type_name: "mock_thing".to_owned(),
            config: Some(not_an_object),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument, "{err}");
    assert!(server.mock().calls().is_empty());
}

#[tokio::test]
async fn an_answer_the_schema_does_not_allow_is_internal() {
    let server = thing_mock()
        .on_upgrade(|_, _| UpgradeResult {
            state: Some(object(&[("bogus", PropertyValue::from("x"))])),
            diagnostics: Vec::new(),
        })
        .serve()
        .await
        .unwrap();
    let mut client = ProviderClient::new(server.channel());
    let err = client
        .upgrade_resource_state(tf::upgrade_resource_state::Request {
            type_name: "mock_thing".to_owned(),
            version: 1,
            raw_state: Some(tf::RawState {
                json: br#"{"id":"i","name":"n"}"#.to_vec(),
                flatmap: Default::default(),
            }),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Internal, "{err}");
    assert!(err.message().contains("bogus"), "{err}");
}

#[tokio::test]
async fn an_unknown_type_is_an_error_diagnostic() {
    let server = thing_mock().serve().await.unwrap();
    let mut client = ProviderClient::new(server.channel());
    let r = client
        .import_resource_state(tf::import_resource_state::Request {
            type_name: "mock_other".to_owned(),
            id: "x".to_owned(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(r.imported_resources.is_empty());
    assert_eq!(r.diagnostics.len(), 1);
    assert!(r.diagnostics[0].summary.contains("mock_other"));
}

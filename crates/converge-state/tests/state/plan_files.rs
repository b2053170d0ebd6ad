//! Saved plans: Pulumi's `DeploymentPlanV1` file reads, and writes back as
//! Pulumi wrote it; Converge's own fields survive; secrets are never
//! plaintext in the file.

use converge_model::{PropertyMap, PropertyValue, Urn};
use converge_state::plan::{read_plan, write_plan, DeploymentPlan, PlanBase, ResourcePlan};
use converge_state::secrets::{PassphraseCrypter, SecretsMode};
use converge_state::Manifest;

const PULUMI_PLAN: &[u8] = include_bytes!("../fixtures/plan_pulumi.json");
const PW: &str = "urn:pulumi:dev::proj::random:index/randomPassword:RandomPassword::pw";

#[test]
fn a_pulumi_plan_reads_and_writes_back_the_same_json() {
    let plan = read_plan(PULUMI_PLAN, SecretsMode::Opaque).unwrap();
    assert_eq!(plan.resource_plans.len(), 4);
    assert!(plan.base.is_none());
    assert!(!plan.refresh_only);
    let pw = &plan.resource_plans[&Urn::parse(PW).unwrap()];
    assert_eq!(
        pw.steps,
        vec!["replace", "create-replacement", "delete-replaced"]
    );
    assert_eq!(pw.seed, vec![1, 2, 3, 4]);
    let goal = pw.goal.as_ref().unwrap();
    assert_eq!(
        goal.type_token,
        "random:index/randomPassword:RandomPassword"
    );
    assert!(goal.protect);
    assert_eq!(goal.delete_before_replace, Some(true));
    assert_eq!(goal.id.as_deref(), Some("imported-id"));
    assert_eq!(goal.input_diff.deletes, vec!["lower"]);
    assert_eq!(
        goal.input_diff.adds.get("length"),
        Some(&PropertyValue::Number(12.0))
    );
    assert!(matches!(
        goal.input_diff.adds.get("keepers"),
        Some(PropertyValue::Secret(_))
    ));
    assert_eq!(
        pw.outputs.as_ref().unwrap().get("result"),
        Some(&PropertyValue::Unknown)
    );
    let timeouts = goal.custom_timeouts.as_ref().unwrap();
    assert_eq!(timeouts.create.as_deref(), Some("300s"));
    assert_eq!(timeouts.delete.as_deref(), Some("60s"));
    let gone = plan
        .resource_plans
        .iter()
        .find(|(u, _)| u.name() == "gone")
        .unwrap()
        .1;
    assert!(gone.goal.is_none() && gone.outputs.is_none());

    let written = write_plan(&plan, SecretsMode::Opaque).unwrap();
    let original: serde_json::Value = serde_json::from_slice(PULUMI_PLAN).unwrap();
    let again: serde_json::Value = serde_json::from_slice(&written).unwrap();
    assert_eq!(original, again);
}

#[test]
fn converge_fields_round_trip_and_secrets_stay_ciphertext() {
    let (crypter, _salt) = PassphraseCrypter::generate("pw").unwrap();
    let mut outputs = PropertyMap::new();
    outputs.insert(
        "password".to_owned(),
        PropertyValue::secret(PropertyValue::from("hunter2-plaintext")),
    );
    outputs.insert("later".to_owned(), PropertyValue::Unknown);
    let mut plan = DeploymentPlan {
        manifest: Manifest::converge("2026-01-01T00:00:00Z"),
        config: serde_json::Map::new(),
        resource_plans: Default::default(),
        base: Some(PlanBase {
            checkpoint_digest: "abc".to_owned(),
            journal_sequence: 7,
        }),
        refresh_only: true,
    };
    plan.resource_plans.insert(
        Urn::parse("urn:pulumi:dev::proj::pkg:index:Thing::a").unwrap(),
        ResourcePlan {
            steps: vec!["create".to_owned()],
            outputs: Some(outputs),
            ..ResourcePlan::default()
        },
    );
    let bytes = write_plan(&plan, SecretsMode::Crypter(&crypter)).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(!text.contains("hunter2-plaintext"), "{text}");
    assert!(text.contains("4dabf18193072939515e22adb298388d"), "{text}");
    assert!(
        text.contains("04da6b54-80e4-46f7-96ec-b56ff0331ba9"),
        "{text}"
    );
    let back = read_plan(&bytes, SecretsMode::Crypter(&crypter)).unwrap();
    assert_eq!(back, plan);
}

#[test]
fn a_malformed_plan_is_refused_naming_where() {
    let err = read_plan(
        b"{\"manifest\":{},\"resourcePlans\":{\"nope\":{}}}",
        SecretsMode::Opaque,
    )
    .unwrap_err();
    assert!(err.to_string().contains("resource plan nope"), "{err}");
    let err = read_plan(b"[1]", SecretsMode::Opaque).unwrap_err();
    assert!(err.to_string().contains("not valid JSON"), "{err}");
}

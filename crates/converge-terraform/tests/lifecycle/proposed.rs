//! The proposed new state Core sends with PlanResourceChange (seed 004):
//! every attribute the configuration sets takes the configuration's value;
//! a computed attribute the configuration leaves null keeps the prior
//! state's value; a non-computed one left null is null.

use converge_engine::StepOp;
use converge_testkit::MockCloud;

use super::*;

#[tokio::test]
async fn config_wins_and_computed_attributes_left_null_keep_the_prior_value() {
    let cloud = MockCloud::new();
    let (mut w, server) = world(mock(&cloud)).await;
    let tf = server.mock();

    // Create: no prior state, so what the configuration leaves null is null.
    expect_ok(&w.up(&one(&[("name", "a"), ("note", "n1")])).await);
    let (create, _) = &tf.plans()[0];
    assert_eq!(create.prior_state, None);
    assert_eq!(
        create.proposed_new_state.as_ref().unwrap(),
        &[
            ("id".to_owned(), PropertyValue::Null),
            ("label".to_owned(), PropertyValue::Null),
            ("name".to_owned(), s("a")),
            ("note".to_owned(), s("n1")),
            ("revision".to_owned(), PropertyValue::Null),
        ]
        .into()
    );
    let a = thing_a(&w);
    let id = a.id.clone().unwrap();
    let chosen_label = a.outputs.get("label").cloned().unwrap();
    let revision = a.outputs.get("revision").cloned().unwrap();
    assert_eq!(chosen_label, s(&format!("label-{id}")));

    // Update: name and note from the configuration; id, the label the
    // provider chose and the revision from the prior state.
    tf.clear_calls();
    let r = w.up(&one(&[("name", "b"), ("note", "n2")])).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "a"), vec![StepOp::Update]);
    let plans = tf.plans();
    assert!(!plans.is_empty());
    for (plan, _) in &plans {
        let config = plan.config.as_ref().unwrap();
        assert_eq!(config["label"], PropertyValue::Null);
        assert_eq!(config["id"], PropertyValue::Null);
        assert_eq!(
            plan.proposed_new_state.as_ref().unwrap(),
            &[
                ("id".to_owned(), s(&id)),
                ("label".to_owned(), chosen_label.clone()),
                ("name".to_owned(), s("b")),
                ("note".to_owned(), s("n2")),
                ("revision".to_owned(), revision.clone()),
            ]
            .into()
        );
    }
    assert_eq!(thing_a(&w).outputs.get("label"), Some(&chosen_label));

    // The configuration sets the label and drops the note: its label
    // wins over the prior one; the note (not computed) is null.
    tf.clear_calls();
    expect_ok(&w.up(&one(&[("name", "b"), ("label", "mine")])).await);
    for (plan, _) in tf.plans() {
        let proposed = plan.proposed_new_state.unwrap();
        assert_eq!(proposed["label"], s("mine"));
        assert_eq!(proposed["note"], PropertyValue::Null);
        assert_eq!(proposed["id"], s(&id));
    }
    let a = thing_a(&w);
    assert_eq!(a.outputs.get("label"), Some(&s("mine")));
    assert_eq!(a.outputs.get("note"), Some(&PropertyValue::Null));
}

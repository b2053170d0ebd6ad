//! Errors a user meets with a Terraform provider: each is clear, names
//! what is wrong, exits non-zero and leaves the state as it was.

use converge_testkit::terraform_mirror::TestProvider;

use super::world::{providers_available, TfWorld};

const ITEM: &str = "resources:
  item:
    type: store:Item
    properties:
      key: k
      value: v
";

#[test]
fn a_provider_configuration_error_names_the_attribute() {
    if !providers_available() {
        return;
    }
    // No `store:directory` (nor $STORE_DIRECTORY): ConfigureProvider fails.
    let w = TfWorld::yaml("tfnoconfig", ITEM);
    w.install(TestProvider::Store, "2.0.0");
    // `plugin ls` names it, marked as a Terraform provider.
    let listed = w.run(&["plugin", "ls"]);
    let tf = &listed[listed.find("Terraform providers").expect(&listed)..];
    assert!(
        tf.lines()
            .any(|l| l.starts_with("store  2.0.0    registry.opentofu.org/converge-test/store  ")),
        "{listed}"
    );
    let failed = w.fails(&["up", "--yes"]);
    assert!(
        failed.contains("could not configure the Terraform provider store"),
        "{failed}"
    );
    assert!(failed.contains("directory is not set"), "{failed}");
    assert!(failed.contains("(attribute directory)"), "{failed}");
    assert!(w.object_names().is_empty());
    assert!(w.resource("item").is_none());

    // Configured, the same program works.
    w.configure_directory("store");
    w.run(&["up", "--yes"]);
    assert_eq!(w.object_names(), ["k"]);
}

#[test]
fn an_unknown_property_is_a_check_failure_naming_it() {
    if !providers_available() {
        return;
    }
    let w = TfWorld::yaml("tfunknownprop", ITEM);
    w.install(TestProvider::Store, "2.0.0");
    w.configure_directory("store");
    w.run(&["up", "--yes"]);
    let before = w.resources();

    w.set_yaml(&format!("{ITEM}      colour: red\n"));
    let failed = w.fails(&["up", "--yes"]);
    assert!(failed.contains(r#"unknown property "colour""#), "{failed}");
    assert!(failed.contains("store:index/item:Item::item"), "{failed}");
    assert_eq!(w.resources(), before, "the state is unchanged");
    assert_eq!(w.object("k").unwrap()["revision"], 1);
}

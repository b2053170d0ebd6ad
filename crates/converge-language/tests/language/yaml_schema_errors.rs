//! Property names checked against the package schemas: every reference to
//! a property a resource or function result does not have, and every input
//! or argument name a schema does not list, is reported with its file,
//! line and column before anything registers (the stack included). The
//! built-in providers' schemas, and a schema a provider answers.

use std::sync::Arc;

use converge_plugin::builtin::BuiltinLoader;
use converge_testkit::{Lifecycle, MockCloud, MockLoader, MockProvider};

use crate::yaml_lifecycle::{expect_err, expect_ok, Project};

fn builtins() -> Lifecycle {
    Lifecycle::new(MockCloud::new(), Arc::new(BuiltinLoader::new()))
}

/// Package `pkg`: `Thing` with a nested object type, a list of objects,
/// an `any` property and a map; the function `getThing`.
fn schema() -> serde_json::Value {
    let nested = serde_json::json!({"$ref": "#/types/pkg:index/Nested:Nested"});
    let any = serde_json::json!({"$ref": "pulumi.json#/Any"});
    serde_json::json!({
        "name": "pkg",
        "types": {
            "pkg:index/Nested:Nested": {"type": "object", "properties": {
                "leaf": {"type": "string"},
                "items": {"type": "array", "items": {"$ref": "#/types/pkg:index/Item:Item"}},
            }},
            "pkg:index/Item:Item": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
        "resources": {"pkg:index:Thing": {
            "inputProperties": {"value": {"type": "string"}, "nested": nested, "meta": any},
            "properties": {
                "value": {"type": "string"}, "nested": nested, "meta": any,
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "length": {"type": "number"},
            },
        }},
        "functions": {"pkg:index:getThing": {
            "inputs": {"properties": {"name": {"type": "string"}}},
            "outputs": {"type": "object", "properties": {"nested": nested, "meta": any}},
        }},
    })
}

fn with_schema() -> Lifecycle {
    let provider = MockProvider::new("pkg")
        .with_cloud(MockCloud::new())
        .with_schema(&schema());
    let cloud = provider.cloud().clone();
    Lifecycle::new(cloud, Arc::new(MockLoader::single(Arc::new(provider))))
}

/// Previews `body` in `w`: the program's errors, one a line; nothing
/// registered.
async fn errors_in(w: &mut Lifecycle, body: &str) -> String {
    let p = Project::new();
    let program = p.program(body);
    let e = expect_err(&w.preview(&program).await);
    assert!(w.snapshot.resources.is_empty());
    e.strip_prefix("the program failed: ")
        .unwrap_or_else(|| panic!("not the program's error: {e}"))
        .to_owned()
}

async fn builtin_errors(body: &str) -> String {
    errors_in(&mut builtins(), body).await
}

async fn schema_errors(body: &str) -> String {
    errors_in(&mut with_schema(), body).await
}

const PET: &str = "resources:
  pet:
    type: random:RandomPet
";

#[tokio::test]
async fn an_unknown_output_of_a_builtin_resource() {
    let e = builtin_errors(&format!("{PET}outputs:\n  name: ${{pet.nosuchproperty}}\n")).await;
    assert_eq!(
        e,
        "Pulumi.yaml:7:9: resource 'pet' (random:index/randomPet:RandomPet) has no property \
         'nosuchproperty'; it has id, keepers, length, prefix, separator, urn"
    );
    let e = builtin_errors(&format!(
        "{PET}outputs:\n  name: \"a ${{pet.lenght}} pet\"\n"
    ))
    .await;
    assert_eq!(
        e,
        "Pulumi.yaml:7:12: resource 'pet' (random:index/randomPet:RandomPet) has no property \
         'lenght'; did you mean 'length'?"
    );
}

#[tokio::test]
async fn id_urn_and_declared_outputs_are_accepted() {
    let mut w = builtins();
    let p = Project::new();
    let program = p.program(&format!(
        "{PET}    properties:
      keepers:
        a: b
  password:
    type: random:RandomPassword
    properties:
      length: 12
outputs:
  id: ${{pet.id}}
  urn: ${{pet.urn}}
  keeper: ${{pet.keepers.a}}
  result: ${{password.result}}
  length: ${{pet.length}}
"
    ));
    expect_ok(&w.preview(&program).await);
    expect_ok(&w.up(&program).await);
}

#[tokio::test]
async fn nested_properties_are_checked_as_deep_as_the_schema_describes() {
    let e = schema_errors(
        "resources:
  res:
    type: pkg:Thing
outputs:
  a: ${res.nested.leef}
  b: ${res.nested.items[0].nme}
  c: ${res.nested.leaf.more}
  d: ${res.labels.any.more}
  e: ${res.nested.items.name}
  f: ${res.length[0]}
",
    )
    .await;
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "Pulumi.yaml:7:6: 'res.nested' (pkg:index/Nested:Nested) has no property 'leef'; \
             did you mean 'leaf'?",
            "Pulumi.yaml:8:6: 'res.nested.items[0]' (pkg:index/Item:Item) has no property \
             'nme'; did you mean 'name'?",
            "Pulumi.yaml:9:6: 'res.nested.leaf' is a string; it has no property 'more'",
            "Pulumi.yaml:10:6: 'res.labels.any' is a string; it has no property 'more'",
            "Pulumi.yaml:11:6: 'res.nested.items' is a list; it has no property 'name'",
            "Pulumi.yaml:12:6: 'res.length' is a number; it has no element [0]",
        ],
        "{e}"
    );
}

#[tokio::test]
async fn an_any_property_is_not_checked_further() {
    let mut w = with_schema();
    let p = Project::new();
    let program = p.program(
        "resources:
  res:
    type: pkg:Thing
    properties:
      meta:
        whatever: [1, {deep: true}]
  other:
    type: pkg:Thing
outputs:
  a: ${res.meta.whatever[1].deep}
  b: ${other.meta.anything.at[3].all}
  c: ${other.nested.items[2].name}
",
    );
    expect_ok(&w.preview(&program).await);
    // A built-in list of `any`: its elements are not checked either.
    let mut w = builtins();
    let program = p.program(
        "resources:
  cmd:
    type: command:local:Command
    properties:
      create: echo hi
      triggers: [{a: 1}]
outputs:
  t: ${cmd.triggers[0].a}
",
    );
    expect_ok(&w.preview(&program).await);
}

#[tokio::test]
async fn an_unknown_property_of_an_invoke_result() {
    let e = builtin_errors(
        "variables:
  run:
    fn::invoke:
      function: command:local:run
      arguments:
        command: echo hi
  out:
    fn::invoke:
      function: command:local:run
      arguments:
        command: echo hi
      return: stdot
outputs:
  a: ${run.stdot}
  b: ${run.stdout}
",
    )
    .await;
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "Pulumi.yaml:14:15: the result of function command:local:run has no property \
             'stdot'; did you mean 'stdout'?",
            "Pulumi.yaml:16:6: variable 'run' (the result of command:local:run) has no \
             property 'stdot'; did you mean 'stdout'?",
        ],
        "{e}"
    );
    // Through a variable holding a property of the result, and secret.
    let e = schema_errors(
        "variables:
  thing:
    fn::secret:
      fn::invoke:
        function: pkg:getThing
        return: nested
  items: ${thing.items}
outputs:
  a: ${thing.leaf}
  b: ${items[0].nam}
",
    )
    .await;
    assert_eq!(
        e,
        "Pulumi.yaml:12:6: 'items[0]' (pkg:index/Item:Item) has no property 'nam'; \
         did you mean 'name'?"
    );
}

#[tokio::test]
async fn input_and_argument_names_are_checked() {
    let e = builtin_errors(&format!(
        "{PET}    properties:
      lenght: 2
variables:
  out:
    fn::invoke:
      function: command:local:run
      arguments:
        comand: echo hi
"
    ))
    .await;
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(
        lines,
        [
            "Pulumi.yaml:7:7: resource 'pet' (random:index/randomPet:RandomPet) has no input \
             property 'lenght'; did you mean 'length'?",
            "Pulumi.yaml:13:9: function command:local:run has no argument 'comand'; \
             did you mean 'command'?",
        ],
        "{e}"
    );
    // Nested literals against their object types; maps and `any` take
    // any key.
    let e = schema_errors(
        "resources:
  res:
    type: pkg:Thing
    properties:
      nested:
        leaf: x
        items:
          - name: a
          - nmae: b
      meta:
        free: form
",
    )
    .await;
    assert_eq!(
        e,
        "Pulumi.yaml:11:13: 'nested.items[1]' (pkg:index/Item:Item) has no property 'nmae'; \
         did you mean 'name'?"
    );
}

#[tokio::test]
async fn every_problem_is_reported_together_with_unknown_types() {
    let e = builtin_errors(
        "resources:
  pet:
    type: random:RandomPett
  other:
    type: random:RandomPet
outputs:
  a: ${pet.anything}
  b: ${other.nope}
",
    )
    .await;
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert!(lines[0].starts_with("Pulumi.yaml:5:11: package random has no resource type"));
    assert!(
        lines[1].starts_with(
            "Pulumi.yaml:10:6: resource 'other' (random:index/randomPet:RandomPet) has no \
             property 'nope'"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn without_a_schema_nothing_is_checked() {
    let provider = MockProvider::new("pkg").with_cloud(MockCloud::new());
    let cloud = provider.cloud().clone();
    let mut w = Lifecycle::new(cloud, Arc::new(MockLoader::single(Arc::new(provider))));
    let p = Project::new();
    let program = p.program(
        "resources:
  res:
    type: pkg:Thing
    properties:
      anything: 1
outputs:
  a: ${res.whatever.else}
",
    );
    expect_ok(&w.preview(&program).await);
}

//! Builtin functions as Pulumi YAML programs spell them: `Fn::Secret`,
//! `Fn::Join`, `Fn::Invoke` with `Function`/`Arguments`/`Return`, and the
//! `fn::<pkg>:<module>:<function>` invoke shorthand, run against the
//! built-in providers. Other casings than the documented one are
//! accepted with a warning, as Pulumi YAML does.

use std::sync::Arc;

use converge_plugin::builtin::BuiltinLoader;
use converge_testkit::{Lifecycle, MockCloud};

use super::*;

fn builtins() -> Lifecycle {
    Lifecycle::new(MockCloud::new(), Arc::new(BuiltinLoader::new()))
}

const CAPITALISED: &str = "resources:
  pet:
    type: random:RandomPet
variables:
  greeting:
    Fn::Invoke:
      Function: command:local:run
      Arguments:
        command: echo hello
      Return: stdout
  ordered:
    fn::invoke:
      function: command:local:run
      Arguments:
        command: echo ordered
      RETURN: stdout
      Options:
        DependsOn:
          - ${pet}
outputs:
  token:
    Fn::Secret: s3cr3t-token
  joined:
    Fn::Join: [\"-\", [a, \"${pet.id}\"]]
  greeting: ${greeting}
  ordered: ${ordered}
  doc:
    FN::TOJSON: {a: 1}
";

#[tokio::test]
async fn capitalised_functions_run_as_documented_ones() {
    let mut w = builtins();
    let program = Project::new().program(CAPITALISED);
    expect_ok(&w.preview(&program).await);
    expect_ok(&w.up(&program).await);
    let outputs = stack_outputs(&w);
    // Fn::Secret is a secret, not the literal object nor plaintext.
    assert_eq!(outputs.get("token"), Some(&secret("s3cr3t-token")));
    let pet = state(&w, "pet").id.clone().expect("the pet has an id");
    assert_eq!(outputs.get("joined"), Some(&s(&format!("a-{pet}"))));
    assert_eq!(outputs.get("greeting"), Some(&s("hello")));
    assert_eq!(outputs.get("ordered"), Some(&s("ordered")));
    assert_eq!(outputs.get("doc"), Some(&s("{\"a\":1}")));
    // No output is left a literal `Fn::…` object.
    for (name, value) in &outputs {
        assert!(
            !format!("{value:?}").to_lowercase().contains("fn::"),
            "{name} = {value:?}"
        );
    }
}

#[tokio::test]
async fn other_casings_are_warnings_where_they_are_written() {
    let program = Project::new().program(CAPITALISED);
    let warnings: Vec<String> = program.warnings().iter().map(|w| w.to_string()).collect();
    let read_as = |at: &str, written: &str, documented: &str| {
        format!(
            "Pulumi.yaml:{at}: '{written}' is read as '{documented}'; write it so, as Pulumi \
             YAML may require the documented casing in the future"
        )
    };
    assert_eq!(
        warnings,
        vec![
            read_as("8:5", "Fn::Invoke", "fn::invoke"),
            read_as("9:7", "Function", "function"),
            read_as("10:7", "Arguments", "arguments"),
            read_as("12:7", "Return", "return"),
            read_as("16:7", "Arguments", "arguments"),
            read_as("18:7", "RETURN", "return"),
            read_as("19:7", "Options", "options"),
            read_as("20:9", "DependsOn", "dependsOn"),
            read_as("24:5", "Fn::Secret", "fn::secret"),
            read_as("26:5", "Fn::Join", "fn::join"),
            read_as("30:5", "FN::TOJSON", "fn::toJSON"),
        ]
    );
    // The documented spellings warn about nothing.
    let plain = Project::new().program(
        "outputs:
  token:
    fn::secret: x
  joined:
    fn::join: [\"-\", [a, b]]
",
    );
    assert!(plain.warnings().is_empty(), "{:?}", plain.warnings());
}

#[tokio::test]
async fn the_invoke_shorthand_calls_the_function_through_the_schema() {
    let mut w = builtins();
    let program = Project::new().program(
        "variables:
  hello:
    fn::command:local:run:
      command: echo shorthand
  upper:
    Fn::command:local:run:
      command: echo again
outputs:
  stdout: ${hello.stdout}
  again: ${upper.stdout}
",
    );
    assert!(program.warnings().is_empty(), "{:?}", program.warnings());
    expect_ok(&w.up(&program).await);
    let outputs = stack_outputs(&w);
    assert_eq!(outputs.get("stdout"), Some(&s("shorthand")));
    assert_eq!(outputs.get("again"), Some(&s("again")));
}

#[tokio::test]
async fn an_unknown_shorthand_function_is_reported_at_its_key() {
    let mut w = builtins();
    let program = Project::new().program(
        "variables:
  hello:
    fn::command:local:runn:
      command: echo hello
",
    );
    let e = expect_err(&w.up(&program).await);
    assert!(
        e.contains(
            "Pulumi.yaml:5:5: package command has no function 'command:local:runn'; \
             did you mean 'command:local:run'?"
        ),
        "{e}"
    );
    assert!(w.snapshot.resources.is_empty());
}

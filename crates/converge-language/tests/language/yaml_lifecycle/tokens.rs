//! Type and function tokens through the package schemas: the YAML
//! examples of the random and command packages' documentation, written as
//! the documentation writes them, run against the built-in providers.

use std::sync::Arc;

use converge_engine::StepOp;
use converge_plugin::builtin::BuiltinLoader;
use converge_testkit::{Lifecycle, MockCloud};

use super::*;

fn builtins() -> Lifecycle {
    Lifecycle::new(MockCloud::new(), Arc::new(BuiltinLoader::new()))
}

const PET: &str = "random:index/randomPet:RandomPet";

/// The documentation's examples, shorthand and all.
const DOCS_RANDOM: &str = "resources:
  server:
    type: random:RandomPet
  password:
    type: random:RandomPassword
    properties:
      length: 16
      special: true
      overrideSpecial: '!#$%&*()-_=+[]{}<>:?'
outputs:
  serverName: ${server.id}
";

#[tokio::test]
async fn the_random_docs_examples_run_unchanged() {
    let mut w = builtins();
    let p = Project::new();
    let program = p.program(DOCS_RANDOM);
    expect_ok(&w.preview(&program).await);
    expect_ok(&w.up(&program).await);
    assert_eq!(state(&w, "server").urn.type_token(), PET);
    let password = state(&w, "password");
    assert_eq!(
        password.urn.type_token(),
        "random:index/randomPassword:RandomPassword"
    );
    let result = password.outputs.get("result").expect("a password");
    let PropertyValue::Secret(inner) = result else {
        panic!("the password is not secret: {result:?}");
    };
    assert_eq!(inner.as_str().map(|s| s.chars().count()), Some(16));
    assert!(matches!(
        stack_outputs(&w).get("serverName"),
        Some(PropertyValue::String(name)) if name.contains('-')
    ));
}

#[tokio::test]
async fn every_spelling_of_a_type_names_the_same_resource() {
    let mut w = builtins();
    let p = Project::new();
    let with = |ty: &str| format!("resources:\n  pet:\n    type: {ty}\n");
    let r = w.up(&p.program(&with("random:RandomPet"))).await;
    expect_ok(&r);
    assert_eq!(ops_of(&r, "pet"), vec![StepOp::Create]);
    let id = state(&w, "pet").id.clone();
    for ty in ["random:index:RandomPet", PET, "random:RandomPet"] {
        let r = w.up(&p.program(&with(ty))).await;
        expect_ok(&r);
        assert_eq!(ops_of(&r, "pet"), vec![StepOp::Same], "{ty}");
        assert_eq!(state(&w, "pet").id, id, "{ty}");
        assert_eq!(state(&w, "pet").urn.type_token(), PET);
    }
}

#[tokio::test]
async fn the_command_docs_examples_run_unchanged() {
    let mut w = builtins();
    let p = Project::new();
    let program = p.program(
        "resources:
  hello:
    type: command:local:Command
    properties:
      create: echo hello
variables:
  greeting:
    fn::invoke:
      function: command:local:run
      arguments:
        command: echo hello
      return: stdout
outputs:
  output: ${hello.stdout}
  invoked: ${greeting}
",
    );
    expect_ok(&w.up(&program).await);
    assert_eq!(state(&w, "hello").urn.type_token(), "command:local:Command");
    let outputs = stack_outputs(&w);
    assert_eq!(outputs.get("output"), Some(&s("hello")));
    assert_eq!(outputs.get("invoked"), Some(&s("hello")));
}

#[tokio::test]
async fn an_unknown_type_is_reported_where_it_is_written_with_the_closest() {
    let mut w = builtins();
    let p = Project::new();
    let program = p.program(
        "resources:
  pet:
    type: random:RandomPett
  other:
    type: random:index:RandomPasword
",
    );
    let e = expect_err(&w.preview(&program).await);
    assert!(
        e.contains(
            "Pulumi.yaml:5:11: package random has no resource type 'random:RandomPett'; \
             did you mean 'random:index/randomPet:RandomPet'?"
        ),
        "{e}"
    );
    assert!(
        e.contains(
            "Pulumi.yaml:7:11: package random has no resource type 'random:index:RandomPasword'; \
             did you mean 'random:index/randomPassword:RandomPassword'?"
        ),
        "{e}"
    );
    // Nothing was registered, not even the stack.
    assert!(w.snapshot.resources.is_empty());
}

#[tokio::test]
async fn an_unknown_function_is_reported_where_it_is_written() {
    let mut w = builtins();
    let p = Project::new();
    let program = p.program(
        "variables:
  out:
    fn::invoke:
      function: command:local:runn
      arguments:
        command: echo hello
",
    );
    let e = expect_err(&w.up(&program).await);
    assert!(
        e.contains(
            "Pulumi.yaml:6:17: package command has no function 'command:local:runn'; \
             did you mean 'command:local:run'?"
        ),
        "{e}"
    );
}

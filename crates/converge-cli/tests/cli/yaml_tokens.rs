//! End to end: a YAML program written in the documentation's short
//! tokens, for built-in providers and a plugin, through `converge`.

use crate::common;

const PROGRAM: &str = "name: demo
runtime: yaml
resources:
  server:
    type: random:RandomPet
  password:
    type: random:RandomPassword
    properties:
      length: 16
  hello:
    type: command:local:Command
    properties:
      create: echo hello
  thing:
    type: convergetest:Thing
    properties:
      value: ${server.id}
variables:
  greeting:
    fn::invoke:
      function: command:local:run
      arguments:
        command: echo hello
      return: stdout
  objects:
    fn::invoke:
      function: convergetest:count
      return: count
outputs:
  hello: ${hello.stdout}
  greeting: ${greeting}
  objects: ${objects}
";

struct World {
    scratch: common::Scratch,
    bin: std::path::PathBuf,
}

impl World {
    fn new(program: &str) -> World {
        let scratch = common::Scratch::new(program);
        let bin = common::convergetest_bin_dir(scratch.dir.path());
        let w = World { scratch, bin };
        w.run(&["stack", "init", "dev"]);
        w
    }

    fn command(&self) -> std::process::Command {
        self.scratch.with_test_plugin(&self.bin)
    }

    fn converge(&self, args: &[&str]) -> std::process::Output {
        self.command().args(args).output().unwrap()
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.command(), args)
    }

    fn state(&self) -> String {
        std::fs::read_to_string(self.scratch.backend.join(".pulumi/stacks/demo/dev.json")).unwrap()
    }
}

#[test]
fn short_tokens_deploy_through_the_binary_and_name_the_canonical_types() {
    let w = World::new(PROGRAM);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 8 created"), "{up}");
    let outputs: serde_json::Value =
        serde_json::from_str(&w.run(&["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["hello"], "hello");
    assert_eq!(outputs["greeting"], "hello");
    assert!(outputs["objects"].is_number(), "{outputs}");
    let state = w.state();
    for canonical in [
        "random:index/randomPet:RandomPet",
        "random:index/randomPassword:RandomPassword",
        "command:local:Command",
        "convergetest:index:Thing",
    ] {
        assert!(state.contains(&format!("::{canonical}::")), "{canonical}");
    }
    // The canonical spelling is the same program: nothing changes.
    let canonical = PROGRAM
        .replace("random:RandomPet", "random:index/randomPet:RandomPet")
        .replace("random:RandomPassword", "random:index:RandomPassword")
        .replace("convergetest:Thing", "convergetest:index:Thing");
    std::fs::write(w.scratch.project.join("Pulumi.yaml"), canonical).unwrap();
    let again = w.run(&["up", "--yes"]);
    assert!(
        again.contains("8 unchanged") && !again.contains("created"),
        "{again}"
    );
    w.run(&["destroy", "--yes"]);
}

#[test]
fn an_unknown_type_is_reported_at_its_place_with_the_closest() {
    let w = World::new(
        "name: demo\nruntime: yaml\nresources:\n  thing:\n    type: convergetest:Thingy\n    properties:\n      value: x\n",
    );
    let before = w.state();
    let out = w.converge(&["preview"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "Pulumi.yaml:5:11: package convergetest has no resource type \
             'convergetest:Thingy'; did you mean 'convergetest:index:Thing'?"
        ),
        "{err}"
    );
    assert_eq!(before, w.state());
}

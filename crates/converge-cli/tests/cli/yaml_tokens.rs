//! End to end: a YAML program written in the documentation's short
//! tokens, for built-in providers and a plugin, through `converge`; and
//! its property names checked against the same schemas before anything
//! runs.

use std::collections::BTreeMap;
use std::path::Path;

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

    /// Every file of the backend, with its bytes.
    fn backend_files(&self) -> BTreeMap<String, Vec<u8>> {
        fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, root, out);
                } else {
                    let name = path.strip_prefix(root).unwrap().display().to_string();
                    out.insert(name, std::fs::read(&path).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.scratch.backend, &self.scratch.backend, &mut out);
        out
    }

    fn write_program(&self, program: &str) {
        std::fs::write(self.scratch.project.join("Pulumi.yaml"), program).unwrap();
    }

    /// `converge args…`, which must fail: its stderr.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.converge(args);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "converge {args:?} succeeded:\n{err}");
        err
    }
}

#[test]
fn short_tokens_deploy_through_the_binary_and_name_the_canonical_types() {
    let w = World::new(PROGRAM);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 5 created"), "{up}");
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
        again.contains("5 unchanged") && !again.contains("created"),
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

const PETS: &str = "name: demo
runtime: yaml
resources:
  pet:
    type: random:RandomPet
    properties:
      length: 3
outputs:
  name: ${pet.id}
";

#[test]
fn an_unknown_property_is_refused_by_preview_and_up_and_the_stack_is_untouched() {
    let w = World::new(PETS);
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 2 created"), "{up}");
    let before = w.backend_files();
    w.write_program(&PETS.replace(
        "  name: ${pet.id}\n",
        "  name: ${pet.id}\n  typo: ${pet.nosuchproperty}\n  words: ${pet.lenght}\n",
    ));
    for args in [&["preview"][..], &["up", "--yes"]] {
        let err = w.fails(args);
        assert!(
            err.contains(
                "Pulumi.yaml:10:9: resource 'pet' (random:index/randomPet:RandomPet) has no \
                 property 'nosuchproperty'; it has id, keepers, length, prefix, separator, urn"
            ),
            "{args:?}: {err}"
        );
        assert!(
            err.contains(
                "Pulumi.yaml:11:10: resource 'pet' (random:index/randomPet:RandomPet) has no \
                 property 'lenght'; did you mean 'length'?"
            ),
            "{args:?}: {err}"
        );
        assert_eq!(before, w.backend_files(), "{args:?} changed the backend");
    }
    // The stack still holds the first version, which still deploys.
    w.write_program(PETS);
    let again = w.run(&["up", "--yes"]);
    assert!(again.contains("2 unchanged"), "{again}");
}

#[test]
fn a_plugins_schema_checks_the_program_against_its_properties() {
    let w = World::new(
        "name: demo
runtime: yaml
resources:
  thing:
    type: convergetest:Thing
    properties:
      valeu: x
variables:
  objects:
    fn::invoke:
      function: convergetest:count
      return: cuont
outputs:
  length: ${thing.lenght}
  version: ${thing.pluginVersion}
",
    );
    let before = w.backend_files();
    let err = w.fails(&["preview"]);
    for expected in [
        "Pulumi.yaml:7:7: resource 'thing' (convergetest:index:Thing) has no input property \
         'valeu'; did you mean 'value'?",
        "Pulumi.yaml:12:15: the result of function convergetest:index:count has no property \
         'cuont'; did you mean 'count'?",
        "Pulumi.yaml:14:11: resource 'thing' (convergetest:index:Thing) has no property \
         'lenght'; did you mean 'length'?",
    ] {
        assert!(err.contains(expected), "{expected}\n{err}");
    }
    assert!(!err.contains("pluginVersion"), "{err}");
    assert_eq!(before, w.backend_files());
}

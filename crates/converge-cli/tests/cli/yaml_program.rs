//! The parts of a Pulumi YAML program other than resource options and
//! builtins, through `converge`: where the program is (`Pulumi.yaml`,
//! `Main.yaml` beside it, `main:` naming a directory, the runtime option
//! `compiler`), the `pulumi`
//! variable (`cwd` is the `main` directory, as Pulumi runs the program
//! there, and file functions read from it; `rootDirectory` stays the
//! project's), the program's own `config:` block and its deprecated
//! name `configuration:`, with each type and the errors for a value of
//! the wrong type (the state unchanged), variables and outputs.

use crate::common;

use serde_json::{json, Value};

use common::Scratch;

struct World {
    scratch: Scratch,
}

impl World {
    fn new(pulumi_yaml: &str) -> World {
        let w = World {
            scratch: Scratch::new(pulumi_yaml),
        };
        w.run(&["stack", "init", "dev"]);
        w
    }

    fn file(&self, path: &str, text: &str) {
        let path = self.scratch.project.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.scratch.command("pw"), args)
    }

    fn fails(&self, args: &[&str]) -> String {
        common::failure_of(self.scratch.command("pw"), args)
    }

    fn outputs(&self) -> Value {
        let out = self.run(&["stack", "output", "--json", "--show-secrets"]);
        serde_json::from_str(&out).unwrap()
    }

    fn state_file(&self) -> Vec<u8> {
        std::fs::read(self.scratch.backend.join(".pulumi/stacks/prog/dev.json")).unwrap()
    }
}

#[test]
fn main_yaml_beside_the_project_file_is_the_program() {
    let w = World::new("name: prog\nruntime: yaml\nconfig:\n  greeting: {default: hello}\n");
    w.file(
        "Main.yaml",
        "resources:\n  pet:\n    type: random:RandomPet\noutputs:\n  \
         greeting: ${greeting}\n  file: main\n",
    );
    w.run(&["up", "--yes"]);
    let out = w.outputs();
    assert_eq!(out["greeting"], "hello", "Pulumi.yaml's config counts");
    assert_eq!(out["file"], "main");
    // An error names Main.yaml and its line.
    w.file(
        "Main.yaml",
        "resources:\n  pet:\n    tpye: random:RandomPet\n",
    );
    let e = w.fails(&["preview"]);
    assert!(e.contains("Main.yaml:3:5: unknown property 'tpye'"), "{e}");
}

/// The runtime option `compiler`: its standard output is the program,
/// run in the program's directory; a compiler that fails or prints
/// nothing stops the operation with the state unchanged, never runs a
/// program without resources (which would delete the stack's resources).
#[test]
fn the_compiler_option_writes_the_program() {
    let w = World::new(
        "name: prog\nruntime:\n  name: yaml\n  options:\n    compiler: cat 'gen/program.yaml'\n\
         config:\n  greeting: {default: hi}\n",
    );
    w.file(
        "gen/program.yaml",
        "resources:\n  pet:\n    type: random:RandomPet\noutputs:\n  greeting: ${greeting}\n  \
         pet: ${pet.id}\n",
    );
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 2 created"), "{up}");
    assert_eq!(w.outputs()["greeting"], "hi");
    let pet = w.outputs()["pet"].clone();

    // A mistake in the generated program is reported in its output's name.
    w.file(
        "gen/program.yaml",
        "resources:\n  pet:\n    tpye: random:RandomPet\n",
    );
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("<stdout from compiler cat>:3:5: unknown property 'tpye'"),
        "{e}"
    );

    let before = w.state_file();
    std::fs::remove_file(w.scratch.project.join("gen/program.yaml")).unwrap();
    let e = w.fails(&["up", "--yes"]);
    assert!(
        e.contains("compiler `cat 'gen/program.yaml'` failed"),
        "{e}"
    );
    assert!(e.contains("No such file"), "its stderr is shown: {e}");
    w.file("gen/program.yaml", "");
    let e = w.fails(&["up", "--yes"]);
    assert!(e.contains("wrote nothing"), "{e}");
    assert_eq!(
        w.state_file(),
        before,
        "a failed compiler changed the state"
    );
    assert_eq!(w.outputs()["pet"], pet);
}

#[test]
fn main_names_the_directory_the_program_runs_in() {
    let w = World::new("name: prog\nruntime: yaml\nmain: app\n");
    w.file(
        "app/Main.yaml",
        "outputs:\n  cwd: ${pulumi.cwd}\n  root: ${pulumi.rootDirectory}\n  \
         data:\n    fn::readFile: data.txt\n",
    );
    w.file("app/data.txt", "from the app directory");
    w.file("data.txt", "from the project directory");
    w.run(&["up", "--yes"]);
    let out = w.outputs();
    let project = w.scratch.project.canonicalize().unwrap();
    let path = |v: &Value| {
        std::path::PathBuf::from(v.as_str().unwrap())
            .canonicalize()
            .unwrap()
    };
    assert_eq!(path(&out["cwd"]), project.join("app"));
    assert_eq!(path(&out["root"]), project);
    assert_eq!(out["data"], "from the app directory");

    // A `main` outside the project is refused before anything runs.
    w.file(
        "Pulumi.yaml",
        "name: prog\nruntime: yaml\nmain: ../elsewhere\n",
    );
    let before = w.state_file();
    let e = w.fails(&["up", "--yes"]);
    assert!(e.contains("must be a subfolder"), "{e}");
    assert_eq!(w.state_file(), before);

    // `main` may name the Main.yaml itself.
    w.file(
        "Pulumi.yaml",
        "name: prog
runtime: yaml
main: app/Main.yaml
",
    );
    let same = w.run(&["preview", "--expect-no-changes"]);
    assert!(same.contains("unchanged"), "{same}");
    // A `main` that names a directory without a Main.yaml, or another
    // file, is refused: never a program without resources, which would
    // delete the stack's.
    std::fs::create_dir_all(w.scratch.project.join("typo")).unwrap();
    w.file(
        "app/other.yaml",
        "resources: {}
",
    );
    for (main, says) in [
        ("typo", "`main: typo` names a directory without a Main.yaml"),
        (
            "app/other.yaml",
            "`main: app/other.yaml` names a file that is not a Main.yaml",
        ),
    ] {
        w.file(
            "Pulumi.yaml",
            &format!("name: prog\nruntime: yaml\nmain: {main}\n"),
        );
        for command in [&["preview"][..], &["up", "--yes"][..]] {
            let e = w.fails(command);
            assert!(e.contains(says), "{e}");
        }
        assert_eq!(w.state_file(), before);
    }
}

#[test]
fn the_pulumi_variable_variables_and_outputs() {
    let w = World::new(
        "name: prog\nruntime: yaml\nvariables:\n  \
         who: ${pulumi.project}/${pulumi.stack}\n  \
         both: [\"${who}\", \"${pulumi.organization}\"]\n\
         outputs:\n  who: ${who}\n  both: ${both}\n  second: ${both[1]}\n  \
         object: {a: 1, b: [true, null]}\n  cwd: ${pulumi.cwd}\n",
    );
    w.run(&["up", "--yes"]);
    let out = w.outputs();
    assert_eq!(out["who"], "prog/dev");
    assert_eq!(out["both"], json!(["prog/dev", "organization"]));
    assert_eq!(out["second"], "organization");
    assert_eq!(out["object"], json!({"a": 1, "b": [true, null]}));
    let cwd = std::path::PathBuf::from(out["cwd"].as_str().unwrap());
    assert_eq!(
        cwd.canonicalize().unwrap(),
        w.scratch.project.canonicalize().unwrap(),
        "without main, the project directory"
    );
    w.file(
        "Pulumi.yaml",
        "name: prog\nruntime: yaml\noutputs:\n  x: ${pulumi.owner}\n",
    );
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("Pulumi.yaml:4:6: unknown property 'pulumi.owner'"),
        "{e}"
    );
}

const TYPED: &str = "name: prog
runtime: yaml
SECTION:
  name: {type: String}
  count: {type: Integer, default: 2}
  ratio: {type: Number, default: 0.5}
  enabled: {type: Boolean, default: false}
  zones: {type: List<String>, default: [a, b]}
  sizes: {type: List<Integer>, default: [1, 2]}
  token: {type: String, secret: true, default: s3cr3t-default}
outputs:
  name: ${name}
  count: ${count}
  ratio: ${ratio}
  enabled: ${enabled}
  zones: ${zones}
  sizes: ${sizes}
  token: ${token}
";

fn typed_config(section: &str) {
    let w = World::new(&TYPED.replace("SECTION", section));
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("name"),
        "a value without a default is required: {e}"
    );
    w.run(&["config", "set", "name", "web"]);
    w.run(&["config", "set", "count", "3"]);
    w.run(&["config", "set", "enabled", "true"]);
    w.run(&["up", "--yes"]);
    let out = w.outputs();
    assert_eq!(out["name"], "web");
    assert_eq!(out["count"], 3);
    assert_eq!(out["ratio"], 0.5);
    assert_eq!(out["enabled"], true);
    assert_eq!(out["zones"], json!(["a", "b"]));
    assert_eq!(out["sizes"], json!([1, 2]));
    assert_eq!(out["token"], "s3cr3t-default");
    let shown = w.run(&["stack", "output"]);
    assert!(!shown.contains("s3cr3t-default"), "{shown}");
    let state = String::from_utf8(w.state_file()).unwrap();
    assert!(!state.contains("s3cr3t-default"), "the secret is encrypted");

    // A value of the wrong type is refused, the state unchanged.
    let before = w.state_file();
    for (key, value, line) in [
        ("count", "many", "Pulumi.yaml:5:3: config 'count' must be an Integer, but the stack sets it to \"many\""),
        ("enabled", "maybe", "Pulumi.yaml:7:3: config 'enabled' must be a Boolean, but the stack sets it to \"maybe\""),
        ("ratio", "half", "Pulumi.yaml:6:3: config 'ratio' must be a Number, but the stack sets it to \"half\""),
    ] {
        w.run(&["config", "set", key, value]);
        let e = w.fails(&["up", "--yes"]);
        // Only that error: the outputs that use the value add none.
        assert!(e.contains(&format!("the program has errors:\n{line}\n")), "{e}");
        assert_eq!(w.state_file(), before, "{key}={value}");
        w.run(&["config", "rm", key]);
    }
    w.run(&["config", "set", "--path", "sizes[0]", "x"]);
    let e = w.fails(&["up", "--yes"]);
    assert!(
        e.contains("config 'sizes' must be a List<Integer>") && !e.contains("is not a resource"),
        "{e}"
    );
    assert_eq!(w.state_file(), before);
}

#[test]
fn config_types_defaults_and_secrets() {
    typed_config("config");
}

#[test]
fn configuration_is_the_deprecated_name_of_config() {
    typed_config("configuration");
}

#[test]
fn resource_properties_type_name_and_default_provider() {
    let w = World::new(
        "name: prog\nruntime: yaml\nresources:\n  prov:\n    type: pulumi:providers:command\n    \
         defaultProvider: true\n  c:\n    type: command:local:Command\n    \
         name: logical-name\n    properties:\n      create: echo hi\n\
         outputs:\n  out: ${c.stdout}\n",
    );
    w.run(&["up", "--yes"]);
    assert_eq!(w.outputs()["out"], "hi");
    let export: Value = serde_json::from_str(&w.run(&["stack", "export"])).unwrap();
    let resources = export["deployment"]["resources"].as_array().unwrap();
    let urn = |r: &Value| r["urn"].as_str().unwrap().to_owned();
    let prov = resources
        .iter()
        .find(|r| urn(r).ends_with("pulumi:providers:command::prov"))
        .expect("the provider");
    let c = resources
        .iter()
        .find(|r| urn(r).ends_with("command:local:Command::logical-name"))
        .expect("the resource under its name:");
    assert_eq!(
        c["provider"],
        format!("{}::{}", urn(prov), prov["id"].as_str().unwrap()),
        "the defaultProvider is the package's provider"
    );
    // An unknown property of a resource is an error naming the closest.
    w.file(
        "Pulumi.yaml",
        "name: prog\nruntime: yaml\nresources:\n  c:\n    type: command:local:Command\n    \
         propertes: {create: echo hi}\n",
    );
    let e = w.fails(&["preview"]);
    assert!(
        e.contains("Pulumi.yaml:6:5: unknown property 'propertes' of resource 'c'; did you mean 'properties'?"),
        "{e}"
    );
}

#[test]
fn an_updates_outputs_print_as_the_preview_shows_them() {
    let w = World::new(
        "name: prog\nruntime: yaml\noutputs:\n  obj:\n    a: 1\n    nested: {b: [1, 2], c: x}\n  \
         empty: {}\n  hidden:\n    fn::secret: {k: v}\n  word: hello\n  count: 3\n",
    );
    let up = w.run(&["up", "--yes"]);
    let outputs = &up[up.rfind("Outputs:\n").expect(&up)..up.rfind("\nResources:").unwrap()];
    assert_eq!(
        outputs,
        "Outputs:
    count : 3
    empty : {}
    hidden: [secret]
    obj   : {
        a     : 1
        nested: {
            b: [
                [0]: 1
                [1]: 2
            ]
            c: \"x\"
        }
    }
    word  : \"hello\"
",
        "strings are quoted, as Pulumi prints them: {up}"
    );
}

/// Object keys are expressions as string values are: `${…}` interpolates
/// (in a resource's inputs too), `$${` is a literal `${`, and a secret in
/// a key makes the whole object secret.
#[test]
fn object_keys_interpolate() {
    let w = World::new(
        "name: prog\nruntime: yaml\nconfig:\n  secretKey: {type: string, secret: true}\n\
         variables:\n  k: dyn\nresources:\n  pet:\n    type: random:RandomPet\n    properties:\n      \
         keepers:\n        \"${pulumi.stack}-key\": v\noutputs:\n  keys:\n    \"$${lit}\": 1\n    \
         \"${k}\": 2\n    \"pre-${k}\": 3\n    plain: 4\n  hidden:\n    \"${secretKey}\": 5\n",
    );
    w.run(&["config", "set", "--secret", "secretKey", "s3cr3t"]);
    w.run(&["up", "--yes"]);
    let out = w.outputs();
    assert_eq!(
        out["keys"],
        json!({"${lit}": 1, "dyn": 2, "pre-dyn": 3, "plain": 4})
    );
    assert_eq!(out["hidden"], json!({"s3cr3t": 5}));
    let shown = w.run(&["stack", "output", "hidden"]);
    assert!(shown.contains("[secret]"), "{shown}");
    let state = String::from_utf8(w.state_file()).unwrap();
    assert!(state.contains("\"dev-key\""), "{state}");
    assert!(!state.contains("s3cr3t"), "a secret key in plaintext");
    assert!(w.run(&["preview"]).contains("unchanged"));
}

/// A resource's fields and options in another case (`Type:`,
/// `Properties:`, `Options:`, `DependsOn:`) are read as Pulumi YAML reads
/// them, with a warning at each that names the documented spelling.
#[test]
fn resource_fields_in_another_case_are_read_with_a_warning() {
    let w = World::new(
        "name: prog\nruntime: yaml\nresources:\n  a:\n    type: random:RandomPet\n  b:\n    \
         Type: random:RandomString\n    Properties:\n      length: 4\n    Options:\n      \
         DependsOn:\n        - ${a}\n",
    );
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("+ 3 created"), "{up}");
    assert!(
        up.contains("Pulumi.yaml:7:5: 'Type' is read as 'type'")
            && up.contains("Pulumi.yaml:11:7: 'DependsOn' is read as 'dependsOn'"),
        "{up}"
    );
    let export: Value = serde_json::from_str(&w.run(&["stack", "export"])).unwrap();
    let b = export["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::b"))
        .unwrap()
        .clone();
    assert_eq!(b["inputs"]["length"], 4);
    assert_eq!(b["dependencies"].as_array().unwrap().len(), 1, "{b}");
}

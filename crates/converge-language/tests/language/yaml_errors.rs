//! Bad programs: every static problem is reported with its file, line and
//! column, before anything runs.

use std::collections::BTreeMap;
use std::path::Path;

use converge_language::yaml::{ConfigValue, YamlErrors, YamlOptions, YamlProgram};

const HEADER: &str = "name: proj\nruntime: yaml\n";

fn options(config: &[(&str, &str)]) -> YamlOptions {
    YamlOptions {
        project: "proj".to_owned(),
        stack: "dev".to_owned(),
        config: config
            .iter()
            .map(|(k, v)| ((*k).to_owned(), ConfigValue::plain(*v)))
            .collect::<BTreeMap<_, _>>(),
        ..YamlOptions::default()
    }
}

fn load_in(
    dir: &Path,
    files: &[(&str, &str)],
    config: &[(&str, &str)],
) -> Result<YamlProgram, YamlErrors> {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    YamlProgram::load(dir, options(config))
}

/// Loads `HEADER + body` as Pulumi.yaml; returns every error, one a line.
fn errors_with(body: &str, config: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{HEADER}{body}");
    match load_in(dir.path(), &[("Pulumi.yaml", &text)], config) {
        Ok(_) => panic!("the program loaded:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn errors(body: &str) -> String {
    errors_with(body, &[])
}

#[test]
fn unknown_reference_with_suggestion() {
    let e = errors(
        "resources:
  bucket:
    type: pkg:index:Bucket
  obj:
    type: pkg:index:Object
    properties:
      bucket: ${bukcet.id}
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:9:15: 'bukcet' is not a resource, variable or config value; did you mean 'bucket'?"
    );
}

#[test]
fn unknown_reference_inside_an_interpolation_points_at_it() {
    let e = errors(
        "variables:
  greeting: \"hello ${nobody}\"
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:4:20: 'nobody' is not a resource, variable or config value"
    );
}

#[test]
fn unknown_property_of_a_config_declaration() {
    let e = errors(
        "config:
  size:
    tpye: Number
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:5:5: unknown property 'tpye' of config 'size'; did you mean 'type'?"
    );
}

#[test]
fn property_of_a_scalar_config_value() {
    let e = errors_with(
        "config:
  region:
    type: String
variables:
  r: ${region.name}
",
        &[("proj:region", "eu")],
    );
    assert_eq!(
        e,
        "Pulumi.yaml:7:6: config 'region' is a String; it has no property 'name'"
    );
}

#[test]
fn unknown_config_type() {
    let e = errors(
        "config:
  n:
    type: Numbr
    default: 1
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:5:11: unknown config type 'Numbr'; did you mean 'Number'?"
    );
}

#[test]
fn config_default_of_the_wrong_type() {
    let e = errors(
        "config:
  n:
    type: Number
    default: many
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:6:14: the default of config 'n' is a string, not a Number"
    );
}

#[test]
fn config_value_of_the_wrong_type_and_missing_config() {
    let e = errors_with(
        "config:
  n:
    type: Integer
  name: {type: String}
",
        &[("proj:n", "1.5")],
    );
    assert_eq!(
        e,
        "Pulumi.yaml:4:3: config 'n' must be an Integer, but the stack sets it to \"1.5\"\n\
         Pulumi.yaml:6:3: config 'name' has no value in the stack and no default"
    );
}

#[test]
fn a_secret_config_value_of_the_wrong_type_is_not_shown() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{HEADER}config:\n  n:\n    type: Number\n  pin:\n    type: Integer\n    secret: true\n"
    );
    let mut opts = options(&[("proj:pin", "12ab")]);
    opts.config
        .insert("proj:n".to_owned(), ConfigValue::secret("s3cr3t"));
    std::fs::write(dir.path().join("Pulumi.yaml"), text).unwrap();
    let e = YamlProgram::load(dir.path(), opts)
        .err()
        .unwrap()
        .to_string();
    assert_eq!(
        e,
        "Pulumi.yaml:4:3: config 'n' must be a Number, but the stack sets it to a secret value\n\
         Pulumi.yaml:6:3: config 'pin' must be an Integer, but the stack sets it to a secret value"
    );
}

#[test]
fn dependency_cycle_through_resources() {
    let e = errors(
        "resources:
  a:
    type: pkg:index:Thing
    properties:
      v: ${b.out}
  b:
    type: pkg:index:Thing
    properties:
      v: ${a.out}
",
    );
    assert_eq!(e, "Pulumi.yaml:4:3: dependency cycle: a → b → a");
}

#[test]
fn dependency_cycle_through_a_variable_and_depends_on() {
    let e = errors(
        "variables:
  x: ${a.out}
resources:
  a:
    type: pkg:index:Thing
    options:
      dependsOn:
        - ${b}
  b:
    type: pkg:index:Thing
    properties:
      v: ${x}
",
    );
    assert_eq!(e, "Pulumi.yaml:4:3: dependency cycle: x → a → b → x");
}

#[test]
fn self_reference_is_a_cycle() {
    let e = errors(
        "resources:
  a:
    type: pkg:index:Thing
    properties:
      v: ${a.id}
",
    );
    assert_eq!(e, "Pulumi.yaml:4:3: dependency cycle: a → a");
}

#[test]
fn missing_type() {
    let e = errors(
        "resources:
  a:
    properties:
      v: 1
",
    );
    assert_eq!(e, "Pulumi.yaml:4:3: resource 'a' has no type");
}

#[test]
fn bad_type_token() {
    let e = errors(
        "resources:
  a:
    type: Thing
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:5:11: the type of resource 'a' must be a type token like pkg:module:Type"
    );
}

#[test]
fn unknown_resource_option() {
    let e = errors(
        "resources:
  a:
    type: pkg:index:Thing
    options:
      protec: true
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:7:7: unknown resource option 'protec'; did you mean 'protect'?"
    );
}

#[test]
fn unknown_resource_key() {
    let e = errors(
        "resources:
  a:
    type: pkg:index:Thing
    propertes:
      v: 1
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:6:5: unknown property 'propertes' of resource 'a'; did you mean 'properties'?"
    );
}

#[test]
fn options_that_must_name_resources() {
    let e = errors(
        "variables:
  v: 1
resources:
  p:
    type: pkg:index:Thing
  a:
    type: pkg:index:Thing
    options:
      provider: ${p}
      parent: ${v}
      dependsOn: [\"${p.id}\"]
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:11:17: provider: 'p' is a pkg:index:Thing, not a provider (pulumi:providers:<pkg>)\n\
         Pulumi.yaml:12:15: parent: 'v' is a variable, not a resource\n\
         Pulumi.yaml:13:19: dependsOn must name a resource, as ${name}"
    );
}

#[test]
fn unknown_top_level_key() {
    let e = errors("resource:\n  a:\n    type: pkg:index:Thing\n");
    assert_eq!(
        e,
        "Pulumi.yaml:3:1: unknown top-level key 'resource'; did you mean 'resources'?"
    );
}

#[test]
fn duplicate_keys() {
    let e = errors(
        "resources:
  a:
    type: pkg:index:Thing
  a:
    type: pkg:index:Other
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:6:3: duplicate key 'a' (first defined at 4:3)"
    );
}

#[test]
fn a_name_defined_twice_across_sections() {
    let e = errors(
        "variables:
  a: 1
resources:
  a:
    type: pkg:index:Thing
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:6:3: 'a' is already defined as a variable at 4:3"
    );
}

#[test]
fn bad_function_arity() {
    let e = errors(
        "variables:
  a:
    fn::join: [\",\"]
  b:
    fn::select: [0, [1], 2]
  c:
    fn::split: \"a,b\"
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:5:5: fn::join takes 2 arguments, [delimiter, values], but got 1\n\
         Pulumi.yaml:7:5: fn::select takes 2 arguments, [index, list], but got 3\n\
         Pulumi.yaml:9:5: fn::split takes a list of 2 arguments, [delimiter, source], not a string"
    );
}

#[test]
fn wrong_literal_types_in_join_select_and_split() {
    let e = errors(
        "variables:
  a:
    fn::join: [1, [x]]
  b:
    fn::join: [\",\", notalist]
  c:
    fn::select: [first, [1, 2]]
  d:
    fn::select: [2, [1, 2]]
  e:
    fn::split: [\",\", [a]]
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:5:16: fn::join: the delimiter must be a string, not a number\n\
         Pulumi.yaml:7:21: fn::join: the values must be a list, not a string\n\
         Pulumi.yaml:9:18: fn::select: the index must be a number, not a string\n\
         Pulumi.yaml:11:18: fn::select: index 2 is out of range for a list of 2\n\
         Pulumi.yaml:13:22: fn::split: the source must be a string, not a list"
    );
}

#[test]
fn unknown_function_and_extra_keys_beside_a_function() {
    let e = errors(
        "variables:
  a:
    fn::jion: [\",\", []]
  b:
    fn::secret: x
    other: y
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:5:5: unknown function fn::jion; did you mean 'fn::join'?\n\
         Pulumi.yaml:7:5: fn::secret must be the only key of its object"
    );
}

/// A key starting with `fn::`, in any case, that names no function is an
/// error where it is written, never literal data: a misspelt
/// `Fn::Secret` must not leave its value in plaintext.
#[test]
fn unknown_fn_keys_in_any_case_are_errors_at_the_key() {
    let e = errors(
        "variables:
  a:
    Fn::Secrte: hunter2
  b:
    FN::JOIN: [\",\", []]
    other: y
outputs:
  c:
    x:
      fn::nothingLikeIt: 1
  d:
    fn::command:local:run:extra: {}
  e:
    fn::command:local:run: not-an-object
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:5:5: unknown function Fn::Secrte; did you mean 'fn::secret'?\n\
         Pulumi.yaml:7:5: FN::JOIN must be the only key of its object\n\
         Pulumi.yaml:12:7: unknown function fn::nothingLikeIt; keys starting with fn:: name \
         a builtin function or invoke one as fn::<pkg>:<module>:<function>\n\
         Pulumi.yaml:14:5: unknown function fn::command:local:run:extra; keys starting with \
         fn:: name a builtin function or invoke one as fn::<pkg>:<module>:<function>\n\
         Pulumi.yaml:16:28: fn::command:local:run: the arguments of function \
         command:local:run must be an object, not a string"
    );
}

/// `fn::invoke`'s keys match in any case, but one that is no key of it
/// is still an error.
#[test]
fn capitalised_invoke_keys_are_accepted_and_unknown_ones_are_not() {
    let e = errors(
        "variables:
  a:
    Fn::Invoke:
      Function: pkg:index:getThing
      Arguments: [1]
      Retrun: x
      Options:
        Provder: ${a}
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:7:18: fn::invoke: arguments must be an object, not a list\n\
         Pulumi.yaml:8:7: fn::invoke: unknown key 'Retrun'; did you mean 'return'?\n\
         Pulumi.yaml:10:9: fn::invoke: unknown option 'Provder'; did you mean 'provider'?"
    );
}

#[test]
fn bad_interpolation_syntax() {
    let e = errors(
        "variables:
  a: \"x-${b\"
  b: ${}
  c: ${d.}
  d: ${e[one]}
  e: ok
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:4:9: unterminated interpolation: missing '}'\n\
         Pulumi.yaml:5:6: empty interpolation ${}\n\
         Pulumi.yaml:6:9: expected a property name after '.'\n\
         Pulumi.yaml:7:9: expected an index or a quoted key inside '[…]'"
    );
}

#[test]
fn unknown_pulumi_property() {
    let e = errors("outputs:\n  s: ${pulumi.stak}\n");
    assert_eq!(
        e,
        "Pulumi.yaml:4:6: unknown property 'pulumi.stak'; did you mean 'stack'?"
    );
}

#[test]
fn bad_invoke_shape() {
    let e = errors(
        "variables:
  a:
    fn::invoke:
      function: pkg:index:getThing
      arguments: [1]
      retrun: x
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:7:18: fn::invoke: arguments must be an object, not a list\n\
         Pulumi.yaml:8:7: fn::invoke: unknown key 'retrun'; did you mean 'return'?"
    );
}

#[test]
fn get_with_properties_and_without_id() {
    let e = errors(
        "resources:
  a:
    type: pkg:index:Thing
    properties:
      v: 1
    get:
      id: x
  b:
    type: pkg:index:Thing
    get:
      state: {}
",
    );
    assert_eq!(
        e,
        "Pulumi.yaml:6:5: resource 'a' cannot have both properties and get\n\
         Pulumi.yaml:13:7: get of resource 'b' has no id"
    );
}

#[test]
fn invalid_yaml_is_located() {
    let e = errors("resources:\n  a: [1, 2\n");
    assert!(e.starts_with("Pulumi.yaml:"), "{e}");
    assert!(e.contains("invalid YAML"), "{e}");
}

#[test]
fn wrong_runtime_and_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let e = YamlProgram::load(dir.path(), options(&[])).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Pulumi.yaml: cannot read the project file"),
        "{e}"
    );
    let e = load_in(
        dir.path(),
        &[("Pulumi.yaml", "name: p\nruntime: nodejs\n")],
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Pulumi.yaml:2:10: the runtime is 'nodejs', not yaml"
    );
}

#[test]
fn main_yaml_errors_name_main_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let e = load_in(
        dir.path(),
        &[
            ("Pulumi.yaml", "name: proj\nruntime: yaml\n"),
            ("Main.yaml", "resources:\n  a:\n    type: pkg:index:Thing\n    properties:\n      v: ${missing}\n"),
        ],
        &[],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Main.yaml:5:10: 'missing' is not a resource, variable or config value"
    );
}

#[test]
fn many_errors_are_reported_together_in_file_order() {
    let e = errors(
        "resources:
  a:
    type: pkg:index:Thing
    options:
      retain: true
    properties:
      v: ${nope}
  b:
    properties: {}
",
    );
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 3, "{e}");
    assert!(lines[0].starts_with("Pulumi.yaml:7:7: unknown resource option 'retain'"));
    assert!(lines[1].starts_with("Pulumi.yaml:9:10: 'nope'"));
    assert_eq!(lines[2], "Pulumi.yaml:10:3: resource 'b' has no type");
}

#[test]
fn a_good_program_loads() {
    let dir = tempfile::tempdir().unwrap();
    let p = load_in(
        dir.path(),
        &[(
            "Pulumi.yaml",
            "name: proj
runtime: yaml
config:
  size:
    type: Integer
    default: 3
variables:
  label: ${pulumi.stack}-${size}
resources:
  a:
    type: pkg:Thing
    properties:
      label: ${label}
outputs:
  id: ${a.id}
",
        )],
        &[],
    )
    .unwrap();
    assert_eq!(p.file(), "Pulumi.yaml");
    assert_eq!(p.resource_names(), vec!["a"]);
    assert_eq!(
        p.config().get("size"),
        Some(&converge_model::PropertyValue::Number(3.0))
    );
}

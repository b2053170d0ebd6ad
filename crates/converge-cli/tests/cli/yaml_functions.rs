//! End to end: builtin functions as Pulumi YAML programs spell them
//! (`Fn::Secret`, `Fn::Join`, `Fn::Invoke` with `Function`/`Arguments`/
//! `Return`, the `fn::<pkg>:<module>:<function>` shorthand), through
//! `converge` and the built-in providers. A secret stays secret: shown as
//! `[secret]`, never in the state file in plaintext.

use crate::common;

use assert_cmd::Command;

const MARKER: &str = "plaintext-marker-7c1f";

fn program() -> String {
    format!(
        "name: demo
runtime: yaml
resources:
  pet:
    type: random:RandomPet
variables:
  token:
    Fn::Secret: {MARKER}
  greeting:
    Fn::Invoke:
      Function: command:local:run
      Arguments:
        command: echo hello
      Return: stdout
  short:
    fn::command:local:run:
      command: echo short
outputs:
  token: ${{token}}
  joined:
    Fn::Join: [\"-\", [\"${{pet.id}}\", \"${{token}}\"]]
  greeting: ${{greeting}}
  short: ${{short.stdout}}
"
    )
}

fn converge(scratch: &common::Scratch, args: &[&str]) -> std::process::Output {
    Command::from_std(scratch.command("pw"))
        .args(args)
        .output()
        .unwrap()
}

fn run(scratch: &common::Scratch, args: &[&str]) -> String {
    let out = converge(scratch, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "converge {args:?}:\n{stdout}\n{stderr}"
    );
    assert!(
        !stdout.contains(MARKER) && !stderr.contains(MARKER),
        "converge {args:?} shows the secret:\n{stdout}\n{stderr}"
    );
    stdout
}

#[test]
fn capitalised_functions_deploy_and_the_secret_stays_secret() {
    let scratch = common::Scratch::new(&program());
    run(&scratch, &["stack", "init", "dev"]);
    let up = run(&scratch, &["up", "--yes"]);
    // Other casings than the documented one are warnings, at their place.
    assert!(
        up.contains("warning: Pulumi.yaml:8:5: 'Fn::Secret' is read as 'fn::secret'"),
        "{up}"
    );
    assert!(
        up.contains("warning: Pulumi.yaml:11:7: 'Function' is read as 'function'"),
        "{up}"
    );

    let shown = run(&scratch, &["stack", "output"]);
    let line = |name: &str| {
        shown
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no output {name}:\n{shown}"))
            .to_owned()
    };
    assert!(line("token").contains("[secret]"), "{shown}");
    assert!(line("joined").contains("[secret]"), "{shown}");

    let outputs: serde_json::Value =
        serde_json::from_str(&run(&scratch, &["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["greeting"], "hello");
    assert_eq!(outputs["short"], "short");
    assert_eq!(outputs["token"], "[secret]");

    // With --show-secrets the value is the secret itself, not a literal
    // `Fn::Secret` object.
    let revealed: serde_json::Value = serde_json::from_str(&stdout_of_revealed(&scratch)).unwrap();
    assert_eq!(revealed["token"], MARKER);
    let joined = revealed["joined"].as_str().unwrap();
    assert!(joined.ends_with(&format!("-{MARKER}")), "{joined}");

    let state =
        std::fs::read_to_string(scratch.backend.join(".pulumi/stacks/demo/dev.json")).unwrap();
    assert!(
        !state.contains(MARKER),
        "the state holds the secret in plaintext"
    );
    assert!(!state.to_lowercase().contains("fn::"), "{state}");
    // The state records the outputs as secrets (ciphertext).
    assert!(
        state.contains("1b47061264138c4ac30d75fd1eb44270"),
        "no secret in the state"
    );
    run(&scratch, &["destroy", "--yes"]);
}

fn stdout_of_revealed(scratch: &common::Scratch) -> String {
    let out = converge(scratch, &["stack", "output", "--json", "--show-secrets"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_misspelt_function_is_an_error_and_nothing_is_deployed() {
    let scratch = common::Scratch::new(&program().replace("Fn::Secret", "Fn::Secrte"));
    run(&scratch, &["stack", "init", "dev"]);
    let out = converge(&scratch, &["up", "--yes"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Pulumi.yaml:8:5: unknown function Fn::Secrte; did you mean 'fn::secret'?"),
        "{stderr}"
    );
    assert!(!stderr.contains(MARKER), "{stderr}");
    let state = std::fs::read_to_string(scratch.backend.join(".pulumi/stacks/demo/dev.json"))
        .unwrap_or_default();
    assert!(!state.contains(MARKER));
    assert!(!state.contains("randomPet"), "{state}");
}

/// The rest of Pulumi YAML's builtins, each once: file digests, `sha1`,
/// `length`, `singleOrNone`, `unsecret`, a resource's name and type,
/// `pulumi.rootDirectory`, and the deprecated `fn::stackReference` (here
/// reading a stack of the same backend). The `pulumi:index:Stash`
/// resource is the builtin provider's, as in any Pulumi program.
#[test]
fn every_builtin_of_the_language_reference() {
    let scratch = common::Scratch::new(
        "name: demo
runtime: yaml
resources:
  pet:
    type: random:RandomPet
  kept:
    type: pulumi:index:Stash
    properties:
      input: first
variables:
  hidden:
    fn::secret: open
outputs:
  b64:
    fn::filebase64: data.txt
  b64sha:
    fn::filebase64sha256: data.txt
  sha1:
    fn::sha1: hello
  listLength:
    fn::length: [1, 2, 3]
  textLength:
    fn::length: héllo
  single:
    fn::singleOrNone: [only]
  none:
    fn::singleOrNone: []
  plain:
    fn::unsecret: ${hidden}
  name:
    fn::pulumiResourceName: ${pet}
  type:
    fn::pulumiResourceType: ${pet}
  root: ${pulumi.rootDirectory}
  stashed: ${kept.output}
",
    );
    std::fs::write(scratch.project.join("data.txt"), "hello\n").unwrap();
    run(&scratch, &["stack", "init", "dev"]);
    run(&scratch, &["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&scratch, &["stack", "output", "--json"])).unwrap();
    assert_eq!(outputs["b64"], "aGVsbG8K");
    assert_eq!(
        outputs["b64sha"],
        "WJG1tSLV3whtD/CxEPvZ0hu0/HFjrzTQgoai6Eb2vgM="
    );
    assert_eq!(outputs["sha1"], "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d");
    assert_eq!(outputs["listLength"], 3);
    assert_eq!(outputs["textLength"], 5);
    assert_eq!(outputs["single"], "only");
    assert_eq!(outputs["none"], serde_json::Value::Null);
    assert_eq!(outputs["plain"], "open", "unsecret: not shown as [secret]");
    assert_eq!(outputs["name"], "pet");
    assert_eq!(outputs["type"], "random:index/randomPet:RandomPet");
    let root = std::fs::canonicalize(&scratch.project).unwrap();
    let shown = std::fs::canonicalize(outputs["root"].as_str().unwrap()).unwrap();
    assert_eq!(shown, root);
    assert_eq!(outputs["stashed"], "first");

    // A second stack of this backend reads the first one's output.
    let reader = "name: demo
runtime: yaml
outputs:
  theirs:
    fn::stackReference: [demo/dev, sha1]
";
    std::fs::write(scratch.project.join("Pulumi.yaml"), reader).unwrap();
    run(&scratch, &["stack", "init", "other"]);
    run(&scratch, &["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&scratch, &["stack", "output", "--json"])).unwrap();
    assert_eq!(
        outputs["theirs"],
        "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"
    );

    // More than one element is an error naming the function.
    std::fs::write(
        scratch.project.join("Pulumi.yaml"),
        "name: demo\nruntime: yaml\noutputs:\n  x:\n    fn::singleOrNone: [a, b]\n",
    )
    .unwrap();
    let out = converge(&scratch, &["up", "--yes"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("fn::singleOrNone takes a list of at most one element, not 2"),
        "{stderr}"
    );
}

/// Text Pulumi YAML computes with Go: `fn::toJSON` escapes `<`, `>` and
/// `&` as `json.Marshal` does, and a list or object interpolated into a
/// string reads as Go's `%v` prints it. The same program gives the same
/// values as under Pulumi, so a stack moved from it shows no change.
#[test]
fn computed_text_is_the_text_pulumi_yaml_computes() {
    let scratch = common::Scratch::new(
        "name: demo
runtime: yaml
variables:
  list: [b, a, c]
  object: {y: 1, x: [p, q]}
outputs:
  json:
    fn::toJSON: {html: \"<a href='x'>&</a>\"}
  list: r=${list}
  object: o=${object}
",
    );
    run(&scratch, &["stack", "init", "dev"]);
    run(&scratch, &["up", "--yes"]);
    let outputs: serde_json::Value =
        serde_json::from_str(&run(&scratch, &["stack", "output", "--json"])).unwrap();
    assert_eq!(
        outputs["json"],
        r#"{"html":"\u003ca href='x'\u003e\u0026\u003c/a\u003e"}"#
    );
    assert_eq!(outputs["list"], "r=[b a c]");
    assert_eq!(outputs["object"], "o=map[x:[p q] y:1]");
}

//! Project-level configuration (`config:` in Pulumi.yaml) end to end with
//! a YAML program through `converge`: defaults for what the stack does
//! not set, typed values, values of other namespaces, the checks before
//! a deployment (wrong type, plaintext secret, missing key — state
//! unchanged), `config` listing and `--json`, and `config cp` between two
//! stacks with different secrets keys.

use crate::common;

use std::process::Output;

use common::Scratch;

const PROGRAM: &str = "name: cfg
runtime: yaml
config:
  name: {type: string, default: hello}
  replicas: {type: integer, default: 3, description: how many}
  enabled: {type: boolean}
  tags: {type: array, items: {type: string}}
  dbPassword: {type: string, secret: true}
  aws:region: us-west-2
  pkg:settings: {value: {tier: gold}}
resources:
  pet:
    type: random:RandomPet
    properties:
      prefix: ${name}
      length: ${replicas}
outputs:
  name: ${name}
  replicas: ${replicas}
  enabled: ${enabled}
  tags: ${tags}
  password: ${dbPassword}
  region: ${aws:region}
  tier: ${pkg:settings.tier}
";

struct World {
    scratch: Scratch,
}

impl World {
    fn new() -> World {
        let w = World {
            scratch: Scratch::new(PROGRAM),
        };
        w.run(&["stack", "init", "dev"]);
        w
    }

    fn cmd(&self, args: &[&str]) -> Output {
        self.scratch.command("pw").args(args).output().unwrap()
    }

    /// Runs `converge args…`, which must succeed; its stdout.
    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.scratch.command("pw"), args)
    }

    /// Runs `converge args…`, which must fail with one `error:` line; it.
    fn fails(&self, args: &[&str]) -> String {
        let out = self.cmd(args);
        assert!(!out.status.success(), "converge {args:?} succeeded");
        let err = String::from_utf8(out.stderr).unwrap();
        let line = err
            .lines()
            .find(|l| l.starts_with("error: "))
            .unwrap_or_else(|| panic!("no error line: {err}"));
        line.to_owned()
    }

    fn state(&self, stack: &str) -> Vec<u8> {
        std::fs::read(
            self.scratch
                .backend
                .join(format!(".pulumi/stacks/cfg/{stack}.json")),
        )
        .unwrap()
    }

    fn settings(&self, stack: &str) -> String {
        std::fs::read_to_string(self.scratch.project.join(format!("Pulumi.{stack}.yaml"))).unwrap()
    }

    fn outputs(&self, stack: &str) -> serde_json::Value {
        let out = self.run(&["stack", "output", "--json", "--show-secrets", "-s", stack]);
        serde_json::from_str(&out).unwrap()
    }

    /// Sets what the project requires on `stack`.
    fn set_required(&self, stack: &str) {
        self.run(&["config", "set", "-s", stack, "enabled", "true"]);
        self.run(&["config", "set", "-s", stack, "--path", "tags[0]", "a"]);
        self.run(&["config", "set", "-s", stack, "--path", "tags[1]", "b"]);
        self.run(&[
            "config",
            "set",
            "-s",
            stack,
            "--secret",
            "dbPassword",
            "s3cr3t",
        ]);
    }
}

#[test]
fn project_config_reaches_the_program_with_defaults_and_types() {
    let w = World::new();
    let before = w.state("dev");
    let e = w.fails(&["preview"]);
    assert_eq!(
        e,
        "error: validating stack config: Stack 'dev' is missing configuration values \
         'dbPassword', 'enabled' and 'tags': set them with `converge config set <key> <value>`"
    );
    w.set_required("dev");
    w.run(&["up", "--yes"]);
    let out = w.outputs("dev");
    assert_eq!(out["name"], "hello");
    assert_eq!(out["replicas"], 3);
    assert_eq!(out["enabled"], true);
    assert_eq!(out["tags"], serde_json::json!(["a", "b"]));
    assert_eq!(out["password"], "s3cr3t");
    assert_eq!(out["region"], "us-west-2");
    assert_eq!(out["tier"], "gold");
    assert_ne!(w.state("dev"), before);

    // The stack's values win over the defaults.
    w.run(&["config", "set", "name", "bonjour"]);
    w.run(&["config", "set", "replicas", "2"]);
    w.run(&["up", "--yes"]);
    let out = w.outputs("dev");
    assert_eq!(out["name"], "bonjour");
    assert_eq!(out["replicas"], 2);
}

#[test]
fn stack_values_that_break_the_declarations_are_refused_before_anything_runs() {
    let w = World::new();
    w.set_required("dev");
    w.run(&["up", "--yes"]);
    let state = w.state("dev");

    w.run(&["config", "set", "replicas", "many"]);
    for op in [
        &["preview"][..],
        &["up", "--yes"],
        &["refresh", "--yes"],
        &["destroy", "--yes"],
    ] {
        let e = w.fails(op);
        assert_eq!(
            e,
            "error: validating stack config: Stack 'dev' with configuration key 'replicas' \
             must be of type 'integer'",
            "{op:?}"
        );
        assert_eq!(w.state("dev"), state, "{op:?} changed the state");
    }
    w.run(&["config", "rm", "replicas"]);

    w.run(&["config", "set", "--path", "tags[2]", "3"]);
    let e = w.fails(&["up", "--yes"]);
    assert!(
        e.ends_with("key 'tags' must be of type 'array<string>'"),
        "{e}"
    );
    w.run(&["config", "rm", "--path", "tags[2]"]);

    w.run(&["config", "set", "dbPassword", "hunter2-in-the-clear"]);
    let e = w.fails(&["up", "--yes"]);
    assert_eq!(
        e,
        "error: validating stack config: Stack 'dev' with configuration key 'dbPassword' must \
         be encrypted as it's secret: set it with `converge config set --secret dbPassword \
         <value>`"
    );
    assert_eq!(w.state("dev"), state);
    w.run(&["config", "set", "--secret", "dbPassword", "s3cr3t"]);
    w.run(&["up", "--yes"]);
}

#[test]
fn bad_declarations_are_refused_by_every_command() {
    let w = World::new();
    let text = PROGRAM.replace(
        "  aws:region: us-west-2\n",
        "  aws:region: {default: us-west-2}\n",
    );
    std::fs::write(w.scratch.project.join("Pulumi.yaml"), text).unwrap();
    for args in [&["config"][..], &["preview"]] {
        let e = w.fails(args);
        assert!(
            e.contains("invalid project config")
                && e.contains("Did you mean to use the 'value' attribute instead of 'default'?"),
            "{e}"
        );
    }
}

#[test]
fn config_lists_the_project_defaults_as_text_and_json() {
    let w = World::new();
    w.set_required("dev");
    insta::assert_snapshot!(w.run(&["config"]), @r#"
    KEY           VALUE
    aws:region    us-west-2
    dbPassword    [secret]
    enabled       true
    name          hello
    replicas      3
    tags          ["a","b"]
    pkg:settings  {"tier":"gold"}
    "#);

    let listed: serde_json::Value = serde_json::from_str(&w.run(&["config", "--json"])).unwrap();
    assert_eq!(
        listed,
        serde_json::json!({
            "aws:region": {"value": "us-west-2", "secret": false},
            "cfg:dbPassword": {"secret": true},
            "cfg:enabled": {"value": "true", "secret": false},
            "cfg:name": {"value": "hello", "secret": false},
            "cfg:replicas": {"value": "3", "secret": false},
            "cfg:tags": {"value": "[\"a\",\"b\"]", "objectValue": ["a", "b"], "secret": false},
            "pkg:settings": {"value": "{\"tier\":\"gold\"}", "objectValue": {"tier": "gold"}, "secret": false},
        })
    );
    let shown: serde_json::Value =
        serde_json::from_str(&w.run(&["config", "--json", "--show-secrets"])).unwrap();
    assert_eq!(
        shown["cfg:dbPassword"],
        serde_json::json!({"value": "s3cr3t", "secret": true})
    );

    let get = |key: &str| -> serde_json::Value {
        serde_json::from_str(&w.run(&["config", "get", key, "--json"])).unwrap()
    };
    assert_eq!(
        get("dbPassword"),
        serde_json::json!({"value": "s3cr3t", "secret": true})
    );
    assert_eq!(
        get("tags"),
        serde_json::json!({"value": "[\"a\",\"b\"]", "objectValue": ["a", "b"], "secret": false})
    );
    assert_eq!(
        get("replicas"),
        serde_json::json!({"value": "3", "secret": false})
    );
    assert_eq!(w.run(&["config", "get", "name"]), "hello\n");
    assert_eq!(
        w.run(&["config", "get", "--path", "pkg:settings.tier"]),
        "gold\n"
    );
    let e = w.fails(&["config", "get", "nothing"]);
    assert_eq!(
        e,
        "error: configuration key 'nothing' not found for stack 'dev'"
    );
}

#[test]
fn config_cp_copies_values_and_reencrypts_secrets_for_the_destination() {
    let w = World::new();
    w.set_required("dev");
    w.run(&["config", "set", "-s", "dev", "name", "copied"]);
    w.run(&["stack", "init", "prod"]);
    w.run(&["config", "set", "-s", "prod", "replicas", "1"]);
    let salt = |stack: &str| {
        let s = w.settings(stack);
        s.lines()
            .find_map(|l| l.strip_prefix("encryptionsalt: "))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no salt in {s}"))
    };
    assert_ne!(salt("dev"), salt("prod"));

    let e = w.fails(&["config", "cp", "-s", "dev", "--dest", "dev"]);
    assert_eq!(e, "error: current stack and destination stack are the same");
    let e = w.fails(&["config", "cp", "-s", "dev", "nothing", "--dest", "prod"]);
    assert_eq!(
        e,
        "error: configuration key 'nothing' not found for stack 'dev'"
    );

    w.run(&["config", "cp", "-s", "dev", "--dest", "prod"]);
    let prod = w.settings("prod");
    assert!(!prod.contains("s3cr3t"), "{prod}");
    assert!(
        prod.contains("cfg:replicas: '1'"),
        "the destination's own keys are kept: {prod}"
    );
    w.run(&["up", "--yes", "-s", "prod"]);
    let out = w.outputs("prod");
    assert_eq!(out["password"], "s3cr3t");
    assert_eq!(out["name"], "copied");
    assert_eq!(out["replicas"], 1);
    assert_eq!(out["tags"], serde_json::json!(["a", "b"]));

    // One value, by path; and one secret, re-encrypted again.
    w.run(&["config", "set", "-s", "dev", "--path", "tags[1]", "c"]);
    w.run(&[
        "config",
        "set",
        "-s",
        "dev",
        "--secret",
        "dbPassword",
        "n3w",
    ]);
    w.run(&[
        "config", "cp", "-s", "dev", "--path", "tags[1]", "--dest", "prod",
    ]);
    w.run(&["config", "cp", "-s", "dev", "dbPassword", "-d", "prod"]);
    w.run(&["up", "--yes", "-s", "prod"]);
    let out = w.outputs("prod");
    assert_eq!(out["tags"], serde_json::json!(["a", "c"]));
    assert_eq!(out["password"], "n3w");
    assert_eq!(
        w.run(&["config", "get", "-s", "prod", "dbPassword"]),
        "n3w\n"
    );
}

#[test]
fn stack_files_live_in_the_stack_config_dir() {
    let w = World::new();
    let projects = [
        (
            PROGRAM.replacen("config:\n", "stackConfigDir: settings\nconfig:\n", 1),
            "settings",
        ),
        // The older form: `config` naming the directory.
        (
            "name: cfg\nruntime: yaml\nconfig: older\n".to_owned(),
            "older",
        ),
    ];
    for (text, dir) in projects {
        std::fs::write(w.scratch.project.join("Pulumi.yaml"), text).unwrap();
        std::fs::create_dir_all(w.scratch.project.join(dir)).unwrap();
        w.run(&["config", "set", "greeting", dir]);
        let file = w.scratch.project.join(dir).join("Pulumi.dev.yaml");
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains(&format!("cfg:greeting: {dir}")), "{text}");
        assert_eq!(w.run(&["config", "get", "greeting"]), format!("{dir}\n"));
    }
}

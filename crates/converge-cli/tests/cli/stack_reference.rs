//! `StackReference` end to end: one project `app` whose stack `a` exports
//! a plain and a secret output (from its config) and whose stack `b`
//! references `a` as `a`, `app/a` and `<org>/app/a`, with the published
//! Python and Node.js SDKs, through the `converge` binary, on the file
//! backend, the state service and (when the S3 test server is up) a bucket.

use crate::common;

use std::path::Path;

use common::nodejs::node_modules;
use common::{converge_on, failure_of, stdout_of, Backend, Scratch};

const PYTHON: &str = r#"
import pulumi

cfg = pulumi.Config()
if pulumi.get_stack() != "b":
    pulumi.export("message", cfg.require("message"))
    if cfg.get("token"):
        pulumi.export("token", cfg.require_secret("token"))
else:
    org = cfg.require("org")
    by_stack = pulumi.StackReference("by-stack", stack_name="a")
    by_project = pulumi.StackReference("by-project", stack_name="app/a")
    by_org = pulumi.StackReference(f"{org}/app/a")
    pulumi.export("message", by_stack.get_output("message").apply(lambda m: f"{m}!"))
    pulumi.export(
        "same",
        pulumi.Output.all(by_project.require_output("message"), by_org.get_output("message"))
        .apply(lambda l: l[0] == l[1]),
    )
    pulumi.export("token", by_org.require_output("token"))
    pulumi.export("token_length", by_stack.require_output("token").apply(len))
    pulumi.export("absent", by_stack.get_output("absent").apply(lambda v: v is None))

    async def details():
        token = await by_project.get_output_details("token")
        message = await by_project.get_output_details("message")
        return {
            "token_is_secret": token.value is None and token.secret_value is not None,
            "message": message.value,
        }

    pulumi.export("details", pulumi.Output.from_input(details()))
    if cfg.get("require"):
        pulumi.export("required", by_stack.require_output(cfg.get("require")))
    if cfg.get("ref"):
        pulumi.export("other", pulumi.StackReference(cfg.get("ref")).outputs)
"#;

const NODE: &str = r#"
const pulumi = require("@pulumi/pulumi");

const cfg = new pulumi.Config();
if (pulumi.getStack() !== "b") {
    exports.message = cfg.require("message");
    if (cfg.get("token")) {
        exports.token = cfg.requireSecret("token");
    }
} else {
    const org = cfg.require("org");
    const byStack = new pulumi.StackReference("by-stack", { name: "a" });
    const byProject = new pulumi.StackReference("by-project", { name: "app/a" });
    const byOrg = new pulumi.StackReference(`${org}/app/a`);
    exports.message = byStack.getOutput("message").apply((m) => `${m}!`);
    exports.same = pulumi
        .all([byProject.requireOutput("message"), byOrg.getOutput("message")])
        .apply(([x, y]) => x === y);
    exports.token = byOrg.requireOutput("token");
    exports.token_length = byStack.requireOutput("token").apply((t) => t.length);
    exports.absent = byStack.getOutput("absent").apply((v) => v === undefined);
    exports.details = (async () => {
        const token = await byProject.getOutputDetails("token");
        const message = await byProject.getOutputDetails("message");
        return {
            token_is_secret: token.value === undefined && token.secretValue !== undefined,
            message: message.value,
        };
    })();
    if (cfg.get("require")) {
        exports.required = byStack.requireOutput(cfg.get("require"));
    }
    if (cfg.get("ref")) {
        exports.other = new pulumi.StackReference(cfg.get("ref")).outputs;
    }
}
"#;

/// The project `app` in a scratch world, on `backend`, whose stacks live
/// in `org` (what `<org>/app/a` names).
struct App {
    scratch: Scratch,
    backend: Backend,
    org: String,
    /// How the SDK reports `require_output` of a missing output `nope` of
    /// stack `a`.
    missing_output: &'static str,
}

impl App {
    fn python(venv: &Path, backend: impl FnOnce(&Scratch) -> Backend, org: &str) -> App {
        let scratch = Scratch::new(&format!(
            "name: app\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
            venv.display()
        ));
        std::fs::write(scratch.project.join("__main__.py"), PYTHON).unwrap();
        App::new(scratch, backend, org, "KeyError: 'nope'")
    }

    fn node(modules: &Path, backend: impl FnOnce(&Scratch) -> Backend, org: &str) -> App {
        let scratch = common::nodejs::project(modules, "app", NODE);
        App::new(
            scratch,
            backend,
            org,
            "Required output 'nope' does not exist on stack 'a'",
        )
    }

    fn new(
        scratch: Scratch,
        backend: impl FnOnce(&Scratch) -> Backend,
        org: &str,
        missing_output: &'static str,
    ) -> App {
        let backend = backend(&scratch);
        let app = App {
            scratch,
            backend,
            org: org.to_owned(),
            missing_output,
        };
        if let Backend::Service(s) = &app.backend {
            // Learns the token's organization, where unqualified names live.
            app.run(&["login", &s.url]);
        }
        app
    }

    /// `converge args…` with the passphrase `pw`, which must succeed.
    fn run(&self, args: &[&str]) -> String {
        stdout_of(converge_on(&self.scratch, &self.backend, &[]), args)
    }

    /// `converge args…`, which must fail; its stdout and stderr.
    fn fails(&self, args: &[&str]) -> String {
        failure_of(converge_on(&self.scratch, &self.backend, &[]), args)
    }

    fn outputs(&self, stack: &str, reveal: bool) -> serde_json::Value {
        let mut args = vec!["stack", "output", "--json", "-s", stack];
        if reveal {
            args.push("--show-secrets");
        }
        serde_json::from_str(&self.run(&args)).unwrap()
    }

    /// Stack `a` with `message` and the secret `token`, deployed; stack `b`
    /// told its organization.
    fn deploy_a(&self, message: &str) {
        self.run(&["stack", "init", "a"]);
        self.run(&["config", "-s", "a", "set", "message", message]);
        self.run(&["config", "-s", "a", "set", "--secret", "token", "s3cr3t"]);
        self.run(&["up", "--yes", "-s", "a"]);
        self.run(&["stack", "init", "b"]);
        self.run(&["config", "-s", "b", "set", "org", &self.org]);
    }
}

/// What every run checks: the three name forms, the output accessors,
/// secrets kept secret (also in `b`'s state), errors for a missing stack
/// and a missing required output, and `b` following `a`.
fn references_work(app: &App) {
    app.deploy_a("hello");
    let up = app.run(&["up", "--yes", "-s", "b"]);
    // The stack and its three first reads, which count nothing, as
    // Pulumi counts them.
    assert!(up.contains("Resources:\n    + 1 created\n"), "{up}");

    let shown = app.outputs("b", false);
    assert_eq!(shown["message"], "hello!", "{shown}");
    assert_eq!(shown["same"], true, "{shown}");
    assert_eq!(shown["absent"], true, "{shown}");
    assert_eq!(shown["token"], "[secret]", "{shown}");
    assert_eq!(shown["token_length"], "[secret]", "{shown}");
    assert_eq!(shown["details"]["token_is_secret"], true, "{shown}");
    assert_eq!(shown["details"]["message"], "hello", "{shown}");
    let revealed = app.outputs("b", true);
    assert_eq!(revealed["token"], "s3cr3t", "{revealed}");
    assert_eq!(revealed["token_length"], 6, "{revealed}");
    let plain = app.run(&["stack", "output", "-s", "b"]);
    assert!(
        plain.contains("[secret]") && !plain.contains("s3cr3t"),
        "{plain}"
    );

    // b's state: the references under the default `pulumi` provider, and
    // no plaintext of the secret anywhere.
    let state = app.run(&["stack", "export", "-s", "b"]);
    assert!(!state.contains("s3cr3t"), "{state}");
    assert!(
        state.contains("urn:pulumi:b::app::pulumi:providers:pulumi::default"),
        "{state}"
    );
    assert_eq!(secret_names_of(&state), ["token"], "{state}");

    // A missing stack, a missing required output: clear errors, and b's
    // last good state kept.
    let before = app.run(&["stack", "export", "-s", "b"]);
    app.run(&["config", "-s", "b", "set", "ref", "nope"]);
    let missing = app.fails(&["up", "--yes", "-s", "b"]);
    assert!(
        missing.contains(&format!("no stack {}/app/nope", app.org)),
        "{missing}"
    );
    app.run(&["config", "-s", "b", "rm", "ref"]);
    app.run(&["config", "-s", "b", "set", "require", "nope"]);
    let required = app.fails(&["up", "--yes", "-s", "b"]);
    assert!(required.contains(app.missing_output), "{required}");
    app.run(&["config", "-s", "b", "rm", "require"]);
    assert_eq!(app.run(&["stack", "export", "-s", "b"]), before);

    // b follows a.
    app.run(&["config", "-s", "a", "set", "message", "changed"]);
    app.run(&["up", "--yes", "-s", "a"]);
    // Reads are counted; their lines show only with --show-reads, as in Pulumi.
    let preview = app.run(&["preview", "-s", "b"]);
    assert!(preview.contains("to read"), "{preview}");
    assert!(!preview.contains("StackReference"), "{preview}");
    let preview = app.run(&["preview", "-s", "b", "--show-reads"]);
    assert!(preview.contains("StackReference"), "{preview}");
    app.run(&["up", "--yes", "-s", "b"]);
    let shown = app.outputs("b", false);
    assert_eq!(shown["message"], "changed!", "{shown}");
    assert_eq!(shown["details"]["message"], "changed", "{shown}");
}

/// The `secretOutputNames` of the first stack reference in an exported
/// deployment.
fn secret_names_of(export: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(export).unwrap();
    v["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "pulumi:pulumi:StackReference")
        .and_then(|r| r["outputs"]["secretOutputNames"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|n| n.as_str().map(str::to_owned))
        .collect()
}

fn file_backend(_: &Scratch) -> Backend {
    Backend::File
}

#[test]
fn python_stack_references_on_the_file_backend() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let app = App::python(&venv, file_backend, "organization");
    references_work(&app);
    // The checkpoint file itself holds no plaintext of the secret.
    let file = app.scratch.backend.join(".pulumi/stacks/app/b.json");
    let text = std::fs::read_to_string(file).unwrap();
    assert!(!text.contains("s3cr3t"));
    assert!(text.contains("pulumi:pulumi:StackReference"));

    // Stack c has another passphrase: its plain outputs read without it…
    let other = |args: &[&str]| {
        let mut cmd = app.scratch.command("another");
        cmd.args(args);
        common::stdout_of(cmd, &[])
    };
    other(&["stack", "init", "c"]);
    other(&["config", "-s", "c", "set", "message", "from-c"]);
    other(&["up", "--yes", "-s", "c"]);
    app.run(&["config", "-s", "b", "set", "ref", "c"]);
    app.run(&["up", "--yes", "-s", "b"]);
    assert_eq!(app.outputs("b", false)["other"]["message"], "from-c");
    // …its secret ones fail clearly, naming the stack.
    other(&["config", "-s", "c", "set", "--secret", "token", "c-secret"]);
    other(&["up", "--yes", "-s", "c"]);
    let wrong = app.fails(&["up", "--yes", "-s", "b"]);
    assert!(
        wrong.contains("cannot decrypt the secrets of stack organization/app/c")
            && wrong.contains("PULUMI_CONFIG_PASSPHRASE"),
        "{wrong}"
    );
    assert!(!wrong.contains("c-secret"), "{wrong}");
}

#[test]
fn nodejs_stack_references_on_the_file_backend() {
    let Some(modules) = node_modules() else {
        return;
    };
    let app = App::node(&modules, file_backend, "organization");
    references_work(&app);
}

#[test]
fn python_stack_references_on_the_state_service() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let app = App::python(
        &venv,
        |s| {
            let data = s.dir.path().join("service");
            std::fs::create_dir_all(&data).unwrap();
            Backend::Service(common::service::Service::start_in(
                &s.home,
                &data,
                "127.0.0.1:0",
                "acme",
            ))
        },
        "acme",
    );
    references_work(&app);
}

#[test]
fn python_stack_references_on_s3() {
    let Some(venv) = common::python::venv() else {
        return;
    };
    let Some(url) = converge_backend::conformance::test_s3_url("stackref") else {
        return;
    };
    let app = App::python(&venv, |_| Backend::Url(url), "organization");
    references_work(&app);
}

const YAML_PRODUCER: &str = "name: producer
runtime: yaml
outputs:
  message: MESSAGE
  token:
    fn::secret: s3cr3t
";

const YAML_CONSUMER: &str = r#"name: consumer
runtime: yaml
resources:
  ref:
    type: pulumi:pulumi:StackReference
    properties:
      name: producer/prod
outputs:
  message: ${ref.outputs["message"]}
  token: ${ref.outputs["token"]}
  secrets: ${ref.secretOutputNames}
"#;

/// A YAML program declares a stack reference as a resource (as Pulumi
/// YAML does): it reads the other project's stack and follows it.
#[test]
fn yaml_stack_references_on_the_file_backend() {
    let scratch = Scratch::new(&YAML_PRODUCER.replace("MESSAGE", "hello"));
    let consumer = scratch.dir.path().join("consumer");
    std::fs::create_dir_all(&consumer).unwrap();
    std::fs::write(consumer.join("Pulumi.yaml"), YAML_CONSUMER).unwrap();
    let run = |args: &[&str]| common::stdout_of(converge_on(&scratch, &Backend::File, args), &[]);
    let consume = |args: &[&str]| {
        let mut all = vec!["-C", "../consumer"];
        all.extend_from_slice(args);
        run(&all)
    };
    run(&["stack", "init", "prod"]);
    run(&["up", "--yes"]);
    consume(&["stack", "init", "dev"]);
    consume(&["up", "--yes"]);
    let shown: serde_json::Value =
        serde_json::from_str(&consume(&["stack", "output", "--json"])).unwrap();
    assert_eq!(shown["message"], "hello", "{shown}");
    assert_eq!(shown["token"], "[secret]", "{shown}");
    assert_eq!(shown["secrets"], serde_json::json!(["token"]), "{shown}");
    let state = consume(&["stack", "export"]);
    assert!(!state.contains("s3cr3t"), "{state}");

    std::fs::write(
        scratch.project.join("Pulumi.yaml"),
        YAML_PRODUCER.replace("MESSAGE", "changed"),
    )
    .unwrap();
    run(&["up", "--yes"]);
    let up = consume(&["up", "--yes"]);
    assert!(up.contains("~ 1 updated"), "{up}");
    let shown: serde_json::Value =
        serde_json::from_str(&consume(&["stack", "output", "--json", "--show-secrets"])).unwrap();
    assert_eq!(shown["message"], "changed", "{shown}");
    assert_eq!(shown["token"], "s3cr3t", "{shown}");
}

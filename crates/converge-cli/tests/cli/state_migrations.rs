//! State migrations (`state_migrations` / `stateMigrations`) end to end
//! with the published Python and Node.js SDKs and the test plugin: a
//! component's migration renames its child in the state; the next `up`
//! keeps the object (no create, no delete), the resource that depended on
//! it follows the new name, the callback saw the old state with the root
//! first and its secret in plaintext, the checkpoint keeps the secret
//! encrypted, and a later preview has nothing to do. In Python the
//! migration also folds a child component into the component, which
//! leaves the state with no delete shown. A migration that
//! would change the object's ID is refused and leaves the resources as they
//! were.

use crate::common;

use common::{ConvergetestCloud, Scratch};

const PY_APP: &str = r#"
import json, os
import pulumi

class App(pulumi.ComponentResource):
    def __init__(self, name, bucket, opts=None, extra=False):
        super().__init__("my:index:App", name, None, opts)
        self.bucket = pulumi.CustomResource(
            "convergetest:index:Thing", bucket,
            {"value": "b", "length": None, "note": pulumi.Output.secret("s3cret")},
            opts=pulumi.ResourceOptions(parent=self))
        if extra:
            pulumi.ComponentResource("my:index:Extra", f"{name}-extra", None,
                                     pulumi.ResourceOptions(parent=self))
        self.register_outputs({})

def rename(args):
    with open(os.path.join(os.getcwd(), "migrations.log"), "a") as f:
        f.write(json.dumps({"urn": args.urn, "old": args.old_state}) + "\n")
    new, successors = [], {}
    for r in args.old_state:
        if r["urn"].endswith("::app-extra"):
            # Folded into the component itself.
            successors[r["urn"]] = args.old_state[0]["urn"]
            continue
        if r["urn"].endswith("::app-bucket"):
            to = r["urn"][: -len("app-bucket")] + "bucket"
            successors[r["urn"]] = to
            r = dict(r, urn=to)
        new.append(r)
    if not successors:
        return None
    return pulumi.StateMigrationResult(new_state=new, successors=successors)

def steal(args):
    for r in args.old_state:
        if r.get("custom"):
            r["id"] = "someone-else"
    return pulumi.StateMigrationResult(new_state=args.old_state)
"#;

const PY_V1: &str = r#"
app = App("app", "app-bucket", extra=True)
user = pulumi.CustomResource("convergetest:index:Thing", "user", {"value": "u", "length": None},
                             opts=pulumi.ResourceOptions(depends_on=[app.bucket]))
"#;

const PY_V2: &str = r#"
app = App("app", "bucket", opts=pulumi.ResourceOptions(state_migrations=[rename]))
user = pulumi.CustomResource("convergetest:index:Thing", "user", {"value": "u", "length": None},
                             opts=pulumi.ResourceOptions(depends_on=[app.bucket]))
"#;

const PY_STEAL: &str = r#"
app = App("app", "app-bucket", opts=pulumi.ResourceOptions(state_migrations=[steal]))
user = pulumi.CustomResource("convergetest:index:Thing", "user", {"value": "u", "length": None},
                             opts=pulumi.ResourceOptions(depends_on=[app.bucket]))
"#;

const JS_APP: &str = r#"
const fs = require("fs");
const path = require("path");
const pulumi = require("@pulumi/pulumi");

class App extends pulumi.ComponentResource {
    constructor(name, bucket, opts) {
        super("my:index:App", name, {}, opts);
        this.bucket = new pulumi.CustomResource("convergetest:index:Thing", bucket,
            { value: "b", length: undefined, note: pulumi.secret("s3cret") }, { parent: this });
        this.registerOutputs({});
    }
}

function rename(args) {
    fs.appendFileSync(path.join(process.cwd(), "migrations.log"),
        JSON.stringify({ urn: args.urn, old: args.oldState }) + "\n");
    const successors = {};
    const newState = args.oldState.map(r => {
        if (!r.urn.endsWith("::app-bucket")) { return r; }
        const to = r.urn.slice(0, -"app-bucket".length) + "bucket";
        successors[r.urn] = to;
        return { ...r, urn: to };
    });
    if (Object.keys(successors).length === 0) { return undefined; }
    return { newState, successors };
}
"#;

const JS_V1: &str = r#"
const app = new App("app", "app-bucket");
new pulumi.CustomResource("convergetest:index:Thing", "user", { value: "u", length: undefined },
    { dependsOn: [app.bucket] });
"#;

const JS_V2: &str = r#"
const app = new App("app", "bucket", { stateMigrations: [rename] });
new pulumi.CustomResource("convergetest:index:Thing", "user", { value: "u", length: undefined },
    { dependsOn: [app.bucket] });
"#;

/// A project of the language `lang` whose program is in `file`.
struct World {
    scratch: Scratch,
    cloud: ConvergetestCloud,
    file: &'static str,
    prelude: &'static str,
}

impl World {
    fn python() -> Option<World> {
        let venv = common::python::venv()?;
        let scratch = Scratch::new(&format!(
            "name: migrations\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
            venv.display()
        ));
        Some(World::new(scratch, "__main__.py", PY_APP))
    }

    fn nodejs() -> Option<World> {
        let modules = common::nodejs::node_modules()?;
        let scratch = common::nodejs::project(&modules, "migrations", "");
        Some(World::new(scratch, "index.js", JS_APP))
    }

    fn new(scratch: Scratch, file: &'static str, prelude: &'static str) -> World {
        let cloud = ConvergetestCloud::new(&scratch);
        let w = World {
            scratch,
            cloud,
            file,
            prelude,
        };
        w.run(&["stack", "init", "dev"]);
        w
    }

    fn program(&self, body: &str) {
        std::fs::write(
            self.scratch.project.join(self.file),
            format!("{}{body}", self.prelude),
        )
        .unwrap();
    }

    fn run(&self, args: &[&str]) -> String {
        self.cloud.run(&self.scratch, args)
    }

    fn checkpoint(&self) -> String {
        std::fs::read_to_string(
            self.scratch
                .backend
                .join(".pulumi/stacks/migrations/dev.json"),
        )
        .unwrap()
    }

    fn command(&self) -> std::process::Command {
        let mut cmd = self.scratch.command("pw");
        cmd.envs(self.cloud.env());
        cmd
    }

    fn exported(&self) -> serde_json::Value {
        serde_json::from_str(&common::stdout_of(self.command(), &["stack", "export"])).unwrap()
    }
}

fn resource<'a>(state: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    state["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with(&format!("::{name}")))
}

/// The whole path, from a first `up` to a migrated one and a preview
/// with nothing to do.
fn check_rename(w: &World, v1: &str, v2: &str) {
    w.program(v1);
    w.run(&["up", "--yes", "--skip-preview"]);
    let before = w.exported();
    let id = resource(&before, "app-bucket").unwrap()["id"].clone();
    let cloud_before = w.cloud.state()["objects"].clone();

    w.program(v2);
    let out = w.run(&["up", "--yes", "--skip-preview"]);
    assert_eq!(
        w.cloud.state()["objects"],
        cloud_before,
        "no object changed:\n{out}"
    );
    let log = w.cloud.state()["log"].to_string();
    assert_eq!(log.matches("create").count(), 2, "{log}");
    assert!(!log.contains("delete"), "{log}");
    let after = w.exported();
    let bucket = resource(&after, "bucket").expect("the bucket under its new name");
    assert_eq!(bucket["id"], id, "the same object");
    assert!(resource(&after, "app-bucket").is_none());
    assert!(
        resource(&after, "app-extra").is_none(),
        "a merged component leaves the state"
    );
    assert!(!out.contains("delete"), "nothing is deleted:\n{out}");
    let user = resource(&after, "user").unwrap();
    assert_eq!(user["dependencies"][0], bucket["urn"], "{user}");
    assert!(
        !w.checkpoint().contains("s3cret"),
        "the secret stays encrypted"
    );

    let log = std::fs::read_to_string(w.scratch.project.join("migrations.log")).unwrap();
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    let app_urn = resource(&after, "app").unwrap()["urn"].clone();
    assert_eq!(first["urn"], app_urn);
    assert_eq!(first["old"][0]["urn"], app_urn, "the root first: {first}");
    let old_bucket = first["old"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"].as_str().unwrap().ends_with("::app-bucket"))
        .unwrap_or_else(|| panic!("the child is in the old state: {first}"));
    assert_eq!(
        old_bucket["inputs"]["note"]["plaintext"], "\"s3cret\"",
        "the callback gets the secret in plaintext: {old_bucket}"
    );

    w.run(&["preview", "--expect-no-changes"]);
}

#[test]
fn python_a_state_migration_renames_a_child_and_keeps_its_object() {
    let Some(w) = World::python() else { return };
    check_rename(&w, PY_V1, PY_V2);

    // A migration that would give the bucket another object's ID is
    // refused; the resources are as they were.
    w.program(&PY_V1.replace("app-bucket", "bucket"));
    w.run(&["up", "--yes", "--skip-preview"]);
    let resources = || {
        let text = common::stdout_of(w.command(), &["stack", "export", "--show-secrets"]);
        let state: serde_json::Value = serde_json::from_str(&text).unwrap();
        state["deployment"]["resources"].clone()
    };
    let before = resources();
    w.program(&PY_STEAL.replace("app-bucket", "bucket"));
    let out = common::failure_of(w.command(), &["up", "--yes", "--skip-preview"]);
    assert!(out.contains("state migration of"), "{out}");
    assert!(out.contains("changes the ID"), "{out}");
    assert!(!out.contains("s3cret"), "{out}");
    assert_eq!(resources(), before);
}

#[test]
fn nodejs_a_state_migration_renames_a_child_and_keeps_its_object() {
    let Some(w) = World::nodejs() else { return };
    check_rename(&w, JS_V1, JS_V2);
}

//! End to end: `converge state move` between two stacks of a file backend,
//! through the `converge` binary. Every refusal leaves both checkpoints
//! byte-identical; every move leaves two states that `stack import` (which
//! verifies integrity) takes back, and secrets the destination's key opens.

use crate::common;

use serde_json::Value;

const PROGRAM: &str = "name: demo
runtime: yaml
resources:
  pet:
    type: random:RandomPet
  suffix:
    type: random:RandomString
    properties:
      length: 6
      special: false
    options:
      parent: ${pet}
  note:
    type: converge:index:File
    properties:
      path: ${pulumi.cwd}/note.txt
      content: ${pet.id}-${suffix.result}
  password:
    type: random:RandomPassword
    properties:
      length: 12
";

const PET: &str = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet";
const SUFFIX: &str = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet$random:index/randomString:RandomString::suffix";
const NOTE: &str = "urn:pulumi:dev::demo::converge:index:File::note";
const PASSWORD: &str = "urn:pulumi:dev::demo::random:index/randomPassword:RandomPassword::password";

struct World {
    scratch: common::Scratch,
}

impl World {
    /// The program deployed on `dev`; `prod` created, empty.
    fn new() -> World {
        let w = World {
            scratch: common::Scratch::new(PROGRAM),
        };
        w.run(&["stack", "init", "prod"]);
        w.run(&["stack", "init", "dev"]);
        let up = w.run(&["up", "--yes"]);
        assert!(up.contains("+ 5 created"), "{up}");
        w
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.scratch.command("pw"), args)
    }

    fn checkpoints(&self) -> Vec<Option<Vec<u8>>> {
        ["dev", "prod"]
            .iter()
            .map(|s| {
                std::fs::read(
                    self.scratch
                        .backend
                        .join(format!(".pulumi/stacks/demo/{s}.json")),
                )
                .ok()
            })
            .collect()
    }

    /// Fails with an error containing `expected`, both stacks unchanged.
    fn refused(&self, args: &[&str], expected: &str) -> String {
        let before = self.checkpoints();
        let err = common::failure_of(self.scratch.command("pw"), args);
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(self.checkpoints() == before, "{args:?} changed a state");
        err
    }

    /// Stack `stack`'s resources, after checking that `stack import`
    /// (which verifies integrity) takes its export back.
    fn resources(&self, stack: &str) -> Vec<Value> {
        let exported = self.run(&["stack", "export", "-s", stack]);
        let file = self.scratch.dir.path().join(format!("{stack}.export.json"));
        std::fs::write(&file, &exported).unwrap();
        self.run(&[
            "stack",
            "import",
            "-s",
            stack,
            "--file",
            file.to_str().unwrap(),
        ]);
        let v: Value = serde_json::from_str(&exported).unwrap();
        v["deployment"]["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

fn find<'a>(resources: &'a [Value], urn: &str) -> Option<&'a Value> {
    resources.iter().find(|r| r["urn"] == urn)
}

fn prod(urn: &str) -> String {
    urn.replacen("urn:pulumi:dev::", "urn:pulumi:prod::", 1)
}

#[test]
fn move_takes_children_copies_the_provider_and_removes_cross_stack_dependencies() {
    let w = World::new();
    let out = w.run(&[
        "state", "move", PET, "--source", "dev", "--dest", "prod", "--yes",
    ]);
    // The child goes with its parent; note's dependencies on both are
    // removed and reported.
    assert!(out.contains(&format!("  - {PET}")), "{out}");
    assert!(out.contains(&format!("  - {SUFFIX}")), "{out}");
    assert!(
        out.contains(&format!("{NOTE} has a dependency on {PET}")),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{NOTE} (content) has a property dependency on {PET}"
        )),
        "{out}"
    );
    assert!(out.contains("Moved 2 resource(s)"), "{out}");

    let dev = w.resources("dev");
    assert!(find(&dev, PET).is_none() && find(&dev, SUFFIX).is_none());
    let note = find(&dev, NOTE).unwrap();
    assert!(
        note.get("dependencies").is_none() && note.get("propertyDependencies").is_none(),
        "{note}"
    );
    // The provider stays in dev (the password still uses it) and is copied.
    let provider = "urn:pulumi:dev::demo::pulumi:providers:random::default";
    assert!(dev
        .iter()
        .any(|r| r["urn"].as_str().unwrap().starts_with(provider)));

    let prod_resources = w.resources("prod");
    let stack = "urn:pulumi:prod::demo::pulumi:pulumi:Stack::demo-prod";
    assert_eq!(prod_resources[0]["urn"], stack);
    let pet = find(&prod_resources, &prod(PET)).expect("pet in prod");
    assert_eq!(pet["parent"], stack);
    assert!(pet["provider"]
        .as_str()
        .unwrap()
        .starts_with(&prod(provider)));
    assert_eq!(
        find(&prod_resources, &prod(SUFFIX)).unwrap()["parent"],
        prod(PET)
    );
    // Prod's state reads and refreshes with its own provider copy.
    let refresh = w.run(&["refresh", "-s", "prod", "--yes"]);
    assert!(!refresh.contains("error"), "{refresh}");

    // Moving it back works, and reuses dev's provider.
    w.run(&[
        "state",
        "move",
        &prod(PET),
        "--source",
        "prod",
        "--dest",
        "dev",
        "--yes",
    ]);
    let dev = w.resources("dev");
    assert!(find(&dev, PET).is_some() && find(&dev, SUFFIX).is_some());
}

#[test]
fn secrets_are_re_encrypted_with_the_destination_key() {
    let w = World::new();
    let ciphertext = |resources: &[Value], urn: &str| {
        find(resources, urn).unwrap()["outputs"]["result"]["ciphertext"]
            .as_str()
            .expect("result is a secret")
            .to_owned()
    };
    let before = ciphertext(&w.resources("dev"), PASSWORD);
    w.run(&[
        "state", "move", PASSWORD, "--source", "dev", "--dest", "prod", "--yes",
    ]);
    let after = ciphertext(&w.resources("prod"), &prod(PASSWORD));
    assert_ne!(
        before, after,
        "the secret must be encrypted with prod's key"
    );
    // Prod decrypts it with its own key: a refresh reads its state.
    w.run(&["refresh", "-s", "prod", "--yes"]);
    let shown = w.run(&["stack", "export", "-s", "prod"]);
    assert!(!shown.contains("\"plaintext\""), "{shown}");
}

#[test]
fn refusals_leave_both_stacks_unchanged() {
    let w = World::new();
    w.refused(
        &[
            "state", "move", PET, "--source", "dev", "--dest", "dev", "--yes",
        ],
        "the same stack",
    );
    w.refused(&["state", "move", PET, "--yes"], "--source or --dest");
    w.refused(
        &[
            "state", "move", PET, "--source", "dev", "--dest", "nope", "--yes",
        ],
        "no stack named nope",
    );
    w.refused(
        &[
            "state",
            "move",
            "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::missing",
            "--dest",
            "prod",
            "--yes",
        ],
        "nothing to move",
    );
    let provider = w
        .resources("dev")
        .into_iter()
        .find(|r| r["type"] == "pulumi:providers:random")
        .unwrap()["urn"]
        .as_str()
        .unwrap()
        .to_owned();
    w.refused(
        &["state", "move", &provider, "--dest", "prod", "--yes"],
        "providers cannot be moved",
    );
    // Without --yes and no terminal: nothing happens.
    w.refused(&["state", "move", PET, "--dest", "prod"], "--yes");
    // A URN the destination holds already.
    w.run(&["up", "-s", "prod", "--yes"]);
    w.refused(
        &["state", "move", PET, "--dest", "prod", "--yes"],
        "already exists in the destination stack",
    );
}

/// A checkpoint that cannot be rewritten once the change is in the
/// stack's journal (here its `.bak` is a directory): the change holds, so
/// the command says so as a warning and succeeds. It never says "nothing
/// was moved" about a move the next command replays, which left an object
/// in no stack (the source failing) or in two (the destination failing).
#[test]
fn a_checkpoint_that_cannot_be_rewritten_does_not_undo_a_journaled_move() {
    for blocked in ["dev", "prod"] {
        let w = World::new();
        let bak = w
            .scratch
            .backend
            .join(format!(".pulumi/stacks/demo/{blocked}.json.bak"));
        let _ = std::fs::remove_file(&bak);
        std::fs::create_dir_all(bak.join("in-the-way")).unwrap();
        let out = w
            .scratch
            .command("pw")
            .args([
                "state", "move", PASSWORD, "--source", "dev", "--dest", "prod", "--yes",
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{blocked}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "the change to stack organization/demo/{blocked} is saved in its journal"
            )),
            "{blocked}: {stderr}"
        );
        std::fs::remove_dir_all(&bak).unwrap();
        // Exactly one stack has it, whichever checkpoint was in the way.
        assert!(find(&w.resources("dev"), PASSWORD).is_none(), "{blocked}");
        assert!(
            find(&w.resources("prod"), &prod(PASSWORD)).is_some(),
            "{blocked}"
        );
    }
}

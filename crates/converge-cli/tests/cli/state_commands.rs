//! End to end: `converge state delete | protect | unprotect | rename |
//! taint | repair` on a
//! stack deployed with a YAML program of built-in providers, through the
//! `converge` binary. Every refusal leaves the checkpoint byte-identical;
//! every edit leaves a state that `stack import` (which verifies
//! integrity) takes back and that `preview` reads.

use crate::common;

use serde_json::Value;

const PROGRAM: &str = "name: demo
runtime: yaml
resources:
  pet:
    type: random:RandomPet
  other:
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
  lonely:
    type: random:RandomInteger
    properties:
      min: 1
      max: 100
    options:
      deletedWith: ${other}
";

const STACK: &str = "urn:pulumi:dev::demo::pulumi:pulumi:Stack::demo-dev";
const PET: &str = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::pet";
const OTHER: &str = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::other";
const SUFFIX: &str = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet$random:index/randomString:RandomString::suffix";
const NOTE: &str = "urn:pulumi:dev::demo::converge:index:File::note";
const LONELY: &str = "urn:pulumi:dev::demo::random:index/randomInteger:RandomInteger::lonely";

struct World {
    scratch: common::Scratch,
}

impl World {
    /// The program deployed on stack `dev`.
    fn deployed() -> World {
        let w = World {
            scratch: common::Scratch::new(PROGRAM),
        };
        w.run(&["stack", "init", "dev"]);
        let up = w.run(&["up", "--yes"]);
        assert!(up.contains("+ 6 created"), "{up}");
        w
    }

    fn run(&self, args: &[&str]) -> String {
        common::stdout_of(self.scratch.command("pw"), args)
    }

    fn fails(&self, args: &[&str]) -> String {
        common::failure_of(self.scratch.command("pw"), args)
    }

    fn checkpoint(&self) -> Vec<u8> {
        std::fs::read(self.scratch.backend.join(".pulumi/stacks/demo/dev.json")).unwrap()
    }

    /// Fails with an error containing `expected`, the checkpoint unchanged.
    fn refused(&self, args: &[&str], expected: &str) -> String {
        let before = self.checkpoint();
        let err = self.fails(args);
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(self.checkpoint() == before, "{args:?} changed the state");
        err
    }

    /// The exported deployment, after checking that `stack import` (which
    /// verifies integrity) takes it back.
    fn export(&self) -> Value {
        let exported = self.run(&["stack", "export"]);
        let mut import = self.scratch.command("pw");
        import
            .args(["stack", "import"])
            .write_stdin_bytes(exported.as_bytes());
        let out = import.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&exported).unwrap()
    }

    fn resources(&self) -> Vec<Value> {
        self.export()["deployment"]["resources"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn resource(&self, urn: &str) -> Option<Value> {
        self.resources().into_iter().find(|r| r["urn"] == urn)
    }
}

/// `Command::output` with bytes on stdin (std has no such helper).
trait WriteStdin {
    fn write_stdin_bytes(&mut self, bytes: &[u8]) -> &mut Self;
}

impl WriteStdin for std::process::Command {
    fn write_stdin_bytes(&mut self, bytes: &[u8]) -> &mut Self {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), bytes).unwrap();
        let (f, path) = file.keep().unwrap();
        drop(f);
        self.stdin(std::fs::File::open(path).unwrap())
    }
}

fn urns(resources: &[Value]) -> Vec<String> {
    resources
        .iter()
        .map(|r| r["urn"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn delete_forgets_resources_and_refuses_what_would_break_the_state() {
    let w = World::deployed();
    // Dependents are named, by kind: a child (parent), a property dependency.
    let err = w.refused(&["state", "delete", PET, "--yes"], "depend on it");
    assert!(err.contains(SUFFIX) && err.contains("parent"), "{err}");
    assert!(
        err.contains(NOTE) && err.contains("property dependency"),
        "{err}"
    );
    assert!(err.contains("--target-dependents"), "{err}");
    let err = w.refused(&["state", "delete", OTHER, "--yes"], "deletedWith");
    assert!(err.contains(LONELY), "{err}");
    w.refused(&["state", "delete", STACK, "--yes"], "stack resource");
    let unknown = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::nope";
    w.refused(
        &["state", "delete", unknown, "--yes"],
        &format!("no resource {unknown}"),
    );
    w.refused(&["state", "delete", "pet", "--yes"], "is not a URN");
    // Non-interactive without --yes: no one to confirm.
    w.refused(&["state", "delete", LONELY], "pass --yes");

    let out = w.run(&["state", "delete", LONELY, "--yes"]);
    assert!(out.contains("Deleted 1 resource(s)"), "{out}");
    assert!(w.resource(LONELY).is_none());
    assert_eq!(w.resources().len(), 7);
    // Forgotten, so the program creates it again.
    let preview = w.run(&["preview"]);
    assert!(preview.contains("+ 1 to create"), "{preview}");

    // --target-dependents takes the child and the property dependent too.
    let out = w.run(&["state", "delete", PET, "--target-dependents", "--yes"]);
    assert!(out.contains("Deleted 3 resource(s)"), "{out}");
    let left = urns(&w.resources());
    assert_eq!(
        left,
        [
            STACK,
            "urn:pulumi:dev::demo::pulumi:providers:random::default",
            OTHER,
            "urn:pulumi:dev::demo::pulumi:providers:converge::default",
        ]
    );

    // --all forgets everything, the stack resource included.
    let out = w.run(&["state", "delete", "--all", "--yes"]);
    assert!(out.contains("Deleted"), "{out}");
    assert!(w.resources().is_empty());
    let preview = w.run(&["preview"]);
    assert!(preview.contains("+ 6 to create"), "{preview}");
}

#[test]
fn protect_and_unprotect_guard_deletes() {
    let w = World::deployed();
    let out = w.run(&["state", "protect", LONELY, NOTE]);
    assert!(out.contains("Protected 2 resource(s)"), "{out}");
    assert_eq!(w.resource(LONELY).unwrap()["protect"], true);
    assert_eq!(w.resource(NOTE).unwrap()["protect"], true);
    assert!(w
        .resource(PET)
        .unwrap()
        .get("protect")
        .is_none_or(|p| p == false));

    w.refused(&["state", "delete", LONELY, "--yes"], "protected");
    w.refused(
        &["state", "delete", PET, "--target-dependents", "--yes"],
        "protected",
    );
    w.refused(
        &["state", "protect", "urn:pulumi:dev::demo::x:y:Z::nope"],
        "no resource",
    );
    // An update may not delete it either.
    let err = w.fails(&["destroy", "--yes"]);
    assert!(err.contains("protected"), "{err}");

    let out = w.run(&["state", "unprotect", "--all", "-y"]);
    assert!(out.contains("Unprotected 2 resource(s)"), "{out}");
    assert!(w
        .resources()
        .iter()
        .all(|r| r.get("protect").is_none_or(|p| p == false)));

    w.run(&["state", "protect", LONELY, "--yes"]);
    let out = w.run(&["state", "delete", LONELY, "--force", "--yes"]);
    assert!(out.contains("Deleted 1 resource(s)"), "{out}");
    assert!(w.resource(LONELY).is_none());
}

#[test]
fn rename_rewrites_references_and_matches_the_renamed_program() {
    let w = World::deployed();
    w.refused(&["state", "rename", PET, "other"], "already exists");
    w.refused(&["state", "rename", STACK, "x"], "stack resource");
    w.refused(&["state", "rename", PET, "a::b"], "cannot contain");
    w.refused(
        &[
            "state",
            "rename",
            "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::nope",
            "x",
        ],
        "no resource",
    );

    let dog = "urn:pulumi:dev::demo::random:index/randomPet:RandomPet::dog";
    let out = w.run(&["state", "rename", PET, "dog", "-y"]);
    assert!(out.contains(dog), "{out}");
    let exported = w.export().to_string();
    assert!(!exported.contains(PET), "{exported}");
    // The child keeps its URN (its parent's type is unchanged) and follows
    // the parent; the dependent's references follow too.
    let suffix = w.resource(SUFFIX).unwrap();
    assert_eq!(suffix["parent"], dog);
    let note = w.resource(NOTE).unwrap();
    assert!(
        note["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d == dog),
        "{note}"
    );
    assert!(
        note["propertyDependencies"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d == dog),
        "{note}"
    );

    // The old program: its pet is new, and the renamed one goes.
    let preview = w.run(&["preview"]);
    assert!(
        preview.contains("to create") && preview.contains("to delete"),
        "{preview}"
    );
    // The program renamed the same way: nothing to do.
    let renamed = PROGRAM
        .replace("  pet:\n", "  dog:\n")
        .replace("${pet", "${dog");
    std::fs::write(w.scratch.project.join("Pulumi.yaml"), renamed).unwrap();
    let preview = w.run(&["preview"]);
    assert!(preview.contains("6 unchanged"), "{preview}");
    assert!(
        !preview.contains("to create") && !preview.contains("to delete"),
        "{preview}"
    );

    // A provider renamed: every provider reference follows.
    let provider = "urn:pulumi:dev::demo::pulumi:providers:random::default";
    w.run(&["state", "rename", provider, "mine"]);
    let mine = "urn:pulumi:dev::demo::pulumi:providers:random::mine";
    for r in w.resources() {
        if let Some(p) = r["provider"].as_str() {
            assert!(!p.starts_with(&format!("{provider}::")), "{r}");
        }
    }
    assert!(w.resource(OTHER).unwrap()["provider"]
        .as_str()
        .unwrap()
        .starts_with(mine));
}

#[test]
fn taint_makes_the_next_update_replace_and_untaint_clears_it() {
    let w = World::deployed();
    let pet_id = w.resource(PET).unwrap()["id"].clone();
    w.refused(&["state", "taint", STACK], "stack resource");
    w.refused(
        &["state", "taint", "urn:pulumi:dev::demo::x:y:Z::nope"],
        "no resource",
    );

    let out = w.run(&["state", "taint", PET, OTHER, "-y"]);
    assert!(out.contains("Tainted 2 resource(s)"), "{out}");
    assert_eq!(w.resource(PET).unwrap()["taint"], true);
    assert_eq!(w.resource(OTHER).unwrap()["taint"], true);
    let out = w.run(&["state", "untaint", OTHER]);
    assert!(out.contains("Untainted 1 resource(s)"), "{out}");
    assert!(w.resource(OTHER).unwrap().get("taint").is_none());

    let preview = w.run(&["preview"]);
    assert!(preview.contains("1 to replace"), "{preview}");
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("1 replaced"), "{up}");
    let pet = w.resource(PET).unwrap();
    assert_ne!(pet["id"], pet_id);
    assert!(pet.get("taint").is_none(), "{pet}");
    let again = w.run(&["preview"]);
    assert!(again.contains("6 unchanged"), "{again}");
}

impl World {
    /// Imports `deployment` with `--force`, integrity unchecked: a broken
    /// state, as a bad tool or a hand edit leaves one.
    fn import_forced(&self, deployment: &Value) {
        let file = self.scratch.dir.path().join("broken.json");
        std::fs::write(&file, deployment.to_string()).unwrap();
        self.run(&[
            "stack",
            "import",
            "--force",
            "--file",
            file.to_str().unwrap(),
        ]);
    }
}

#[test]
fn repair_puts_resources_in_order_and_drops_references_to_missing_ones() {
    let w = World::deployed();
    let before = w.checkpoint();
    let out = w.run(&["state", "repair"]);
    assert!(out.contains("nothing to repair"), "{out}");
    assert!(w.checkpoint() == before);

    // Break it: note before pet (its dependency), a dependency of lonely
    // on a resource that is not there.
    let mut exported = w.export();
    let resources = exported["deployment"]["resources"].as_array_mut().unwrap();
    let at = resources.iter().position(|r| r["urn"] == NOTE).unwrap();
    let note = resources.remove(at);
    let pet = resources.iter().position(|r| r["urn"] == PET).unwrap();
    resources.insert(pet, note);
    let lonely = resources.iter_mut().find(|r| r["urn"] == LONELY).unwrap();
    lonely["dependencies"] = serde_json::json!(["urn:pulumi:dev::demo::x:y:Z::gone"]);
    w.import_forced(&exported);
    assert!(w.fails(&["preview"]).contains("integrity"));

    w.refused(&["state", "repair"], "--yes");
    let out = w.run(&["state", "repair", "--yes"]);
    assert!(out.contains(&format!("{NOTE} (from position")), "{out}");
    assert!(
        out.contains(&format!(
            "{LONELY}: dependency on urn:pulumi:dev::demo::x:y:Z::gone"
        )),
        "{out}"
    );
    let resources = w.resources();
    let order = urns(&resources);
    let (pet, note) = (
        order.iter().position(|u| u == PET).unwrap(),
        order.iter().position(|u| u == NOTE).unwrap(),
    );
    assert!(pet < note, "{order:?}");
    assert!(w.resource(LONELY).unwrap().get("dependencies").is_none());
    // The program deploys on it with nothing to do.
    let p = w.run(&["preview", "--expect-no-changes"]);
    assert!(!p.contains("error"), "{p}");
}

#[test]
fn repair_names_what_it_cannot_fix_and_changes_nothing() {
    let w = World::deployed();
    // Forget pet by hand: suffix's parent is gone (and note's references).
    let mut exported = w.export();
    let resources = exported["deployment"]["resources"].as_array_mut().unwrap();
    resources.retain(|r| r["urn"] != PET);
    w.import_forced(&exported);
    let err = w.refused(&["state", "repair", "--yes"], "cannot be repaired safely");
    assert!(
        err.contains(&format!(
            "child resource {SUFFIX} refers to missing parent {PET}"
        )),
        "{err}"
    );
}

/// A file replaced in place (`--replace`, or tainted) is deleted before it
/// is written again: the update leaves the file there, as the state says.
#[test]
fn a_file_replaced_at_the_same_path_is_still_there() {
    let scratch = crate::common::Scratch::new("name: filerep\nruntime: yaml\n");
    let path = scratch.project.join("hello.txt");
    std::fs::write(
        scratch.project.join("Pulumi.yaml"),
        format!(
            "name: filerep\nruntime: yaml\nresources:\n  f:\n    type: converge:index:File\n    \
             properties: {{path: {}, content: hello}}\n",
            path.display()
        ),
    )
    .unwrap();
    let run = |args: &[&str]| crate::common::stdout_of(scratch.command("pw"), args);
    run(&["stack", "init", "dev"]);
    run(&["up", "--yes"]);
    let urn = "urn:pulumi:dev::filerep::converge:index:File::f";
    let up = run(&["up", "--yes", "--replace", urn]);
    assert!(up.contains("replaced"), "{up}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");
    run(&["state", "taint", urn, "--yes"]);
    run(&["up", "--yes"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");
    run(&["refresh", "--preview-only", "--expect-no-changes"]);
}

//! `--target`, `--exclude`, `--replace` and `--target-replace` with URN
//! patterns, and `--target-dependents` / `--exclude-dependents`, through
//! the `converge` binary running a Python program with the published
//! `pulumi` SDK (CONVERGE_TEST_PYTHON names the venv's interpreter).

use crate::common;

use common::python::{venv, PythonWorld as World};

/// Four pets: `web-a`, `web-b`, `db`, and `child`, which depends on
/// `web-a`. A change of `length` replaces them.
const PETS: &str = r#"
import pulumi

length = pulumi.Config().get_int("length") or 2
def pet(name, opts=None):
    return pulumi.CustomResource("random:index/randomPet:RandomPet", name,
                                 {"length": length, "id": None}, opts)
web_a = pet("web-a")
pet("web-b")
pet("db")
pet("child", pulumi.ResourceOptions(depends_on=[web_a]))
"#;

#[test]
fn targets_excludes_and_replacements_take_urn_patterns() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PETS);
    w.run(&["up", "--yes"]);

    let up = w.run(&["up", "--yes", "--target-replace", "**::db"]);
    assert!(up.contains("+-1 replaced"), "{up}");

    w.run(&["config", "set", "length", "3"]);
    let preview = |args: &[&str]| w.run(&[&["preview"], args].concat());
    let p = preview(&["--target", "**web-*"]);
    assert!(p.contains("+-2 to replace"), "{p}");
    let p = preview(&[
        "--target",
        "urn:pulumi:dev::pyproj::random:index/randomPet:RandomPet::*",
    ]);
    assert!(p.contains("+-4 to replace"), "{p}");
    // `*` stays within a URN part.
    let p = w.fails(&["preview", "--target", "urn:pulumi:dev::pyproj::*"]);
    assert!(
        p.contains("no resource matching 'urn:pulumi:dev::pyproj::*' found")
            && p.contains("converge stack export"),
        "{p}"
    );
    let p = w.fails(&[
        "preview",
        "--replace",
        "urn:pulumi:dev::pyproj::random:index/randomPet:RandomPet::ghost",
    ]);
    assert!(
        p.contains(
            "no resource named 'urn:pulumi:dev::pyproj::random:index/randomPet:RandomPet::ghost'"
        ),
        "{p}"
    );
    let p = preview(&["--target", "**web-a", "--target-dependents"]);
    assert!(p.contains("+-2 to replace"), "{p}");
    let p = preview(&["--exclude", "**web-a", "--exclude-dependents"]);
    assert!(p.contains("+-2 to replace"), "{p}");

    let up = w.run(&["up", "--yes", "--target", "**web**"]);
    assert!(up.contains("+-2 replaced"), "{up}");
    let refresh = w.run(&["refresh", "--yes", "--target", "**::db"]);
    assert!(!refresh.contains("error"), "{refresh}");
    let destroy = w.run(&[
        "destroy",
        "--yes",
        "--target",
        "**web-a",
        "--target-dependents",
    ]);
    assert!(destroy.contains("- 2 deleted"), "{destroy}");
    let state = w.state();
    assert!(state.contains("RandomPet::db") && !state.contains("RandomPet::child"));
}

/// As in Pulumi, the stack resource is always targeted: a targeted `up`
/// of a new stack creates the stack and what it targets, nothing else.
#[test]
fn a_targeted_up_of_a_new_stack_creates_only_its_targets() {
    let Some(venv) = venv() else { return };
    let w = World::new(&venv, PETS);
    let up = w.run(&["up", "--yes", "--target", "**::db"]);
    assert!(
        up.contains("pulumi:pulumi:Stack pyproj-dev created"),
        "{up}"
    );
    let state = w.state();
    assert!(state.contains("RandomPet::db\""), "{state}");
    assert!(!state.contains("RandomPet::web-a\""), "{state}");
    let p = w.run(&["preview"]);
    assert!(p.contains("+ 3 to create"), "{p}");

    // With --target, --replace of an untargeted resource changes nothing.
    w.run(&["up", "--yes"]);
    let before = w.state();
    let up = w.run(&["up", "--yes", "--target", "**::db", "--replace", "**web-a"]);
    assert!(!up.contains("replaced"), "{up}");
    let id = |s: &str| {
        s.split("RandomPet::web-a\"")
            .nth(1)
            .map(|r| r[..200].to_owned())
    };
    assert_eq!(id(&w.state()), id(&before));
}

/// A new resource left out of `--target` is not created, yet the program
/// gets its inputs as its outputs, as Pulumi answers a skipped create —
/// checked by the provider, so with its defaults (`separator`): code that
/// reads them (indexing a `keepers` map, the separator's first character)
/// goes on.
#[test]
fn a_skipped_create_gives_the_program_its_inputs() {
    let Some(venv) = venv() else { return };
    let w = World::new(
        &venv,
        r#"
import pulumi
import pulumi_random as random

kept = random.RandomPet("kept", length=2)
fresh = random.RandomPet("fresh", length=3, keepers={"owner": "ops"})
pulumi.export("owner", fresh.keepers.apply(lambda k: k["owner"]))
pulumi.export("length", fresh.length)
pulumi.export("separator", fresh.separator.apply(lambda s: s[0]))
"#,
    );
    let up = w.run(&["up", "--yes", "--target", "**::kept"]);
    assert!(up.contains("RandomPet kept created"), "{up}");
    assert!(!up.contains("RandomPet fresh created"), "{up}");
    assert_eq!(w.run(&["stack", "output", "owner"]).trim(), "ops");
    assert_eq!(w.run(&["stack", "output", "separator"]).trim(), "-");
    assert_eq!(w.run(&["stack", "output", "length"]).trim(), "3");
    let state = w.state();
    assert!(state.contains("RandomPet::kept\""), "{state}");
    assert!(!state.contains("RandomPet::fresh\""), "{state}");
    let up = w.run(&["up", "--yes"]);
    assert!(up.contains("RandomPet fresh created"), "{up}");
}

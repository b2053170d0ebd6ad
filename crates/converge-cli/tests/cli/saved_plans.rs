//! Saved plans end to end through `converge` with a YAML program on the
//! built-in providers: `preview --save-plan` then `up --plan` applies;
//! a program changed after the plan violates it; a stack whose state
//! moved on refuses the plan as stale; secrets in the plan file are
//! ciphertext; a refresh-only plan is saved and applied; a hand-edited
//! plan's misspelled keys are named.

use crate::common;

use common::{failure_of, stdout_of, Scratch};

fn program(content: &str) -> String {
    format!(
        "name: plans
runtime: yaml
config:
  token: {{type: string, secret: true}}
resources:
  pet:
    type: random:RandomPet
    properties:
      prefix: ${{token}}
  motd:
    type: converge:index:File
    properties:
      path: motd.txt
      content: {content}
"
    )
}

struct World {
    scratch: Scratch,
}

impl World {
    fn new() -> World {
        let w = World {
            scratch: Scratch::new(&program("hello")),
        };
        w.run(&["stack", "init", "dev"]);
        w.run(&["config", "set", "--secret", "token", "s3cr3t-token-value"]);
        w
    }

    fn run(&self, args: &[&str]) -> String {
        stdout_of(self.scratch.command("pw"), args)
    }

    fn fail(&self, args: &[&str]) -> String {
        failure_of(self.scratch.command("pw"), args)
    }

    fn set_program(&self, content: &str) {
        std::fs::write(self.scratch.project.join("Pulumi.yaml"), program(content)).unwrap();
    }

    fn state(&self) -> String {
        self.run(&["stack", "export"])
    }

    fn motd(&self) -> String {
        std::fs::read_to_string(self.scratch.project.join("motd.txt")).unwrap_or_default()
    }

    fn plan_path(&self) -> String {
        self.scratch
            .dir
            .path()
            .join("plan.json")
            .display()
            .to_string()
    }
}

#[test]
fn a_saved_plan_applies_and_keeps_secrets_encrypted() {
    let w = World::new();
    let plan = w.plan_path();
    w.run(&["preview", "--save-plan", &plan]);
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("\"resourcePlans\""), "{text}");
    assert!(text.contains("\"convergeBase\""), "{text}");
    assert!(
        !text.contains("s3cr3t-token-value"),
        "a plaintext secret: {text}"
    );
    assert!(text.contains("4dabf18193072939515e22adb298388d"), "{text}");
    assert_eq!(w.motd(), "", "a preview changes nothing");
    w.run(&["up", "--plan", &plan, "--yes"]);
    assert_eq!(w.motd(), "hello");
    assert!(w.state().contains("random:index/randomPet:RandomPet::pet"));
}

#[test]
fn a_program_changed_after_the_plan_violates_it() {
    let w = World::new();
    w.run(&["up", "--yes"]);
    let plan = w.plan_path();
    w.set_program("planned");
    w.run(&["preview", "--save-plan", &plan]);
    let before = w.state();
    w.set_program("something else");
    let out = w.fail(&["up", "--plan", &plan, "--yes"]);
    assert!(out.contains("converge:index:File::motd violates plan: properties changed: content: planned \"planned\", but got \"something else\""), "{out}");
    assert_eq!(w.motd(), "hello");
    assert_eq!(w.state(), before, "the state is unchanged");
    w.set_program("planned");
    w.run(&["up", "--plan", &plan, "--yes"]);
    assert_eq!(w.motd(), "planned");
}

#[test]
fn a_plan_on_a_stack_whose_state_moved_on_is_stale() {
    let w = World::new();
    let plan = w.plan_path();
    w.set_program("planned");
    w.run(&["preview", "--save-plan", &plan]);
    w.set_program("meanwhile");
    w.run(&["up", "--yes"]);
    let before = w.state();
    w.set_program("planned");
    let out = w.fail(&["up", "--plan", &plan, "--yes"]);
    assert!(out.contains("plan is stale"), "{out}");
    assert_eq!(w.motd(), "meanwhile");
    assert_eq!(w.state(), before);
}

#[test]
fn a_plan_made_for_another_stack_is_refused_by_name() {
    let w = World::new();
    let plan = w.plan_path();
    w.run(&["preview", "--save-plan", &plan]);
    w.run(&["stack", "init", "prod"]);
    w.run(&["config", "set", "--secret", "token", "another-token"]);
    let before = w.state();
    let out = w.fail(&["up", "--plan", &plan, "--yes"]);
    assert!(
        out.contains("was made for stack dev of project plans, not for stack prod"),
        "{out}"
    );
    assert!(!out.contains("decrypt"), "{out}");
    // `prod` has never been updated: its export is made up on the spot,
    // stamped with the time of the export.
    let untimed = |s: String| {
        s.lines()
            .filter(|l| !l.contains("\"time\""))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(untimed(w.state()), untimed(before));
    assert_eq!(w.motd(), "");
}

#[test]
fn plan_flags_belong_to_their_commands() {
    let w = World::new();
    let out = w.fail(&["up", "--save-plan", "x.json", "--yes"]);
    assert!(
        out.contains("`converge up` has no --save-plan flag"),
        "{out}"
    );
    let out = w.fail(&["preview", "--plan", "x.json"]);
    assert!(
        out.contains("`converge preview` has no --plan flag"),
        "{out}"
    );
    let out = w.fail(&["up", "--plan", "missing.json", "--yes"]);
    assert!(
        out.contains("could not read the plan missing.json"),
        "{out}"
    );
}

#[test]
fn a_refresh_only_plan_is_saved_and_applied() {
    let w = World::new();
    w.run(&["up", "--yes"]);
    std::fs::write(w.scratch.project.join("motd.txt"), "drifted").unwrap();
    let shown = w.run(&["preview", "--refresh-only"]);
    assert!(shown.contains("motd"), "{shown}");
    assert!(!w.state().contains("drifted"), "a preview changes nothing");
    let plan = w.plan_path();
    w.run(&["preview", "--refresh-only", "--save-plan", &plan]);
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("\"convergeRefreshOnly\": true"), "{text}");
    // Changed again after the review: the plan applies what was reviewed.
    std::fs::write(w.scratch.project.join("motd.txt"), "later").unwrap();
    w.run(&["up", "--plan", &plan, "--yes"]);
    let state = w.state();
    assert!(state.contains("drifted"), "{state}");
    assert!(!state.contains("later"), "{state}");
}

#[test]
fn a_hand_edited_plans_misspelled_keys_are_named() {
    let w = World::new();
    let plan = w.plan_path();
    w.run(&["preview", "--save-plan", &plan]);
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(text.contains("\"resourcePlans\"") && text.contains("\"inputDiff\""));
    let edited = text
        .replacen("\"resourcePlans\"", "\"resourcePlan\"", 1)
        .replacen("\"inputDiff\"", "\"inputDif\"", 1);
    std::fs::write(&plan, edited).unwrap();
    let out = w.fail(&["up", "--plan", &plan, "--yes"]);
    assert!(
        out.contains("the plan: unknown key `resourcePlan`; did you mean `resourcePlans`?")
            && out.contains("make the plan again with `converge preview --save-plan`"),
        "{out}"
    );
    assert!(!w.state().contains("RandomPet"));
    assert_eq!(w.motd(), "");

    // The goal's keys too.
    std::fs::write(&plan, text.replacen("\"inputDiff\"", "\"inputDif\"", 1)).unwrap();
    let out = w.fail(&["up", "--plan", &plan, "--yes"]);
    assert!(
        out.contains("unknown key `inputDif`; did you mean `inputDiff`?"),
        "{out}"
    );
}

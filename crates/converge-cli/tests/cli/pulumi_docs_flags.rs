//! Pulumi's command lines as its CLI documentation spells them, end to
//! end through `converge`: boolean flags with `=VALUE`, the environment
//! variables that stand for flags (`PULUMI_STACK`,
//! `PULUMI_SKIP_CONFIRMATIONS`, `PULUMI_HOME`), `stack -s STACK SUB`,
//! `login`/`logout` flags, the command aliases, the flags accepted for
//! scripts' sake, and `preview --json --suppress-outputs`.

use std::process::Command;

use assert_cmd::cargo::CommandCargoExt;

use crate::common;

use common::{failure_of, stdout_of, Scratch};

const REFRESHED: &str = "name: flags
runtime: yaml
options:
  refresh: always
resources:
  pet:
    type: random:RandomPet
outputs:
  name: ${pet.id}
";

#[test]
fn boolean_flags_take_values_and_refresh_false_overrides_the_project() {
    let scratch = Scratch::new(REFRESHED);
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    stdout_of(
        scratch.command("pw"),
        &["up", "--yes=true", "--skip-preview=false", "--diff=0"],
    );
    // `options.refresh: always` refreshes first; `--refresh=false` does not.
    let out = stdout_of(scratch.command("pw"), &["up", "--yes"]);
    assert!(out.contains("pet refreshing"), "{out}");
    let out = stdout_of(scratch.command("pw"), &["up", "--yes", "--refresh=false"]);
    assert!(!out.contains("refreshing"), "{out}");
    // `--yes=false` is no confirmation.
    let out = failure_of(scratch.command("pw"), &["up", "--yes=false"]);
    assert!(
        out.contains("--yes or --skip-preview must be passed"),
        "{out}"
    );
    // A value that is no boolean is refused as before.
    let out = failure_of(scratch.command("pw"), &["up", "--yes=maybe"]);
    assert!(out.contains("--yes"), "{out}");
}

#[test]
fn skip_confirmations_and_skip_preview_proceed_without_yes() {
    let scratch = Scratch::new(REFRESHED);
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    let mut cmd = scratch.command("pw");
    cmd.env("PULUMI_SKIP_CONFIRMATIONS", "true");
    let out = stdout_of(cmd, &["up"]);
    assert!(out.contains("+ 2 created"), "{out}");
    // As in Pulumi, --skip-preview alone confirms.
    let out = stdout_of(scratch.command("pw"), &["destroy", "-f"]);
    assert!(out.contains("- 2 deleted"), "{out}");
}

#[test]
fn pulumi_stack_and_the_stack_flag_before_the_subcommand_name_the_stack() {
    let scratch = Scratch::new(REFRESHED);
    for stack in ["one", "two"] {
        stdout_of(scratch.command("pw"), &["stack", "init", stack]);
        stdout_of(scratch.command("pw"), &["up", "--yes", "-f"]);
    }
    let name_of = |stack: &str| {
        stdout_of(
            scratch.command("pw"),
            &["stack", "output", "name", "-s", stack],
        )
    };
    let (one, two) = (name_of("one"), name_of("two"));
    assert_ne!(one, two);
    // `two` is selected; PULUMI_STACK names another, --stack wins over it.
    let mut cmd = scratch.command("pw");
    cmd.env("PULUMI_STACK", "one");
    assert_eq!(stdout_of(cmd, &["stack", "output", "name"]), one);
    let mut cmd = scratch.command("pw");
    cmd.env("PULUMI_STACK", "one");
    assert_eq!(
        stdout_of(cmd, &["stack", "output", "name", "--stack", "two"]),
        two
    );
    // Pulumi's `stack` passes its --stack down to the subcommand.
    assert_eq!(
        stdout_of(
            scratch.command("pw"),
            &["stack", "-s", "one", "output", "name"]
        ),
        one
    );
}

/// `converge` with `PULUMI_HOME` and no `CONVERGE_HOME`.
fn with_pulumi_home(scratch: &Scratch, home: &std::path::Path) -> Command {
    let mut cmd = Command::cargo_bin("converge").unwrap();
    cmd.current_dir(&scratch.project)
        .env_remove("CONVERGE_HOME")
        .env_remove("PULUMI_BACKEND_URL")
        .env("PULUMI_HOME", home)
        .env("HOME", scratch.dir.path())
        .arg("--non-interactive");
    cmd
}

#[test]
fn each_pulumi_home_has_its_own_login_and_logout_takes_pulumis_flags() {
    let scratch = Scratch::new(REFRESHED);
    let (a, b) = (scratch.dir.path().join("a"), scratch.dir.path().join("b"));
    let (state_a, state_b) = (scratch.dir.path().join("sa"), scratch.dir.path().join("sb"));
    for dir in [&state_a, &state_b] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let url_a = format!("file://{}", state_a.display());
    let url_b = format!("file://{}", state_b.display());
    stdout_of(with_pulumi_home(&scratch, &a), &["login", &url_a]);
    stdout_of(with_pulumi_home(&scratch, &b), &["login", "-c", &url_b]);
    let whoami = |home: &std::path::Path| {
        let out = stdout_of(with_pulumi_home(&scratch, home), &["whoami", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["url"].as_str().unwrap().to_owned()
    };
    assert_eq!(whoami(&a), url_a);
    assert_eq!(whoami(&b), url_b);
    assert!(a.join("converge/credentials.json").is_file());

    // `logout -c URL` of another backend keeps the current login.
    let out = stdout_of(with_pulumi_home(&scratch, &a), &["logout", "-c", &url_b]);
    assert!(out.contains(&format!("Not logged in to {url_b}")), "{out}");
    assert_eq!(whoami(&a), url_a);
    stdout_of(with_pulumi_home(&scratch, &a), &["login", "-l"]);
    let out = stdout_of(with_pulumi_home(&scratch, &a), &["logout", "--all"]);
    assert!(out.contains("Logged out of file://~"), "{out}");
    assert!(out.contains(&format!("Logged out of {url_a}")), "{out}");
}

#[test]
fn pulumis_aliases_and_script_flags_are_accepted() {
    let scratch = Scratch::new(REFRESHED);
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    stdout_of(
        scratch.command("pw"),
        &[
            "up",
            "--yes",
            "--suppress-permalink",
            "-d",
            "-e",
            "--disable-integrity-checking",
        ],
    );
    let out = stdout_of(
        scratch.command("pw"),
        &["pre", "--suppress-permalink=true", "-Q"],
    );
    assert!(out.contains("2 unchanged"), "{out}");
    // `-x` is --exclude on refresh and destroy.
    let out = stdout_of(
        scratch.command("pw"),
        &["refresh", "--yes", "-x", "**RandomPet::pet"],
    );
    assert!(!out.contains("pet refreshing"), "{out}");
    let out = stdout_of(
        scratch.command("pw"),
        &["down", "--yes", "--exclude-protected"],
    );
    assert!(out.contains("- 2 deleted"), "{out}");
    let out = failure_of(
        scratch.command("pw"),
        &["cancel", "dev", "--yes", "-s", "dev"],
    );
    assert!(out.contains("cannot be used with"), "{out}");
    let out = stdout_of(scratch.command("pw"), &["cancel", "dev", "--yes"]);
    assert!(out.contains("nothing to cancel"), "{out}");

    // Pulumi's converters and ESC environments: refused with what to do.
    let out = failure_of(
        scratch.command("pw"),
        &["import", "--from", "terraform", "x.tfstate"],
    );
    assert!(out.contains("Converge runs no converters"), "{out}");
    let out = failure_of(scratch.command("pw"), &["plugin", "ls", "-p"]);
    assert!(out.contains("does not work out which plugins"), "{out}");
    let out = failure_of(scratch.command("pw"), &["config", "env", "ls"]);
    assert!(
        out.contains("Converge has no `config env` command"),
        "{out}"
    );
}

#[test]
fn preview_json_suppress_outputs_leaves_the_stacks_outputs_out() {
    let scratch = Scratch::new(REFRESHED);
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    stdout_of(scratch.command("pw"), &["up", "--yes"]);
    let stack_state = |args: &[&str]| {
        let out = stdout_of(scratch.command("pw"), args);
        let digest: serde_json::Value = serde_json::from_str(&out).unwrap();
        let step = digest["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| {
                s["urn"]
                    .as_str()
                    .unwrap()
                    .ends_with("pulumi:pulumi:Stack::flags-dev")
            })
            .cloned()
            .unwrap();
        step["newState"]["outputs"].clone()
    };
    let shown = stack_state(&["preview", "--json", "--show-sames"]);
    assert!(shown["name"].is_string(), "{shown}");
    let hidden = stack_state(&["preview", "--json", "--show-sames", "--suppress-outputs"]);
    assert_eq!(hidden, serde_json::json!({}));
}

#[test]
fn config_set_takes_a_type_and_every_config_command_a_config_file() {
    let scratch = Scratch::new(REFRESHED);
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    let run = |args: &[&str]| stdout_of(scratch.command("pw"), args);
    run(&["config", "set", "--type", "int", "port", "8080"]);
    run(&["config", "set", "--type", "bool", "on", "1"]);
    run(&["config", "set", "--type", "float", "ratio", "0.5"]);
    run(&["config", "set", "--type", "string", "zip", "007"]);
    let file: serde_json::Value = serde_norway::from_str(
        &std::fs::read_to_string(scratch.project.join("Pulumi.dev.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(file["config"]["flags:port"], 8080);
    assert_eq!(file["config"]["flags:on"], true);
    assert_eq!(file["config"]["flags:ratio"], 0.5);
    assert_eq!(file["config"]["flags:zip"], "007");
    let out = failure_of(
        scratch.command("pw"),
        &["config", "set", "--type", "int", "port", "eighty"],
    );
    assert!(out.contains("\"eighty\" is not of type int"), "{out}");
    let out = failure_of(
        scratch.command("pw"),
        &["config", "set", "--type", "int", "--secret", "n", "1"],
    );
    assert!(out.contains("cannot be combined with --secret"), "{out}");

    // --config-file, before or after the subcommand.
    run(&["config", "set", "k", "v", "--config-file", "other.yaml"]);
    let other = std::fs::read_to_string(scratch.project.join("other.yaml")).unwrap();
    assert!(other.contains("flags:k: v"), "{other}");
    let listed = run(&["config", "--config-file", "other.yaml", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(listed["flags:k"]["value"], "v", "{listed}");
    assert!(listed.get("flags:port").is_none(), "{listed}");
    assert_eq!(
        run(&["config", "get", "k", "--config-file", "other.yaml"]).trim(),
        "v"
    );
}

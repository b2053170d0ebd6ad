//! Pulumi's flags a trial found missing, end to end through `converge`:
//! `preview`/`up --config KEY=VALUE` (and `--config-path`), `destroy
//! --remove`, `stack init --no-select` and `--copy-config-from`, `stack
//! ls --project`/`--tag`, `stack export --version`, and the display
//! flags of the operations.

use crate::common;

use common::{failure_of, stdout_of, Scratch};

const CONFIG_PROGRAM: &str = "name: cfg
runtime: yaml
config:
  greeting: {type: string}
outputs:
  said: ${greeting}
";

fn stack_file(scratch: &Scratch, stack: &str) -> String {
    std::fs::read_to_string(scratch.project.join(format!("Pulumi.{stack}.yaml"))).unwrap()
}

#[test]
fn config_flags_are_saved_to_the_stack_file_and_used_by_the_operation() {
    let scratch = Scratch::new(CONFIG_PROGRAM);
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    stdout_of(scratch.command("pw"), &["up", "--yes", "-c", "greeting=hi"]);
    assert!(stack_file(&scratch, "dev").contains("cfg:greeting: hi"));
    let out = stdout_of(scratch.command("pw"), &["stack", "output", "said"]);
    assert_eq!(out.trim(), "hi");

    // A preview saves them too; --config-path makes the keys paths, their
    // values typed as `config set --path` types them.
    let out = stdout_of(
        scratch.command("pw"),
        &[
            "preview",
            "--config=greeting=there",
            "--config-path",
            "-c",
            "limits.max=3",
            "-c",
            "limits.on=true",
        ],
    );
    assert!(out.contains("\"hi\" => \"there\""), "{out}");
    let file: serde_json::Value = serde_norway::from_str(&stack_file(&scratch, "dev")).unwrap();
    assert_eq!(file["config"]["cfg:greeting"], "there");
    assert_eq!(file["config"]["cfg:limits"]["max"], 3);
    assert_eq!(file["config"]["cfg:limits"]["on"], true);

    // A malformed pair is refused before anything changes.
    let before = stack_file(&scratch, "dev");
    let out = failure_of(
        scratch.command("pw"),
        &["up", "--yes", "-c", "greeting=again", "-c", "nokey"],
    );
    assert!(
        out.contains("--config \"nokey\": expected KEY=VALUE"),
        "{out}"
    );
    assert_eq!(before, stack_file(&scratch, "dev"));
    let out = stdout_of(scratch.command("pw"), &["stack", "output", "said"]);
    assert_eq!(out.trim(), "hi");

    // Refresh and destroy take no --config, as in Pulumi.
    let out = failure_of(scratch.command("pw"), &["refresh", "--yes", "-c", "a=b"]);
    assert!(
        out.contains("`converge refresh` has no --config flag"),
        "{out}"
    );
}

const TWO_PETS: &str = "name: rm
runtime: yaml
resources:
  pet:
    type: random:RandomPet
  kept:
    type: random:RandomPet
    options:
      protect: true
";

#[test]
fn destroy_remove_removes_the_stack_and_its_config_only_after_a_full_destroy() {
    let scratch = Scratch::new(TWO_PETS);
    let state = scratch.backend.join(".pulumi/stacks/rm/dev.json");
    let config = scratch.project.join("Pulumi.dev.yaml");
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    stdout_of(scratch.command("pw"), &["config", "set", "x", "y"]);
    stdout_of(scratch.command("pw"), &["up", "--yes"]);

    // A destroy that fails (a protected resource) removes nothing.
    let out = failure_of(scratch.command("pw"), &["destroy", "--yes", "--remove"]);
    assert!(out.contains("is protected"), "{out}");
    assert!(state.exists() && config.exists());

    // One that leaves resources behind keeps the stack, and says so.
    let out = output_of(
        &scratch,
        &["destroy", "--yes", "--remove", "--exclude-protected"],
    );
    assert!(out.contains("still has"), "{out}");
    assert!(out.contains("so it was not removed"), "{out}");
    assert!(state.exists() && config.exists());

    // A preview removes nothing.
    stdout_of(
        scratch.command("pw"),
        &["state", "unprotect", "--all", "--yes"],
    );
    stdout_of(
        scratch.command("pw"),
        &["destroy", "--yes", "--remove", "--preview-only"],
    );
    assert!(state.exists() && config.exists());

    let out = stdout_of(scratch.command("pw"), &["destroy", "--yes", "--remove"]);
    assert!(
        out.contains("history and configuration associated with the stack have been removed"),
        "{out}"
    );
    assert!(!state.exists());
    assert!(!config.exists());
    let out = stdout_of(scratch.command("pw"), &["stack", "ls", "--json"]);
    assert_eq!(out.trim(), "[]");

    // Only destroy takes it.
    let out = failure_of(scratch.command("pw"), &["up", "--yes", "--remove"]);
    assert!(out.contains("`converge up` has no --remove flag"), "{out}");
}

/// Runs `converge args…`, which must succeed; its stdout and stderr.
fn output_of(scratch: &Scratch, args: &[&str]) -> String {
    let out = scratch.command("pw").args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "converge {args:?}:\n{text}");
    text
}

#[test]
fn stack_init_can_leave_the_selection_and_copy_another_stacks_config() {
    let scratch = Scratch::new("name: cp\nruntime: yaml\n");
    let run = |args: &[&str]| stdout_of(scratch.command("pw"), args);
    run(&["stack", "init", "dev"]);
    run(&["config", "set", "plain", "v"]);
    run(&["config", "set", "--secret", "pass", "hunter2"]);
    run(&["config", "set", "--path", "o.a[0]", "1"]);

    let out = run(&[
        "stack",
        "init",
        "prod",
        "--no-select",
        "--copy-config-from",
        "dev",
    ]);
    assert!(out.contains("Created stack 'prod'"), "{out}");
    // dev is still the current stack.
    let out = run(&["stack", "ls", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    let current: Vec<_> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["current"] == true)
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(current, ["dev"]);

    // The configuration came along; the secret is sealed with prod's own
    // key (its own salt), never written in plaintext.
    let dev = stack_file(&scratch, "dev");
    let prod = stack_file(&scratch, "prod");
    assert!(!prod.contains("hunter2"), "{prod}");
    let dev: serde_json::Value = serde_norway::from_str(&dev).unwrap();
    let prod: serde_json::Value = serde_norway::from_str(&prod).unwrap();
    assert_ne!(dev["encryptionsalt"], prod["encryptionsalt"]);
    assert_ne!(dev["config"]["cp:pass"], prod["config"]["cp:pass"]);
    assert_eq!(prod["config"]["cp:plain"], "v");
    assert_eq!(prod["config"]["cp:o"]["a"][0], 1);
    let out = run(&["config", "get", "pass", "-s", "prod"]);
    assert_eq!(out.trim(), "hunter2");

    // Without --no-select the new stack is selected; a stack to copy from
    // that does not exist is refused before the new stack is made.
    let out = failure_of(
        scratch.command("pw"),
        &["stack", "init", "qa", "--copy-config-from", "nope"],
    );
    assert!(out.contains("--copy-config-from"), "{out}");
    assert!(!scratch.project.join("Pulumi.qa.yaml").exists());
    run(&["stack", "init", "qa"]);
    let out = run(&["stack", "--show-name"]);
    assert_eq!(out.trim(), "qa");
}

/// The names `stack ls --json` lists with `args`, run in `scratch`.
fn listed(scratch: &Scratch, args: &[&str]) -> Vec<String> {
    let mut all = vec!["stack", "ls", "--json"];
    all.extend_from_slice(args);
    let out = stdout_of(scratch.command("pw"), &all);
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    list.as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn stack_ls_filters_by_project_and_by_tag() {
    let scratch = Scratch::new("name: web\nruntime: yaml\n");
    let run = |args: &[&str]| stdout_of(scratch.command("pw"), args);
    run(&["stack", "init", "dev"]);
    run(&["stack", "init", "prod"]);
    run(&["stack", "tag", "set", "team", "blue", "-s", "dev"]);
    run(&["stack", "tag", "set", "team", "green", "-s", "prod"]);
    // Another project's stack, in the same backend.
    let other = scratch.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("Pulumi.yaml"), "name: db\nruntime: yaml\n").unwrap();
    stdout_of(
        scratch.command("pw"),
        &["-C", other.to_str().unwrap(), "stack", "init", "main"],
    );

    assert_eq!(listed(&scratch, &[]), ["dev", "prod"]);
    // Another project's stack by its full name, as Pulumi lists it (two
    // parts would be `org/stack`); with -Q, every one.
    assert_eq!(
        listed(&scratch, &["--project", "db"]),
        ["organization/db/main"]
    );
    assert_eq!(
        listed(&scratch, &["--all"]),
        ["dev", "organization/db/main", "prod"]
    );
    assert_eq!(
        listed(&scratch, &["-Q"]),
        ["organization/web/dev", "organization/web/prod"]
    );
    assert_eq!(listed(&scratch, &["-o", "organization"]), ["dev", "prod"]);
    assert!(listed(&scratch, &["--organization", "acme"]).is_empty());
    assert_eq!(listed(&scratch, &["-p", "web"]), ["dev", "prod"]);
    assert!(listed(&scratch, &["--project", "nothing"]).is_empty());
    assert_eq!(listed(&scratch, &["--tag", "team"]), ["dev", "prod"]);
    assert_eq!(listed(&scratch, &["--tag", "team=green"]), ["prod"]);
    assert!(listed(&scratch, &["-t", "owner"]).is_empty());
    // The built-in tags count too, across projects with --all.
    assert_eq!(
        listed(&scratch, &["--all", "--tag", "pulumi:project=db"]),
        ["organization/db/main"]
    );
}

#[test]
fn stack_export_version_writes_the_deployment_an_update_left() {
    let scratch = Scratch::new(
        "name: ver
runtime: yaml
config:
  len: {type: integer, default: 1}
resources:
  pet:
    type: random:RandomPet
    properties:
      length: ${len}
",
    );
    let run = |args: &[&str]| stdout_of(scratch.command("pw"), args);
    run(&["stack", "init", "dev"]);
    run(&["up", "--yes"]);
    run(&["up", "--yes", "-c", "len=2"]);
    let pet_length = |export: &str| -> serde_json::Value {
        let doc: serde_json::Value = serde_json::from_str(export).unwrap();
        doc["deployment"]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["type"] == "random:index/randomPet:RandomPet")
            .map(|r| r["inputs"]["length"].clone())
            .unwrap()
    };
    assert_eq!(pet_length(&run(&["stack", "export", "--version", "1"])), 1);
    assert_eq!(pet_length(&run(&["stack", "export", "--version", "2"])), 2);
    assert_eq!(pet_length(&run(&["stack", "export"])), 2);
    let file = scratch.project.join("v1.json");
    run(&["stack", "export", "--version", "1", "--file", "v1.json"]);
    assert_eq!(pet_length(&std::fs::read_to_string(file).unwrap()), 1);

    let out = failure_of(
        scratch.command("pw"),
        &["stack", "export", "--version", "3"],
    );
    assert!(out.contains("stack dev has no update version 3"), "{out}");
    run(&["stack", "init", "empty"]);
    let out = failure_of(
        scratch.command("pw"),
        &["stack", "export", "--version", "1"],
    );
    assert!(
        out.contains("has no update version 1 (it has no update history)"),
        "{out}"
    );
}

#[test]
fn stack_export_version_on_a_state_service_says_it_keeps_no_copy() {
    let scratch = Scratch::new("name: svc\nruntime: yaml\n");
    let data = scratch.dir.path().join("service");
    let backend = common::Backend::Service(common::service::Service::start(
        &scratch.home,
        &data,
        "127.0.0.1:0",
    ));
    let on = |args: &[&str]| common::converge_on(&scratch, &backend, args);
    stdout_of(on(&["stack", "init", "dev"]), &[]);
    stdout_of(on(&["up", "--yes"]), &[]);
    let out = failure_of(on(&["stack", "export", "--version", "1"]), &[]);
    assert!(
        out.contains("keeps no checkpoint of update version 1"),
        "{out}"
    );
}

const DISPLAY_PROGRAM: &str = "name: disp
runtime: yaml
config:
  len: {type: integer, default: 1}
resources:
  pet:
    type: random:RandomPet
    properties:
      length: ${len}
  seen:
    type: random:RandomString
    get:
      id: s3cret
";

#[test]
fn display_flags_show_sames_reads_replacement_steps_and_config() {
    let scratch = Scratch::new(DISPLAY_PROGRAM);
    let run = |args: &[&str]| stdout_of(scratch.command("pw"), args);
    run(&["stack", "init", "dev"]);
    run(&["config", "set", "--secret", "token", "hunter2"]);
    run(&["up", "--yes"]);
    const PET: &str = "random:index/randomPet:RandomPet pet";

    // By default: a replacement is one line; no unchanged resource, no
    // read, no configuration.
    let out = run(&["preview", "-c", "len=2"]);
    assert!(
        out.contains(&format!(" +- {PET} replace [diff: ~length]")),
        "{out}"
    );
    assert!(!out.contains("create replacement"), "{out}");
    assert!(!out.contains("delete original"), "{out}");
    assert!(!out.contains("disp-dev unchanged"), "{out}");
    assert!(!out.contains("RandomString seen"), "{out}");
    assert!(!out.contains("Configuration:"), "{out}");
    let out = run(&["up", "--yes", "-c", "len=2"]);
    assert!(
        out.contains(&format!(" +- {PET} replaced [diff: ~length]")),
        "{out}"
    );
    assert!(!out.contains("created replacement"), "{out}");

    let out = run(&[
        "up",
        "--yes",
        "-c",
        "len=3",
        "--show-replacement-steps",
        "--show-sames",
        "--show-reads",
        "--show-config",
        "--show-full-output",
    ]);
    for line in [
        format!(" ++ {PET} create replacement [diff: ~length]"),
        format!(" -- {PET} delete original"),
        format!(" ++ {PET} created replacement [diff: ~length]"),
        format!(" -- {PET} deleted original"),
        "    pulumi:pulumi:Stack disp-dev unchanged".to_owned(),
        " >  random:index/randomString:RandomString seen read".to_owned(),
        "Configuration:\n    disp:len: 3\n    disp:token: [secret]\n".to_owned(),
    ] {
        assert!(out.contains(&line), "no {line:?} in:\n{out}");
    }
    assert!(!out.contains("hunter2"), "{out}");
    let out = run(&["preview", "--show-config", "--show-secrets"]);
    assert!(out.contains("    disp:token: hunter2\n"), "{out}");

    // Refresh and destroy take them too.
    let out = run(&["refresh", "--yes", "--show-sames", "--show-config"]);
    assert!(
        out.contains("pulumi:pulumi:Stack disp-dev unchanged"),
        "{out}"
    );
    assert!(out.contains("Configuration:"), "{out}");
    let out = run(&[
        "destroy",
        "--yes",
        "--show-config",
        "--show-replacement-steps",
    ]);
    assert!(out.contains("Configuration:"), "{out}");
}

/// The stack's deployment, with the RandomString `token` moved from its
/// resources into a pending create (as an update interrupted while
/// creating it leaves it); the ID its object has.
fn interrupt_the_create_of_token(scratch: &Scratch) -> String {
    let export = stdout_of(scratch.command("pw"), &["stack", "export"]);
    let mut doc: serde_json::Value = serde_json::from_str(&export).unwrap();
    let resources = doc["deployment"]["resources"].as_array_mut().unwrap();
    let at = resources
        .iter()
        .position(|r| r["type"] == "random:index/randomString:RandomString")
        .unwrap();
    let mut token = resources.remove(at);
    let id = token["id"].as_str().unwrap().to_owned();
    let token_obj = token.as_object_mut().unwrap();
    token_obj.remove("id");
    token_obj.remove("outputs");
    doc["deployment"]["pending_operations"] =
        serde_json::json!([{"resource": token, "type": "creating"}]);
    std::fs::write(scratch.project.join("cut.json"), doc.to_string()).unwrap();
    stdout_of(
        scratch.command("pw"),
        &["stack", "import", "--file", "cut.json"],
    );
    id
}

/// A project whose `token` was deployed and whose create was then
/// interrupted (a pending create of it in the state): the world and the
/// ID the interrupted create had made.
fn pending_create_world() -> (Scratch, String) {
    let scratch = Scratch::new(
        "name: pc\nruntime: yaml\nresources:\n  token:\n    type: random:RandomString\n    properties:\n      length: 8\n",
    );
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    stdout_of(scratch.command("pw"), &["up", "--yes"]);
    let id = interrupt_the_create_of_token(&scratch);
    (scratch, id)
}

#[test]
fn refresh_adopts_pending_creates_by_id_or_leaves_them() {
    let (scratch, id) = pending_create_world();
    let run = |args: &[&str]| stdout_of(scratch.command("pw"), args);
    let urn = "urn:pulumi:dev::pc::random:index/randomString:RandomString::token";
    let pending = || {
        let export = stdout_of(scratch.command("pw"), &["stack", "export"]);
        let doc: serde_json::Value = serde_json::from_str(&export).unwrap();
        doc["deployment"]["pending_operations"]
            .as_array()
            .map_or(0, Vec::len)
    };

    // --skip-pending-creates leaves them as they are.
    run(&["refresh", "--yes", "--skip-pending-creates"]);
    assert_eq!(pending(), 1);
    let out = failure_of(
        scratch.command("pw"),
        &[
            "refresh",
            "--yes",
            "--skip-pending-creates",
            "--clear-pending-creates",
        ],
    );
    assert!(out.contains("cannot be used with"), "{out}");

    // Malformed pairs, or a URN no pending create names: refused, nothing
    // changes.
    let out = failure_of(
        scratch.command("pw"),
        &["refresh", "--yes", "--import-pending-creates", urn],
    );
    assert!(out.contains("takes pairs"), "{out}");
    let other = format!("{urn}x,{id}");
    let out = failure_of(
        scratch.command("pw"),
        &["refresh", "--yes", "--import-pending-creates", &other],
    );
    assert!(out.contains("has no pending create of"), "{out}");
    assert_eq!(pending(), 1);

    // Adopted with its ID, then read: the state has the object again and
    // the program agrees with it.
    let pair = format!("{urn},{id}");
    run(&["refresh", "--yes", "--import-pending-creates", &pair]);
    assert_eq!(pending(), 0);
    let export = run(&["stack", "export"]);
    let doc: serde_json::Value = serde_json::from_str(&export).unwrap();
    let token = doc["deployment"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["urn"] == urn)
        .cloned()
        .unwrap();
    assert_eq!(token["id"], id.as_str());
    assert_eq!(token["outputs"]["result"], id.as_str());
    run(&["preview", "--expect-no-changes"]);

    // Only refresh takes them.
    let out = failure_of(
        scratch.command("pw"),
        &["up", "--yes", "--import-pending-creates", &pair],
    );
    assert!(
        out.contains("`converge up` has no --import-pending-creates flag"),
        "{out}"
    );
}

/// A pending create whose URN a later update created again: adopting it
/// would make two live copies of the URN, so it is refused naming the
/// copy the state has and the ways out, not blamed on the state.
#[test]
fn a_pending_create_of_a_urn_the_state_tracks_is_not_adopted() {
    let (scratch, id) = pending_create_world();
    let run = |args: &[&str]| stdout_of(scratch.command("pw"), args);
    run(&["up", "--yes"]);
    let urn = "urn:pulumi:dev::pc::random:index/randomString:RandomString::token";
    let before = run(&["stack", "export"]);
    let out = failure_of(
        scratch.command("pw"),
        &[
            "refresh",
            "--yes",
            "--import-pending-creates",
            &format!("{urn},{id}"),
        ],
    );
    assert!(
        out.contains("is already in the stack's state with ID"),
        "{out}"
    );
    assert!(out.contains("--clear-pending-creates"), "{out}");
    assert!(!out.contains("integrity"), "{out}");
    assert_eq!(run(&["stack", "export"]), before);
}

/// The `--long` flags `converge ARGS… --help` lists.
fn help_flags(args: &[&str]) -> Vec<String> {
    let scratch = Scratch::new("name: p\nruntime: yaml\n");
    let mut all = args.to_vec();
    all.push("--help");
    let help = stdout_of(scratch.command("pw"), &all);
    help.split_whitespace()
        .filter_map(|w| w.strip_prefix("--"))
        .map(|w| w.trim_end_matches([',', '=']).to_owned())
        .collect()
}

#[test]
fn each_commands_help_lists_the_new_flags_it_takes_and_hides_the_others() {
    let display = [
        "show-sames",
        "show-reads",
        "show-replacement-steps",
        "show-config",
        "show-full-output",
    ];
    // (command, takes, hides)
    let cases: [(&[&str], &[&str], &[&str]); 7] = [
        (
            &["preview"],
            &["config", "config-path"],
            &["remove", "skip-pending-creates", "import-pending-creates"],
        ),
        (
            &["up"],
            &["config", "config-path"],
            &["remove", "skip-pending-creates", "import-pending-creates"],
        ),
        (
            &["refresh"],
            &["skip-pending-creates", "import-pending-creates"],
            &["config", "config-path", "remove"],
        ),
        (
            &["destroy"],
            &["remove"],
            &[
                "config",
                "config-path",
                "skip-pending-creates",
                "import-pending-creates",
            ],
        ),
        (&["stack", "init"], &["no-select", "copy-config-from"], &[]),
        (&["stack", "ls"], &["project", "tag"], &[]),
        (&["stack", "export"], &["version"], &[]),
    ];
    for (command, takes, hides) in cases {
        let flags = help_flags(command);
        let operation = command.len() == 1;
        let expected = takes.iter().chain(display.iter().filter(|_| operation));
        for flag in expected {
            assert!(
                flags.iter().any(|f| f == flag),
                "`converge {command:?} --help` does not list --{flag}: {flags:?}"
            );
        }
        for flag in hides {
            assert!(
                !flags.iter().any(|f| f == flag),
                "`converge {command:?} --help` lists --{flag}: {flags:?}"
            );
        }
    }
}

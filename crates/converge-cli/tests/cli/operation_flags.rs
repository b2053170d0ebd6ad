//! Each operation's `--help` lists only the flags it takes (the shared
//! ones it refuses are hidden, and still refused with a message naming the
//! command); Pulumi's global logging and debugging flags are accepted on
//! every command, `--attach-debugger` refused by name; `-v N
//! --logtostderr` writes Converge's logs to stderr. The other flags the
//! Automation API SDKs pass: `import --config-file` and its display flags,
//! `--exec-agent`.

use crate::common;

use common::{failure_of, stdout_of, Scratch};

/// The `--long` flags `converge COMMAND --help` lists.
fn listed(command: &str) -> Vec<String> {
    let scratch = Scratch::new("name: p\nruntime: yaml\n");
    let help = stdout_of(scratch.command("pw"), &[command, "--help"]);
    help.split_whitespace()
        .filter_map(|w| w.strip_prefix("--"))
        // `--refresh[=<BOOL>]`: the flag's name.
        .map(|w| w.split('[').next().unwrap_or(w))
        .map(|w| w.trim_end_matches([',', '=']).to_owned())
        .collect()
}

#[test]
fn each_operations_help_lists_only_the_flags_it_takes() {
    // (command, flags it takes, shared flags it refuses)
    let cases: [(&str, &[&str], &[&str]); 4] = [
        (
            "preview",
            &[
                "save-plan",
                "import-file",
                "refresh-only",
                "policy-pack",
                "replace",
            ],
            &[
                "preview-only",
                "clear-pending-creates",
                "skip-preview",
                "yes",
                "plan",
                "exclude-protected",
            ],
        ),
        (
            "up",
            &[
                "plan",
                "yes",
                "skip-preview",
                "replace",
                "target-replace",
                "policy-pack",
            ],
            &[
                "preview-only",
                "clear-pending-creates",
                "save-plan",
                "refresh-only",
                "import-file",
                "exclude-protected",
            ],
        ),
        (
            "refresh",
            &["preview-only", "clear-pending-creates", "yes", "target"],
            &[
                "replace",
                "target-replace",
                "refresh",
                "import-file",
                "save-plan",
                "plan",
                "refresh-only",
                "policy-pack",
                "exclude-protected",
            ],
        ),
        (
            "destroy",
            &[
                "preview-only",
                "exclude-protected",
                "yes",
                "target",
                "refresh",
            ],
            &[
                "replace",
                "target-replace",
                "clear-pending-creates",
                "import-file",
                "save-plan",
                "plan",
                "refresh-only",
                "policy-pack",
            ],
        ),
    ];
    let global = [
        "debug",
        "verbose",
        "logtostderr",
        "logflow",
        "tracing",
        "attach-debugger",
    ];
    for (command, takes, refuses) in cases {
        let flags = listed(command);
        for flag in takes.iter().chain(&global) {
            assert!(
                flags.iter().any(|f| f == flag),
                "`converge {command} --help` does not list --{flag}: {flags:?}"
            );
        }
        for flag in refuses {
            assert!(
                !flags.iter().any(|f| f == flag),
                "`converge {command} --help` lists --{flag}, which it refuses: {flags:?}"
            );
        }
    }
}

#[test]
fn a_hidden_flag_is_still_refused_by_name_and_nothing_runs() {
    let scratch = Scratch::new("name: p\nruntime: yaml\n");
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    let out = failure_of(
        scratch.command("pw"),
        &["up", "--yes", "--save-plan", "p.json"],
    );
    assert!(
        out.contains("`converge up` has no --save-plan flag"),
        "{out}"
    );
    let out = failure_of(scratch.command("pw"), &["preview", "--exclude-protected"]);
    assert!(
        out.contains("`converge preview` has no --exclude-protected flag"),
        "{out}"
    );
    assert!(!scratch.project.join("p.json").exists());
}

#[test]
fn global_logging_flags_are_accepted_on_every_command_and_a_debugger_is_refused() {
    let scratch = Scratch::new(
        "name: p\nruntime: yaml\nresources:\n  pet:\n    type: random:index/randomPet:RandomPet\n",
    );
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    let loud = [
        "--debug",
        "-v",
        "3",
        "--logtostderr",
        "--logflow",
        "--tracing",
        "file:///t.json",
    ];
    // Not an operation: accepted, with no effect on the output.
    let ls = stdout_of(
        scratch.command("pw"),
        &[&["stack", "ls"][..], &loud].concat(),
    );
    assert!(ls.contains("dev"), "{ls}");

    let out = scratch
        .command("pw")
        .args([&["up", "--yes"][..], &loud].concat())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("DEBUG converge::commands::deploy: the stack is locked operation=\"up\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("Converge does not emit Pulumi's traces"),
        "{stderr}"
    );

    // Without -v or --logtostderr: no logs.
    let out = scratch
        .command("pw")
        .args(["up", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("DEBUG"));

    let state = || stdout_of(scratch.command("pw"), &["stack", "export"]);
    let before = state();
    for args in [
        &["up", "--yes", "--attach-debugger"][..],
        &["preview", "--attach-debugger=plugins"],
    ] {
        let out = failure_of(scratch.command("pw"), args);
        assert!(
            out.contains("--attach-debugger")
                && out.contains("cannot start programs or plugins under a debugger"),
            "{out}"
        );
    }
    assert_eq!(state(), before);
}

/// What the Node.js SDK's `import` passes besides Pulumi's import flags:
/// `--config-file` is the stack configuration file the import reads;
/// `--suppress-outputs`, `--suppress-progress` and `--color` are taken.
#[test]
fn import_reads_the_config_file_it_is_given_and_takes_the_sdks_display_flags() {
    let scratch = Scratch::new("name: p\nruntime: yaml\n");
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    let import = |config: &str| {
        let args = [
            "import",
            "random:index/randomString:RandomString",
            "word",
            "hello",
            "--yes",
            "--generate-code=false",
            "--suppress-outputs",
            "--suppress-progress",
            "--color",
            "never",
            "--config-file",
            config,
        ];
        args.map(str::to_owned)
    };
    let state = || stdout_of(scratch.command("pw"), &["stack", "export"]);
    std::fs::write(scratch.project.join("broken.yaml"), "config: [\n").unwrap();
    let out = failure_of(
        scratch.command("pw"),
        &import("broken.yaml").each_ref().map(String::as_str),
    );
    assert!(out.contains("broken.yaml"), "{out}");
    assert!(!state().contains("RandomString"));

    std::fs::rename(
        scratch.project.join("Pulumi.dev.yaml"),
        scratch.project.join("other.yaml"),
    )
    .unwrap();
    stdout_of(
        scratch.command("pw"),
        &import("other.yaml").each_ref().map(String::as_str),
    );
    assert!(state().contains("randomString:RandomString::word"));
    // The stack's own file was neither needed nor written.
    assert!(!scratch.project.join("Pulumi.dev.yaml").exists());
}

/// `--exec-agent` (the Node.js SDK's `userAgent`) is recorded in the
/// update's history beside `exec.kind`.
#[test]
fn the_exec_agent_is_recorded_in_the_history() {
    let scratch = Scratch::new("name: p\nruntime: yaml\n");
    stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    stdout_of(
        scratch.command("pw"),
        &[
            "up",
            "--yes",
            "--exec-kind",
            "auto.local",
            "--exec-agent",
            "my-platform/1.2",
        ],
    );
    let history: serde_json::Value = serde_json::from_str(&stdout_of(
        scratch.command("pw"),
        &["stack", "history", "--json"],
    ))
    .unwrap();
    let environment = &history[0]["environment"];
    assert_eq!(environment["exec.agent"], "my-platform/1.2", "{history}");
    assert_eq!(environment["exec.kind"], "auto.local", "{history}");
}

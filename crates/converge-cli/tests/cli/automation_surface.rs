//! The parts of the CLI surface the Automation API SDKs probe before they
//! drive anything: `version` under the name `pulumi`, and `preview
//! --help`, whose mention of `--remote` would make them offer remote
//! operations Converge does not have.

use std::process::Command;

use crate::common;

#[test]
fn version_under_the_name_pulumi_is_pulumis_version_alone() {
    let scratch = common::Scratch::new("name: p\nruntime: yaml\n");
    let own = common::stdout_of(scratch.command("pw"), &["version"]);
    assert!(
        own.starts_with("converge ") && own.contains("Pulumi CLI v3."),
        "{own}"
    );
    let bin = scratch.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("converge"), bin.join("pulumi"))
        .unwrap();
    let out = Command::new(bin.join("pulumi"))
        .arg("version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let version = text
        .trim()
        .strip_prefix('v')
        .unwrap_or_else(|| panic!("{text}"));
    let parsed = semver::Version::parse(version).unwrap();
    assert_eq!(parsed.major, 3);
    assert!(
        parsed > semver::Version::new(3, 205, 0),
        "the SDKs stream events over gRPC only past 3.205.0: {parsed}"
    );
    assert!(own.contains(version), "{own} / {version}");
}

#[test]
fn preview_help_offers_no_remote_operations() {
    let scratch = common::Scratch::new("name: p\nruntime: yaml\n");
    let help = common::stdout_of(scratch.command("pw"), &["preview", "--help"]);
    assert!(help.contains("--event-log"), "{help}");
    assert!(!help.contains("--remote"), "{help}");
}

#[test]
fn policy_pack_flags_are_taken_and_checked() {
    let scratch = common::Scratch::new("name: p\nruntime: yaml\n");
    common::stdout_of(scratch.command("pw"), &["stack", "init", "dev"]);
    // The SDKs pass `--policy-pack DIR`: a pack that is not there is
    // named (the packs themselves are tested in policy_packs.rs).
    let e = common::failure_of(
        scratch.command("pw"),
        &["preview", "--policy-pack", "./policies"],
    );
    assert!(e.contains("policies: no such directory"), "{e}");
    let e = common::failure_of(
        scratch.command("pw"),
        &["preview", "--policy-pack-config", "./config.json"],
    );
    assert!(e.contains("once for each --policy-pack"), "{e}");
    let e = common::failure_of(
        scratch.command("pw"),
        &["destroy", "--yes", "--policy-pack", "./policies"],
    );
    assert!(e.contains("for preview and up"), "{e}");
}

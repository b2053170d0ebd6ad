//! Pulumi's Automation API from the published Node.js SDK
//! (`@pulumi/pulumi` from npm, unmodified) driving `converge` exposed as
//! `pulumi` on PATH, with no version-check opt-out: a local program and
//! an inline one (through `--client`), on the file backend and on
//! `converge serve`. The steps and their checks are
//! `automation/driver.js`'s.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

use common::nodejs::node_modules;
use common::service::Service;

/// The local program: a random word of the configured length and a
/// secret output from secret configuration.
const PROGRAM: &str = r#"
const pulumi = require("@pulumi/pulumi");
const config = new pulumi.Config();
const word = new pulumi.CustomResource("random:index/randomString:RandomString", "word", {
    length: config.requireNumber("length"),
    special: false,
    result: undefined,
});
exports.word = word.result;
exports.token = config.requireSecret("token");
"#;

fn drive(modules: &Path, mode: &str, on_service: bool) {
    drive_with(modules, mode, on_service, |_| Vec::new());
}

/// `drive`, with environment variables `env` makes in the scratch
/// directory (e.g. a policy pack).
fn drive_with(
    modules: &Path,
    mode: &str,
    on_service: bool,
    env: impl FnOnce(&Path) -> Vec<(&'static str, PathBuf)>,
) {
    let scratch = common::nodejs::project(modules, "nodeauto", PROGRAM);
    let bin = scratch.dir.path().join("pulumi-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("converge"), bin.join("pulumi"))
        .unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/automation/driver.js"))
        .arg(mode)
        .arg(&scratch.project)
        .current_dir(scratch.dir.path())
        .env("NODE_PATH", modules)
        .env("PATH", common::path_with(&bin))
        .env("CONVERGE_HOME", &scratch.home)
        .env("PULUMI_CONFIG_PASSPHRASE", "pw")
        .env_remove("PULUMI_CONFIG_PASSPHRASE_FILE")
        .env_remove("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK")
        .env_remove("PULUMI_ACCESS_TOKEN")
        .envs(env(scratch.dir.path()))
        .env(
            "PULUMI_BACKEND_URL",
            format!("file://{}", scratch.backend.display()),
        );
    let service = on_service.then(|| {
        let data = scratch.dir.path().join("service");
        std::fs::create_dir_all(&data).unwrap();
        let s = Service::start(&scratch.home, &data, "127.0.0.1:0");
        cmd.env("PULUMI_BACKEND_URL", &s.url)
            .env("PULUMI_ACCESS_TOKEN", &s.token);
        s
    });
    let out = cmd.output().unwrap();
    drop(service);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("automation: ok"),
        "driver.js {mode} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn a_local_program_through_the_nodejs_automation_api() {
    let Some(modules) = node_modules() else {
        return;
    };
    drive(&modules, "local", false);
    drive(&modules, "local", true);
}

#[test]
fn an_inline_nodejs_program_runs_through_the_sdks_language_runtime() {
    let Some(modules) = node_modules() else {
        return;
    };
    drive(&modules, "inline", false);
    drive(&modules, "inline", true);
}

#[test]
fn policy_packs_from_the_nodejs_automation_api_fail_on_mandatory_and_report_advisory_events() {
    let Some(modules) = node_modules() else {
        return;
    };
    drive_with(&modules, "policy", false, |dir| {
        vec![(
            "CONVERGE_TEST_POLICY_PACK",
            crate::policy_packs::node_pack(dir, &modules),
        )]
    });
}

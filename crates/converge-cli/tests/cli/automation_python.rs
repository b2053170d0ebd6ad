//! Pulumi's Automation API from the published Python SDK (`pulumi` from
//! PyPI, unmodified) driving `converge` exposed as `pulumi` on PATH — no
//! version-check opt-out — on the file backend and on `converge serve`:
//! a local program from stack creation to removal, an inline program
//! through `--client`, both event-log transports, a failing program, and
//! two updates of one stack (`ConcurrentUpdateError`, `Stack.cancel()`).
//! The steps and their checks are `automation/driver.py`'s.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;

use common::python::venv;
use common::service::Service;
use common::Scratch;

/// The local program the driver deploys: a random word of the configured
/// length, and outputs from plain, secret and `--path` configuration.
const PROGRAM: &str = r#"
import pulumi
import pulumi_random as random

config = pulumi.Config()
word = random.RandomString("word", length=config.require_int("length"), special=False)
pulumi.export("word", word.result)
pulumi.export("token", config.require_secret("token"))
pulumi.export("env", (config.get_object("tags") or {}).get("env"))
"#;

/// Where the driver's stacks live.
enum Where {
    File,
    Service,
}

/// A directory holding `pulumi`, a symlink to the `converge` under test.
pub(crate) fn pulumi_on_path(root: &Path) -> PathBuf {
    let bin = root.join("pulumi-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(assert_cmd::cargo::cargo_bin("converge"), bin.join("pulumi"))
        .unwrap();
    bin
}

/// Runs `driver.py MODE` against a fresh project on `place`; panics with
/// the driver's output unless every check passed.
fn drive(venv: &Path, mode: &str, place: Where) {
    drive_with(venv, mode, place, |_| Vec::new());
}

/// `drive`, with environment variables `env` makes in the scratch
/// directory (e.g. a policy pack).
fn drive_with(
    venv: &Path,
    mode: &str,
    place: Where,
    env: impl FnOnce(&Path) -> Vec<(&'static str, PathBuf)>,
) {
    let scratch = Scratch::new(&format!(
        "name: autoproj\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
        venv.display()
    ));
    std::fs::write(scratch.project.join("__main__.py"), PROGRAM).unwrap();
    let bin = pulumi_on_path(scratch.dir.path());
    let mut service = None;
    let mut cmd = Command::new(venv.join("bin").join("python"));
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/automation/driver.py"))
        .arg(mode)
        .arg(&scratch.project)
        .current_dir(scratch.dir.path())
        .env("PATH", common::path_with(&bin))
        .env("CONVERGE_HOME", &scratch.home)
        .env("PULUMI_CONFIG_PASSPHRASE", "pw")
        .env_remove("PULUMI_CONFIG_PASSPHRASE_FILE")
        .env_remove("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK")
        .env_remove("PULUMI_ACCESS_TOKEN")
        .envs(env(scratch.dir.path()));
    match place {
        Where::File => {
            cmd.env(
                "PULUMI_BACKEND_URL",
                format!("file://{}", scratch.backend.display()),
            );
        }
        Where::Service => {
            let data = scratch.dir.path().join("service");
            std::fs::create_dir_all(&data).unwrap();
            let s = Service::start(&scratch.home, &data, "127.0.0.1:0");
            cmd.env("PULUMI_BACKEND_URL", &s.url)
                .env("PULUMI_ACCESS_TOKEN", &s.token);
            service = Some(s);
        }
    }
    let out = cmd.output().unwrap();
    drop(service);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("automation: ok"),
        "driver.py {mode} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn a_busy_stack_raises_concurrent_update_error_and_cancel_stops_its_update() {
    let Some(venv) = venv() else { return };
    drive(&venv, "concurrent", Where::File);
}

#[test]
fn a_busy_stack_on_the_service_raises_concurrent_update_error_and_cancel_stops_its_update() {
    let Some(venv) = venv() else { return };
    drive(&venv, "concurrent", Where::Service);
}

#[test]
fn a_local_program_from_stack_creation_to_removal_on_the_file_backend() {
    let Some(venv) = venv() else { return };
    drive(&venv, "local", Where::File);
}

#[test]
fn a_local_program_from_stack_creation_to_removal_on_the_service() {
    let Some(venv) = venv() else { return };
    drive(&venv, "local", Where::Service);
}

#[test]
fn an_inline_program_runs_through_the_sdks_language_runtime() {
    let Some(venv) = venv() else { return };
    drive(&venv, "inline", Where::File);
    drive(&venv, "inline", Where::Service);
}

#[test]
fn change_summaries_count_as_pulumi_and_pre_events_carry_the_step() {
    let Some(venv) = venv() else { return };
    drive(&venv, "counts", Where::File);
}

#[test]
fn both_event_log_transports_carry_the_same_events_in_order() {
    let Some(venv) = venv() else { return };
    drive(&venv, "transports", Where::File);
}

#[test]
fn a_failing_program_raises_its_error_and_leaves_the_stack_as_it_was() {
    let Some(venv) = venv() else { return };
    drive(&venv, "failure", Where::File);
    drive(&venv, "failure", Where::Service);
}

#[test]
fn policy_packs_from_the_automation_api_fail_on_mandatory_and_report_advisory_events() {
    let Some(venv) = venv() else { return };
    for place in [Where::File, Where::Service] {
        drive_with(&venv, "policy", place, |dir| {
            vec![(
                "CONVERGE_TEST_POLICY_PACK",
                crate::policy_packs::python_pack(dir, &venv),
            )]
        });
    }
}

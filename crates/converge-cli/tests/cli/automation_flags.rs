//! The published Python Automation API's logging and debugging options
//! (`debug`, `log_verbosity`, `log_to_std_err`, `log_flow`, `tracing`,
//! `attach_debugger`) on preview, up, refresh and destroy, and
//! `destroy(exclude_protected=True)`, driving `converge` exposed as
//! `pulumi`; the same from the Node.js SDK. The steps and their checks
//! are `automation/flags.py`'s and `automation/flags.js`'s.

use std::path::Path;
use std::process::Command;

use crate::automation_python::pulumi_on_path;
use crate::common;

use common::nodejs::node_modules;
use common::python::venv;
use common::Scratch;

/// A protected pet under a component, depending on another pet and using
/// the default provider; two more pets (one depending on the protected
/// one) and a debug-level log message.
const PROGRAM: &str = r#"
import pulumi
import pulumi_random as random

pulumi.log.debug("the marker of --debug")
shelf = pulumi.ComponentResource("test:index:Shelf", "shelf")
dep = random.RandomPet("dep")
keep = random.RandomPet("keep", opts=pulumi.ResourceOptions(
    parent=shelf, protect=True, depends_on=[dep]))
random.RandomPet("gone")
random.RandomPet("other", prefix=keep.id)
"#;

/// Runs `driver` (`automation/flags.py` or `.js`) with `interpreter`
/// against a fresh project running `PROGRAM` with the Python venv;
/// panics with the driver's output unless every check passed.
fn drive(venv: &Path, mut interpreter: Command, driver: &str) {
    let scratch = Scratch::new(&format!(
        "name: proj\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
        venv.display()
    ));
    std::fs::write(scratch.project.join("__main__.py"), PROGRAM).unwrap();
    let bin = pulumi_on_path(scratch.dir.path());
    let out = interpreter
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/cli/automation")
                .join(driver),
        )
        .arg(&scratch.project)
        .current_dir(scratch.dir.path())
        .env("PATH", common::path_with(&bin))
        .env("CONVERGE_HOME", &scratch.home)
        .env("PULUMI_CONFIG_PASSPHRASE", "pw")
        .env(
            "PULUMI_BACKEND_URL",
            format!("file://{}", scratch.backend.display()),
        )
        .env_remove("PULUMI_CONFIG_PASSPHRASE_FILE")
        .env_remove("PULUMI_ACCESS_TOKEN")
        .env_remove("PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("flags: ok"),
        "{driver} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn every_logging_option_is_accepted_and_exclude_protected_keeps_what_protection_needs() {
    let Some(venv) = venv() else { return };
    drive(
        &venv,
        Command::new(venv.join("bin").join("python")),
        "flags.py",
    );
}

/// The same options from the Node.js SDK (the project stays Python's),
/// with `userAgent` recorded as the update's `exec.agent`.
#[test]
fn the_nodejs_sdks_options_are_accepted_too() {
    let (Some(venv), Some(modules)) = (venv(), node_modules()) else {
        return;
    };
    let mut node = Command::new("node");
    node.env("NODE_PATH", modules);
    drive(&venv, node, "flags.js");
}

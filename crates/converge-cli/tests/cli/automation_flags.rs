//! The published Python Automation API's logging and debugging options
//! (`debug`, `log_verbosity`, `log_to_std_err`, `log_flow`, `tracing`,
//! `attach_debugger`) on preview, up, refresh and destroy, and
//! `destroy(exclude_protected=True)`, driving `converge` exposed as
//! `pulumi`. The steps and their checks are `automation/flags.py`'s.

use std::path::Path;
use std::process::Command;

use crate::automation_python::pulumi_on_path;
use crate::common;

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

#[test]
fn every_logging_option_is_accepted_and_exclude_protected_keeps_what_protection_needs() {
    let Some(venv) = venv() else { return };
    let scratch = Scratch::new(&format!(
        "name: proj\nruntime:\n  name: python\n  options:\n    virtualenv: {}\n",
        venv.display()
    ));
    std::fs::write(scratch.project.join("__main__.py"), PROGRAM).unwrap();
    let bin = pulumi_on_path(scratch.dir.path());
    let out = Command::new(venv.join("bin").join("python"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/automation/flags.py"))
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
        "flags.py failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

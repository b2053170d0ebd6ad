//! Running the Python helpers of the SDK compatibility tests, and the flat
//! schema form the descriptor tests compare. Each test binary uses a part.
#![allow(dead_code)]

pub mod flatten;

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::Command;

/// Where a test finds a Python interpreter with a package installed.
pub struct TestPython {
    /// The environment variable naming the interpreter.
    pub var: &'static str,
    /// What is installed in it.
    pub package: &'static str,
}

/// The interpreter with the Pulumi SDK (`pulumi`).
pub const SDK_PYTHON: TestPython = TestPython {
    var: "CONVERGE_TEST_PYTHON",
    package: "the Pulumi SDK (`pulumi`)",
};

/// The interpreter with PyPI's Terraform provider framework (`tf`).
pub const TF_PYTHON: TestPython = TestPython {
    var: "CONVERGE_TEST_TF_PYTHON",
    package: "the Terraform provider framework (`tf`)",
};

/// The interpreter with the Pulumi SDK installed, from `CONVERGE_TEST_PYTHON`.
pub fn sdk_python(what: &str) -> Option<OsString> {
    test_python(&SDK_PYTHON, what)
}

/// The interpreter `python.var` names. Without it the test must fail in CI
/// and is skipped, loudly, elsewhere.
pub fn test_python(python: &TestPython, what: &str) -> Option<OsString> {
    let TestPython { var, package } = python;
    if let Some(python) = std::env::var_os(var) {
        return Some(python);
    }
    if std::env::var_os("CI").is_some() {
        panic!("{var} is not set: run scripts/test, which installs {package}");
    }
    // Written to the real stderr: the test harness captures eprintln!.
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!! SKIPPED: {what} was NOT checked against {package}.\n\
         !!!!! Set {var} to a Python with it installed, or run scripts/test.\n"
    );
    None
}

/// Runs `tests/<script>` with `args` and returns its standard output.
pub fn run_script(python: &OsString, script: &str, args: &[&str]) -> Vec<u8> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(script);
    let output = Command::new(python)
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {python:?} {}: {e}", script.display()));
    assert!(
        output.status.success(),
        "{} failed ({}):\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

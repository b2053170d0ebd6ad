//! Running the Python helpers of the SDK compatibility tests.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::process::Command;

/// The interpreter with the Pulumi SDK installed, from `CONVERGE_TEST_PYTHON`.
/// Without it the test must fail in CI and is skipped, loudly, elsewhere.
pub fn sdk_python(what: &str) -> Option<OsString> {
    if let Some(python) = std::env::var_os("CONVERGE_TEST_PYTHON") {
        return Some(python);
    }
    if std::env::var_os("CI").is_some() {
        panic!("CONVERGE_TEST_PYTHON is not set: run scripts/test, which installs the Pulumi SDK");
    }
    // Written to the real stderr: the test harness captures eprintln!.
    let _ = writeln!(
        std::io::stderr(),
        "\n!!!!! SKIPPED: {what} was NOT checked against the Pulumi SDK.\n\
         !!!!! Set CONVERGE_TEST_PYTHON to a Python with `pulumi` installed, or run scripts/test.\n"
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

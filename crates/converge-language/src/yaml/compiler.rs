//! `runtime: {name: yaml, options: {compiler: …}}`: a program another tool
//! writes (CUE, KCL, jsonnet…). As Pulumi YAML does, the command is split
//! as a shell would split it (no shell runs it), run in the program's
//! directory, and its standard output is the program; its standard error
//! is shown when it fails. Output that holds no program at all is refused
//! rather than run as one that deletes every resource of the stack.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{single, YamlErrors, PROJECT_FILE};

/// The compiler's command, if the project names one.
pub(super) fn command(project: &super::Node) -> Option<&str> {
    let runtime = super::ast::lookup(project, "runtime")?;
    let options = super::ast::lookup(runtime, "options")?;
    super::ast::lookup(options, "compiler").and_then(super::Node::as_str)
}

/// Runs `compiler` in `work_dir`: the file name its output is known by in
/// messages, and the program's text.
pub(super) fn run(compiler: &str, work_dir: &Path) -> Result<(String, String), YamlErrors> {
    let argv = shlex::split(compiler)
        .filter(|argv| !argv.is_empty())
        .ok_or_else(|| {
            single(
                PROJECT_FILE,
                format!(
                    "runtime option `compiler: {compiler}` is not a command line (an unclosed \
                     quote, or nothing at all)"
                ),
            )
        })?;
    let name = &argv[0];
    let output = Command::new(name)
        .args(&argv[1..])
        .current_dir(work_dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            single(
                PROJECT_FILE,
                format!(
                    "cannot run the program's compiler `{name}` (runtime option `compiler`) in \
                     {}: {e}",
                    work_dir.display()
                ),
            )
        })?;
    let file = format!("<stdout from compiler {name}>");
    if !output.status.success() {
        return Err(single(
            PROJECT_FILE,
            format!(
                "the program's compiler `{compiler}` failed ({}); its standard error:\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim_end()
            ),
        ));
    }
    if output.stdout.len() as u64 > converge_yaml::MAX_YAML_BYTES {
        return Err(single(
            &file,
            format!(
                "the compiler wrote more than {} bytes, the most Converge reads as a program",
                converge_yaml::MAX_YAML_BYTES
            ),
        ));
    }
    let text = String::from_utf8(output.stdout)
        .map_err(|_| single(&file, "the compiler's output is not UTF-8 text"))?;
    if text.trim().is_empty() {
        return Err(single(
            &file,
            format!(
                "the program's compiler `{compiler}` wrote nothing: a program without resources \
                 would delete every resource of the stack, so nothing runs"
            ),
        ));
    }
    Ok((file, text))
}

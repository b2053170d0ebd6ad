//! Running one local command: interpreter, directory, environment, stdin,
//! captured stdout/stderr, collected assets, errors with secrets redacted.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use converge_model::{Archive, ArchiveMember, Asset, PropertyMap, PropertyValue};
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::glob;
use crate::builtin::spec::{get_bool, get_str, get_str_list, get_str_map, redact, secret_strings};
use crate::ProviderError;

/// How much of a failed command's output an error carries (its tail).
const ERROR_OUTPUT_LIMIT: usize = 4096;

/// The environment variables that carry the previous run's outputs.
pub const PREVIOUS_STDOUT: &str = "PULUMI_COMMAND_STDOUT";
pub const PREVIOUS_STDERR: &str = "PULUMI_COMMAND_STDERR";

/// The interpreter used when none is given.
pub fn default_interpreter() -> Vec<String> {
    if cfg!(windows) {
        vec!["cmd".into(), "/C".into()]
    } else {
        vec!["/bin/sh".into(), "-c".into()]
    }
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Ran {
    pub stdout: String,
    pub stderr: String,
    /// `assets` and `archive`, when asset or archive paths were asked for.
    pub collected: PropertyMap,
}

impl Ran {
    /// Writes stdout, stderr and the collected assets into `outputs`.
    pub fn into_outputs(self, outputs: &mut PropertyMap) {
        outputs.insert("stdout".into(), self.stdout.into());
        outputs.insert("stderr".into(), self.stderr.into());
        outputs.extend(self.collected);
    }
}

/// Runs `command` with the settings in `props` (a Command's inputs or
/// state, or `run`'s arguments). `previous` is the last run's
/// `(stdout, stderr)`, put in the environment unless
/// `addPreviousOutputInEnv` is false.
pub(super) async fn run(
    command: &str,
    props: &PropertyMap,
    previous: Option<(&str, &str)>,
    timeout: Option<Duration>,
) -> Result<Ran, ProviderError> {
    let secrets = secret_strings(props);
    let interpreter = get_str_list(props, "interpreter")
        .filter(|i| !i.is_empty())
        .unwrap_or_else(default_interpreter);
    let mut cmd = Command::new(&interpreter[0]);
    cmd.args(&interpreter[1..])
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let dir = get_str(props, "dir").filter(|d| !d.is_empty());
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    cmd.envs(get_str_map(props, "environment"));
    if get_bool(props, "addPreviousOutputInEnv") != Some(false) {
        if let Some((stdout, stderr)) = previous {
            cmd.env(PREVIOUS_STDOUT, stdout)
                .env(PREVIOUS_STDERR, stderr);
        }
    }
    let fail = |what: String| ProviderError::Failed(redact(&what, &secrets));
    let shown = redact(command, &secrets);
    let mut child = cmd.spawn().map_err(|e| {
        fail(format!(
            "running {shown:?}: starting {:?}: {e}",
            interpreter[0]
        ))
    })?;
    let stdin = get_str(props, "stdin").unwrap_or("").to_owned();
    let mut pipe = child.stdin.take();
    let feed = async move {
        if let Some(pipe) = pipe.as_mut() {
            // A command that does not read its input closes the pipe early.
            let _ = pipe.write_all(stdin.as_bytes()).await;
            let _ = pipe.shutdown().await;
        }
        drop(pipe);
    };
    let wait = async {
        let (_, out) = tokio::join!(feed, child.wait_with_output());
        out
    };
    let output = match timeout.filter(|t| !t.is_zero()) {
        Some(t) => tokio::time::timeout(t, wait)
            .await
            .map_err(|_| fail(format!("running {shown:?}: timed out after {t:?}")))?,
        None => wait.await,
    }
    .map_err(|e| fail(format!("running {shown:?}: {e}")))?;
    let text = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        s.strip_suffix('\n').unwrap_or(&s).to_owned()
    };
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    if !output.status.success() {
        let status = match output.status.code() {
            Some(code) => format!("exit status {code}"),
            None => format!("{}", output.status),
        };
        let shown_output = if stderr.trim().is_empty() {
            &stdout
        } else {
            &stderr
        };
        return Err(fail(format!(
            "{status}: running {shown:?}:\n{}",
            tail(shown_output, ERROR_OUTPUT_LIMIT)
        )));
    }
    let collected = collect(props, dir.map(Path::new))
        .await
        .map_err(|e| fail(format!("collecting assets after {shown:?}: {e}")))?;
    Ok(Ran {
        stdout,
        stderr,
        collected,
    })
}

/// The last `limit` bytes of `s` (at a character boundary), marked if cut.
fn tail(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_owned();
    }
    let mut start = s.len() - limit;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("[… {start} bytes cut]\n{}", &s[start..])
}

/// `assets` and `archive` from `assetPaths` and `archivePaths`, matched
/// against the files under `dir` (the working directory by default).
async fn collect(props: &PropertyMap, dir: Option<&Path>) -> std::io::Result<PropertyMap> {
    let asset_paths = get_str_list(props, "assetPaths").unwrap_or_default();
    let archive_paths = get_str_list(props, "archivePaths").unwrap_or_default();
    let mut out = PropertyMap::new();
    if asset_paths.is_empty() && archive_paths.is_empty() {
        return Ok(out);
    }
    let root = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()?,
    };
    let files = tokio::task::spawn_blocking(move || glob::files(&root))
        .await
        .map_err(std::io::Error::other)??;
    let assets = |patterns: &[String]| -> std::io::Result<BTreeMap<String, Asset>> {
        files
            .iter()
            .filter(|(rel, _)| glob::selected(patterns, rel))
            .map(|(rel, abs)| Ok((rel.clone(), path_asset(abs)?)))
            .collect()
    };
    if !asset_paths.is_empty() {
        let map = assets(&asset_paths)?
            .into_iter()
            .map(|(k, a)| (k, PropertyValue::Asset(Box::new(a))))
            .collect();
        out.insert("assets".into(), PropertyValue::Object(map));
    }
    if !archive_paths.is_empty() {
        let members = assets(&archive_paths)?
            .into_iter()
            .map(|(k, a)| (k, ArchiveMember::Asset(a)))
            .collect();
        out.insert(
            "archive".into(),
            PropertyValue::Archive(Box::new(Archive {
                assets: Some(members),
                ..Archive::default()
            })),
        );
    }
    Ok(out)
}

fn path_asset(path: &PathBuf) -> std::io::Result<Asset> {
    let bytes = std::fs::read(path)?;
    Ok(Asset {
        hash: converge_model::sha256_hex(&bytes),
        ..Asset::from_path(path.to_string_lossy())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_are_cut_at_character_boundaries() {
        assert_eq!(tail("abc", 10), "abc");
        let cut = tail("ééé", 3);
        assert!(cut.ends_with("é"), "{cut}");
        assert!(cut.starts_with("[… 4 bytes cut]"), "{cut}");
    }
}

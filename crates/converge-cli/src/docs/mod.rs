//! The documentation's tests: the user guide (`docs/src`) and the README
//! are checked against the binary they describe, so that they fail the
//! test suite when they drift from it.
//!
//! - `command_lines`: every `converge …` line of README.md and the guide
//!   parses with the real command-line definition.
//! - `reference`: the command reference (`docs/src/reference/`) is
//!   generated from that definition; the committed pages must equal it.
//! - `links`: every relative link and anchor of the documents resolves.
//! - `environment`: every environment variable Converge reads is on the
//!   reference's environment page.

mod command_lines;
mod environment;
mod links;
mod reference;

use std::path::{Path, PathBuf};

/// The repository's root directory.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The guide's source directory (mdBook's `src`).
fn guide_src() -> PathBuf {
    repo_root().join("docs/src")
}

/// Every Markdown file under `dir`, sorted, recursively.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|x| x == "md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `path` relative to the repository's root, for messages.
fn shown(path: &Path) -> String {
    let root = repo_root().canonicalize().unwrap();
    let full = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    full.strip_prefix(&root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

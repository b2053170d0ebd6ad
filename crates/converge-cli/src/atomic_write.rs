//! Crash-safe writes of the CLI's own files (project and stack settings).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `bytes` to `path` so that a reader sees the old file or the new
/// one, never a mix: a temporary file in the same directory, fsync, rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, bytes, Visibility::Default)
}

/// Like [`write_atomically`], for secrets: the file is readable and
/// writable by its owner only (mode 0600 on Unix) from its creation on.
pub fn write_private_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, bytes, Visibility::OwnerOnly)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Visibility {
    Default,
    OwnerOnly,
}

fn write_with(path: &Path, bytes: &[u8], visibility: Visibility) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        if visibility == Visibility::OwnerOnly {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        #[cfg(not(unix))]
        let _ = visibility;
        let mut f = options.open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

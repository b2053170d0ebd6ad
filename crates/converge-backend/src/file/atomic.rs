//! Crash-safe file primitives.
//!
//! Every write goes to a temporary file in the target's directory, is
//! fsynced, then renamed (or hard-linked) over the target, and the directory
//! is fsynced. A reader therefore sees the old bytes or the new ones, never a
//! mix, and a crash leaves at worst a stray `.<name>.<id>.tmp` file, which
//! every listing here (and Pulumi's) ignores.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::error::{BackendError, Result};

/// Replaces `path` with `bytes`, atomically and durably.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    stage(path, |f| f.write_all(bytes))?.commit()
}

/// A file written in full beside the one it will replace, durably, and
/// not yet in place: [`Staged::commit`] renames it over its target; dropped
/// uncommitted, it is removed.
#[derive(Debug)]
pub(crate) struct Staged {
    tmp: Option<PathBuf>,
    target: PathBuf,
}

/// Writes what `fill` writes to a new temporary file beside `path`, and
/// makes it durable; nothing is in place until [`Staged::commit`].
pub(crate) fn stage(path: &Path, fill: impl FnOnce(&mut File) -> io::Result<()>) -> Result<Staged> {
    let dir = parent(path);
    ensure_dir(dir)?;
    let tmp = write_temp(dir, path, fill)?;
    Ok(Staged {
        tmp: Some(tmp),
        target: path.to_owned(),
    })
}

impl Staged {
    /// Renames the file over its target and makes the rename durable.
    pub(crate) fn commit(mut self) -> Result<()> {
        let Some(tmp) = self.tmp.take() else {
            return Ok(());
        };
        if let Err(e) = fs::rename(&tmp, &self.target) {
            let _ = fs::remove_file(&tmp);
            return Err(BackendError::io("write", &self.target, e));
        }
        sync_dir(parent(&self.target))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Makes `to` hold what the file `from` holds now, atomically and durably,
/// without writing its bytes again where the file system allows: a hard
/// link, else a copy. Only for files every writer replaces by rename
/// (as [`write_atomic`] does) and never rewrites in place, since the two
/// names share the bytes until one of them is replaced. Returns `false`
/// (and does nothing) when `from` does not exist.
pub(crate) fn link_or_copy(from: &Path, to: &Path) -> Result<bool> {
    let dir = parent(to);
    ensure_dir(dir)?;
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    match fs::hard_link(from, &tmp) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        // No hard links here (or across devices): copy the bytes.
        Err(_) => {
            let Some(bytes) = read_optional(from)? else {
                return Ok(false);
            };
            write_atomic(to, &bytes)?;
            return Ok(true);
        }
    }
    if let Err(e) = fs::rename(&tmp, to) {
        let _ = fs::remove_file(&tmp);
        return Err(BackendError::io("link", to, e));
    }
    sync_dir(dir)?;
    Ok(true)
}

/// Creates `path` with `bytes` atomically unless it already exists; returns
/// whether it created the file. Two racing callers cannot both succeed.
pub(crate) fn create_atomic(path: &Path, bytes: &[u8]) -> Result<bool> {
    let dir = parent(path);
    ensure_dir(dir)?;
    let tmp = write_temp(dir, path, |f| f.write_all(bytes))?;
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        // Filesystems without hard links: fall back to check-then-rename.
        Err(_) => {
            if path.exists() {
                return Ok(false);
            }
            write_atomic(path, bytes)?;
        }
    }
    sync_dir(dir)?;
    Ok(true)
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

fn write_temp(
    dir: &Path,
    target: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<PathBuf> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut f = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        fill(&mut f)?;
        f.sync_all()
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(BackendError::io("write", target, e))
        }
    }
}

/// Creates `dir` and any missing parents, fsyncing each parent whose
/// listing changed so the new directories survive a crash.
pub(crate) fn ensure_dir(dir: &Path) -> Result<()> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(BackendError::io(
                "create directory",
                dir,
                io::Error::new(io::ErrorKind::AlreadyExists, "a file is in the way"),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(BackendError::io("read", dir, e)),
    }
    let mut missing = vec![dir];
    let mut cur = dir;
    while let Some(p) = cur.parent() {
        if p.as_os_str().is_empty() || p.exists() {
            break;
        }
        missing.push(p);
        cur = p;
    }
    fs::create_dir_all(dir).map_err(|e| BackendError::io("create directory", dir, e))?;
    for created in missing.iter().rev() {
        sync_dir(parent(created))?;
    }
    Ok(())
}

/// Makes a directory's entries (renames, creations, removals) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    let synced = File::open(dir).and_then(|d| d.sync_all());
    match synced {
        Ok(()) => Ok(()),
        // Some filesystems cannot fsync a directory; nothing more to do there.
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(BackendError::io("sync directory", dir, e)),
    }
}

/// The file's bytes, or `None` if it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(BackendError::io("read", path, e)),
    }
}

/// Whether `path` is an existing regular file.
pub(crate) fn is_file(path: &Path) -> Result<bool> {
    match fs::metadata(path) {
        Ok(m) => Ok(m.is_file()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(BackendError::io("read", path, e)),
    }
}

/// Removes a file; `false` if it was not there.
pub(crate) fn remove_optional(path: &Path) -> Result<bool> {
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(BackendError::io("remove", path, e)),
    }
}

/// Removes a directory tree if it exists.
pub(crate) fn remove_dir_optional(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BackendError::io("remove directory", path, e)),
    }
}

/// One visible directory entry.
#[derive(Debug)]
pub(crate) struct Entry {
    pub name: String,
    pub path: PathBuf,
    pub is_dir: bool,
    /// Modification time, whole seconds since the Unix epoch.
    pub modified: Option<i64>,
}

/// The directory's entries sorted by name, skipping hidden (`.`-prefixed,
/// including our temporary files) and non-UTF-8 names. A missing directory
/// is empty.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<Entry>> {
    let iter = match fs::read_dir(dir) {
        Ok(it) => it,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(BackendError::io("list directory", dir, e)),
    };
    let mut out = Vec::new();
    for entry in iter {
        let entry = entry.map_err(|e| BackendError::io("list directory", dir, e))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let meta = match fs::metadata(&path) {
            Ok(m) => m,
            // Removed between listing and stat: not there any more.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(BackendError::io("read", &path, e)),
        };
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_secs()).ok());
        out.push(Entry {
            name,
            path,
            is_dir: meta.is_dir(),
            modified,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn write_atomic_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/f.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(names(p.parent().unwrap()), ["f.json"]);
    }

    #[test]
    fn failed_write_keeps_the_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        // A non-empty directory where the file should go: rename must fail.
        let p = dir.path().join("f.json");
        fs::create_dir(&p).unwrap();
        fs::write(p.join("keep"), b"x").unwrap();
        let err = write_atomic(&p, b"new").unwrap_err().to_string();
        assert!(
            err.contains("cannot write") && err.contains("f.json"),
            "{err}"
        );
        assert_eq!(names(dir.path()), ["f.json"]);
    }

    #[test]
    fn create_atomic_does_not_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        assert!(create_atomic(&p, b"first").unwrap());
        assert!(!create_atomic(&p, b"second").unwrap());
        assert_eq!(fs::read(&p).unwrap(), b"first");
        assert_eq!(names(dir.path()), ["s.json"]);
    }

    #[test]
    fn list_dir_skips_hidden_and_tolerates_missing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(list_dir(&dir.path().join("nope")).unwrap().is_empty());
        fs::write(dir.path().join(".x.tmp"), b"").unwrap();
        fs::write(dir.path().join("b"), b"").unwrap();
        fs::create_dir(dir.path().join("a")).unwrap();
        let got: Vec<(String, bool)> = list_dir(dir.path())
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.is_dir))
            .collect();
        assert_eq!(got, [("a".to_owned(), true), ("b".to_owned(), false)]);
    }
}

//! Every file the CLI writes: its own (project and stack settings, the
//! login state) and those a user names (`stack export --file`,
//! `preview --save-plan`, `import --out`, `preview --import-file`).
//!
//! What a path names decides how it is written:
//! - a regular file, or nothing yet: atomically — a temporary file in the
//!   same directory, fsync, rename — so a reader sees the old file or the
//!   new one, never a mix; through a symbolic link, the file the link
//!   points to is replaced and the link kept;
//! - a character or block device, a FIFO or a socket (`/dev/null`, a
//!   terminal, a named pipe), directly or through links: written in place,
//!   never replaced (renaming over `/dev/null` would put a regular file
//!   where the device was);
//! - our own standard output (`/dev/stdout`, `/dev/fd/1`,
//!   `/proc/self/fd/1`) and `-` where a flag takes it: written to the
//!   process's stdout;
//! - a directory: refused.
//!
//! A failure of the write itself (a full disk, `/dev/full`) is an error
//! naming the operating system's cause.

use std::fs::{self, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use converge_backend::StorageFailure;

/// How many symbolic links a path may go through, as Linux allows.
const MAX_LINKS: usize = 40;

/// Where an output the user named goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// The process's standard output.
    Stdout,
    /// A path ([`write_atomically`]'s rules).
    Path(PathBuf),
}

/// Whether a flag takes `-` for stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    /// `-` is stdout (`stack export --file -`).
    Stdout,
    /// `-` is refused: the command shows its progress on stdout, and the
    /// file's text would be mixed into it.
    Refused,
}

impl Output {
    /// The output `given` names, relative to `cwd`; `flag` names it in
    /// errors.
    pub fn named(given: &Path, cwd: &Path, dash: Dash, flag: &str) -> Result<Output> {
        if given == Path::new("-") {
            return match dash {
                Dash::Stdout => Ok(Output::Stdout),
                Dash::Refused => bail!(
                    "{flag} -: this command shows its progress on stdout, so the file cannot go \
                     there; name a file"
                ),
            };
        }
        if is_own_stdout(given) {
            return Ok(Output::Stdout);
        }
        Ok(Output::Path(cwd.join(given)))
    }

    /// Writes `bytes` to this output.
    pub fn write(&self, bytes: &[u8]) -> Result<()> {
        match self {
            Output::Stdout => {
                let mut out = io::stdout().lock();
                out.write_all(bytes)
                    .and_then(|()| out.flush())
                    .map_err(|e| write_error(Path::new("stdout"), &e))
            }
            Output::Path(path) => write_atomically(path, bytes),
        }
    }
}

/// Whether `path` names this process's standard output.
fn is_own_stdout(path: &Path) -> bool {
    ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"]
        .iter()
        .any(|p| path == Path::new(p))
}

/// Writes `bytes` to `path` by the rules of this module: a regular file
/// (or a new one) atomically, a device or FIFO in place.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, bytes, Visibility::Default)
}

/// Like [`write_atomically`], for secrets: a new file is readable and
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
    // Links followed: what the path names in the end.
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => bail!("cannot write {}: it is a directory", path.display()),
        Ok(meta) if !meta.is_file() => {
            write_in_place(path, bytes).map_err(|e| write_error(path, &e))
        }
        Ok(_) => replace(&final_target(path)?, bytes, visibility),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            replace(&final_target(path)?, bytes, visibility)
        }
        Err(e) => Err(write_error(path, &e)),
    }
}

/// Opens `path` (a device, FIFO or socket) for writing and writes `bytes`,
/// without creating, truncating or replacing anything.
fn write_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = OpenOptions::new().write(true).open(path)?;
    f.write_all(bytes)?;
    f.flush()
}

/// The path `path`'s symbolic links lead to (itself when it is none); a
/// link to nothing leads to the path it names.
fn final_target(path: &Path) -> Result<PathBuf> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&at) {
            Ok(meta) if is_symlink(&meta) => {
                let target = fs::read_link(&at).map_err(|e| write_error(&at, &e))?;
                at = match at.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            Ok(_) => return Ok(at),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(at),
            Err(e) => return Err(write_error(&at, &e)),
        }
    }
    Err(anyhow!(
        "cannot write {}: it goes through more than {MAX_LINKS} symbolic links",
        path.display()
    ))
}

fn is_symlink(meta: &Metadata) -> bool {
    meta.file_type().is_symlink()
}

/// Replaces (or creates) the regular file `path`: a temporary file in the
/// same directory, fsync, rename, fsync of the directory.
fn replace(path: &Path, bytes: &[u8], visibility: Visibility) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| {
        anyhow!(
            "cannot create the directory {}: {}",
            dir.display(),
            StorageFailure::of(&e)
        )
    })?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let result = (|| -> io::Result<()> {
        let mut options = OpenOptions::new();
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
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(|e| write_error(path, &e))
}

/// "cannot write PATH: the operating system's cause; what to do".
fn write_error(path: &Path, e: &io::Error) -> anyhow::Error {
    anyhow!("cannot write {}: {}", path.display(), StorageFailure::of(e))
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::{symlink, FileTypeExt};

    use super::*;

    #[test]
    fn a_regular_file_is_replaced_and_a_link_to_one_kept() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("state.json");
        write_atomically(&file, b"one").unwrap();
        write_atomically(&file, b"two").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"two");
        let link = d.path().join("link.json");
        symlink("state.json", &link).unwrap();
        write_atomically(&link, b"three").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&file).unwrap(), b"three");
        // A link to nothing yet: the file it names is made.
        let dangling = d.path().join("dangling.json");
        symlink("made.json", &dangling).unwrap();
        write_atomically(&dangling, b"four").unwrap();
        assert!(fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(d.path().join("made.json")).unwrap(), b"four");
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 4);
    }

    #[test]
    fn a_device_is_written_in_place_and_kept() {
        write_atomically(Path::new("/dev/null"), b"gone").unwrap();
        let meta = fs::symlink_metadata("/dev/null").unwrap();
        assert!(meta.file_type().is_char_device());
        let e = write_atomically(Path::new("/dev/full"), b"x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot write /dev/full: no space left on device"),
            "{e}"
        );
        assert!(fs::symlink_metadata("/dev/full")
            .unwrap()
            .file_type()
            .is_char_device());
    }

    #[test]
    fn a_directory_and_a_path_through_a_file_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let e = write_atomically(d.path(), b"x").unwrap_err();
        assert!(e.to_string().ends_with("it is a directory"), "{e}");
        let file = d.path().join("f");
        fs::write(&file, "x").unwrap();
        let e = write_atomically(&file.join("out.json"), b"x").unwrap_err();
        assert!(e.to_string().contains(": not a directory; "), "{e}");
    }

    #[test]
    fn stdout_by_name_and_dash() {
        let cwd = Path::new("/work");
        let named = |p: &str, dash| Output::named(Path::new(p), cwd, dash, "--file");
        assert_eq!(named("-", Dash::Stdout).unwrap(), Output::Stdout);
        assert_eq!(named("/dev/stdout", Dash::Refused).unwrap(), Output::Stdout);
        assert_eq!(
            named("/proc/self/fd/1", Dash::Stdout).unwrap(),
            Output::Stdout
        );
        assert_eq!(
            named("out.json", Dash::Stdout).unwrap(),
            Output::Path(PathBuf::from("/work/out.json"))
        );
        let e = named("-", Dash::Refused).unwrap_err();
        assert!(e.to_string().starts_with("--file -: "), "{e}");
    }
}

//! Update journals in a DIY directory (Converge's own; Pulumi ignores the
//! directory):
//!
//! ```text
//! <root>/.pulumi/journals/<project>/<stack>.journal     (legacy layout: journals/<stack>.journal)
//! ```
//!
//! The file is JSON lines. The first is the header
//! `{"converge-journal":1,"base":"<digest>"}`, created atomically (temp file,
//! fsync, link, fsync directory), so a journal either exists with its header
//! or not at all. Each entry is one more line, appended with the batch in a
//! single write and then fsynced (group commit).
//!
//! A crash mid-append can leave the last line torn: without its newline, or
//! (after a power loss) holding garbage. Loading drops such a last line (it
//! was never acknowledged) and refuses damage anywhere else. Before
//! appending, a torn tail is cut off, so new lines never follow it; a failed
//! append truncates back to where it started.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use serde::Deserialize;

use crate::error::{BackendError, Result};
use crate::file::atomic;
use crate::file::layout::{Layout, LayoutVersion, BOOKKEEPING_DIR};
use crate::file::{FileBackend, FileStore};
use crate::journal_store::{check_digest, check_entries, is_json, JournalStore, StoredJournal};
use crate::name::StackRef;

/// The journals directory under `.pulumi/`.
pub const JOURNALS_DIR: &str = "journals";
/// The journal file format this build writes and reads.
pub const JOURNAL_FORMAT_VERSION: i64 = 1;

/// Appends are serialized within the process (one writer per stack is the
/// protocol across processes; this also covers tasks sharing a backend).
static APPEND_LOCK: Mutex<()> = Mutex::new(());

/// The first line of a journal file.
#[derive(Deserialize)]
struct Header {
    #[serde(rename = "converge-journal")]
    version: i64,
    base: String,
}

impl FileBackend {
    /// Where the stack's journal lives, in the directory's current layout.
    pub fn journal_path(&self, stack: &StackRef) -> Result<PathBuf> {
        let (layout, _) = self.store.resolve(stack)?;
        Ok(journal_path(&layout, stack))
    }
}

fn journal_path(layout: &Layout, stack: &StackRef) -> PathBuf {
    let dir = layout.root.join(BOOKKEEPING_DIR).join(JOURNALS_DIR);
    let dir = match layout.version {
        LayoutVersion::ProjectScoped => dir.join(&stack.project),
        LayoutVersion::Legacy => dir,
    };
    dir.join(format!("{}.journal", stack.stack))
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

impl FileStore {
    /// Validates the reference and returns its journal's path.
    fn journal(&self, stack: &StackRef) -> Result<PathBuf> {
        let (layout, _) = self.resolve(stack)?;
        Ok(journal_path(&layout, stack))
    }

    pub(crate) fn open_journal(&self, stack: &StackRef, digest: &str) -> Result<()> {
        let path = self.journal(stack)?;
        check_digest(stack, digest)?;
        if !self.stack_exists(stack)? {
            return Err(self.not_found(stack));
        }
        let header =
            format!("{{\"converge-journal\":{JOURNAL_FORMAT_VERSION},\"base\":\"{digest}\"}}\n");
        if !atomic::create_atomic(&path, header.as_bytes())? {
            return Err(BackendError::JournalExists {
                stack: stack.to_string(),
                location: path.display().to_string(),
            });
        }
        Ok(())
    }

    /// Appends `batch`: checked entries, each with its newline (see
    /// [`joined_batch`]); empty, it only checks that the journal is open.
    pub(crate) fn append_journal(&self, stack: &StackRef, batch: &[u8]) -> Result<()> {
        let path = self.journal(stack)?;
        let no_journal = || BackendError::NoJournal {
            stack: stack.to_string(),
        };
        let _guard = APPEND_LOCK.lock().unwrap_or_else(PoisonError::into_inner);
        let mut file = match OpenOptions::new().read(true).append(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(no_journal()),
            Err(e) => return Err(BackendError::io("open", &path, e)),
        };
        if batch.is_empty() {
            return Ok(());
        }
        let start = cut_torn_tail(&mut file, &path)?;
        let written = file.write_all(batch).and_then(|()| file.sync_data());
        if let Err(e) = written {
            // Leave no partial batch for later appends to follow.
            let _ = file.set_len(start).and_then(|()| file.sync_data());
            return Err(BackendError::io("append to", &path, e));
        }
        Ok(())
    }

    pub(crate) fn load_journal(&self, stack: &StackRef) -> Result<Option<StoredJournal>> {
        let path = self.journal(stack)?;
        if !self.stack_exists(stack)? {
            return Err(self.not_found(stack));
        }
        match atomic::read_optional(&path)? {
            None => Ok(None),
            Some(bytes) => parse_journal(&bytes, &path).map(Some),
        }
    }

    pub(crate) fn close_journal(&self, stack: &StackRef) -> Result<()> {
        remove_journal_file(&self.journal(stack)?)
    }

    /// Removes the stack's journal with the stack.
    pub(crate) fn remove_journal(&self, layout: &Layout, stack: &StackRef) -> Result<()> {
        remove_journal_file(&journal_path(layout, stack))
    }
}

/// The checked `entries` as the journal file stores them: each on its own
/// line.
fn joined_batch(stack: &StackRef, entries: &[Vec<u8>]) -> Result<Vec<u8>> {
    check_entries(stack, entries)?;
    let mut batch = Vec::with_capacity(entries.iter().map(|e| e.len() + 1).sum());
    for entry in entries {
        batch.extend_from_slice(entry);
        batch.push(b'\n');
    }
    Ok(batch)
}

fn remove_journal_file(path: &Path) -> Result<()> {
    if atomic::remove_optional(path)? {
        atomic::sync_dir(parent(path))?;
    }
    Ok(())
}

/// Cuts a torn last line (no newline) off the file; returns its length.
fn cut_torn_tail(file: &mut File, path: &Path) -> Result<u64> {
    let io_err = |e| BackendError::io("read", path, e);
    let len = file.metadata().map_err(io_err)?.len();
    let mut last = [0u8];
    if len > 0 {
        file.seek(SeekFrom::Start(len - 1)).map_err(io_err)?;
        file.read_exact(&mut last).map_err(io_err)?;
    }
    if last[0] == b'\n' {
        return Ok(len);
    }
    let bytes = fs::read(path).map_err(io_err)?;
    let keep = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(i) => i as u64 + 1,
        None => {
            return Err(corrupt(path, 1, "the header line is incomplete".to_owned()));
        }
    };
    file.set_len(keep)
        .and_then(|()| file.sync_data())
        .map_err(|e| BackendError::io("truncate", path, e))?;
    Ok(keep)
}

fn corrupt(path: &Path, line: usize, reason: String) -> BackendError {
    BackendError::CorruptJournal {
        location: path.display().to_string(),
        line,
        reason,
    }
}

/// Reads a journal file: the header, then every complete entry line. Only
/// the last line may be torn (no newline, or not JSON); it is dropped.
pub(crate) fn parse_journal(bytes: &[u8], path: &Path) -> Result<StoredJournal> {
    let Some(end) = bytes.iter().position(|b| *b == b'\n') else {
        return Err(corrupt(path, 1, "the header line is incomplete".to_owned()));
    };
    let header: Header = serde_json::from_slice(&bytes[..end])
        .map_err(|e| corrupt(path, 1, format!("the header is not a journal header: {e}")))?;
    if header.version != JOURNAL_FORMAT_VERSION {
        return Err(BackendError::Unsupported(format!(
            "the journal {} has format version {}; this version of converge reads version \
             {JOURNAL_FORMAT_VERSION}: use the converge that wrote it, or upgrade",
            path.display(),
            header.version
        )));
    }
    let base_ok = header.base.len() == 64
        && header
            .base
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !base_ok {
        let reason = format!(
            "the header's base {:?} is not a SHA-256 digest",
            header.base
        );
        return Err(corrupt(path, 1, reason));
    }

    let mut lines: Vec<&[u8]> = bytes[end + 1..].split(|b| *b == b'\n').collect();
    // `split` ends with what follows the last newline: empty, or a torn line.
    lines.pop();
    let last = lines.len().checked_sub(1);
    let mut entries = Vec::with_capacity(lines.len());
    for (i, line) in lines.into_iter().enumerate() {
        match is_json(line) {
            Ok(()) => entries.push(line.to_vec()),
            // A garbage last line: torn by a crash before it was synced.
            Err(_) if Some(i) == last => {}
            Err(e) => {
                let reason = if line.is_empty() {
                    "an empty line".to_owned()
                } else {
                    format!("the entry is not valid JSON ({e})")
                };
                return Err(corrupt(path, i + 2, reason));
            }
        }
    }
    Ok(StoredJournal {
        base_digest: header.base,
        entries,
    })
}

#[async_trait]
impl JournalStore for FileBackend {
    async fn open_journal(&self, stack: &StackRef, base_checkpoint_digest: &str) -> Result<()> {
        let (stack, digest) = (stack.clone(), base_checkpoint_digest.to_owned());
        self.run(move |s| s.open_journal(&stack, &digest)).await
    }

    async fn append_journal(&self, stack: &StackRef, entries: &[Vec<u8>]) -> Result<()> {
        // Joined here, so that the entries are copied once (a batch of a
        // 100,000-resource create is 170 MB), not once to move them to the
        // blocking thread and again to write them.
        let (stack, batch) = (stack.clone(), joined_batch(stack, entries)?);
        self.run(move |s| s.append_journal(&stack, &batch)).await
    }

    async fn load_journal(&self, stack: &StackRef) -> Result<Option<StoredJournal>> {
        let stack = stack.clone();
        self.run(move |s| s.load_journal(&stack)).await
    }

    async fn close_journal(&self, stack: &StackRef) -> Result<()> {
        let stack = stack.clone();
        self.run(move |s| s.close_journal(&stack)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "0000000000000000000000000000000000000000000000000000000000000abc";

    fn parse(text: &str) -> Result<StoredJournal> {
        parse_journal(text.as_bytes(), Path::new("/r/dev.journal"))
    }

    fn header() -> String {
        format!("{{\"converge-journal\":1,\"base\":\"{BASE}\"}}\n")
    }

    fn entries(text: &str) -> Vec<String> {
        let j = parse(&format!("{}{text}", header())).unwrap();
        assert_eq!(j.base_digest, BASE);
        j.entries
            .into_iter()
            .map(|e| String::from_utf8(e).unwrap())
            .collect()
    }

    #[test]
    fn torn_last_lines_are_dropped() {
        assert!(entries("").is_empty());
        assert_eq!(entries("{\"a\":1}\n[2]\n"), ["{\"a\":1}", "[2]"]);
        assert_eq!(entries("{\"a\":1}\n{\"b\":"), ["{\"a\":1}"]);
        // Complete JSON without its newline was never acknowledged either.
        assert_eq!(entries("{\"a\":1}\n{\"b\":2}"), ["{\"a\":1}"]);
        assert_eq!(entries("{\"a\":1}\n\0\0\0\0\n"), ["{\"a\":1}"]);
        assert_eq!(entries("{\"a\":1}\n{\"b\":\n"), ["{\"a\":1}"]);
    }

    #[test]
    fn damage_elsewhere_names_the_file_and_line() {
        for (text, line, want) in [
            ("{\"a\":1}\n{\"b\":\n{\"c\":3}\n", 3, "not valid JSON"),
            ("\n{\"c\":3}\n", 2, "empty line"),
            ("{\"a\":1}\n\0\0\n{\"c\":3}\n", 3, "not valid JSON"),
        ] {
            let err = parse(&format!("{}{text}", header())).unwrap_err();
            let msg = err.to_string();
            assert!(
                matches!(err, BackendError::CorruptJournal { line: l, .. } if l == line),
                "{text:?}: {msg}"
            );
            assert!(
                msg.contains("/r/dev.journal") && msg.contains(want),
                "{msg}"
            );
            assert!(msg.contains(&format!("line {line}")), "{msg}");
        }
        for bad in [
            "",
            "{\"converge-journal\":1",
            "not json\n",
            "{\"converge-journal\":1}\n",
            "{\"converge-journal\":1,\"base\":\"xyz\"}\n",
        ] {
            let msg = parse(bad).unwrap_err().to_string();
            assert!(msg.contains("at line 1"), "{bad:?}: {msg}");
        }
        let newer = format!("{{\"converge-journal\":2,\"base\":\"{BASE}\"}}\n");
        let msg = parse(&newer).unwrap_err().to_string();
        assert!(msg.contains("format version 2"), "{msg}");
    }
}

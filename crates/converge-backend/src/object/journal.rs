//! The update journal in a bucket. Objects cannot be appended to, so a
//! journal is a directory of objects, each written whole with one PUT:
//!
//! ```text
//! <journals>/<project>/<stack>/base.json        {"converge-journal":1,"base":"<sha256>"}
//! <journals>/<project>/<stack>/<20-digit n>.jsonl  batch n: one entry per line
//! ```
//!
//! `base.json` is created with a conditional create (so two updates never
//! both open a journal) and batches too (so a batch, once acknowledged, is
//! never overwritten). A batch is one object: it is stored whole or not at
//! all, so there is no torn tail to cut. Loading lists the batches and
//! reads them in order; a gap (a batch whose PUT never completed while a
//! later one did — possible only if the writer went on after an error)
//! ends the journal there, as a torn tail ends a file journal. Closing
//! deletes the base first, then the batches: a journal without a base is
//! no journal, and its leftover batches are removed by the next open.

use object_store::path::Path;

use crate::error::{BackendError, Result};
use crate::file::JOURNAL_FORMAT_VERSION;
use crate::journal_store::{check_digest, check_entries, is_json, StoredJournal};
use crate::name::StackRef;
use crate::object::Inner;

const BASE: &str = "base.json";
const BATCH_SUFFIX: &str = ".jsonl";

#[derive(serde::Deserialize)]
struct Header {
    #[serde(rename = "converge-journal")]
    version: i64,
    base: String,
}

fn batch_name(n: u64) -> String {
    format!("{n:020}{BATCH_SUFFIX}")
}

fn batch_number(key: &Path) -> Option<u64> {
    key.filename()?.strip_suffix(BATCH_SUFFIX)?.parse().ok()
}

impl Inner {
    fn corrupt(&self, key: &Path, reason: String) -> BackendError {
        BackendError::CorruptJournal {
            location: format!("{}/{key}", self.url.trim_end_matches('/')),
            line: 1,
            reason,
        }
    }

    pub(crate) fn journal_seq_forget(&self, stack: &StackRef) {
        self.journal_seq
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(stack);
    }

    /// The batches stored now, in order.
    async fn batches(&self, dir: &Path) -> Result<Vec<(u64, Path)>> {
        let mut batches: Vec<(u64, Path)> = self
            .list(dir)
            .await?
            .into_iter()
            .filter_map(|m| Some((batch_number(&m.location)?, m.location)))
            .collect();
        batches.sort_by_key(|(n, _)| *n);
        Ok(batches)
    }

    pub(crate) async fn open_journal(&self, stack: &StackRef, digest: &str) -> Result<()> {
        let keys = self.keys.stack(stack)?;
        check_digest(stack, digest)?;
        if !self.exists(&keys.checkpoint).await? {
            return Err(self.not_found(stack));
        }
        let base = keys.journal_dir.clone().join(BASE);
        if self.exists(&base).await? {
            return Err(BackendError::JournalExists {
                stack: stack.to_string(),
                location: format!("{}/{base}", self.url.trim_end_matches('/')),
            });
        }
        // Batches left by a journal whose close was interrupted.
        for (_, key) in self.batches(&keys.journal_dir).await? {
            self.delete_optional(&key).await?;
        }
        let header =
            format!("{{\"converge-journal\":{JOURNAL_FORMAT_VERSION},\"base\":\"{digest}\"}}");
        if !self.create(&base, header.as_bytes()).await? {
            return Err(BackendError::JournalExists {
                stack: stack.to_string(),
                location: format!("{}/{base}", self.url.trim_end_matches('/')),
            });
        }
        self.journal_seq
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(stack.clone(), 0);
        Ok(())
    }

    pub(crate) async fn append_journal(&self, stack: &StackRef, entries: &[Vec<u8>]) -> Result<()> {
        let keys = self.keys.stack(stack)?;
        check_entries(stack, entries)?;
        let opened_here = self
            .journal_seq
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(stack);
        // A journal this process opened needs no look-up per batch.
        if !opened_here && !self.exists(&keys.journal_dir.clone().join(BASE)).await? {
            return Err(BackendError::NoJournal {
                stack: stack.to_string(),
            });
        }
        if entries.is_empty() {
            return Ok(());
        }
        let mut body = Vec::with_capacity(entries.iter().map(|e| e.len() + 1).sum());
        for entry in entries {
            body.extend_from_slice(entry);
            body.push(b'\n');
        }
        // The next number: this process's counter, or (for a journal opened
        // by another instance) one past the last stored batch. A conditional
        // create never overwrites a stored batch; on a clash, move past it.
        loop {
            let next = self
                .journal_seq
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(stack)
                .copied();
            let n = match next {
                Some(n) => n,
                None => self
                    .batches(&keys.journal_dir)
                    .await?
                    .last()
                    .map_or(0, |(n, _)| n + 1),
            };
            let created = self
                .create(&keys.journal_dir.clone().join(batch_name(n)), &body)
                .await?;
            let mut seq = self.journal_seq.lock().unwrap_or_else(|p| p.into_inner());
            if created {
                seq.insert(stack.clone(), n + 1);
                return Ok(());
            }
            seq.remove(stack);
        }
    }

    pub(crate) async fn load_journal(&self, stack: &StackRef) -> Result<Option<StoredJournal>> {
        let keys = self.keys.stack(stack)?;
        if !self.exists(&keys.checkpoint).await? {
            return Err(self.not_found(stack));
        }
        let base_key = keys.journal_dir.clone().join(BASE);
        let Some(header) = self.get_optional(&base_key).await? else {
            return Ok(None);
        };
        let header: Header = serde_json::from_slice(&header)
            .map_err(|e| self.corrupt(&base_key, format!("not a journal header: {e}")))?;
        if header.version != JOURNAL_FORMAT_VERSION {
            return Err(BackendError::Unsupported(format!(
                "the journal {base_key} in {} has format version {}; this version of converge \
                 reads version {JOURNAL_FORMAT_VERSION}",
                self.url, header.version
            )));
        }
        if check_digest(stack, &header.base).is_err() {
            return Err(self.corrupt(
                &base_key,
                format!("the base {:?} is not a SHA-256 digest", header.base),
            ));
        }
        let mut entries = Vec::new();
        for (expected, (n, key)) in self
            .batches(&keys.journal_dir)
            .await?
            .into_iter()
            .enumerate()
        {
            if n != expected as u64 {
                break;
            }
            let Some(body) = self.get_optional(&key).await? else {
                break;
            };
            for line in body.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                is_json(line)
                    .map_err(|e| self.corrupt(&key, format!("an entry is not valid JSON ({e})")))?;
                entries.push(line.to_vec());
            }
        }
        Ok(Some(StoredJournal {
            base_digest: header.base,
            entries,
        }))
    }

    pub(crate) async fn close_journal(&self, stack: &StackRef) -> Result<()> {
        let keys = self.keys.stack(stack)?;
        self.delete_optional(&keys.journal_dir.clone().join(BASE))
            .await?;
        self.journal_seq_forget(stack);
        for (_, key) in self.batches(&keys.journal_dir).await? {
            self.delete_optional(&key).await?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl crate::journal_store::JournalStore for crate::object::ObjectBackend {
    async fn open_journal(&self, stack: &StackRef, base_checkpoint_digest: &str) -> Result<()> {
        self.inner.open_journal(stack, base_checkpoint_digest).await
    }

    async fn append_journal(&self, stack: &StackRef, entries: &[Vec<u8>]) -> Result<()> {
        self.inner.append_journal(stack, entries).await
    }

    async fn load_journal(&self, stack: &StackRef) -> Result<Option<StoredJournal>> {
        self.inner.load_journal(stack).await
    }

    async fn close_journal(&self, stack: &StackRef) -> Result<()> {
        self.inner.close_journal(stack).await
    }
}

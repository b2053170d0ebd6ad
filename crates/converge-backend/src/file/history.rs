//! Update history in a DIY directory, as Pulumi's `addToHistory` and
//! `backupStack` write it at the end of every update:
//!
//! - `history/<project>/<stack>/<stack>-<unixnano>.history.json` — the record;
//! - `history/<project>/<stack>/<stack>-<unixnano>.checkpoint.json` — the
//!   checkpoint the update left (a hard link to it where the file system
//!   has them: the checkpoint is only ever replaced by rename);
//! - `backups/<project>/<stack>/<stack>.<unixnano>.json` — the same
//!   checkpoint again, unless checkpoint backups are off.

use crate::capabilities::{HistoryEntry, ListHistoryOptions, UpdateKind};
use crate::error::Result;
use crate::file::atomic;
use crate::file::{unique_unix_nanos, FileStore};
use crate::history_record::{check_record, record_kind};
use crate::name::StackRef;

const HISTORY_SUFFIX: &str = ".history.json";

impl FileStore {
    pub(crate) fn add_history(
        &self,
        stack: &StackRef,
        kind: &UpdateKind,
        record: &[u8],
    ) -> Result<()> {
        let (_, paths) = self.resolve(stack)?;
        if !paths.checkpoint.exists() && !self.stack_exists(stack)? {
            return Err(self.not_found(stack));
        }
        check_record(stack, kind, record)?;
        let nanos = unique_unix_nanos();
        let s = &stack.stack;
        let prefix = format!("{s}-{nanos}");
        atomic::write_atomic(
            &paths.history_dir.join(format!("{prefix}{HISTORY_SUFFIX}")),
            record,
        )?;
        // The copy is the checkpoint under a second name: every writer
        // replaces the checkpoint by rename, so the copy keeps these bytes,
        // and they are not written a second time.
        let copy = paths.history_dir.join(format!("{prefix}.checkpoint.json"));
        if atomic::link_or_copy(&paths.checkpoint, &copy)? && self.options.checkpoint_backups {
            // The backup is the history copy under a third name (all
            // archives, never rewritten).
            let backup = paths.backup_dir.join(format!("{s}.{nanos}.json"));
            atomic::link_or_copy(&copy, &backup)?;
        }
        Ok(())
    }

    pub(crate) fn load_history_checkpoint(
        &self,
        stack: &StackRef,
        nanos: i64,
    ) -> Result<Option<Vec<u8>>> {
        if !self.stack_exists(stack)? {
            return Err(self.not_found(stack));
        }
        let (_, paths) = self.resolve(stack)?;
        let copy = paths
            .history_dir
            .join(format!("{}-{nanos}.checkpoint.json", stack.stack));
        atomic::read_optional(&copy)
    }

    pub(crate) fn list_history(
        &self,
        stack: &StackRef,
        options: &ListHistoryOptions,
    ) -> Result<Vec<HistoryEntry>> {
        if !self.stack_exists(stack)? {
            return Err(self.not_found(stack));
        }
        let (_, paths) = self.resolve(stack)?;
        let stem = format!("{}-", stack.stack);
        let mut found: Vec<(i64, std::path::PathBuf)> = atomic::list_dir(&paths.history_dir)?
            .into_iter()
            .filter(|e| !e.is_dir)
            .filter_map(|e| {
                let nanos = e.name.strip_prefix(&stem)?.strip_suffix(HISTORY_SUFFIX)?;
                Some((nanos.parse().ok()?, e.path))
            })
            .collect();
        found.sort_by_key(|(nanos, _)| std::cmp::Reverse(*nanos));
        found.truncate(options.limit.unwrap_or(usize::MAX));
        let mut out = Vec::with_capacity(found.len());
        for (nanos, path) in found {
            // Removed while we listed: skip it.
            let Some(record) = atomic::read_optional(&path)? else {
                continue;
            };
            out.push(HistoryEntry {
                kind: record_kind(&record).map(|k| UpdateKind::parse(&k)),
                recorded_at_unix_nanos: nanos,
                record,
            });
        }
        Ok(out)
    }
}

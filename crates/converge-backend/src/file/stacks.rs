//! Stacks and checkpoints in a DIY directory (blocking; run off the async
//! executor by [`FileBackend`](super::FileBackend)).

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};

use crate::capabilities::{ListStacksOptions, RemoveOptions, SaveOptions, StackSummary};
use crate::checkpoint_text::{CheckpointText, TextAborted};
use crate::error::{BackendError, Result};
use crate::file::atomic;
use crate::file::layout::{
    stack_name_of_checkpoint, with_suffix, Layout, LayoutVersion, StackPaths,
};
use crate::file::{unique_unix_nanos, FileStore};
use crate::name::{validate_project_name, StackRef, DIY_ORGANIZATION};

/// What is on disk for a stack's checkpoint.
enum Stored {
    Missing,
    Plain,
    /// Only a compressed (`.json.gz` / `.json.zst`) checkpoint exists.
    Compressed(std::path::PathBuf),
}

impl FileStore {
    fn stored(&self, paths: &StackPaths) -> Result<Stored> {
        if atomic::is_file(&paths.checkpoint)? {
            return Ok(Stored::Plain);
        }
        for p in paths.compressed() {
            if atomic::is_file(&p)? {
                return Ok(Stored::Compressed(p));
            }
        }
        Ok(Stored::Missing)
    }

    /// The paths of an existing stack with a plain checkpoint.
    fn existing(&self, stack: &StackRef) -> Result<StackPaths> {
        let (_, paths) = self.resolve(stack)?;
        match self.stored(&paths)? {
            Stored::Plain => Ok(paths),
            Stored::Missing => Err(self.not_found(stack)),
            Stored::Compressed(p) => Err(compressed_error(stack, &p)),
        }
    }

    pub(crate) fn not_found(&self, stack: &StackRef) -> BackendError {
        BackendError::StackNotFound {
            stack: stack.to_string(),
            backend: self.url.clone(),
        }
    }

    pub(crate) fn create_stack(&self, stack: &StackRef, initial: &[u8]) -> Result<()> {
        let (layout, paths) = self.resolve(stack)?;
        if !matches!(self.stored(&paths)?, Stored::Missing) {
            return Err(self.already_exists(stack));
        }
        layout.ensure_meta()?;
        if !atomic::create_atomic(&paths.checkpoint, initial)? {
            return Err(self.already_exists(stack));
        }
        Ok(())
    }

    pub(crate) fn already_exists(&self, stack: &StackRef) -> BackendError {
        BackendError::StackAlreadyExists {
            stack: stack.to_string(),
            backend: self.url.clone(),
        }
    }

    pub(crate) fn stack_exists(&self, stack: &StackRef) -> Result<bool> {
        let (_, paths) = self.resolve(stack)?;
        Ok(!matches!(self.stored(&paths)?, Stored::Missing))
    }

    pub(crate) fn list_stacks(&self, options: &ListStacksOptions) -> Result<Vec<StackSummary>> {
        if let Some(p) = &options.project {
            validate_project_name(p)?;
        }
        let layout = Layout::detect(&self.root)?;
        // Keyed by (project, stack) so `dev.json` and `dev.json.gz` list once.
        let mut found: BTreeMap<(String, String), Option<i64>> = BTreeMap::new();
        let mut add_files = |project: &str, entries: Vec<atomic::Entry>| {
            for e in entries.into_iter().filter(|e| !e.is_dir) {
                if let Some(name) = stack_name_of_checkpoint(&e.name) {
                    let key = (project.to_owned(), name.to_owned());
                    let slot = found.entry(key).or_insert(e.modified);
                    *slot = (*slot).max(e.modified);
                }
            }
        };
        match layout.version {
            LayoutVersion::ProjectScoped => {
                for dir in atomic::list_dir(&layout.stacks_dir())? {
                    let wanted = options.project.as_ref().is_none_or(|p| *p == dir.name);
                    if dir.is_dir && wanted && validate_project_name(&dir.name).is_ok() {
                        add_files(&dir.name, atomic::list_dir(&dir.path)?);
                    }
                }
            }
            LayoutVersion::Legacy => {
                // Legacy stacks belong to no project; report them under the
                // project asked about (or none).
                let project = options.project.clone().unwrap_or_default();
                add_files(&project, atomic::list_dir(&layout.stacks_dir())?);
            }
        }
        Ok(found
            .into_iter()
            .map(|((project, stack), last_modified)| StackSummary {
                stack_ref: StackRef {
                    organization: DIY_ORGANIZATION.to_owned(),
                    project,
                    stack,
                },
                last_modified,
            })
            .collect())
    }

    pub(crate) fn remove_stack(&self, stack: &StackRef, options: &RemoveOptions) -> Result<()> {
        let (layout, paths) = self.resolve(stack)?;
        if matches!(self.stored(&paths)?, Stored::Missing) {
            return Err(self.not_found(stack));
        }
        let mut checkpoints = vec![paths.checkpoint.clone()];
        checkpoints.extend(paths.compressed());
        for file in &checkpoints {
            if options.remove_backups {
                atomic::remove_optional(file)?;
                atomic::remove_optional(&with_suffix(file, ".bak"))?;
            } else if atomic::is_file(file)? {
                // As Pulumi does: the last checkpoint survives as `.bak`.
                let bak = with_suffix(file, ".bak");
                fs::rename(file, &bak).map_err(|e| BackendError::io("rename", file, e))?;
            }
        }
        if options.remove_backups {
            atomic::remove_dir_optional(&paths.backup_dir)?;
        }
        atomic::remove_optional(&paths.tags)?;
        atomic::remove_dir_optional(&paths.history_dir)?;
        self.remove_journal(&layout, stack)?;
        if let Some(dir) = paths.checkpoint.parent() {
            atomic::sync_dir(dir)?;
        }
        Ok(())
    }

    pub(crate) fn load_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>> {
        let paths = self.existing(stack)?;
        match atomic::read_optional(&paths.checkpoint)? {
            Some(bytes) => Ok(Some(bytes)),
            // Removed between the check and the read.
            None => Err(self.not_found(stack)),
        }
    }

    pub(crate) fn load_previous_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>> {
        let paths = self.existing(stack)?;
        atomic::read_optional(&paths.previous)
    }

    pub(crate) fn save_checkpoint(
        &self,
        stack: &StackRef,
        checkpoint: &[u8],
        options: &SaveOptions,
    ) -> Result<()> {
        self.save_checkpoint_with(stack, options, |f| f.write_all(checkpoint))
    }

    /// Saves the checkpoint `text` writes as its pieces arrive; returns its
    /// length. A text that ends unfinished stores nothing.
    pub(crate) fn save_checkpoint_text(
        &self,
        stack: &StackRef,
        mut text: CheckpointText,
        options: &SaveOptions,
    ) -> Result<u64> {
        let mut length = 0u64;
        let mut aborted = false;
        let saved = self.save_checkpoint_with(stack, options, |f| loop {
            match text.blocking_next() {
                Ok(Some(piece)) => {
                    f.write_all(&piece)?;
                    length += piece.len() as u64;
                }
                Ok(None) => return Ok(()),
                Err(TextAborted) => {
                    aborted = true;
                    return Err(io::Error::new(io::ErrorKind::UnexpectedEof, TextAborted));
                }
            }
        });
        match saved {
            Err(_) if aborted => Err(BackendError::IncompleteCheckpoint {
                stack: stack.to_string(),
            }),
            other => other.map(|()| length),
        }
    }

    /// Replaces the checkpoint with what `fill` writes: the new file is
    /// complete and durable before anything moves, then the current one
    /// becomes the `.bak` (a link, not a copy) and the new one replaces it
    /// by rename, so a failed write changes nothing.
    fn save_checkpoint_with(
        &self,
        stack: &StackRef,
        options: &SaveOptions,
        fill: impl FnOnce(&mut fs::File) -> io::Result<()>,
    ) -> Result<()> {
        let paths = self.existing(stack)?;
        let staged = atomic::stage(&paths.checkpoint, fill)?;
        if options.keep_backup {
            // Once the new checkpoint is renamed in, the `.bak` is the only
            // name of the old bytes.
            atomic::link_or_copy(&paths.checkpoint, &paths.previous)?;
        }
        staged.commit()?;
        if self.options.retain_checkpoints {
            // A link too: every writer replaces the checkpoint by rename.
            let retained = with_suffix(&paths.checkpoint, &format!(".{}", unique_unix_nanos()));
            atomic::link_or_copy(&paths.checkpoint, &retained)?;
        }
        Ok(())
    }
}

fn compressed_error(stack: &StackRef, path: &std::path::Path) -> BackendError {
    BackendError::Unsupported(format!(
        "the checkpoint of stack {stack} is compressed ({}); converge cannot read compressed \
         checkpoints yet: decompress it to {} (gunzip or zstd -d) and retry",
        path.display(),
        path.with_extension("").display()
    ))
}

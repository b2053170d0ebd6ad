//! Stack rename and stack tags in a DIY directory (blocking; run off the
//! async executor by [`FileBackend`](super::FileBackend)).
//!
//! A rename does what Pulumi's does on disk: the new name's checkpoint is
//! written (refused if the name is taken), the history files move to the
//! new name (`<old>-<nanos>.*` → `<new>-<nanos>.*`), the tags file moves,
//! and the old checkpoint becomes the old name's `.bak`. A step that fails
//! undoes the earlier ones, so the stack stays under its old name.

use std::fs;
use std::path::{Path, PathBuf};

use crate::capabilities::StackTags;
use crate::error::{BackendError, Result};
use crate::file::{atomic, FileStore};
use crate::name::StackRef;
use crate::tags_file;

impl FileStore {
    pub(crate) fn rename_stack(
        &self,
        from: &StackRef,
        to: &StackRef,
        checkpoint: &[u8],
    ) -> Result<()> {
        let (_, old) = self.resolve(from)?;
        let (_, new) = self.resolve(to)?;
        if !self.stack_exists(from)? {
            return Err(self.not_found(from));
        }
        if self.stack_exists(to)? {
            return Err(self.already_exists(to));
        }
        if !atomic::create_atomic(&new.checkpoint, checkpoint)? {
            return Err(self.already_exists(to));
        }
        let mut moved: Vec<(PathBuf, PathBuf)> = Vec::new();
        let result = (|| {
            let stem = format!("{}-", from.stack);
            for e in atomic::list_dir(&old.history_dir)? {
                let Some(rest) = e.name.strip_prefix(&stem) else {
                    continue;
                };
                if e.is_dir {
                    continue;
                }
                let target = new.history_dir.join(format!("{}-{rest}", to.stack));
                move_file(&e.path, &target, &mut moved)?;
            }
            if atomic::is_file(&old.tags)? {
                move_file(&old.tags, &new.tags, &mut moved)?;
            }
            // As Pulumi does: the old checkpoint survives as the old name's `.bak`.
            move_file(&old.checkpoint, &old.previous, &mut moved)
        })();
        if let Err(e) = result {
            for (src, dst) in moved.iter().rev() {
                let _ = fs::rename(dst, src);
            }
            let _ = atomic::remove_optional(&new.checkpoint);
            return Err(e);
        }
        let _ = fs::remove_dir(&old.history_dir);
        let mut dirs: Vec<&Path> = [&old.checkpoint, &new.checkpoint]
            .into_iter()
            .filter_map(|p| p.parent())
            .collect();
        if !moved.is_empty() {
            dirs.push(&new.history_dir);
        }
        for dir in dirs {
            if dir.exists() {
                atomic::sync_dir(dir)?;
            }
        }
        Ok(())
    }

    pub(crate) fn load_tags(&self, stack: &StackRef) -> Result<StackTags> {
        let (_, paths) = self.resolve(stack)?;
        if !self.stack_exists(stack)? {
            return Err(self.not_found(stack));
        }
        match atomic::read_optional(&paths.tags)? {
            Some(bytes) => tags_file::parse(&bytes, &paths.tags.display().to_string()),
            None => Ok(StackTags::new()),
        }
    }

    pub(crate) fn save_tags(&self, stack: &StackRef, tags: &StackTags) -> Result<()> {
        let (_, paths) = self.resolve(stack)?;
        if !self.stack_exists(stack)? {
            return Err(self.not_found(stack));
        }
        atomic::write_atomic(&paths.tags, &tags_file::write(tags))
    }
}

/// Moves `src` to `dst` (creating `dst`'s directory), remembering it so a
/// failed rename can move it back.
fn move_file(src: &Path, dst: &Path, moved: &mut Vec<(PathBuf, PathBuf)>) -> Result<()> {
    if let Some(dir) = dst.parent() {
        atomic::ensure_dir(dir)?;
    }
    fs::rename(src, dst).map_err(|e| BackendError::io("rename", src, e))?;
    moved.push((src.to_owned(), dst.to_owned()));
    Ok(())
}

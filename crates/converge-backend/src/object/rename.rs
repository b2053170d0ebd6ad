//! Stack rename and stack tags in a bucket, as on disk (see the file
//! backend): the new name's checkpoint is created (refused if the name is
//! taken), history objects and the tags object are copied to the new
//! name, then the old name's are deleted and its checkpoint kept as its
//! `.bak`. A failure before the deletions removes what was copied, so the
//! stack stays under its old name.

use object_store::path::Path;

use crate::capabilities::StackTags;
use crate::error::{BackendError, Result};
use crate::name::StackRef;
use crate::object::Inner;
use crate::tags_file;

impl Inner {
    pub async fn rename_stack(
        &self,
        from: &StackRef,
        to: &StackRef,
        checkpoint: &[u8],
    ) -> Result<()> {
        let old = self.keys.stack(from)?;
        let new = self.keys.stack(to)?;
        let Some(current) = self.get_optional(&old.checkpoint).await? else {
            return Err(self.not_found(from));
        };
        if !self.create(&new.checkpoint, checkpoint).await? {
            return Err(BackendError::StackAlreadyExists {
                stack: to.to_string(),
                backend: self.url.clone(),
            });
        }
        let mut copied: Vec<Path> = vec![new.checkpoint.clone()];
        let mut originals: Vec<Path> = Vec::new();
        let result: Result<()> = async {
            let stem = format!("{}-", from.stack);
            for meta in self.list(&old.history_dir).await? {
                let Some(rest) = meta
                    .location
                    .filename()
                    .and_then(|n| n.strip_prefix(&stem))
                    .map(str::to_owned)
                else {
                    continue;
                };
                let Some(bytes) = self.get_optional(&meta.location).await? else {
                    continue;
                };
                let target = new.history_dir.clone().join(format!("{}-{rest}", to.stack));
                self.put(&target, &bytes).await?;
                copied.push(target);
                originals.push(meta.location.clone());
            }
            if let Some(tags) = self.get_optional(&old.tags).await? {
                self.put(&new.tags, &tags).await?;
                copied.push(new.tags.clone());
                originals.push(old.tags.clone());
            }
            // As Pulumi does: the old checkpoint survives as the old name's `.bak`.
            self.put(&old.previous, &current).await
        }
        .await;
        if let Err(e) = result {
            for key in copied.iter().rev() {
                let _ = self.delete_optional(key).await;
            }
            return Err(e);
        }
        self.delete_optional(&old.checkpoint).await?;
        for key in &originals {
            self.delete_optional(key).await?;
        }
        Ok(())
    }

    pub async fn load_tags(&self, stack: &StackRef) -> Result<StackTags> {
        let keys = self.keys.stack(stack)?;
        if !self.exists(&keys.checkpoint).await? {
            return Err(self.not_found(stack));
        }
        match self.get_optional(&keys.tags).await? {
            Some(bytes) => tags_file::parse(&bytes, &format!("{} in {}", keys.tags, self.url)),
            None => Ok(StackTags::new()),
        }
    }

    pub async fn save_tags(&self, stack: &StackRef, tags: &StackTags) -> Result<()> {
        let keys = self.keys.stack(stack)?;
        if !self.exists(&keys.checkpoint).await? {
            return Err(self.not_found(stack));
        }
        self.put(&keys.tags, &tags_file::write(tags)).await
    }
}

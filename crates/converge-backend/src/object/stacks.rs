//! Stacks, checkpoints and update history in a bucket, as Pulumi's DIY
//! backend keeps them (see the file backend for the same rules on disk).

use std::collections::BTreeMap;

use object_store::PutPayload;

use crate::capabilities::{
    HistoryEntry, ListHistoryOptions, ListStacksOptions, RemoveOptions, SaveOptions, StackSummary,
    UpdateKind,
};
use crate::error::{BackendError, Result};
use crate::file::layout::{stack_name_of_checkpoint, META_V1};
use crate::file::unique_unix_nanos;
use crate::history_record::{check_record, record_kind};
use crate::name::{validate_project_name, StackRef, DIY_ORGANIZATION};
use crate::object::Inner;

const HISTORY_SUFFIX: &str = ".history.json";

impl Inner {
    /// Refuses a bucket whose `meta.yaml` says it is not project-scoped.
    async fn check_layout(&self) -> Result<()> {
        let key = self.keys.meta();
        let Some(bytes) = self.get_optional(&key).await? else {
            return Ok(());
        };
        #[derive(serde::Deserialize)]
        struct Meta {
            version: Option<i64>,
        }
        let malformed =
            |reason: String| BackendError::Unsupported(format!("{key} in {}: {reason}", self.url));
        let meta: Meta = converge_yaml::from_slice(key.as_ref(), &bytes)
            .map_err(|e| malformed(format!("not valid YAML with an integer version: {e}")))?;
        match meta.version {
            Some(1) => Ok(()),
            Some(0) => Err(malformed(
                "the legacy (version 0) layout is not supported in object stores; upgrade it \
                 with `pulumi state upgrade`"
                    .to_owned(),
            )),
            Some(v) => Err(malformed(format!(
                "layout version {v} is not known to this version of converge; upgrade converge"
            ))),
            None => Err(malformed("it has no `version`".to_owned())),
        }
    }

    pub async fn create_stack(&self, stack: &StackRef, initial: &[u8]) -> Result<()> {
        let keys = self.keys.stack(stack)?;
        self.check_layout().await?;
        // meta.yaml first, as Pulumi: a bucket with stacks always says its layout.
        self.create(&self.keys.meta(), META_V1.as_bytes()).await?;
        if !self.create(&keys.checkpoint, initial).await? {
            return Err(BackendError::StackAlreadyExists {
                stack: stack.to_string(),
                backend: self.url.clone(),
            });
        }
        Ok(())
    }

    pub async fn list_stacks(&self, options: &ListStacksOptions) -> Result<Vec<StackSummary>> {
        if let Some(p) = &options.project {
            validate_project_name(p)?;
        }
        self.check_layout().await?;
        let dir = match &options.project {
            Some(p) => self.keys.stacks_dir().clone().join(p.as_str()),
            None => self.keys.stacks_dir(),
        };
        let stacks_dir = self.keys.stacks_dir();
        let base: Vec<_> = stacks_dir.parts().collect();
        let mut found: BTreeMap<(String, String), i64> = BTreeMap::new();
        for meta in self.list(&dir).await? {
            let parts: Vec<_> = meta.location.parts().collect();
            // <stacks>/<project>/<file>, nothing deeper.
            if parts.len() != base.len() + 2 || parts[..base.len()] != base[..] {
                continue;
            }
            let project = parts[base.len()].as_ref();
            let Some(name) = stack_name_of_checkpoint(parts[base.len() + 1].as_ref()) else {
                continue;
            };
            if validate_project_name(project).is_err()
                || !parts[base.len() + 1].as_ref().ends_with(".json")
            {
                continue;
            }
            found.insert(
                (project.to_owned(), name.to_owned()),
                meta.last_modified.timestamp(),
            );
        }
        Ok(found
            .into_iter()
            .map(|((project, stack), modified)| StackSummary {
                stack_ref: StackRef {
                    organization: DIY_ORGANIZATION.to_owned(),
                    project,
                    stack,
                },
                last_modified: Some(modified),
            })
            .collect())
    }

    pub async fn remove_stack(&self, stack: &StackRef, options: &RemoveOptions) -> Result<()> {
        let keys = self.keys.stack(stack)?;
        let Some(current) = self.get_optional(&keys.checkpoint).await? else {
            return Err(self.not_found(stack));
        };
        if options.remove_backups {
            self.delete_optional(&keys.previous).await?;
            self.delete_all(&keys.backup_dir).await?;
        } else {
            // Pulumi keeps a removed stack's last checkpoint as its `.bak`.
            self.put(&keys.previous, &current).await?;
        }
        self.delete_optional(&keys.checkpoint).await?;
        self.delete_optional(&keys.tags).await?;
        self.delete_all(&keys.history_dir).await?;
        self.delete_all(&keys.journal_dir).await?;
        self.journal_seq_forget(stack);
        Ok(())
    }

    /// Saves `checkpoint`, a payload of one piece or many (a text that
    /// arrived in pieces is uploaded as they are, not joined first).
    pub async fn save_checkpoint(
        &self,
        stack: &StackRef,
        checkpoint: PutPayload,
        options: &SaveOptions,
    ) -> Result<()> {
        let keys = self.keys.stack(stack)?;
        // The `.bak` is a copy made by the store itself: the current
        // checkpoint is neither downloaded nor uploaded again.
        let exists = match options.keep_backup {
            true => self.copy(&keys.checkpoint, &keys.previous).await?,
            false => self.exists(&keys.checkpoint).await?,
        };
        if !exists {
            return Err(self.not_found(stack));
        }
        self.put_shared(&keys.checkpoint, checkpoint.clone())
            .await?;
        if self.options.diy.retain_checkpoints {
            let retained =
                keys.checkpoint.clone().to_string() + &format!(".{}", unique_unix_nanos());
            self.put_shared(&retained.into(), checkpoint).await?;
        }
        Ok(())
    }

    pub async fn add_history(
        &self,
        stack: &StackRef,
        kind: &UpdateKind,
        record: &[u8],
    ) -> Result<()> {
        let keys = self.keys.stack(stack)?;
        if !self.exists(&keys.checkpoint).await? {
            return Err(self.not_found(stack));
        }
        check_record(stack, kind, record)?;
        let nanos = unique_unix_nanos();
        let s = &stack.stack;
        let prefix = format!("{s}-{nanos}");
        self.put(
            &keys
                .history_dir
                .clone()
                .join(format!("{prefix}{HISTORY_SUFFIX}")),
            record,
        )
        .await?;
        // The checkpoint's archive copies are made by the store itself
        // (the caller holds the stack's lease, so it cannot change between
        // the copies).
        let copy = keys
            .history_dir
            .clone()
            .join(format!("{prefix}.checkpoint.json"));
        if !self.copy(&keys.checkpoint, &copy).await? {
            return Err(self.not_found(stack));
        }
        if self.options.diy.checkpoint_backups {
            let backup = keys.backup_dir.clone().join(format!("{s}.{nanos}.json"));
            self.copy(&copy, &backup).await?;
        }
        Ok(())
    }

    pub async fn load_history_checkpoint(
        &self,
        stack: &StackRef,
        nanos: i64,
    ) -> Result<Option<Vec<u8>>> {
        let keys = self.keys.stack(stack)?;
        if !self.exists(&keys.checkpoint).await? {
            return Err(self.not_found(stack));
        }
        let copy = keys
            .history_dir
            .clone()
            .join(format!("{}-{nanos}.checkpoint.json", stack.stack));
        Ok(self.get_optional(&copy).await?.map(|b| b.to_vec()))
    }

    pub async fn list_history(
        &self,
        stack: &StackRef,
        options: &ListHistoryOptions,
    ) -> Result<Vec<HistoryEntry>> {
        let keys = self.keys.stack(stack)?;
        if !self.exists(&keys.checkpoint).await? {
            return Err(self.not_found(stack));
        }
        let stem = format!("{}-", stack.stack);
        let mut found: Vec<(i64, object_store::path::Path)> = self
            .list(&keys.history_dir)
            .await?
            .into_iter()
            .filter_map(|m| {
                let name = m.location.filename()?;
                let nanos = name.strip_prefix(&stem)?.strip_suffix(HISTORY_SUFFIX)?;
                Some((nanos.parse().ok()?, m.location.clone()))
            })
            .collect();
        found.sort_by_key(|(nanos, _)| std::cmp::Reverse(*nanos));
        found.truncate(options.limit.unwrap_or(usize::MAX));
        let mut out = Vec::with_capacity(found.len());
        for (nanos, key) in found {
            // Removed while we listed: skip it.
            let Some(record) = self.get_optional(&key).await? else {
                continue;
            };
            out.push(HistoryEntry {
                kind: record_kind(&record).map(|k| UpdateKind::parse(&k)),
                recorded_at_unix_nanos: nanos,
                record: record.to_vec(),
            });
        }
        Ok(out)
    }
}

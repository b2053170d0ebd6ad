//! The object-store backend: Pulumi's DIY layout in a bucket (`s3://`,
//! `gs://`, `azblob://`) through the `object_store` crate, so Pulumi's
//! existing bucket state opens unchanged (see [`keys`] for the layout).
//!
//! - Every write is one PUT of a whole object: readers see the old bytes
//!   or the new ones.
//! - Locks are leases taken with a conditional create (see [`lease`]):
//!   two processes can never both hold a stack, a dead holder's lease
//!   expires, and `converge cancel` can inspect and break it.
//! - The update journal is one object per appended batch (see
//!   [`journal`]): O(1) bytes per step, no rewrite of the checkpoint until
//!   the update ends.

mod journal;
pub(crate) mod keys;
mod lease;
mod rename;
mod stacks;
mod url;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::capabilities::{
    Backend, HistoryEntry, HistoryStore, ListHistoryOptions, ListStacksOptions, RemoveOptions,
    SaveOptions, StackLocker, StackStore, StackSummary, StackTags, TagStore, UpdateKind,
};
use crate::checkpoint_text::CheckpointText;
use crate::error::{BackendError, Result};
use crate::file::FileBackendOptions;
use crate::lock::{HeldLock, LockGuard, LockInfo};
use crate::name::{StackRef, DIY_ORGANIZATION};

pub use self::lease::settle_dropped_locks;
pub use self::url::{is_object_store_url, OBJECT_STORE_SCHEMES};
use keys::Keys;

/// How an [`ObjectBackend`] behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectBackendOptions {
    /// Pulumi's DIY switches (retained checkpoints, checkpoint backups).
    pub diy: FileBackendOptions,
    /// How long a lease lasts without a heartbeat. The holder renews it
    /// every third of this; a holder that dies loses it after this long.
    pub lease_ttl: Duration,
}

impl Default for ObjectBackendOptions {
    fn default() -> Self {
        ObjectBackendOptions {
            diy: FileBackendOptions::default(),
            lease_ttl: Duration::from_secs(120),
        }
    }
}

impl ObjectBackendOptions {
    /// The defaults, adjusted by Pulumi's `PULUMI_RETAIN_CHECKPOINTS` /
    /// `PULUMI_DISABLE_CHECKPOINT_BACKUPS` and Converge's
    /// `CONVERGE_LEASE_SECONDS`.
    pub fn from_env() -> Self {
        let mut o = ObjectBackendOptions {
            diy: FileBackendOptions::from_env(),
            ..ObjectBackendOptions::default()
        };
        if let Some(secs) = std::env::var("CONVERGE_LEASE_SECONDS")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|s| *s > 0)
        {
            o.lease_ttl = Duration::from_secs(secs);
        }
        o
    }
}

/// A DIY backend in an object store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ObjectBackend {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub store: Arc<dyn ObjectStore>,
    pub keys: Keys,
    pub url: String,
    pub options: ObjectBackendOptions,
    /// The next batch number of each journal this process appends to.
    pub journal_seq: Mutex<std::collections::HashMap<StackRef, u64>>,
}

impl ObjectBackend {
    /// A backend on `store` under `prefix`; `url` names it in messages.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        url: impl Into<String>,
        options: ObjectBackendOptions,
    ) -> Result<ObjectBackend> {
        let url = url.into();
        let prefix =
            Path::parse(prefix.trim_matches('/')).map_err(|e| BackendError::InvalidUrl {
                url: url.clone(),
                reason: format!("bad prefix {prefix:?}: {e}"),
            })?;
        Ok(ObjectBackend::build(store, prefix, url, options))
    }

    /// Opens `s3://…`, `gs://…` or `azblob://…` with credentials and
    /// options from the environment.
    pub fn open(url: &str) -> Result<ObjectBackend> {
        let parsed = url::parse(url)?;
        Ok(ObjectBackend::build(
            parsed.store,
            parsed.prefix,
            url.to_owned(),
            ObjectBackendOptions::from_env(),
        ))
    }

    fn build(
        store: Arc<dyn ObjectStore>,
        prefix: Path,
        url: String,
        options: ObjectBackendOptions,
    ) -> ObjectBackend {
        ObjectBackend {
            inner: Arc::new(Inner {
                store,
                keys: Keys::new(prefix),
                url,
                options,
                journal_seq: Mutex::new(Default::default()),
            }),
        }
    }

    pub fn options(&self) -> &ObjectBackendOptions {
        &self.inner.options
    }
}

impl Inner {
    pub fn storage_error(
        &self,
        action: &'static str,
        key: &Path,
        e: object_store::Error,
    ) -> BackendError {
        BackendError::Storage {
            action,
            key: key.to_string(),
            backend: self.url.clone(),
            message: e.to_string(),
        }
    }

    /// The object at `key`, or `None`.
    pub async fn get_optional(&self, key: &Path) -> Result<Option<Bytes>> {
        match self.store.get(key).await {
            Ok(r) => match r.bytes().await {
                Ok(b) => Ok(Some(b)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(self.storage_error("read", key, e)),
            },
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.storage_error("read", key, e)),
        }
    }

    pub async fn exists(&self, key: &Path) -> Result<bool> {
        match self.store.head(key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.storage_error("read", key, e)),
        }
    }

    /// Copies `from` to `to` inside the store (a server-side copy: no
    /// bytes travel through this process); `false` when `from` does not
    /// exist.
    pub async fn copy(&self, from: &Path, to: &Path) -> Result<bool> {
        match self.store.copy(from, to).await {
            Ok(()) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(self.storage_error("copy", to, e)),
        }
    }

    pub async fn put(&self, key: &Path, bytes: &[u8]) -> Result<()> {
        self.put_shared(key, PutPayload::from(Bytes::copy_from_slice(bytes)))
            .await
    }

    /// [`ObjectStore::put`] of a payload the caller shares: not copied.
    pub async fn put_shared(&self, key: &Path, payload: PutPayload) -> Result<()> {
        self.store
            .put(key, payload)
            .await
            .map(|_| ())
            .map_err(|e| self.storage_error("write", key, e))
    }

    /// Creates `key` if it does not exist; `false` if it does.
    pub async fn create(&self, key: &Path, bytes: &[u8]) -> Result<bool> {
        Ok(self.create_tagged(key, bytes).await?.is_some())
    }

    /// Creates `key` if it does not exist: `Some` of the new object's ETag
    /// (if the store gives one), or `None` if it exists.
    pub async fn create_tagged(&self, key: &Path, bytes: &[u8]) -> Result<Option<Option<String>>> {
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .store
            .put_opts(key, PutPayload::from(bytes.to_vec()), opts)
            .await
        {
            Ok(r) => Ok(Some(r.e_tag)),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(None),
            Err(e) => Err(self.storage_error("create", key, e)),
        }
    }

    pub async fn delete_optional(&self, key: &Path) -> Result<()> {
        match self.store.delete(key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.storage_error("delete", key, e)),
        }
    }

    /// Every object under `dir` (recursively): key and last modified time.
    pub async fn list(&self, dir: &Path) -> Result<Vec<object_store::ObjectMeta>> {
        use futures::TryStreamExt;
        self.store
            .list(Some(dir))
            .try_collect()
            .await
            .map_err(|e| self.storage_error("list", dir, e))
    }

    /// Deletes every object under `dir`; how many there were.
    pub async fn delete_all(&self, dir: &Path) -> Result<usize> {
        let found = self.list(dir).await?;
        for meta in &found {
            self.delete_optional(&meta.location).await?;
        }
        Ok(found.len())
    }

    pub fn not_found(&self, stack: &StackRef) -> BackendError {
        BackendError::StackNotFound {
            stack: stack.to_string(),
            backend: self.url.clone(),
        }
    }
}

#[async_trait]
impl StackStore for ObjectBackend {
    async fn create_stack(&self, stack: &StackRef, initial_checkpoint: &[u8]) -> Result<()> {
        self.inner.create_stack(stack, initial_checkpoint).await
    }

    async fn list_stacks(&self, options: &ListStacksOptions) -> Result<Vec<StackSummary>> {
        self.inner.list_stacks(options).await
    }

    async fn stack_exists(&self, stack: &StackRef) -> Result<bool> {
        let keys = self.inner.keys.stack(stack)?;
        self.inner.exists(&keys.checkpoint).await
    }

    async fn remove_stack(&self, stack: &StackRef, options: &RemoveOptions) -> Result<()> {
        self.inner.remove_stack(stack, options).await
    }

    async fn load_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>> {
        let keys = self.inner.keys.stack(stack)?;
        match self.inner.get_optional(&keys.checkpoint).await? {
            Some(b) => Ok(Some(b.to_vec())),
            None => Err(self.inner.not_found(stack)),
        }
    }

    async fn load_previous_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>> {
        let keys = self.inner.keys.stack(stack)?;
        if !self.inner.exists(&keys.checkpoint).await? {
            return Err(self.inner.not_found(stack));
        }
        Ok(self
            .inner
            .get_optional(&keys.previous)
            .await?
            .map(|b| b.to_vec()))
    }

    async fn save_checkpoint(
        &self,
        stack: &StackRef,
        checkpoint: Bytes,
        options: &SaveOptions,
    ) -> Result<()> {
        self.inner
            .save_checkpoint(stack, PutPayload::from(checkpoint), options)
            .await
    }

    /// The pieces are uploaded as they arrived, in one PUT, not joined.
    async fn save_checkpoint_text(
        &self,
        stack: &StackRef,
        text: CheckpointText,
        options: &SaveOptions,
    ) -> Result<u64> {
        let pieces = text.collect(stack).await?;
        let length = pieces.iter().map(|p| p.len() as u64).sum();
        let payload: PutPayload = pieces.into_iter().collect();
        self.inner.save_checkpoint(stack, payload, options).await?;
        Ok(length)
    }

    async fn rename_stack(&self, from: &StackRef, to: &StackRef, checkpoint: &[u8]) -> Result<()> {
        self.inner.rename_stack(from, to, checkpoint).await
    }
}

#[async_trait]
impl TagStore for ObjectBackend {
    async fn load_tags(&self, stack: &StackRef) -> Result<StackTags> {
        self.inner.load_tags(stack).await
    }

    async fn save_tags(&self, stack: &StackRef, tags: &StackTags) -> Result<()> {
        self.inner.save_tags(stack, tags).await
    }
}

#[async_trait]
impl StackLocker for ObjectBackend {
    async fn lock(&self, stack: &StackRef, info: LockInfo) -> Result<LockGuard> {
        lease::lock(&self.inner, stack, info).await
    }

    async fn list_locks(&self, stack: &StackRef) -> Result<Vec<HeldLock>> {
        lease::list(&self.inner, stack).await
    }

    async fn break_locks(&self, stack: &StackRef) -> Result<usize> {
        let keys = self.inner.keys.stack(stack)?;
        self.inner.delete_all(&keys.lock_dir).await
    }
}

#[async_trait]
impl HistoryStore for ObjectBackend {
    async fn add_history(&self, stack: &StackRef, kind: UpdateKind, record: &[u8]) -> Result<()> {
        self.inner.add_history(stack, &kind, record).await
    }

    async fn list_history(
        &self,
        stack: &StackRef,
        options: &ListHistoryOptions,
    ) -> Result<Vec<HistoryEntry>> {
        self.inner.list_history(stack, options).await
    }

    async fn load_history_checkpoint(
        &self,
        stack: &StackRef,
        recorded_at_unix_nanos: i64,
    ) -> Result<Option<Vec<u8>>> {
        self.inner
            .load_history_checkpoint(stack, recorded_at_unix_nanos)
            .await
    }
}

impl Backend for ObjectBackend {
    fn url(&self) -> String {
        self.inner.url.clone()
    }

    fn default_organization(&self) -> String {
        DIY_ORGANIZATION.to_owned()
    }
}

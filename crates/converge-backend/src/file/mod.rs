//! The file backend: Pulumi's DIY directory layout on a local filesystem.
//!
//! A directory written by Pulumi opens here, and one written here opens in
//! Pulumi. See [`layout`] for where each file lives. The layout is detected
//! on every operation (`meta.yaml`, else legacy stack files), so a
//! directory changed by another process is never misread.

mod atomic;
mod history;
mod journal;
pub mod layout;
mod locks;
mod rename;
mod stacks;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use bytes::Bytes;

use crate::capabilities::{
    Backend, HistoryEntry, HistoryStore, ListHistoryOptions, ListStacksOptions, RemoveOptions,
    SaveOptions, StackLocker, StackStore, StackSummary, StackTags, TagStore, UpdateKind,
};
use crate::checkpoint_text::CheckpointText;
use crate::error::{BackendError, Result};
use crate::file_url::parse_file_url;
use crate::lock::{HeldLock, LockGuard, LockInfo};
use crate::name::{StackRef, DIY_ORGANIZATION};

pub use journal::{JOURNALS_DIR, JOURNAL_FORMAT_VERSION};
pub use layout::{LayoutVersion, StackPaths};

/// Behaviour switches for [`FileBackend`], named after Pulumi's variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileBackendOptions {
    /// Also keep every saved checkpoint as `<stack>.json.<unixnano>`
    /// (Pulumi's `PULUMI_RETAIN_CHECKPOINTS`). Off by default.
    pub retain_checkpoints: bool,
    /// Copy the checkpoint to `.pulumi/backups/…` when an update is recorded
    /// (off with Pulumi's `PULUMI_DISABLE_CHECKPOINT_BACKUPS`). On by default.
    pub checkpoint_backups: bool,
}

impl Default for FileBackendOptions {
    fn default() -> FileBackendOptions {
        FileBackendOptions {
            retain_checkpoints: false,
            checkpoint_backups: true,
        }
    }
}

impl FileBackendOptions {
    /// The defaults, adjusted by `PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS`
    /// and `PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS` (`1`/`true`), or
    /// their older names `PULUMI_RETAIN_CHECKPOINTS` and
    /// `PULUMI_DISABLE_CHECKPOINT_BACKUPS`.
    pub fn from_env() -> FileBackendOptions {
        let on = |var: &str| {
            std::env::var(var)
                .map(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true"))
                .unwrap_or(false)
        };
        FileBackendOptions {
            retain_checkpoints: on("PULUMI_DIY_BACKEND_RETAIN_CHECKPOINTS")
                || on("PULUMI_RETAIN_CHECKPOINTS"),
            checkpoint_backups: !(on("PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS")
                || on("PULUMI_DISABLE_CHECKPOINT_BACKUPS")),
        }
    }
}

/// A DIY backend rooted at a local directory. Cheap to clone.
#[derive(Debug, Clone)]
pub struct FileBackend {
    store: Arc<FileStore>,
}

/// The blocking core that the async traits run on the blocking pool.
#[derive(Debug)]
pub(crate) struct FileStore {
    pub(crate) root: PathBuf,
    pub(crate) url: String,
    pub(crate) options: FileBackendOptions,
}

impl FileBackend {
    /// A backend on `root`; `url` is how the user named it (shown in
    /// messages; empty means `file://<root>`). Nothing is read or written
    /// until the first operation.
    pub fn new(root: impl Into<PathBuf>, url: impl Into<String>) -> FileBackend {
        FileBackend::with_options(root, url, FileBackendOptions::default())
    }

    pub fn with_options(
        root: impl Into<PathBuf>,
        url: impl Into<String>,
        options: FileBackendOptions,
    ) -> FileBackend {
        let root = root.into();
        let root = std::path::absolute(&root).unwrap_or(root);
        let mut url = url.into();
        if url.is_empty() {
            url = format!("file://{}", root.display());
        }
        FileBackend {
            store: Arc::new(FileStore { root, url, options }),
        }
    }

    /// Parses a `file://` URL (see [`parse_file_url`]) and opens it with
    /// options from the environment ([`FileBackendOptions::from_env`]).
    pub fn open(url: &str, cwd: &Path) -> Result<FileBackend> {
        let root = parse_file_url(url, cwd)?;
        Ok(FileBackend::with_options(
            root,
            url,
            FileBackendOptions::from_env(),
        ))
    }

    /// The backend directory (the one holding `.pulumi/`).
    pub fn root(&self) -> &Path {
        &self.store.root
    }

    pub fn options(&self) -> &FileBackendOptions {
        &self.store.options
    }

    /// The directory's layout as it is now (reads `.pulumi/meta.yaml`).
    pub fn layout_version(&self) -> Result<LayoutVersion> {
        Ok(layout::Layout::detect(&self.store.root)?.version)
    }

    /// Where the stack's files are, in the directory's current layout.
    pub fn stack_paths(&self, stack: &StackRef) -> Result<StackPaths> {
        Ok(self.store.resolve(stack)?.1)
    }

    async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&FileStore) -> Result<T> + Send + 'static,
    {
        let store = Arc::clone(&self.store);
        run_blocking(move || f(&store)).await
    }
}

impl FileStore {
    /// Validates the reference, then detects the layout and computes paths.
    pub(crate) fn resolve(&self, stack: &StackRef) -> Result<(layout::Layout, StackPaths)> {
        // Validate before any I/O, in whichever layout the directory has.
        layout::validate_for_file_backend(stack)?;
        let layout = layout::Layout::detect(&self.root)?;
        let paths = layout.stack_paths(stack)?;
        Ok((layout, paths))
    }
}

/// Runs blocking filesystem work off the async executor.
pub(crate) async fn run_blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(BackendError::Cancelled(e)),
    }
}

/// Nanoseconds since the Unix epoch, strictly increasing within this
/// process, so two records written in the same nanosecond never collide.
pub(crate) fn unique_unix_nanos() -> i64 {
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    let mut prev = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(prev + 1);
        match LAST.compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(actual) => prev = actual,
        }
    }
}

#[async_trait]
impl StackStore for FileBackend {
    async fn create_stack(&self, stack: &StackRef, initial_checkpoint: &[u8]) -> Result<()> {
        let (stack, bytes) = (stack.clone(), initial_checkpoint.to_vec());
        self.run(move |s| s.create_stack(&stack, &bytes)).await
    }

    async fn list_stacks(&self, options: &ListStacksOptions) -> Result<Vec<StackSummary>> {
        let options = options.clone();
        self.run(move |s| s.list_stacks(&options)).await
    }

    async fn stack_exists(&self, stack: &StackRef) -> Result<bool> {
        let stack = stack.clone();
        self.run(move |s| s.stack_exists(&stack)).await
    }

    async fn remove_stack(&self, stack: &StackRef, options: &RemoveOptions) -> Result<()> {
        let (stack, options) = (stack.clone(), options.clone());
        self.run(move |s| s.remove_stack(&stack, &options)).await
    }

    async fn load_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>> {
        let stack = stack.clone();
        self.run(move |s| s.load_checkpoint(&stack)).await
    }

    async fn load_previous_checkpoint(&self, stack: &StackRef) -> Result<Option<Vec<u8>>> {
        let stack = stack.clone();
        self.run(move |s| s.load_previous_checkpoint(&stack)).await
    }

    async fn save_checkpoint(
        &self,
        stack: &StackRef,
        checkpoint: Bytes,
        options: &SaveOptions,
    ) -> Result<()> {
        let (stack, options) = (stack.clone(), options.clone());
        self.run(move |s| s.save_checkpoint(&stack, &checkpoint, &options))
            .await
    }

    /// Each piece is written to the new file as it arrives, on the
    /// blocking thread, while the text's writer serializes the next.
    async fn save_checkpoint_text(
        &self,
        stack: &StackRef,
        text: CheckpointText,
        options: &SaveOptions,
    ) -> Result<u64> {
        let (stack, options) = (stack.clone(), options.clone());
        self.run(move |s| s.save_checkpoint_text(&stack, text, &options))
            .await
    }

    async fn rename_stack(&self, from: &StackRef, to: &StackRef, checkpoint: &[u8]) -> Result<()> {
        let (from, to, bytes) = (from.clone(), to.clone(), checkpoint.to_vec());
        self.run(move |s| s.rename_stack(&from, &to, &bytes)).await
    }
}

#[async_trait]
impl TagStore for FileBackend {
    async fn load_tags(&self, stack: &StackRef) -> Result<StackTags> {
        let stack = stack.clone();
        self.run(move |s| s.load_tags(&stack)).await
    }

    async fn save_tags(&self, stack: &StackRef, tags: &StackTags) -> Result<()> {
        let (stack, tags) = (stack.clone(), tags.clone());
        self.run(move |s| s.save_tags(&stack, &tags)).await
    }
}

#[async_trait]
impl StackLocker for FileBackend {
    async fn lock(&self, stack: &StackRef, info: LockInfo) -> Result<LockGuard> {
        let stack = stack.clone();
        self.run(move |s| s.lock(&stack, info)).await
    }

    async fn list_locks(&self, stack: &StackRef) -> Result<Vec<HeldLock>> {
        let stack = stack.clone();
        self.run(move |s| s.list_locks(&stack)).await
    }

    async fn break_locks(&self, stack: &StackRef) -> Result<usize> {
        let stack = stack.clone();
        self.run(move |s| s.break_locks(&stack)).await
    }
}

#[async_trait]
impl HistoryStore for FileBackend {
    async fn add_history(&self, stack: &StackRef, kind: UpdateKind, record: &[u8]) -> Result<()> {
        let (stack, record) = (stack.clone(), record.to_vec());
        self.run(move |s| s.add_history(&stack, &kind, &record))
            .await
    }

    async fn list_history(
        &self,
        stack: &StackRef,
        options: &ListHistoryOptions,
    ) -> Result<Vec<HistoryEntry>> {
        let (stack, options) = (stack.clone(), options.clone());
        self.run(move |s| s.list_history(&stack, &options)).await
    }

    async fn load_history_checkpoint(
        &self,
        stack: &StackRef,
        recorded_at_unix_nanos: i64,
    ) -> Result<Option<Vec<u8>>> {
        let stack = stack.clone();
        self.run(move |s| s.load_history_checkpoint(&stack, recorded_at_unix_nanos))
            .await
    }
}

impl Backend for FileBackend {
    fn url(&self) -> String {
        self.store.url.clone()
    }

    fn default_organization(&self) -> String {
        DIY_ORGANIZATION.to_owned()
    }
}

//! What every command needs resolved: the working directory, the project,
//! the backend, the stack, and how to obtain a passphrase.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
pub use converge_backend::now_rfc3339;
use converge_backend::{
    is_object_store_url, Backend, FileBackend, ListStacksOptions, LockInfo, ObjectBackend, StackRef,
};

use crate::args::GlobalArgs;
use crate::home::Home;
use crate::interrupts::Interrupts;
use crate::passphrase::PassphraseOptions;
use crate::project::Project;

/// The backend used when the user has not logged in anywhere.
pub const DEFAULT_BACKEND_URL: &str = "file://~";

#[derive(Debug)]
pub struct Context {
    pub cwd: PathBuf,
    pub home: Home,
    pub non_interactive: bool,
    /// `--debug`: debug-level messages are shown and forwarded too.
    pub debug: bool,
    /// `-Q`: stacks are named `org/project/stack` wherever listed.
    pub fully_qualify_stack_names: bool,
    /// Ctrl-C and SIGTERM: what the running command does about them.
    pub interrupts: Interrupts,
}

impl Context {
    pub fn new(global: &GlobalArgs, interrupts: Interrupts) -> Result<Context> {
        let base = std::env::current_dir().context("cannot read the current directory")?;
        let cwd = match &global.cwd {
            Some(d) => base.join(d),
            None => base,
        };
        if !cwd.is_dir() {
            bail!("--cwd {}: no such directory", cwd.display());
        }
        Ok(Context {
            cwd,
            home: Home::from_env()?,
            // The Automation API SDKs set PULUMI_AUTOMATION_API: nothing
            // may prompt.
            non_interactive: global.non_interactive || automation_api(),
            debug: global.diagnostics.debug,
            fully_qualify_stack_names: global.fully_qualify_stack_names,
            interrupts,
        })
    }

    pub fn passphrase_options(&self) -> PassphraseOptions {
        PassphraseOptions {
            non_interactive: self.non_interactive,
        }
    }

    pub fn project(&self) -> Result<Project> {
        Project::require(&self.cwd)
    }

    /// The backend URL: `PULUMI_BACKEND_URL`, else the project's
    /// `backend.url`, else the last `converge login`, else `file://~`.
    pub fn backend_url(&self, project: Option<&Project>) -> Result<String> {
        if let Some(url) = std::env::var("PULUMI_BACKEND_URL")
            .ok()
            .filter(|u| !u.is_empty())
        {
            return Ok(url);
        }
        if let Some(url) = project.and_then(Project::backend_url) {
            return Ok(url.to_owned());
        }
        Ok(self
            .home
            .current_backend()?
            .unwrap_or_else(|| DEFAULT_BACKEND_URL.to_owned()))
    }

    pub fn backend(&self, project: Option<&Project>) -> Result<Box<dyn Backend>> {
        let url = self.backend_url(project)?;
        open_backend(&url, &self.cwd)
    }

    /// The stack named by `--stack`, else by `PULUMI_STACK`, else the one
    /// selected for the project.
    pub fn resolve_stack(&self, project: &Project, name: Option<&str>) -> Result<StackRef> {
        let from_env = std::env::var("PULUMI_STACK").ok().filter(|s| !s.is_empty());
        let name = match name.map(str::to_owned).or(from_env) {
            Some(n) => n,
            None => self
                .home
                .selected_stack(&project.name, &project.dir)?
                .context(
                    "no stack selected: pass --stack NAME (or set PULUMI_STACK), or run \
                     `converge stack select NAME` \
                     (or `converge stack init NAME` to create one)",
                )?,
        };
        self.stack_in_project(project, &name)
    }

    /// The stack `name` (`stack`, `project/stack` or `org/project/stack`)
    /// of `project`: a name of another project's stack is refused, as
    /// Pulumi refuses it in a project directory, so that no command
    /// creates, selects or works on a stack the project cannot reach.
    pub fn stack_in_project(&self, project: &Project, name: &str) -> Result<StackRef> {
        let stack = StackRef::parse(name, &project.name)?;
        if stack.project != project.name {
            bail!(
                "provided project name {:?} doesn't match Pulumi.yaml (project {:?} in {}): \
                 name the stack without a project ({}), or run in {}'s directory",
                stack.project,
                project.name,
                project.dir.display(),
                stack.stack,
                stack.project
            );
        }
        Ok(stack)
    }

    /// Fails with an actionable message when the stack does not exist.
    pub async fn require_stack(&self, backend: &dyn Backend, stack: &StackRef) -> Result<()> {
        if !backend.stack_exists(stack).await? {
            // The project's stack the name looks like a slip of, if any.
            let listed = backend
                .list_stacks(&ListStacksOptions {
                    project: Some(stack.project.clone()),
                })
                .await
                .unwrap_or_default();
            let names = listed
                .iter()
                .filter(|s| s.stack_ref.organization == stack.organization)
                .map(|s| s.stack_ref.stack.as_str());
            let meant = crate::unknown_keys::closest(&stack.stack, names)
                .map(|m| format!("; did you mean `{m}`?"))
                .unwrap_or_default();
            bail!(
                "no stack named {} found in {}{meant} (run `converge stack ls` to see the \
                 stacks, or `converge stack init {}` to create it)",
                stack.stack,
                backend.url(),
                stack.stack
            );
        }
        Ok(())
    }

    /// Who we are, for the stack lock about to be taken.
    ///
    /// Test hook: with `CONVERGE_TEST_LOCK_BARRIER=<path>` set, first
    /// creates `<path>.<pid>` and waits (at most a minute) until `<path>`
    /// exists, so that a test can make two processes try to lock at the
    /// same instant (`crates/converge-cli/tests/races.rs`).
    pub fn lock_info(&self) -> LockInfo {
        if let Some(barrier) = std::env::var_os("CONVERGE_TEST_LOCK_BARRIER") {
            wait_at_barrier(std::path::Path::new(&barrier));
        }
        LockInfo::current()
    }
}

/// Whether an Automation API SDK started this process
/// (`PULUMI_AUTOMATION_API` set to a true value).
pub fn automation_api() -> bool {
    std::env::var("PULUMI_AUTOMATION_API")
        .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
}

/// Opens the backend at `url` (`file://`, or an object store: `s3://`,
/// `gs://`, `azblob://`); relative `file://` paths resolve against `cwd`.
pub fn open_backend(url: &str, cwd: &std::path::Path) -> Result<Box<dyn Backend>> {
    if url.starts_with("file://") {
        return Ok(Box::new(FileBackend::open(url, cwd)?));
    }
    if is_object_store_url(url) {
        return Ok(Box::new(ObjectBackend::open(url)?));
    }
    if crate::remote::is_service_url(url) {
        return crate::remote::open_service_backend(url);
    }
    let scheme = url.split("://").next().unwrap_or(url);
    bail!(
        "backend {url}: the {scheme:?} backend is not supported yet; \
         use file://DIR (or `converge login --local`), s3://, gs://, azblob:// or http://HOST:PORT"
    )
}

/// The organization `stack` is in: its own, or for a name typed without
/// one (the DIY placeholder), the backend's (a state service's token's).
pub fn stack_organization(backend: &dyn Backend, stack: &StackRef) -> String {
    match stack.organization.as_str() {
        converge_backend::DIY_ORGANIZATION => backend.default_organization(),
        named => named.to_owned(),
    }
}

/// The OS user name, as lock files record it.
pub fn username() -> String {
    LockInfo::current().username
}

/// See [`Context::lock_info`].
fn wait_at_barrier(barrier: &std::path::Path) {
    let mut arrived = barrier.as_os_str().to_owned();
    arrived.push(format!(".{}", std::process::id()));
    let _ = std::fs::write(&arrived, b"");
    let start = std::time::Instant::now();
    while !barrier.exists() && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
}

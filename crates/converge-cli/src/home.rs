//! Converge's per-user files: which backend the user is logged in to, and
//! which stack is selected for each project.
//!
//! They live in `$CONVERGE_HOME` (default `~/.converge`), apart from
//! Pulumi's `~/.pulumi`, so that both tools can be used side by side.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::atomic_write::write_atomically;

/// The user's Converge home directory.
#[derive(Debug, Clone)]
pub struct Home {
    dir: PathBuf,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Credentials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    current: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    accounts: BTreeMap<String, Account>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Account {
    #[serde(
        rename = "lastValidatedAt",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    last_validated_at: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct WorkspaceSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stack: Option<String>,
}

impl Home {
    pub fn from_env() -> Result<Self> {
        if let Some(dir) = std::env::var_os("CONVERGE_HOME").filter(|d| !d.is_empty()) {
            return Ok(Home { dir: dir.into() });
        }
        let home = user_home()?;
        Ok(Home {
            dir: home.join(".converge"),
        })
    }

    fn credentials_path(&self) -> PathBuf {
        self.dir.join("credentials.json")
    }

    fn read_credentials(&self) -> Result<Credentials> {
        let path = self.credentials_path();
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| {
                format!(
                    "{} is not valid JSON; fix it or remove it and run `converge login` again",
                    path.display()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Credentials::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    fn write_credentials(&self, creds: &Credentials) -> Result<()> {
        let mut bytes = serde_json::to_vec_pretty(creds)?;
        bytes.push(b'\n');
        write_atomically(&self.credentials_path(), &bytes)
    }

    /// The backend URL of the last `converge login`, if any.
    pub fn current_backend(&self) -> Result<Option<String>> {
        Ok(self.read_credentials()?.current)
    }

    pub fn login(&self, url: &str, now: &str) -> Result<()> {
        let mut creds = self.read_credentials()?;
        creds.current = Some(url.to_owned());
        creds.accounts.insert(
            url.to_owned(),
            Account {
                last_validated_at: Some(now.to_owned()),
            },
        );
        self.write_credentials(&creds)
    }

    /// Forgets the current backend; returns the URL that was current.
    pub fn logout(&self) -> Result<Option<String>> {
        let mut creds = self.read_credentials()?;
        let previous = creds.current.take();
        if let Some(url) = &previous {
            creds.accounts.remove(url);
        }
        self.write_credentials(&creds)?;
        Ok(previous)
    }

    fn workspace_path(&self, project: &str, project_dir: &Path) -> PathBuf {
        let digest = converge_model::sha256_hex(project_dir.to_string_lossy().as_bytes());
        self.dir
            .join("workspaces")
            .join(format!("{project}-{}-workspace.json", &digest[..16]))
    }

    /// The stack selected for the project in `project_dir`.
    pub fn selected_stack(&self, project: &str, project_dir: &Path) -> Result<Option<String>> {
        let path = self.workspace_path(project, project_dir);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let settings: WorkspaceSettings = serde_json::from_slice(&bytes)
                    .with_context(|| format!("{} is not valid JSON", path.display()))?;
                Ok(settings.stack)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    pub fn select_stack(
        &self,
        project: &str,
        project_dir: &Path,
        stack: Option<&str>,
    ) -> Result<()> {
        let settings = WorkspaceSettings {
            stack: stack.map(str::to_owned),
        };
        let mut bytes = serde_json::to_vec_pretty(&settings)?;
        bytes.push(b'\n');
        write_atomically(&self.workspace_path(project, project_dir), &bytes)
    }
}

/// The user's home directory, from `HOME` (or `USERPROFILE`).
pub fn user_home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .context("cannot find the home directory: set HOME")
}

//! Converge's per-user files: which backend the user is logged in to, and
//! which stack is selected for each project.
//!
//! They live in `$CONVERGE_HOME`; without it, in `$PULUMI_HOME/converge`
//! when `PULUMI_HOME` is set (a CI job or an Automation API workspace that
//! isolates itself with its own `PULUMI_HOME` gets its own login and
//! selected stacks), else in `~/.converge`. Never in Pulumi's own files,
//! so that both tools can be used side by side.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::atomic_write::{write_atomically, write_private_atomically};

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
    /// The access token of a state service (`http://…` backends).
    #[serde(
        rename = "accessToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    access_token: Option<String>,
    /// The token's organization, as the service said at login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    organization: Option<String>,
}

/// What `converge login` stored for a state service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccount {
    pub token: String,
    pub organization: Option<String>,
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
        if let Some(dir) = std::env::var_os("PULUMI_HOME").filter(|d| !d.is_empty()) {
            return Ok(Home {
                dir: PathBuf::from(dir).join("converge"),
            });
        }
        let home = user_home()?;
        Ok(Home {
            dir: home.join(".converge"),
        })
    }

    /// The directory itself.
    pub fn dir(&self) -> &Path {
        &self.dir
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
        // The file may hold access tokens: owner-only.
        write_private_atomically(&self.credentials_path(), &bytes)
    }

    /// The backend URL of the last `converge login`, if any.
    pub fn current_backend(&self) -> Result<Option<String>> {
        Ok(self.read_credentials()?.current)
    }

    pub fn login(&self, url: &str, now: &str) -> Result<()> {
        self.login_account(url, now, None)
    }

    /// Logs in to a state service with its access token.
    pub fn login_service(&self, url: &str, now: &str, account: ServiceAccount) -> Result<()> {
        self.login_account(url, now, Some(account))
    }

    fn login_account(&self, url: &str, now: &str, service: Option<ServiceAccount>) -> Result<()> {
        let mut creds = self.read_credentials()?;
        creds.current = Some(url.to_owned());
        let (access_token, organization) = match service {
            Some(s) => (Some(s.token), s.organization),
            None => (None, None),
        };
        creds.accounts.insert(
            url.to_owned(),
            Account {
                last_validated_at: Some(now.to_owned()),
                access_token,
                organization,
            },
        );
        self.write_credentials(&creds)
    }

    /// The token stored for the state service at `url`, if any.
    pub fn service_account(&self, url: &str) -> Result<Option<ServiceAccount>> {
        let creds = self.read_credentials()?;
        Ok(creds.accounts.get(url).and_then(|a| {
            a.access_token.clone().map(|token| ServiceAccount {
                token,
                organization: a.organization.clone(),
            })
        }))
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

    /// Logs out of `url`: forgets its account, and the current login if
    /// it is that one. Whether there was anything to forget.
    pub fn logout_of(&self, url: &str) -> Result<bool> {
        let mut creds = self.read_credentials()?;
        let mut found = creds.accounts.remove(url).is_some();
        if creds.current.as_deref() == Some(url) {
            creds.current = None;
            found = true;
        }
        if found {
            self.write_credentials(&creds)?;
        }
        Ok(found)
    }

    /// Logs out of every backend; the URLs logged out of.
    pub fn logout_all(&self) -> Result<Vec<String>> {
        let creds = self.read_credentials()?;
        let mut urls: Vec<String> = creds.accounts.into_keys().collect();
        if let Some(current) = creds.current {
            if !urls.contains(&current) {
                urls.insert(0, current);
            }
        }
        if !urls.is_empty() {
            self.write_credentials(&Credentials::default())?;
        }
        Ok(urls)
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

//! The policy packs a state service requires of every update in the
//! organization: downloaded (cached by digest under the Converge home,
//! the digest checked), their dependencies installed as a pack's own
//! instructions say, run as if `--policy-pack` had named them beside the
//! user's own packs, and reported to the service: the packs when the
//! update starts (the service refuses an update without them) and their
//! violations when it ends.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context as _, Result};
use async_trait::async_trait;
use converge_backend::http::{
    HttpBackend, PolicyPackRun, PolicyRunReport, ReportedViolation, RequiredPolicyPack,
};
use converge_backend::{Backend, StackRef};
use converge_plugin::policy::{
    AnalyzedResource, Analyzer, AnalyzerError, PackInfo, PolicyDiagnostic, Remediation,
    StackResource,
};
use sha2::{Digest, Sha256};

use crate::home::Home;

/// The organization's packs for one operation.
#[derive(Debug, Default)]
pub struct ServicePacks {
    /// Each pack's directory and configuration file, in the order the
    /// service listed them.
    pub packs: Vec<(PathBuf, Option<PathBuf>)>,
    runs: Vec<PolicyPackRun>,
    violations: Arc<Mutex<Vec<ReportedViolation>>>,
    /// Holds the configuration files while the operation runs.
    _configs: Option<tempfile::TempDir>,
}

/// Fetches what the service behind `backend` requires of `stack`'s
/// updates, and tells the backend to say so when the update starts.
/// Nothing for other backends.
pub async fn prepare(backend: &dyn Backend, stack: &StackRef) -> Result<ServicePacks> {
    let Some(service) = backend.as_service() else {
        return Ok(ServicePacks::default());
    };
    let required = service
        .required_policy_packs()
        .await
        .context("cannot read the policy packs the state service requires")?;
    if required.is_empty() {
        return Ok(ServicePacks::default());
    }
    let cache = Home::from_env()?.dir().join("policies");
    let configs = tempfile::tempdir().context("cannot create a directory for pack configs")?;
    let mut packs = Vec::new();
    let mut runs = Vec::new();
    for (i, pack) in required.iter().enumerate() {
        let dir = fetch(service, &cache, pack).await.with_context(|| {
            format!(
                "cannot get the required policy pack {}@{}",
                pack.name, pack.version
            )
        })?;
        let config = match &pack.config {
            Some(config) => {
                let path = configs.path().join(format!("{i}.json"));
                std::fs::write(&path, config.to_string())?;
                Some(path)
            }
            None => None,
        };
        packs.push((dir, config));
        runs.push(PolicyPackRun {
            name: pack.name.clone(),
            version: pack.version.clone(),
            digest: pack.digest.clone(),
        });
    }
    service.set_policy_report(
        stack,
        PolicyRunReport {
            packs: runs.clone(),
            violations: Vec::new(),
        },
    );
    Ok(ServicePacks {
        packs,
        runs,
        violations: Arc::default(),
        _configs: Some(configs),
    })
}

impl ServicePacks {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The organization's analyzers (the last `self.packs.len()` of
    /// `analyzers`) wrapped to record what they report.
    pub fn record(&self, analyzers: Vec<Arc<dyn Analyzer>>) -> Vec<Arc<dyn Analyzer>> {
        let own = analyzers.len().saturating_sub(self.packs.len());
        analyzers
            .into_iter()
            .enumerate()
            .map(|(i, a)| {
                if i < own {
                    a
                } else {
                    Arc::new(Recorded {
                        inner: a,
                        violations: Arc::clone(&self.violations),
                    }) as Arc<dyn Analyzer>
                }
            })
            .collect()
    }

    /// Tells the backend the violations to report when the update ends.
    pub fn finish(&self, backend: &dyn Backend, stack: &StackRef) {
        if let (Some(service), false) = (backend.as_service(), self.is_empty()) {
            let violations = self
                .violations
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            service.set_policy_report(
                stack,
                PolicyRunReport {
                    packs: self.runs.clone(),
                    violations,
                },
            );
        }
    }
}

/// The digest of an archive, as the service names it.
fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The pack's directory in the cache, downloaded and unpacked once.
async fn fetch(service: &HttpBackend, cache: &Path, pack: &RequiredPolicyPack) -> Result<PathBuf> {
    let hex = pack
        .digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
        .with_context(|| {
            format!(
                "the service named the pack by {:?}, not a sha256 digest",
                pack.digest
            )
        })?;
    let dir = cache.join(hex);
    if dir.join("PulumiPolicy.yaml").is_file() {
        return Ok(dir);
    }
    let archive = service
        .download_policy_pack(&pack.name, &pack.version)
        .await?;
    let got = digest_of(&archive);
    if got != pack.digest {
        bail!(
            "the archive downloaded is {got}, not the {} the service requires: it changed \
             in transit or on the service; try again, and tell the service's operator if it persists",
            pack.digest
        );
    }
    std::fs::create_dir_all(cache)?;
    let staging = tempfile::tempdir_in(cache)?;
    let unpacked = staging.path().join("pack");
    std::fs::create_dir_all(&unpacked)?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive.as_slice()));
    // `unpack` refuses entries that would leave the directory.
    tar.unpack(&unpacked)
        .context("the pack's archive cannot be unpacked")?;
    install_dependencies(&unpacked)?;
    match std::fs::rename(&unpacked, &dir) {
        Ok(()) => {}
        // Another process cached it first: theirs is the same pack.
        Err(_) if dir.join("PulumiPolicy.yaml").is_file() => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot cache the pack in {}", dir.display()))
        }
    }
    Ok(dir)
}

/// Installs a downloaded pack's dependencies as a program's are: a
/// Python pack with a relative `virtualenv` option and a
/// `requirements.txt` gets that virtualenv; a Node.js pack with a
/// `package.json` and no `node_modules` gets `npm install`.
fn install_dependencies(dir: &Path) -> Result<()> {
    let pack = converge_plugin::policy::PolicyPackDir::load(dir)?;
    let run = |program: &str, args: &[&str]| -> Result<()> {
        let status = std::process::Command::new(program)
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .status()
            .with_context(|| format!("cannot run {program} to install the pack's dependencies"))?;
        if !status.success() {
            bail!(
                "`{program} {}` failed ({status}) installing the pack's dependencies",
                args.join(" ")
            );
        }
        Ok(())
    };
    match pack.runtime.as_str() {
        "python" => {
            let venv = pack
                .options
                .get("virtualenv")
                .and_then(serde_json::Value::as_str)
                .map(PathBuf::from);
            if let Some(venv) = venv.filter(|v| v.is_relative()) {
                if dir.join("requirements.txt").is_file() && !dir.join(&venv).exists() {
                    let venv = venv.display().to_string();
                    run("python3", &["-m", "venv", &venv])?;
                    run(
                        &format!("{venv}/bin/pip"),
                        &["install", "--quiet", "-r", "requirements.txt"],
                    )?;
                }
            }
        }
        "nodejs" if dir.join("package.json").is_file() && !dir.join("node_modules").exists() => {
            run("npm", &["install", "--no-audit", "--no-fund"])?;
        }
        _ => {}
    }
    Ok(())
}

/// An analyzer whose violations are also recorded for the service.
#[derive(Debug)]
struct Recorded {
    inner: Arc<dyn Analyzer>,
    violations: Arc<Mutex<Vec<ReportedViolation>>>,
}

impl Recorded {
    fn keep(&self, found: &[PolicyDiagnostic], urn: Option<&str>) {
        let mut all = self.violations.lock().unwrap_or_else(|p| p.into_inner());
        for d in found {
            all.push(ReportedViolation {
                pack_name: d.pack_name.clone(),
                pack_version: d.pack_version.clone(),
                policy_name: d.policy_name.clone(),
                enforcement_level: d.enforcement_level.as_str().to_owned(),
                urn: d.urn.clone().or_else(|| urn.map(str::to_owned)),
                message: d.message.clone(),
            });
        }
    }
}

#[async_trait]
impl Analyzer for Recorded {
    fn info(&self) -> &PackInfo {
        self.inner.info()
    }

    async fn remediate(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<Remediation>, AnalyzerError> {
        self.inner.remediate(resource).await
    }

    async fn analyze(
        &self,
        resource: &AnalyzedResource,
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError> {
        let found = self.inner.analyze(resource).await?;
        self.keep(&found, Some(&resource.urn));
        Ok(found)
    }

    async fn analyze_stack(
        &self,
        resources: &[StackResource],
    ) -> Result<Vec<PolicyDiagnostic>, AnalyzerError> {
        let found = self.inner.analyze_stack(resources).await?;
        self.keep(&found, None);
        Ok(found)
    }
}

/// Tells a state service that the next lock of `stack` is for a state
/// edit (no program, no analyzer): the organization's required packs are
/// not asked of it. Nothing for other backends.
pub fn declare_state_edit(backend: &dyn Backend, stack: &StackRef) {
    if let Some(service) = backend.as_service() {
        service.declare_state_edit(stack);
    }
}

//! `--policy-pack DIR` and `--policy-pack-config FILE`: the packs an
//! operation runs, each started, asked what it is and configured — its
//! configuration validated against each policy's schema — before the
//! operation touches anything.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use converge_plugin::policy::{
    Analyzer, PackConfig, PackStartOptions, PolicyPackDir, PolicyPackProcess,
};

/// How long a pack has to start (a Node.js pack compiling TypeScript
/// takes several seconds); `CONVERGE_PLUGIN_TIMEOUT` (seconds) overrides.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Which packs to run and how.
#[derive(Debug, Clone, Default)]
pub struct PackRequest {
    pub packs: Vec<PathBuf>,
    /// One per pack, in the same order, or none.
    pub configs: Vec<PathBuf>,
    /// Packs run after those, each with its own configuration file or
    /// none (the state service's required packs).
    pub required: Vec<(PathBuf, Option<PathBuf>)>,
}

impl PackRequest {
    pub fn new(packs: &[String], configs: &[String]) -> Result<PackRequest> {
        if !configs.is_empty() && configs.len() != packs.len() {
            bail!("--policy-pack-config must be given once for each --policy-pack");
        }
        Ok(PackRequest {
            packs: packs.iter().map(PathBuf::from).collect(),
            configs: configs.iter().map(PathBuf::from).collect(),
            required: Vec::new(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.packs.is_empty() && self.required.is_empty()
    }

    /// Reads every pack's manifest and config file: a missing pack, a
    /// broken manifest or config file is an error before anything starts.
    pub fn load(&self) -> Result<Vec<(PolicyPackDir, Option<PackConfig>)>> {
        let configs = self
            .packs
            .iter()
            .enumerate()
            .map(|(i, _)| self.configs.get(i));
        let own = self.packs.iter().zip(configs);
        let required = self
            .required
            .iter()
            .map(|(dir, config)| (dir, config.as_ref()));
        own.chain(required)
            .map(|(dir, config)| {
                let pack = PolicyPackDir::load(dir)?;
                check_manifest(&pack)?;
                let config = match config {
                    Some(path) => Some(PackConfig::read(path)?),
                    None => None,
                };
                Ok((pack, config))
            })
            .collect()
    }
}

/// The stack the packs are configured for (`ConfigureStack`).
#[derive(Debug, Clone, Copy)]
pub struct StackIdentity<'a> {
    pub stack: &'a str,
    pub project: &'a str,
    pub organization: &'a str,
    /// The stack's tags, which policies may read.
    pub tags: &'a converge_backend::StackTags,
}

/// Starts and configures every pack of `request`, all at once; the
/// analyzers are in the order of `request`.
pub async fn start(
    request: &PackRequest,
    identity: &StackIdentity<'_>,
    dry_run: bool,
) -> Result<Vec<Arc<dyn Analyzer>>> {
    if request.is_empty() {
        return Ok(Vec::new());
    }
    let loaded = request.load()?;
    let startup_timeout = std::env::var("CONVERGE_PLUGIN_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(START_TIMEOUT, Duration::from_secs);
    let options = PackStartOptions {
        stack: identity.stack.to_owned(),
        project: identity.project.to_owned(),
        organization: identity.organization.to_owned(),
        dry_run,
        startup_timeout,
        tags: identity.tags.clone(),
    };
    // All at once (a Node.js pack compiling TypeScript takes seconds),
    // kept in the order given.
    let starting: Vec<_> = loaded
        .into_iter()
        .map(|(pack, config)| {
            let options = options.clone();
            let dir = pack.dir.clone();
            let task = tokio::spawn(async move {
                PolicyPackProcess::start(&pack, config.as_ref(), &options).await
            });
            (dir, task)
        })
        .collect();
    let mut analyzers: Vec<Arc<dyn Analyzer>> = Vec::new();
    for (dir, task) in starting {
        let process = task
            .await
            .with_context(|| format!("policy pack {} could not be started", dir.display()))?
            .with_context(|| format!("policy pack {} could not be used", dir.display()))?;
        analyzers.push(Arc::new(process));
    }
    Ok(analyzers)
}

/// Refuses a pack whose `PulumiPolicy.yaml` has a key that looks like a
/// misspelling of one Converge reads (a misspelled `options:` would run
/// the pack without them), naming the key meant; warns about any other
/// unknown key.
pub fn check_manifest(pack: &PolicyPackDir) -> Result<()> {
    let mut slips = Vec::new();
    for u in &pack.unknown_keys {
        match crate::unknown_keys::closest(&u.key, u.known.iter().copied()) {
            Some(meant) => slips.push(format!(
                "{}: unknown key `{}`; did you mean `{meant}`?",
                u.place, u.key
            )),
            None => eprintln!(
                "warning: policy pack {}: {}: unknown key `{}` is ignored (the known keys are {})",
                pack.dir.display(),
                u.place,
                u.key,
                u.known.join(", ")
            ),
        }
    }
    if !slips.is_empty() {
        anyhow::bail!("policy pack {}: {}", pack.dir.display(), slips.join("; "));
    }
    Ok(())
}

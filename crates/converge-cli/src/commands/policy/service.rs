//! `converge policy publish | enable | disable | ls`: the organization's
//! policy packs on the state service that the CLI is logged in to. A
//! published pack is the gzipped tar of its directory (without its
//! virtualenv, `node_modules` and caches), under the name and version the
//! pack itself reports; a pack enabled (required) runs in every update of
//! the organization.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use clap::Subcommand;
use converge_backend::http::HttpBackend;
use converge_plugin::policy::{Analyzer as _, PackStartOptions, PolicyPackDir, PolicyPackProcess};

use crate::context::Context;
use crate::table::Table;

/// The organization's policy packs on the state service.
#[derive(Debug, Subcommand)]
pub enum PolicyServiceCommand {
    /// Publish the policy pack in DIR to the organization (under the name
    /// and version the pack reports).
    Publish {
        /// The pack's directory (with its `PulumiPolicy.yaml`).
        dir: String,
    },
    /// Require a published pack's version in every update of the
    /// organization.
    Enable {
        name: String,
        version: String,
        /// The pack's configuration (`--policy-pack-config`'s JSON shape).
        #[arg(long, value_name = "FILE")]
        config: Option<String>,
    },
    /// Stop requiring a pack.
    Disable { name: String },
    /// List the organization's packs: each version, and whether it is
    /// required.
    Ls {
        /// Print JSON.
        #[arg(short, long)]
        json: bool,
    },
}

pub async fn run(ctx: &Context, command: PolicyServiceCommand) -> Result<()> {
    let project = ctx.project().ok();
    let backend = ctx.backend(project.as_ref())?;
    let Some(service) = backend.as_service() else {
        bail!(
            "policy packs are published to a state service, and the current backend is {}: \
             run `converge login http://HOST:PORT` first",
            backend.url()
        );
    };
    match command {
        PolicyServiceCommand::Publish { dir } => publish(service, Path::new(&dir)).await,
        PolicyServiceCommand::Enable {
            name,
            version,
            config,
        } => {
            let config = match config {
                Some(path) => {
                    // Checked as `--policy-pack-config` checks it.
                    converge_plugin::policy::PackConfig::read(Path::new(&path))?;
                    let text = std::fs::read_to_string(&path)
                        .with_context(|| format!("cannot read {path}"))?;
                    Some(
                        serde_json::from_str(&text)
                            .with_context(|| format!("{path} is not JSON"))?,
                    )
                }
                None => None,
            };
            service.enable_policy_pack(&name, &version, config).await?;
            println!(
                "Every update of organization {} now runs {name}@{version}",
                backend.default_organization()
            );
            Ok(())
        }
        PolicyServiceCommand::Disable { name } => {
            service.disable_policy_pack(&name).await?;
            println!("Updates no longer need to run {name}");
            Ok(())
        }
        PolicyServiceCommand::Ls { json } => {
            let packs = service.list_policy_packs().await?;
            if json {
                let list: Vec<serde_json::Value> = packs
                    .iter()
                    .map(|p| {
                        serde_json::json!({
                            "name": p.name, "version": p.version, "digest": p.digest,
                            "size": p.size, "publishedAt": p.published_at, "required": p.required,
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(());
            }
            let mut table = Table::new(["NAME", "VERSION", "REQUIRED", "PUBLISHED", "DIGEST"]);
            for p in &packs {
                table.row([
                    p.name.clone(),
                    p.version.clone(),
                    if p.required { "yes" } else { "no" }.to_owned(),
                    p.published_at.clone(),
                    p.digest.clone(),
                ]);
            }
            print!("{table}");
            Ok(())
        }
    }
}

/// Starts the pack to learn its name and version, then uploads its
/// directory.
async fn publish(service: &HttpBackend, dir: &Path) -> Result<()> {
    let pack = PolicyPackDir::load(dir)?;
    crate::policy_packs::check_manifest(&pack)?;
    let options = PackStartOptions {
        stack: "publish".to_owned(),
        project: "publish".to_owned(),
        organization: "organization".to_owned(),
        dry_run: true,
        startup_timeout: Duration::from_secs(120),
        tags: Default::default(),
    };
    let process = PolicyPackProcess::start(&pack, None, &options)
        .await
        .with_context(|| format!("policy pack {} could not be started", dir.display()))?;
    let (name, version) = (process.info().name.clone(), process.info().version.clone());
    drop(process);
    if version.is_empty() {
        bail!(
            "policy pack {name} has no version: set `version:` in its PulumiPolicy.yaml (or \
             `version` in its package.json)"
        );
    }
    let skip = pack
        .options
        .get("virtualenv")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    let archive = archive(&pack.dir, skip.as_deref())?;
    let published = service
        .publish_policy_pack(&name, &version, archive)
        .await?;
    println!(
        "Published {name}@{version} ({}, {} bytes)",
        published.digest, published.size
    );
    Ok(())
}

/// The gzipped tar of a pack's directory: its files, without what is
/// installed or generated (the virtualenv, `node_modules`, `.git`,
/// `__pycache__`); symbolic links are refused.
fn archive(dir: &Path, virtualenv: Option<&str>) -> Result<Vec<u8>> {
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    builder.mode(tar::HeaderMode::Deterministic);
    let skipped = |relative: &Path| {
        relative
            .iter()
            .any(|c| matches!(c.to_str(), Some("node_modules" | ".git" | "__pycache__")))
            || virtualenv.is_some_and(|v| relative.starts_with(v))
    };
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current)
            .with_context(|| format!("cannot read {}", current.display()))?
        {
            let entry = entry?;
            let path = entry.path();
            let relative = path.strip_prefix(dir)?.to_path_buf();
            if skipped(&relative) {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() {
                files.push(relative);
            } else {
                bail!(
                    "{} is neither a file nor a directory: a published pack holds only files",
                    path.display()
                );
            }
        }
    }
    files.sort();
    for relative in files {
        builder
            .append_path_with_name(dir.join(&relative), &relative)
            .with_context(|| format!("cannot add {} to the archive", relative.display()))?;
    }
    Ok(builder.into_inner()?.finish()?)
}

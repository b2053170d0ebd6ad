//! `converge policy analyze`: packs judge a stack's existing state — or
//! an exported one (`--file`) — without its program: each pack's
//! `Analyze` on every custom resource's recorded inputs and its
//! `AnalyzeStack` on all the resources
//! (`converge_engine::analyze_snapshot`). The state is only read: no
//! lock, nothing remediated. The violations are printed by pack as a
//! preview prints them (or as JSON); a mandatory one fails the command.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use clap::Args;
use converge_backend::Backend;
use converge_engine::events::{EnforcementLevel, PackReport};
use converge_state::checkpoint;
use converge_state::json_limits;
use converge_state::secrets::SecretsMode;
use converge_state::Snapshot;

use crate::args::StackArg;
use crate::commands::stack::current_checkpoint;
use crate::context::{now_rfc3339, Context};
use crate::input_file::read_file;
use crate::policy_packs::PackRequest;
use crate::secrets::stack::open_recorded;

#[derive(Debug, Args)]
pub struct PolicyAnalyzeArgs {
    /// A policy pack's directory (repeatable).
    #[arg(long = "policy-pack", value_name = "DIR", required = true)]
    pub policy_pack: Vec<String>,
    /// A JSON file of policy settings and levels, once for each
    /// --policy-pack, in the same order.
    #[arg(long = "policy-pack-config", value_name = "FILE")]
    pub policy_pack_config: Vec<String>,
    #[command(flatten)]
    pub stack: StackArg,
    /// Analyze this exported deployment (`converge stack export`'s JSON)
    /// instead of a stack's state.
    #[arg(long, value_name = "FILE", conflicts_with = "stack")]
    pub file: Option<PathBuf>,
    /// Print the violations as JSON.
    #[arg(short, long)]
    pub json: bool,
}

/// The state to analyze and the stack and project it is of.
struct Subject {
    snapshot: Snapshot,
    stack: String,
    project: String,
    organization: String,
    tags: converge_backend::StackTags,
}

pub async fn run(ctx: &Context, args: PolicyAnalyzeArgs) -> Result<()> {
    let request = PackRequest::new(&args.policy_pack, &args.policy_pack_config)?;
    // A missing pack or a broken manifest or config file, before anything.
    request.load()?;
    let mut subject = match &args.file {
        Some(file) => from_file(ctx, file)?,
        None => from_stack(ctx, args.stack.stack.as_deref()).await?,
    };
    decrypt(ctx, &mut subject.snapshot).await?;
    let analyzers = crate::policy_packs::start(
        &request,
        &crate::policy_packs::StackIdentity {
            stack: &subject.stack,
            project: &subject.project,
            organization: &subject.organization,
            tags: &subject.tags,
        },
        true,
    )
    .await?;
    let reports = converge_engine::analyze_snapshot(&analyzers, &subject.snapshot).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&reports))?);
    } else {
        for line in crate::display::policies(&reports, None) {
            println!("{line}");
        }
    }
    let mandatory: Vec<String> = reports
        .iter()
        .flat_map(|r| {
            r.violations
                .iter()
                .filter(|v| v.level == EnforcementLevel::Mandatory)
                .map(move |v| {
                    let place = v
                        .urn
                        .as_ref()
                        .map(|u| format!(" ({u})"))
                        .unwrap_or_default();
                    format!("{}@v{} {}{place}", r.pack, r.version, v.policy)
                })
        })
        .collect();
    if !mandatory.is_empty() {
        bail!(
            "{} mandatory policy violation(s): {}",
            mandatory.len(),
            mandatory.join("; ")
        );
    }
    Ok(())
}

fn from_file(ctx: &Context, file: &std::path::Path) -> Result<Subject> {
    let path = ctx.cwd.join(file);
    let bytes = read_file(&path, "the deployment")?;
    json_limits::check(&bytes)
        .map_err(|e| anyhow::anyhow!("cannot analyze {}: {e}", path.display()))?;
    let snapshot = checkpoint::read_deployment(&bytes, SecretsMode::Opaque)
        .with_context(|| format!("cannot analyze {}", path.display()))?;
    // The stack and project are the resources' own.
    let (stack, project) = snapshot
        .resources
        .first()
        .map(|r| (r.urn.stack().to_owned(), r.urn.project().to_owned()))
        .unwrap_or_default();
    Ok(Subject {
        snapshot,
        stack,
        project,
        organization: converge_backend::DIY_ORGANIZATION.to_owned(),
        tags: Default::default(),
    })
}

async fn from_stack(ctx: &Context, name: Option<&str>) -> Result<Subject> {
    let project = ctx.project()?;
    let backend: Arc<dyn Backend> = Arc::from(ctx.backend(Some(&project))?);
    let stack = ctx.resolve_stack(&project, name)?;
    ctx.require_stack(backend.as_ref(), &stack).await?;
    let snapshot = current_checkpoint(ctx, &backend, &stack)
        .await?
        .latest
        .unwrap_or_else(|| Snapshot::empty(now_rfc3339()));
    let tags = backend
        .load_tags(&stack)
        .await
        .with_context(|| format!("cannot read the tags of stack {}", stack.stack))?;
    Ok(Subject {
        organization: crate::context::stack_organization(backend.as_ref(), &stack),
        snapshot,
        stack: stack.stack,
        project: stack.project,
        tags,
    })
}

/// The packs see secrets' values, as during an update: a state holding
/// secrets is decrypted (in memory) with the provider it records.
async fn decrypt(ctx: &Context, snapshot: &mut Snapshot) -> Result<()> {
    let has_secrets = snapshot.resources.iter().any(|r| {
        r.inputs.values().any(|v| v.contains_secrets())
            || r.outputs.values().any(|v| v.contains_secrets())
    });
    let Some(provider) = snapshot.secrets_providers.clone() else {
        return Ok(());
    };
    if !has_secrets {
        return Ok(());
    }
    let secrets = open_recorded(&provider, ctx.passphrase_options(), "the state").await?;
    let opaque = checkpoint::write_deployment(snapshot, SecretsMode::Opaque)?;
    *snapshot =
        checkpoint::read_deployment(&opaque, SecretsMode::Crypter(secrets.crypter.as_ref()))
            .context("cannot decrypt the state's secrets")?;
    Ok(())
}

/// `{"policyPacks": [{"name", "version", "result", "violations": [{"policy",
/// "enforcementLevel", "message", "urn"}]}]}`.
fn to_json(reports: &[PackReport]) -> serde_json::Value {
    let packs: Vec<serde_json::Value> = reports
        .iter()
        .map(|r| {
            let mandatory = r
                .violations
                .iter()
                .any(|v| v.level == EnforcementLevel::Mandatory);
            let result = if mandatory {
                "failed"
            } else if r.violations.is_empty() {
                "passed"
            } else {
                "passed with warnings"
            };
            serde_json::json!({
                "name": r.pack,
                "version": r.version,
                "result": result,
                "violations": r.violations.iter().map(|v| serde_json::json!({
                    "policy": v.policy,
                    "enforcementLevel": v.level.as_str(),
                    "severity": v.severity.map(|s| s.as_str()),
                    "message": v.message,
                    "urn": v.urn.as_ref().map(ToString::to_string),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({ "policyPacks": packs })
}

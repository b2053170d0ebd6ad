//! `converge plugin ls | install | rm`: the plugins in Pulumi's plugin
//! directory (`$PULUMI_HOME/plugins`, else `~/.pulumi/plugins`), in its
//! layout, so Pulumi and Converge share them. Converge downloads nothing:
//! `install` takes a local archive or directory.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand};
use converge_plugin::host::catalog::{self, CatalogEntry};
use converge_plugin::host::install::{
    self, InstallOptions, InstallOutcome, PluginSource, PluginSpec,
};
use converge_plugin::host::PluginDirectory;

use crate::context::Context;

pub mod ls;
mod terraform;

#[derive(Debug, Subcommand)]
pub enum PluginCommand {
    /// List the installed plugins, and the providers built into Converge
    /// or found as Terraform providers.
    Ls {
        /// Print Pulumi's JSON (the plugin directory's plugins).
        #[arg(short, long)]
        json: bool,
        /// Pulumi's "only the project's plugins": refused, since Converge
        /// does not work out a project's plugins ahead of running it.
        #[arg(short, long)]
        project: bool,
    },
    /// Install a plugin from a local `.tar.gz` archive or directory
    /// (`--file`): `converge plugin install resource NAME VERSION --file PATH`;
    /// or a Terraform provider as OpenTofu's CLI configuration says, locked
    /// in the project's `.terraform.lock.hcl`:
    /// `converge plugin install terraform [HOST/]NAMESPACE/TYPE [CONSTRAINT]`.
    Install(InstallArgs),
    /// Remove plugins: `KIND [NAME [VERSION]]`, or `--all`.
    Rm(RmArgs),
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The plugin kind: resource, language, analyzer, converter or tool.
    #[arg(value_name = "KIND")]
    pub kind: Option<String>,
    /// The plugin's name (`random`, `aws`, …).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// The plugin's version (semver; a leading `v` is allowed).
    #[arg(value_name = "VERSION")]
    pub version: Option<String>,
    /// The plugin's `.tar.gz` archive, a directory holding its files, or
    /// its executable alone.
    #[arg(short, long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Install again even if this version is installed.
    #[arg(long)]
    pub reinstall: bool,
    /// A server to download the plugin from (refused: Converge does not
    /// download plugins; pass --file).
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// The plugin kind.
    #[arg(value_name = "KIND")]
    pub kind: Option<String>,
    /// The plugin's name (every plugin of KIND when omitted).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// A version or a semver range (`1.2.3`, `>=1.0.0, <2.0.0`); every
    /// version when omitted.
    #[arg(value_name = "VERSION")]
    pub version: Option<String>,
    /// Remove every plugin.
    #[arg(short, long, conflicts_with_all = ["kind", "name", "version"])]
    pub all: bool,
    /// Do not ask for confirmation.
    #[arg(short, long)]
    pub yes: bool,
}

pub fn run(ctx: &Context, cmd: PluginCommand) -> Result<()> {
    match cmd {
        PluginCommand::Ls { json, project } => {
            if project {
                anyhow::bail!(
                    "plugin ls --project: Converge does not work out which plugins a project \
                     needs before it runs (it loads each as the program asks for it); \
                     `converge plugin ls` lists every plugin it can load"
                );
            }
            ls::run(json)
        }
        PluginCommand::Install(args) => install_plugin(args),
        PluginCommand::Rm(args) => rm(ctx, args),
    }
}

/// The plugin directory, or an error saying why there is none.
pub fn plugins_dir() -> Result<PathBuf> {
    PluginDirectory::default_dir()
        .context("no plugin directory: set PULUMI_HOME (no home directory was found)")
}

fn parse_version(text: &str) -> Result<semver::Version> {
    semver::Version::parse(text.strip_prefix('v').unwrap_or(text))
        .with_context(|| format!("invalid plugin version {text:?}: expected semver such as 1.2.3"))
}

fn install_plugin(args: InstallArgs) -> Result<()> {
    if args.kind.as_deref() == Some("terraform") {
        let Some(source) = args.name else {
            bail!("which provider? run `converge plugin install terraform [HOST/]NAMESPACE/TYPE [VERSION-CONSTRAINT]`");
        };
        return terraform::install(&source, args.version.as_deref());
    }
    let (Some(kind), Some(name), Some(version)) = (args.kind, args.name, args.version) else {
        bail!(
            "which plugin? run `converge plugin install KIND NAME VERSION --file PATH` \
             (Converge does not download plugins, so it does not install a project's plugins by itself)"
        );
    };
    let version = parse_version(&version)?;
    if let Some(server) = &args.server {
        bail!(
            "--server {server}: Converge does not download plugins; pass --file PATH with the \
             {kind} plugin {name} {version} instead"
        );
    }
    let Some(file) = args.file else {
        bail!(
            "Converge does not download plugins: pass --file PATH with the {kind} plugin {name} \
             {version} as a .tar.gz archive (as its releases publish it), a directory holding \
             pulumi-{kind}-{name}, or that executable alone"
        );
    };
    if !file.exists() {
        bail!("--file {}: no such file or directory", file.display());
    }
    let dir = plugins_dir()?;
    let spec = PluginSpec {
        kind,
        name,
        version,
    };
    let options = InstallOptions {
        reinstall: args.reinstall,
    };
    match install::install(&dir, &spec, PluginSource::at(&file), options)? {
        InstallOutcome::Installed(path) => println!(
            "Installed {} plugin {} {} in {}",
            spec.kind,
            spec.name,
            spec.version,
            path.display()
        ),
        InstallOutcome::AlreadyInstalled(path) => println!(
            "{} plugin {} {} is already installed in {} (pass --reinstall to replace it)",
            spec.kind,
            spec.name,
            spec.version,
            path.display()
        ),
    }
    Ok(())
}

/// Which versions `rm` matches: exactly one, or a range.
enum VersionFilter {
    Any,
    Exact(semver::Version),
    Range(semver::VersionReq),
}

impl VersionFilter {
    fn parse(text: Option<&str>) -> Result<VersionFilter> {
        let Some(text) = text else {
            return Ok(VersionFilter::Any);
        };
        if let Ok(v) = semver::Version::parse(text.strip_prefix('v').unwrap_or(text)) {
            return Ok(VersionFilter::Exact(v));
        }
        semver::VersionReq::parse(text)
            .map(VersionFilter::Range)
            .with_context(|| {
                format!("invalid version {text:?}: expected a version (1.2.3) or a range (>=1.0.0, <2.0.0)")
            })
    }

    fn matches(&self, v: &semver::Version) -> bool {
        match self {
            VersionFilter::Any => true,
            VersionFilter::Exact(e) => e == v,
            VersionFilter::Range(r) => r.matches(v),
        }
    }
}

fn rm(ctx: &Context, args: RmArgs) -> Result<()> {
    if !args.all && args.kind.is_none() {
        bail!("which plugins? run `converge plugin rm KIND [NAME [VERSION]]`, or pass --all");
    }
    if let Some(kind) = &args.kind {
        if !catalog::PLUGIN_KINDS.contains(&kind.as_str()) {
            bail!(
                "unknown plugin kind {kind:?}: expected one of {}",
                catalog::PLUGIN_KINDS.join(", ")
            );
        }
    }
    let versions = VersionFilter::parse(args.version.as_deref())?;
    let dir = plugins_dir()?;
    let doomed: Vec<CatalogEntry> = catalog::list(&dir)
        .with_context(|| format!("cannot read the plugin directory {}", dir.display()))?
        .into_iter()
        .filter(|e| args.kind.as_ref().is_none_or(|k| &e.kind == k))
        .filter(|e| args.name.as_ref().is_none_or(|n| &e.name == n))
        .filter(|e| versions.matches(&e.version))
        .collect();
    if doomed.is_empty() {
        println!("no plugins found to uninstall");
        return Ok(());
    }
    if !args.yes {
        if ctx.non_interactive || !std::io::stdin().is_terminal() {
            bail!(
                "removing {} plugin(s) needs confirmation: pass --yes",
                doomed.len()
            );
        }
        println!(
            "This will remove {} plugin(s) from the cache:",
            doomed.len()
        );
        for e in &doomed {
            println!("    {} {}-{}", e.kind, e.name, e.version);
        }
        let answer = crate::prompt::ask("Are you sure? (yes/no) ")?;
        if !matches!(answer.trim(), "y" | "yes") {
            bail!("no plugins were removed");
        }
    }
    for e in &doomed {
        install::remove(&dir, e)?;
        println!("removed {} plugin {} {}", e.kind, e.name, e.version);
    }
    Ok(())
}

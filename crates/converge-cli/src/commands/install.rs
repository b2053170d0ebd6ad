//! `converge install`: the project's language dependencies, installed as
//! `converge new` installs a new project's (`commands/new/install.rs`),
//! which is what Pulumi's `pulumi install` (and the Automation API's
//! `Workspace.install()`) does for a project. Converge downloads no
//! plugin, so there are none to install.

use anyhow::{bail, Result};

use crate::args::InstallArgs;
use crate::context::Context;

pub fn run(ctx: &Context, args: &InstallArgs) -> Result<()> {
    if args.use_language_version_tools {
        bail!(
            "--use-language-version-tools: Converge does not run pyenv, nvm or other language \
             version tools; install the language version the project needs, then run \
             `converge install` without the flag"
        );
    }
    let project = ctx.project()?;
    if !args.no_dependencies {
        super::new::install::install_dependencies(&project)?;
    }
    if !args.no_plugins {
        println!(
            "Plugins: Converge downloads none; `converge plugin ls` lists those installed, \
             `converge plugin install` adds one from a file"
        );
    }
    println!("Finished installing dependencies");
    Ok(())
}
